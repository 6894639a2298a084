//! Node-API binding for the toolnexus core. Values cross as JSON text once per call;
//! JS callbacks are bridged with weak threadsafe functions (see `bridge`). No logic here.

mod a2a;
mod agents;
mod bridge;
mod cancel;
mod client;
mod coretool;
mod dispatch;
mod fetch_seam;
mod httptool;
mod mcp;
mod mcpserve;
mod memory_store;
mod options_doc;
mod pin;
mod runtime;
mod serve;
mod skills;
mod toolkit;
mod translate;
mod url_conversations;
#[cfg(unix)]
mod uvio;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::{adapters, json, types};

/// A bridged callback's late answer (see `dispatch`): its JSON text.
#[napi]
pub fn reply(env: &Env, id: u32, json: String) {
    dispatch::reply(env, id, Ok(json));
}

/// Route this environment's `[toolnexus] …` warnings to `f` (index.js passes one that calls
/// `console.warn`, looked up at each call).
#[napi(js_name = "setWarn")]
pub fn set_warn(env: &Env, f: dispatch::JsFn) -> Result<()> {
    dispatch::set_warn(env, f)
}

/// `makeError(shape)`: the error `{ name, message, fields?, cause? }` describes (JSON), made as
/// every error the core rejects with is made (see `dispatch::error`); for values that reach a
/// callback carrying an error (`onError`'s `info.error`).
#[napi(js_name = "makeError", ts_return_type = "Error")]
pub fn make_error(env: &Env, shape: String) -> Result<Unknown<'_>> {
    let shape = parse_json(&shape, "makeError")?;
    // SAFETY: a call from JavaScript, on the environment's thread inside its scope.
    match unsafe { dispatch::error::make(env.raw(), &shape) } {
        // SAFETY: a live value of `env`, made just above in this call's scope.
        Some(v) => Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), v) }),
        None => Err(dispatch::error::plain("makeError: the error could not be made")),
    }
}

/// A bridged callback's late failure: the value it rejected with, kept as it is.
#[napi(js_name = "replyError")]
pub fn reply_error(env: &Env, id: u32, error: Unknown) {
    dispatch::reply(env, id, Err(Error::from_unknown_without_coercion(error)));
}

pub(crate) fn parse_json(text: &str, what: &str) -> Result<Value> {
    toolnexus_core::json::parse_str(text).map_err(|e| dispatch::error::plain(format!("{what}: invalid JSON ({e})")))
}

/// Parse JSON from JavaScript and hand the value to `f`, which runs (and drops what it holds)
/// with stack for the deepest value seen so far, this one included.
pub(crate) fn with_json<R>(text: &str, what: &str, f: impl FnOnce(Value) -> Result<R>) -> Result<R> {
    let v = parse_json(text, what)?;
    deep(move || f(v))
}

/// Work over values that may be deep, with the stack for them (see `json::on_deep_stack`).
pub(crate) fn deep<R>(f: impl FnOnce() -> R) -> R {
    toolnexus_core::json::on_deep_stack(f)
}

pub(crate) fn core_err(e: toolnexus_core::Error) -> Error {
    bridge::to_napi(e)
}

/// `pending(request)`: the request as JSON in, the suspension ToolResult as JSON out.
#[napi(js_name = "pending")]
pub fn pending_json(request: String) -> Result<String> {
    with_json(&request, "pending", |v| {
        let r = types::pending_value(v).map_err(core_err)?;
        Ok(json::to_string(&r.to_value()))
    })
}

#[napi(js_name = "authRequired")]
pub fn auth_required_json(url: String, prompt: Option<String>) -> String {
    types::auth_required(&url, prompt.as_deref()).to_value().to_string()
}

#[napi]
pub fn sanitize(value: String) -> String {
    types::sanitize(&value)
}

/// `toOpenAI` / `toAnthropic` / `toGemini` over tool declarations given as JSON.
#[napi(js_name = "adapt")]
pub fn adapt(style: String, tools: String) -> Result<String> {
    with_json(&tools, "tools", |v| {
        let out = adapters::adapt_values(&style, v).map_err(core_err)?;
        Ok(json::to_string(&Value::Array(out)))
    })
}

/// The schema `defineTool` gives a tool that declares none.
#[napi(js_name = "emptySchema")]
pub fn empty_schema() -> String {
    toolnexus_core::fn_tool::empty_schema().to_string()
}

/// Every Rust allocation of the addon goes through mimalloc: the loop allocates and frees many
/// small JSON values across the runtime's threads, where glibc's malloc spends its time
/// consolidating and keeps per-thread arenas growing.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
