//! The `agents` namespace: the compactor, the token estimate, a persona's soul and its
//! `memory` tool. `index.js` puts them together into one plain object.

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use std::path::Path;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{json, Value};
use toolnexus_core::agents::{compaction, home, Compactor, CompactorOptions};
use toolnexus_core::client::Style;
use toolnexus_core::json;

use crate::bridge::{JsCallback, JsonFn};
use crate::nativetool::NativeTool;
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
        _ => Err(Error::from_reason("estimateTokens: `messages` must be an array")),
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
    /// `options` is the JSON of the plain options; the callbacks come bridged by `index.js`.
    #[napi(constructor)]
    pub fn new(options: String, summarize: JsonFn, count_tokens: Option<JsonFn>) -> Result<Self> {
        let opts = CompactorOptions::from_json(&options).map_err(core_err)?;
        let summarize = Arc::new(JsCallback(summarize));
        let count = count_tokens.map(|f| Arc::new(JsCallback(f)) as _);
        Ok(NativeCompactor { inner: Arc::new(Compactor::new(opts, summarize, count)) })
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

impl NativeCompactor {
    /// This compactor as the `beforeLLM` hook of a client of `style`.
    pub(crate) fn hook(&self, style: Style) -> toolnexus_core::callback::SharedCallback {
        self.inner.hook(Some(style))
    }
}
