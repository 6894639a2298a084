//! A tool the core owns (MCP, builtins...), handed to JavaScript as a plain Tool object.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Map, Value};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::ToolContext;

use crate::{core_err, parse_json};

#[napi]
pub struct NativeTool {
    pub(crate) inner: SharedTool,
}

impl NativeTool {
    pub(crate) fn new(inner: SharedTool) -> Self {
        NativeTool { inner }
    }
}

/// `{ answer?, timeout? }` as JSON, the way `index.js` hands a ToolContext over.
pub(crate) fn tool_context(ctx: Option<String>) -> Result<ToolContext> {
    let Some(c) = ctx else { return Ok(ToolContext::default()) };
    let c = parse_json(&c, "ctx")?;
    Ok(ToolContext {
        answer: c.get("answer").cloned().filter(|a| !a.is_null()),
        timeout: c.get("timeout").and_then(Value::as_f64),
        cancel: None,
    })
}

#[napi]
impl NativeTool {
    /// `{ name, description, inputSchema, source }` as JSON.
    #[napi]
    pub fn decl(&self) -> String {
        let t = &self.inner;
        let mut m = Map::with_capacity(4);
        m.insert("name".into(), Value::String(t.name().into()));
        m.insert("description".into(), Value::String(t.description().into()));
        m.insert("inputSchema".into(), t.input_schema().clone());
        m.insert("source".into(), Value::String(t.source().into()));
        Value::Object(m).to_string()
    }

    /// Run the tool; resolves with the ToolResult as JSON.
    #[napi]
    pub async fn execute(&self, args: String, ctx: Option<String>) -> Result<String> {
        let args = parse_json(&args, "args")?;
        let args = if args.is_null() { Value::Object(Map::new()) } else { args };
        let ctx = tool_context(ctx)?;
        let r = self.inner.execute(args, ctx).await.map_err(core_err)?;
        Ok(r.to_value().to_string())
    }
}
