//! The `agents` namespace: the compactor, the token estimate, a persona's soul and its
//! `memory` tool, the completion gate and the guardrails. `index.js` puts them together into
//! one plain object.

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use std::path::Path;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{json, Value};
use toolnexus_core::agents::{compaction, gate, home, Compactor};
use toolnexus_core::callback::SharedCallback;
use toolnexus_core::client::hooks::HostDialectHook;
use toolnexus_core::client::Style;
use toolnexus_core::json;

use crate::bridge::JsonFn;
use crate::coretool::NativeTool;
use crate::dispatch::Crossed;
use crate::options_doc::Shared;
use crate::{core_err, with_json};

/// The namespace's constants, as JSON: `{ BOOTSTRAP_ORDER, MAX_FILE_BYTES, TRUNCATION_NOTICE,
/// HEARTBEAT_OK, HEARTBEAT_PROMPT }`.
#[napi(js_name = "agentConstants")]
pub fn agent_constants() -> String {
    json!({
        "BOOTSTRAP_ORDER": home::BOOTSTRAP_ORDER,
        "MAX_FILE_BYTES": home::MAX_FILE_BYTES,
        "TRUNCATION_NOTICE": home::TRUNCATION_NOTICE,
        "HEARTBEAT_OK": home::HEARTBEAT_OK,
        "HEARTBEAT_PROMPT": home::HEARTBEAT_PROMPT,
    })
    .to_string()
}

/// `estimateTokens(messages)` over the messages' JSON.
#[napi(js_name = "estimateTokens")]
pub fn estimate_tokens(messages: String) -> Result<f64> {
    with_json(&messages, "messages", |v| match v {
        Value::Array(m) => Ok(compaction::estimate_tokens(&m)),
        _ => Err(crate::dispatch::error::plain("estimateTokens: `messages` must be an array")),
    })
}

/// `composeSoul(dir)`: `{ soul, found }` as JSON.
#[napi(js_name = "composeSoul")]
pub fn compose_soul(dir: String) -> String {
    let s = home::compose_soul(Path::new(&dir));
    json::to_string(&json!({ "soul": s.soul, "found": s.found }))
}

/// `memoryTool(dir)`: the core's `memory` tool over `dir`.
#[napi(js_name = "memoryTool")]
pub fn memory_tool(dir: String) -> NativeTool {
    NativeTool::new(home::memory_tool(dir))
}

/// A compactor: the core's rewrite with the host's `summarize` (and `countTokens`).
#[napi]
pub struct NativeCompactor {
    pub(crate) inner: Arc<Compactor>,
}

#[napi]
impl NativeCompactor {
    /// `options` is the whole options document (see `options_doc`): its JSON, the functions and
    /// the addon objects its markers name.
    #[napi(constructor)]
    pub fn new(options: String, fns: Vec<JsonFn>, objects: Vec<ExternalRef<Shared>>) -> Result<Self> {
        let inner = crate::options_doc::read(fns, objects, || Compactor::from_json(&options)).map_err(core_err)?;
        Ok(NativeCompactor { inner: Arc::new(inner) })
    }

    /// One `beforeLLM` event (as JSON) in; the JSON of `{ messages }` or `null` out.
    /// `style` is the dialect when known (`"openai"` / `"anthropic"`), read off the
    /// transcript otherwise.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn run(&self, env: &Env, event: String, style: Option<String>) -> Result<crate::dispatch::JsPromise> {
        let ev = crate::parse_json(&event, "event")?;
        let style = style.map(|s| if s == "anthropic" { Style::Anthropic } else { Style::OpenAI });
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            let out = inner.on_event(&ev, style).await.map_err(core_err)?;
            Ok(json::to_string(&out))
        })
    }
}

#[napi]
impl NativeCompactor {
    /// This compactor as an options document names it: a `beforeLLM` hook told its client's
    /// dialect.
    #[napi(ts_return_type = "ExternalObject<unknown>")]
    pub fn shared(&self) -> External<crate::options_doc::Shared> {
        let hook = HostDialectHook(Arc::new(self.inner.clone()));
        External::new(crate::options_doc::Shared(Arc::new(hook)))
    }
}

/// `runGated(ask, prompt, completion)`: the core's completion gate over the host's `ask` (a
/// prompt in, a RunResult out). `options` is the document `{ ask, completion }` (see
/// `options_doc`). Resolves with the RunResult.
#[napi(js_name = "runGated", ts_return_type = "Promise<string | string[]>")]
pub fn run_gated(
    env: &Env,
    options: String,
    fns: Vec<JsonFn>,
    objects: Vec<ExternalRef<Shared>>,
    prompt: String,
) -> Result<crate::dispatch::JsPromise> {
    let (ask, completion) =
        crate::options_doc::read(fns, objects, || gate::gated_from_json(&options)).map_err(core_err)?;
    crate::dispatch::local_promise(env, async move {
        let each = |p: String| {
            let ask = ask.clone();
            async move { gate::result_from_value(ask.call(Value::String(p)).await?) }
        };
        let r = gate::run_gated(each, &prompt, Some(&completion)).await.map_err(core_err)?;
        Ok(Crossed::of(r.into_value()))
    })
}

/// `allTodosDone(result)`: the built-in verdict over a RunResult's JSON, as JSON.
#[napi(js_name = "allTodosDone")]
pub fn all_todos_done(result: String) -> Result<String> {
    with_json(&result, "result", |v| Ok(json::to_string(&gate::all_todos_done(&v))))
}

/// Guardrails compiled into one `beforeTool` (first refusal wins), ahead of `prior`.
#[napi]
pub struct NativeGuard {
    inner: Option<SharedCallback>,
}

#[napi]
impl NativeGuard {
    /// `options` is the document `{ guardrails, beforeTool }` (see `options_doc`).
    #[napi(constructor)]
    pub fn new(options: String, fns: Vec<JsonFn>, objects: Vec<ExternalRef<Shared>>) -> Result<Self> {
        let inner = crate::options_doc::read(fns, objects, || gate::guards_from_json(&options)).map_err(core_err)?;
        Ok(NativeGuard { inner })
    }

    /// One `beforeTool` event (as JSON) in; the JSON of the hook's answer (`null` for none) out.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn run(&self, env: &Env, event: String) -> Result<crate::dispatch::JsPromise> {
        let ev = crate::parse_json(&event, "event")?;
        let inner = self.inner.clone();
        crate::dispatch::local_promise(env, async move {
            let out = match inner {
                Some(h) => h.call(ev).await.map_err(core_err)?,
                None => Value::Null,
            };
            Ok(json::to_string(&out))
        })
    }
}
