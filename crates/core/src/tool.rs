//! The uniform tool abstraction (SPEC §1).

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
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

impl ToolContext {
    /// The context a host hands over as JSON, `{ answer?, timeout? }`: a null `answer` is none,
    /// a `timeout` that is not a number is none; anything else is ignored.
    pub fn from_value(v: &Value) -> ToolContext {
        ToolContext {
            cancel: None,
            timeout: v.get("timeout").and_then(Value::as_f64),
            answer: v.get("answer").filter(|a| !a.is_null()).cloned(),
        }
    }
}

/// One tool, whatever it came from (a host function, an MCP server, a builtin...).
#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// A JSON-Schema object.
    fn input_schema(&self) -> &Value;
    /// "mcp" | "skill" | "builtin" | "native" | "http" | "a2a" | "custom" | ...
    fn source(&self) -> &str;
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
    use serde_json::json;

    #[test]
    fn a_context_from_json_keeps_a_non_null_answer_and_a_numeric_timeout() {
        let c = ToolContext::from_value(&json!({"answer": {"ok": true}, "timeout": 1500}));
        assert_eq!(c.answer, Some(json!({"ok": true})));
        assert_eq!(c.timeout, Some(1500.0));
        assert!(c.cancel.is_none());
        let c = ToolContext::from_value(&json!({"answer": null, "timeout": "5"}));
        assert_eq!(c.answer, None);
        assert_eq!(c.timeout, None);
        let c = ToolContext::from_value(&json!(null));
        assert!(c.answer.is_none() && c.timeout.is_none());
    }
}
