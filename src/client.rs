//! The Client class: options and callbacks in, the core loop behind `run`.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolnexus_core::client::{Client, ClientOptions, Hooks, RunOptions, SharedCallback, Style, Transport};

use crate::bridge::{JsCallback, JsTransport, JsonFn};
use crate::toolkit::NativeToolkit;
use crate::{core_err, parse_json};

/// The JS callbacks a client may carry, each already bridged by `index.js`.
#[napi(object, object_to_js = false)]
pub struct ClientCallbacks {
    pub fetch: Option<JsonFn>,
    pub wait_for: Option<JsonFn>,
    pub before_llm: Option<JsonFn>,
    pub after_llm: Option<JsonFn>,
    pub before_tool: Option<JsonFn>,
    pub after_tool: Option<JsonFn>,
    pub body_transform: Option<JsonFn>,
}

fn cb(f: Option<JsonFn>) -> Option<SharedCallback> {
    f.map(|f| Arc::new(JsCallback(f)) as SharedCallback)
}

/// A cancellation handle a JS AbortSignal listener fires.
#[napi]
pub struct CancelToken {
    token: CancellationToken,
}

#[napi]
impl CancelToken {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        CancelToken {
            token: CancellationToken::new(),
        }
    }

    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }
}

#[napi]
pub struct NativeClient {
    inner: Arc<Client>,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, msg.into())
}

fn opt_string(o: &Value, key: &str) -> Result<Option<String>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("createClient: `{key}` must be a string"))),
    }
}

fn opt_number(o: &Value, key: &str, min: f64) -> Result<Option<f64>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f >= min => Ok(Some(f)),
            _ => Err(bad(format!("createClient: `{key}` must be a number >= {min}"))),
        },
        Some(_) => Err(bad(format!("createClient: `{key}` must be a number"))),
    }
}

#[napi]
impl NativeClient {
    /// `options` is the JSON of the plain options; callbacks come separately.
    #[napi(constructor)]
    pub fn new(options: String, callbacks: ClientCallbacks) -> Result<Self> {
        let o = parse_json(&options, "createClient options")?;
        if !o.is_object() {
            return Err(bad("createClient: options must be an object"));
        }
        let base_url = opt_string(&o, "baseUrl")?
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("createClient: `baseUrl` is required"))?;
        let model = opt_string(&o, "model")?
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("createClient: `model` is required"))?;
        let style = match o.get("style") {
            Some(Value::String(s)) => Style::parse(s).ok_or_else(|| {
                bad(format!(
                    "createClient: `style` must be \"openai\" or \"anthropic\", got {s:?}"
                ))
            })?,
            _ => return Err(bad("createClient: `style` must be \"openai\" or \"anthropic\"")),
        };
        let mut opts = ClientOptions::new(base_url, style, model);
        opts.api_key = opt_string(&o, "apiKey")?;
        opts.system_prompt = opt_string(&o, "systemPrompt")?;
        if let Some(h) = o.get("headers").filter(|h| !h.is_null()) {
            let map = h
                .as_object()
                .ok_or_else(|| bad("createClient: `headers` must be an object of strings"))?;
            for (k, v) in map {
                let v = v
                    .as_str()
                    .ok_or_else(|| bad(format!("createClient: header {k:?} must be a string")))?;
                opts.headers.push((k.clone(), v.to_string()));
            }
        }
        if let Some(n) = opt_number(&o, "maxTurns", 0.0)? {
            opts.max_turns = n as u32;
        }
        if let Some(n) = opt_number(&o, "retries", 0.0)? {
            opts.retries = n as u32;
        }
        if let Some(n) = opt_number(&o, "retryBaseMs", 0.0)? {
            opts.retry_base_ms = n;
        }
        opts.timeout_ms = opt_number(&o, "timeoutMs", 0.0)?.filter(|n| *n > 0.0).map(|n| n as u64);
        if let Some(rp) = o.get("requestParams").filter(|v| !v.is_null()) {
            opts.request_params = Some(
                rp.as_object()
                    .cloned()
                    .ok_or_else(|| bad("createClient: `requestParams` must be an object"))?,
            );
        }
        opts.hooks = Hooks {
            before_llm: cb(callbacks.before_llm),
            after_llm: cb(callbacks.after_llm),
            before_tool: cb(callbacks.before_tool),
            after_tool: cb(callbacks.after_tool),
        };
        opts.wait_for = cb(callbacks.wait_for);
        opts.body_transform = cb(callbacks.body_transform);
        opts.transport = callbacks.fetch.map(|f| Arc::new(JsTransport(f)) as Arc<dyn Transport>);
        let inner = Client::new(opts).map_err(core_err)?;
        Ok(NativeClient { inner: Arc::new(inner) })
    }

    /// Run the loop; resolves with the RunResult as JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        prompt: String,
        toolkit: &NativeToolkit,
        history: Option<String>,
        cancel: Option<&CancelToken>,
    ) -> Result<PromiseRaw<'env, String>> {
        let history = match history {
            None => None,
            Some(h) => match parse_json(&h, "history")? {
                Value::Array(items) => Some(items),
                Value::Null => None,
                _ => return Err(bad("run: `history` must be an array of messages")),
            },
        };
        let client = self.inner.clone();
        let tk = toolkit.inner.clone();
        let ro = RunOptions {
            history,
            cancel: cancel.map(|c| c.token.clone()),
            abort_reason: None,
        };
        env.spawn_future(async move {
            let r = client.run(&prompt, &tk, ro).await.map_err(core_err)?;
            Ok(r.to_value().to_string())
        })
    }
}
