//! Native tools (SPEC §6): a plain function becomes a Tool.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::error::Result;
use crate::tool::{Tool, ToolContext};
use crate::types::ToolResult;

/// What a tool function gave back, classified by the host that ran it.
#[derive(Debug, Clone)]
pub enum RunOutput {
    /// A string: it is the output.
    Text(String),
    /// Something with both `output` and `isError`: it passes through unchanged.
    Result(ToolResult),
    /// Anything else, already encoded as JSON by the host; `None` where the host's
    /// encoder produced nothing (JavaScript's `JSON.stringify(undefined)`).
    Encoded(Option<String>),
    /// The function threw (or rejected); the text is the error's message.
    Thrown(String),
}

/// The §6 rules: a string is the output, a result passes through, anything else is
/// its JSON text, a throw is an error result carrying the message.
pub fn run_output_to_result(out: RunOutput) -> ToolResult {
    match out {
        RunOutput::Text(s) => ToolResult::ok(s),
        RunOutput::Result(r) => r,
        RunOutput::Encoded(Some(s)) => ToolResult::ok(s),
        RunOutput::Encoded(None) => ToolResult::ok(""),
        RunOutput::Thrown(msg) => ToolResult::error(msg),
    }
}

/// The schema a tool gets when it declares none: valid for every provider.
pub fn empty_schema() -> Value {
    json!({ "type": "object", "properties": {}, "additionalProperties": false })
}

type BoxFut = Pin<Box<dyn Future<Output = RunOutput> + Send>>;
type RunFn = dyn Fn(Value, ToolContext) -> BoxFut + Send + Sync;

/// A tool backed by a Rust closure.
pub struct FnTool {
    name: String,
    description: String,
    input_schema: Value,
    source: String,
    run: Arc<RunFn>,
}

impl FnTool {
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Option<Value>,
        run: F,
    ) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RunOutput> + Send + 'static,
    {
        FnTool {
            name: name.into(),
            description: description.into(),
            input_schema: input_schema.unwrap_or_else(empty_schema),
            source: "native".into(),
            run: Arc::new(move |a, c| Box::pin(run(a, c))),
        }
    }

    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }
}

#[async_trait]
impl Tool for FnTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> &Value {
        &self.input_schema
    }
    fn source(&self) -> &str {
        &self.source
    }
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        let args = if args.is_null() { json!({}) } else { args };
        Ok(run_output_to_result((self.run)(args, ctx).await))
    }
    fn light(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_outputs_map_per_the_rules() {
        assert_eq!(run_output_to_result(RunOutput::Text("hi".into())), ToolResult::ok("hi"));
        assert_eq!(run_output_to_result(RunOutput::Encoded(Some("2".into()))), ToolResult::ok("2"));
        assert_eq!(run_output_to_result(RunOutput::Encoded(None)), ToolResult::ok(""));
        assert_eq!(run_output_to_result(RunOutput::Thrown("boom".into())), ToolResult::error("boom"));
        let r = ToolResult { output: "x".into(), is_error: true, metadata: Some(json!({"code": 1})) };
        assert_eq!(run_output_to_result(RunOutput::Result(r.clone())), r);
    }

    #[tokio::test]
    async fn fn_tools_default_their_schema_and_args() {
        let t = FnTool::new("echo", "Echo", None, |args, _| async move { RunOutput::Text(args.to_string()) });
        assert_eq!(t.input_schema(), &empty_schema());
        assert_eq!(t.source(), "native");
        let r = t.execute(Value::Null, ToolContext::default()).await.unwrap();
        assert_eq!(r.output, "{}");
    }
}
