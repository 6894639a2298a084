//! A Rust function as a Tool, and the schema a tool gets when it declares none.
//!
//! `defineTool` (SPEC §6) is JavaScript's: the rule that turns whatever a JS function returned
//! or threw into a ToolResult reads JS values (`typeof`, `"output" in out`, `JSON.stringify`),
//! so it lives once, in `index.js`. A Rust function already answers a `ToolResult`.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::error::Result;
use crate::tool::{Tool, ToolContext, ToolDecl};
use crate::types::ToolResult;

/// The schema a tool gets when it declares none: valid for every provider.
pub fn empty_schema() -> Value {
    json!({ "type": "object", "properties": {}, "additionalProperties": false })
}

type BoxFut = Pin<Box<dyn Future<Output = ToolResult> + Send>>;
type RunFn = dyn Fn(Value, ToolContext) -> BoxFut + Send + Sync;

/// A tool backed by a Rust closure.
pub struct FnTool {
    decl: ToolDecl,
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
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        FnTool {
            decl: ToolDecl::new(name.into(), description.into(), input_schema.unwrap_or_else(empty_schema), "native"),
            run: Arc::new(move |a, c| Box::pin(run(a, c))),
        }
    }

    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.decl.source = std::borrow::Cow::Owned(source.into());
        self
    }
}

#[async_trait]
impl Tool for FnTool {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        let args = if args.is_null() { json!({}) } else { args };
        Ok((self.run)(args, ctx).await)
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

    #[tokio::test]
    async fn fn_tools_default_their_schema_and_args() {
        let t = FnTool::new("echo", "Echo", None, |args, _| async move { ToolResult::ok(args.to_string()) });
        assert_eq!(t.input_schema(), &empty_schema());
        assert_eq!(t.source(), "native");
        let r = t.execute(Value::Null, ToolContext::default()).await.unwrap();
        assert_eq!(r.output, "{}");
    }
}
