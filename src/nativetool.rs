//! Tools the core owns (skills, HTTP, builtins...), handed to JavaScript. `index.js` wraps
//! each handle into a plain Tool object (`wrapNative`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Map, Value};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::ToolContext;

use crate::client::CancelToken;
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

/// A call's context from its JSON (`{ answer?, timeout? }`) and an optional cancel token.
pub(crate) fn tool_context(ctx: Option<String>, cancel: Option<&CancelToken>) -> Result<ToolContext> {
    let mut out = ToolContext { cancel: cancel.map(|c| c.abort.token()), ..Default::default() };
    if let Some(c) = ctx {
        let c = parse_json(&c, "ctx")?;
        out.answer = c.get("answer").cloned().filter(|a| !a.is_null());
        out.timeout = c.get("timeout").and_then(Value::as_f64);
    }
    Ok(out)
}

#[napi]
impl NativeTool {
    /// `{ name, description, inputSchema, source }` as JSON.
    #[napi]
    pub fn decl(&self) -> String {
        let t = &self.inner;
        let mut m = Map::with_capacity(4);
        m.insert("name".into(), Value::String(t.name().to_string()));
        m.insert("description".into(), Value::String(t.description().to_string()));
        m.insert("inputSchema".into(), t.input_schema().clone());
        m.insert("source".into(), Value::String(t.source().to_string()));
        Value::Object(m).to_string()
    }

    /// Run the tool: arguments and context as JSON, the ToolResult as JSON. The token, when
    /// given, is the caller's AbortSignal.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn execute<'env>(
        &self,
        env: &'env Env,
        args: String,
        ctx: Option<String>,
        cancel: Option<&CancelToken>,
    ) -> Result<PromiseRaw<'env, String>> {
        let args = parse_json(&args, "args")?;
        let ctx = tool_context(ctx, cancel)?;
        let tool = self.inner.clone();
        env.spawn_future(async move {
            let r = tool.execute(args, ctx).await.map_err(core_err)?;
            Ok(r.to_value().to_string())
        })
    }
}
