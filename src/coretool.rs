//! Tools the core owns (built-ins, skills, HTTP tools...), handed to JavaScript as handles. `index.js` wraps each
//! handle in a plain Tool object; calls come back here with JSON in and JSON out.
// The exported functions are reached from JavaScript only.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Map, Value};
use toolnexus_core::builtins::{self, BuiltinsConfig};
use toolnexus_core::jsstr;
use toolnexus_core::tool::SharedTool;
use toolnexus_core::{ToolContext, ToolResult};

use crate::cancel::CancelToken;
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
        crate::deep(|| {
            let mut m = Map::with_capacity(4);
            m.insert("name".into(), Value::String(t.name().into()));
            m.insert("description".into(), Value::String(t.description().into()));
            m.insert("inputSchema".into(), t.input_schema().clone());
            m.insert("source".into(), Value::String(t.source().into()));
            toolnexus_core::json::to_string(&Value::Object(m))
        })
    }

    /// Run the tool; resolves with the ToolResult as JSON. `ctx` is the JSON of
    /// `{ answer?, timeout? }`; `cancel` fires when the caller's signal aborts.
    #[napi(ts_return_type = "Promise<string | [string, string]>")]
    pub fn execute(
        &self,
        env: &Env,
        args: String,
        ctx: Option<String>,
        cancel: Option<&CancelToken>,
    ) -> Result<crate::dispatch::JsPromise> {
        let tool = self.inner.clone();
        call(
            env,
            tool.name().to_string(),
            &args,
            ctx,
            cancel,
            move |args, ctx| async move { tool.execute(args, ctx).await },
        )
    }
}

/// A ToolResult on its way to JavaScript: the JSON of the whole, or, for a long output, the
/// JSON of the rest (`output: ""`) and the output as a string of its own. The output then
/// crosses without JSON's escapes and in an encoding V8 takes at its length, so whatever fits
/// in a JavaScript string gets there; what does not becomes the error the reference's string
/// building throws, never a failed conversion.
pub(crate) type Crossing = Either<String, (String, Either<String, Utf16String>)>;

/// Outputs longer than this (in bytes) cross on their own.
const SPLIT_ABOVE: usize = 1 << 20;

pub(crate) fn crossing(name: &str, r: ToolResult) -> Crossing {
    let too_long = || ToolResult::error(format!("{name}: {}", jsstr::INVALID_LENGTH));
    let r = if jsstr::fits(&r.output) { r } else { too_long() };
    if r.output.len() <= SPLIT_ABOVE {
        let whole = r.to_value().to_string();
        return Either::A(if whole.len() <= jsstr::MAX_LENGTH { whole } else { too_long().to_value().to_string() });
    }
    let ToolResult { output, is_error, metadata, rich } = r;
    let rest = ToolResult { output: String::new(), is_error, metadata, rich }.to_value().to_string();
    if rest.len() > jsstr::MAX_LENGTH {
        return Either::A(too_long().to_value().to_string());
    }
    // V8 builds a string from at most MAX_LENGTH bytes of UTF-8; a text with more bytes that
    // still fits in UTF-16 units goes over as UTF-16.
    let output = if output.len() <= jsstr::MAX_LENGTH {
        Either::A(output)
    } else {
        Either::B(Utf16String::from(output.encode_utf16().collect::<Vec<u16>>()))
    };
    Either::B((rest, output))
}

/// A tool call from JavaScript: `args` and `ctx` (`{ answer?, timeout? }`) as JSON, run by
/// `run`; its result crosses as [`crossing`] makes it, named `name` where it is too long.
pub(crate) fn call<F, Fut>(
    env: &Env,
    name: String,
    args: &str,
    ctx: Option<String>,
    cancel: Option<&CancelToken>,
    run: F,
) -> Result<crate::dispatch::JsPromise>
where
    F: FnOnce(Value, ToolContext) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = std::result::Result<ToolResult, toolnexus_core::Error>> + Send + 'static,
{
    let args = parse_json(args, "args")?;
    let ctx = tool_context(ctx, cancel)?;
    crate::dispatch::promise(env, async move {
        let r = run(args, ctx).await.map_err(core_err)?;
        Ok(crossing(&name, r))
    })
}

/// The core's ToolContext from the JSON of `{ answer?, timeout? }` and an optional cancel token.
pub(crate) fn tool_context(ctx: Option<String>, cancel: Option<&CancelToken>) -> Result<ToolContext> {
    let mut out = match ctx {
        Some(c) => ToolContext::from_json(&c).map_err(core_err)?,
        None => ToolContext::default(),
    };
    out.cancel = cancel.map(CancelToken::token);
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

/// A progress or log event a JavaScript tool reports during call `call` (`ctx.progress`,
/// `ctx.log`), as JSON; a malformed one is a `TypeError` for the tool.
#[napi(js_name = "toolEvent")]
pub fn tool_event(call: f64, event: String) -> Result<()> {
    toolnexus_core::callback_tool::report(call as u64, &event).map_err(core_err)
}

/// A request a JavaScript tool makes of its MCP caller during call `call` (`ctx.sample`):
/// `method` and its params as JSON; the caller's answer as JSON.
#[napi(js_name = "toolAsk", ts_return_type = "Promise<string>")]
pub fn tool_ask(env: &Env, call: f64, method: String, params: String) -> Result<crate::dispatch::JsPromise> {
    let params = parse_json(&params, "ctx.sample")?;
    crate::dispatch::promise(env, async move {
        let answer = toolnexus_core::callback_tool::ask(call as u64, &method, params).await.map_err(core_err)?;
        Ok(answer.to_string())
    })
}
