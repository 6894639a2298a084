//! Tools the core owns (built-ins, skills, HTTP tools...), handed to JavaScript as handles. `index.js` wraps each
//! handle in a plain Tool object; calls come back here with JSON in and JSON out.
// The exported functions are reached from JavaScript only.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Map, Value};
use toolnexus_core::builtins::{self, BuiltinsConfig};
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

    /// Run the tool; resolves with the ToolResult as JSON. `ctx` is the JSON of
    /// `{ answer?, timeout? }`; `cancel` fires when the caller's signal aborts.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn execute(
        &self,
        env: &Env,
        args: String,
        ctx: Option<String>,
        cancel: Option<&CancelToken>,
    ) -> Result<crate::dispatch::JsPromise> {
        let args = parse_json(&args, "args")?;
        let ctx = tool_context(ctx, cancel)?;
        let tool = self.inner.clone();
        crate::dispatch::promise(env, async move {
            let r = tool.execute(args, ctx).await.map_err(core_err)?;
            Ok(r.to_value().to_string())
        })
    }
}

/// The core's ToolContext from the JSON of `{ answer?, timeout? }` and an optional cancel token.
pub(crate) fn tool_context(ctx: Option<String>, cancel: Option<&CancelToken>) -> Result<ToolContext> {
    let mut out = ToolContext { cancel: cancel.map(CancelToken::token), ..Default::default() };
    if let Some(c) = ctx {
        let c = parse_json(&c, "ctx")?;
        out.answer = c.get("answer").cloned().filter(|a| !a.is_null());
        out.timeout = c.get("timeout").and_then(Value::as_f64);
    }
    Ok(out)
}

fn handles(tools: Vec<SharedTool>) -> Vec<NativeTool> {
    tools.into_iter().map(NativeTool::new).collect()
}

fn config(cfg_json: Option<String>) -> Result<BuiltinsConfig> {
    let value = match cfg_json {
        None => None,
        Some(text) => Some(parse_json(&text, "builtins config")?),
    };
    Ok(BuiltinsConfig::lenient(value.as_ref()))
}

/// All ten built-in tools, in their fixed order.
#[napi(js_name = "createBuiltinTools")]
pub fn create_builtin_tools() -> Vec<NativeTool> {
    handles(builtins::create_builtin_tools())
}

/// The built-in tools a `builtins` value (as JSON; absent for `undefined`) selects.
#[napi(js_name = "selectBuiltins")]
pub fn select_builtins(cfg_json: Option<String>) -> Result<Vec<NativeTool>> {
    Ok(handles(builtins::select(&config(cfg_json)?)))
}

/// Whether a `builtins` value (as JSON; absent for `undefined`) leaves the source on.
#[napi(js_name = "builtinsEnabled")]
pub fn builtins_enabled(cfg_json: Option<String>) -> Result<bool> {
    Ok(builtins::builtins_enabled(&config(cfg_json)?))
}
