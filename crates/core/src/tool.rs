//! The uniform tool abstraction (SPEC §1).

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::types::ToolResult;

/// What a running tool tells its caller before its result (`ctx.progress`, `ctx.log`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEvent {
    /// How far along the call is: `progress` of `total` (when known), with a message.
    Progress { progress: f64, total: Option<f64>, message: Option<String> },
    /// A log entry: its level (an MCP/syslog level name), its data and the logger's name.
    Log { level: String, data: Value, logger: Option<String> },
    /// Close the event stream the call answers on, for the client to come back for the rest
    /// (`ctx.closeStream()`; MCP's SSE polling).
    CloseStream,
}

/// The JSON a host sends for an event: `{ progress, total?, message? }` or
/// `{ level, data, logger? }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ToolEventJson {
    Close {
        #[serde(rename = "closeStream")]
        close_stream: bool,
    },
    Progress {
        progress: f64,
        #[serde(default)]
        total: Option<f64>,
        #[serde(default)]
        message: Option<String>,
    },
    Log {
        level: String,
        #[serde(default)]
        data: Value,
        #[serde(default)]
        logger: Option<String>,
    },
}

/// The MCP log levels, least severe first (RFC 5424's, as MCP names them).
pub const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

impl ToolEvent {
    /// An event from its JSON. A progress needs a finite number; a log a known level.
    pub fn from_json(text: &str) -> Result<ToolEvent> {
        let bad = |why: &str| crate::error::Error::Type(why.to_string());
        let e: ToolEventJson = serde_json::from_str(text).map_err(|_| {
            bad("ctx.progress takes (progress: number, total?: number, message?: string); ctx.log takes (level, data, logger?)")
        })?;
        Ok(match e {
            ToolEventJson::Close { close_stream: true } => ToolEvent::CloseStream,
            ToolEventJson::Close { .. } => return Err(bad("closeStream must be true")),
            ToolEventJson::Progress { progress, total, message } => {
                if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
                    return Err(bad("ctx.progress: progress and total must be finite numbers"));
                }
                ToolEvent::Progress { progress, total, message }
            }
            ToolEventJson::Log { level, data, logger } => {
                if !LOG_LEVELS.contains(&level.as_str()) {
                    return Err(bad(&format!("ctx.log: unknown level {level:?} (one of {})", LOG_LEVELS.join(", "))));
                }
                ToolEvent::Log { level, data, logger }
            }
        })
    }
}

impl ToolEvent {
    /// The report's own fields, as every listener is told them: `progress, total?, message?` or
    /// `level, data, logger?` (a `CloseStream` has none).
    pub fn fields_into(&self, m: &mut serde_json::Map<String, Value>) {
        match self {
            ToolEvent::Progress { progress, total, message } => {
                m.insert("progress".into(), serde_json::json!(progress));
                if let Some(t) = total {
                    m.insert("total".into(), serde_json::json!(t));
                }
                if let Some(text) = message {
                    m.insert("message".into(), text.as_str().into());
                }
            }
            ToolEvent::Log { level, data, logger } => {
                m.insert("level".into(), level.as_str().into());
                m.insert("data".into(), data.clone());
                if let Some(name) = logger {
                    m.insert("logger".into(), name.as_str().into());
                }
            }
            ToolEvent::CloseStream => {}
        }
    }
}

/// Who called a tool, as far as the tool can reach back: an MCP client that takes its events
/// (`ctx.progress`, `ctx.log`) and answers its requests (`ctx.sample`; a `pending` it returns
/// becomes an elicitation).
#[async_trait]
pub trait Caller: Send + Sync {
    /// Send an event; one the caller does not take goes nowhere.
    fn event(&self, event: ToolEvent);
    /// Whether the caller takes requests of a kind: `"elicitation"`, `"elicitation.url"`
    /// (URL-mode elicitation), `"sampling"`.
    fn offers(&self, what: &str) -> bool;
    /// Ask the caller: an MCP request (`method`, `params`) whose result is the answer. `Err`
    /// when the caller cannot answer (it does not offer the method, it refused, it left).
    async fn request(&self, method: &str, params: Value) -> Result<Value>;
}

/// Where a call's events and requests go.
pub type EventSink = Arc<dyn Caller>;

/// Optional context a caller hands to `execute`.
#[derive(Clone, Default)]
pub struct ToolContext {
    /// Fires when the caller gives up.
    pub cancel: Option<CancellationToken>,
    /// The caller's budget in milliseconds.
    pub timeout: Option<f64>,
    /// The resolution of a prior suspension; present only on the post-`waitFor` retry (§10).
    pub answer: Option<Value>,
    /// Where the call's progress and log events go; without one they go nowhere.
    pub events: Option<EventSink>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cancel", &self.cancel)
            .field("timeout", &self.timeout)
            .field("answer", &self.answer)
            .field("events", &self.events.is_some())
            .finish()
    }
}

/// The JSON of a call's context: `{ answer?, timeout? }`.
#[derive(Deserialize, Default)]
struct ContextJson {
    /// `null` is no answer.
    #[serde(default)]
    answer: Option<Value>,
    #[serde(default, deserialize_with = "crate::options::number_only")]
    timeout: Option<f64>,
}

impl ToolContext {
    /// A call's context from the JSON of `{ answer?, timeout? }` (anything but an object is
    /// none); the cancel token, if any, is the host's to attach.
    pub fn from_json(text: &str) -> Result<ToolContext> {
        let c: ContextJson = crate::options::parse_object(text, "ctx")?.unwrap_or_default();
        Ok(ToolContext { cancel: None, timeout: c.timeout, answer: c.answer, events: None })
    }
}

/// What every tool declares of itself, whatever it came from: the fields a model and a host see.
#[derive(Debug, Clone)]
pub struct ToolDecl {
    pub name: Cow<'static, str>,
    pub description: Cow<'static, str>,
    /// A JSON-Schema object.
    pub input_schema: Value,
    /// "mcp" | "skill" | "builtin" | "native" | "http" | "a2a" | "custom" | ...
    pub source: Cow<'static, str>,
    /// The JSON Schema of the tool's structured result, when it declares one (served over MCP
    /// as `outputSchema`).
    pub output_schema: Option<Value>,
}

impl ToolDecl {
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        input_schema: Value,
        source: impl Into<Cow<'static, str>>,
    ) -> ToolDecl {
        ToolDecl {
            name: name.into(),
            description: description.into(),
            input_schema,
            source: source.into(),
            output_schema: None,
        }
    }

    /// The same declaration with the output schema `schema`.
    pub fn with_output_schema(mut self, schema: Option<Value>) -> ToolDecl {
        self.output_schema = schema;
        self
    }
}

/// One tool, whatever it came from (a host function, an MCP server, a builtin...). A tool
/// holds one [`ToolDecl`]; the four accessors read it.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's declaration.
    fn decl(&self) -> &ToolDecl;
    fn name(&self) -> &str {
        &self.decl().name
    }
    fn description(&self) -> &str {
        &self.decl().description
    }
    /// A JSON-Schema object.
    fn input_schema(&self) -> &Value {
        &self.decl().input_schema
    }
    /// "mcp" | "skill" | "builtin" | "native" | "http" | "a2a" | "custom" | ...
    fn source(&self) -> &str {
        &self.decl().source
    }
    /// The JSON Schema of the structured result, when the tool declares one.
    fn output_schema(&self) -> Option<&Value> {
        self.decl().output_schema.as_ref()
    }
    /// Run the tool. `Err` means the tool itself broke in a way that is not a result
    /// (a host callback that threw outside any wrapper); ordinary failures are
    /// `Ok(ToolResult { is_error: true, .. })`.
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult>;
    /// Whether `execute` is light enough to run on a host's event-loop thread: true for tools
    /// that only call back into the host. Others are moved to the runtime when a host polls
    /// a run on its own thread (see `host_thread`).
    fn light(&self) -> bool {
        false
    }
    /// For hosts that need to recognise their own tools again.
    fn as_any(&self) -> &dyn Any;
}

pub type SharedTool = Arc<dyn Tool>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_from_json() {
        let c = ToolContext::from_json(r#"{"answer": {"ok": true}, "timeout": 50, "other": 1}"#).unwrap();
        assert_eq!((c.answer, c.timeout), (Some(serde_json::json!({"ok": true})), Some(50.0)));
        assert!(c.cancel.is_none());
        let c = ToolContext::from_json(r#"{"answer": null, "timeout": "50"}"#).unwrap();
        assert_eq!((c.answer, c.timeout), (None, None));
        for text in ["{}", "null", "[1]"] {
            let c = ToolContext::from_json(text).unwrap();
            assert_eq!((c.answer, c.timeout), (None, None));
        }
        assert!(ToolContext::from_json("{").unwrap_err().to_string().starts_with("ctx: invalid JSON ("));
    }
}
