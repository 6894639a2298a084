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

/// Optional context a caller hands to `execute`.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    /// Fires when the caller gives up.
    pub cancel: Option<CancellationToken>,
    /// The caller's budget in milliseconds.
    pub timeout: Option<f64>,
    /// The resolution of a prior suspension; present only on the post-`waitFor` retry (§10).
    pub answer: Option<Value>,
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
        Ok(ToolContext { cancel: None, timeout: c.timeout, answer: c.answer })
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
}

impl ToolDecl {
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        input_schema: Value,
        source: impl Into<Cow<'static, str>>,
    ) -> ToolDecl {
        ToolDecl { name: name.into(), description: description.into(), input_schema, source: source.into() }
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
    /// Run the tool. `Err` means the tool itself broke in a way that is not a result
    /// (a host callback that threw outside any wrapper); ordinary failures are
    /// `Ok(ToolResult { is_error: true, .. })`.
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult>;
    /// Whether `execute` is light enough to run on a host's event-loop thread: true for tools
    /// that only call back into the host. Others are moved to the runtime when a host polls
    /// a run on its own thread (see `host`).
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
