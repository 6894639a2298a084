//! Bridges from the core's seams to JavaScript functions.
//!
//! Every bridged JS function has one shape, set up by `index.js`: it takes a JSON string
//! and returns a JSON string, or a Promise of one. That keeps one threadsafe-function
//! type for every seam and one JSON hop per crossing.

use std::any::Any;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};
use toolnexus_core::body::ByteStream;
use toolnexus_core::callback::Callback;
use toolnexus_core::client::{ConversationStore, HttpRequest, HttpResponse, StreamResponse, Transport};
use toolnexus_core::{json, Error, HostError, Tool, ToolContext, ToolResult};

/// A JS `(json, replyId) => string | undefined` (see `dispatch`), callable from any thread.
/// Holding it never keeps Node alive; errors come back as `Err`, never as a crash.
pub type JsonFn = crate::dispatch::JsFn;

/// A JS error carried through the core untouched, so the caller gets the original value back.
#[derive(Debug)]
pub struct JsFailure(pub napi::Error);

impl std::fmt::Display for JsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.reason)
    }
}

impl std::error::Error for JsFailure {}

fn host(e: napi::Error) -> Error {
    Error::host(JsFailure(e))
}

/// Call a bridged function with a JSON argument and parse its JSON answer.
pub async fn call_json(f: &JsonFn, arg: impl Into<crate::dispatch::Arg>) -> Result<Value, Error> {
    let text = f.call(arg).await.map_err(host)?;
    let before = json::deepest();
    let out = json::parse_str(&text).map_err(|e| Error::Invalid(format!("a callback answered with invalid JSON: {e}")));
    drop(text);
    json::settle_depth(before).await;
    out
}

/// Turn a core error into the error JS sees: a callback's own error comes back as it was
/// thrown; any other with its class, message, cause and fields (see `dispatch::error`).
pub fn to_napi(e: Error) -> napi::Error {
    match e {
        Error::Host(HostError(inner)) => match inner.downcast::<JsFailure>() {
            Ok(js) => js.0,
            Err(other) => crate::dispatch::error::plain(other.to_string()),
        },
        other => crate::dispatch::error::shaped(other.js_shape()),
    }
}

/// A hook, `waitFor`, or any other value-in, value-out callback.
pub struct JsCallback(pub JsonFn);

#[async_trait]
impl Callback for JsCallback {
    async fn call(&self, arg: Value) -> Result<Value, Error> {
        call_json(&self.0, crate::dispatch::Arg::of(arg)).await
    }

    async fn call_in_place(&self, arg: Value) -> Result<Value, Error> {
        // The JS side answers with its own truthy answer, else the value as the callback left it.
        call_json(&self.0, crate::dispatch::Arg::InPlace(Box::new(crate::dispatch::Arg::of(arg)))).await
    }
}

/// Names the signal a JS tool's call gets when its caller can give up.
static NEXT_SIGNAL: AtomicU64 = AtomicU64::new(1);

/// A tool defined in JavaScript: `{ name, description, inputSchema, source, execute }`.
pub struct JsTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub source: String,
    /// The position of the JS object in the list the host handed over.
    pub slot: u32,
    pub call: JsonFn,
}

#[async_trait]
impl Tool for JsTool {
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
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult, Error> {
        let mut m = serde_json::Map::with_capacity(2);
        m.insert("args".into(), args);
        if let Some(answer) = ctx.answer {
            let mut c = serde_json::Map::with_capacity(2);
            c.insert("answer".into(), answer);
            if let Some(t) = ctx.timeout {
                c.insert("timeout".into(), t.into());
            }
            m.insert("ctx".into(), Value::Object(c));
        }
        let Some(cancel) = ctx.cancel else {
            let out = call_json(&self.call, crate::dispatch::Arg::of(Value::Object(m))).await?;
            return Ok(ToolResult::from_value(out));
        };
        // The caller can give up (an MCP request whose client left): the tool gets a signal of
        // its own (`ctx.signal`), aborted when that happens; its answer is still awaited.
        let id = NEXT_SIGNAL.fetch_add(1, Ordering::Relaxed);
        m.insert("call".into(), id.into());
        let out = call_json(&self.call, crate::dispatch::Arg::of(Value::Object(m)));
        tokio::pin!(out);
        let out = tokio::select! {
            biased;
            out = &mut out => out,
            _ = cancel.cancelled() => {
                self.call.notify(json!({ "abort": id }).to_string());
                out.await
            }
        }?;
        Ok(ToolResult::from_value(out))
    }
    fn light(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The `fetch` option. `index.js` calls the user's fetch and reads the Response: whole for a
/// plain request; for a streaming one it keeps the reader and hands chunks over on `pull`.
pub struct JsTransport(Arc<JsonFn>, AtomicU64);

impl JsTransport {
    pub fn new(f: JsonFn) -> Self {
        JsTransport(Arc::new(f), AtomicU64::new(1))
    }

    async fn open(&self, req: HttpRequest, stream: bool) -> Result<Value, Error> {
        let mut headers = serde_json::Map::with_capacity(req.headers.len());
        for (k, v) in req.headers {
            headers.insert(k, Value::String(v));
        }
        let id = self.1.fetch_add(1, Ordering::Relaxed);
        let arg = json!({ "url": req.url, "headers": headers, "body": req.body, "stream": stream, "req": id });
        // Dropped before the answer (the run was aborted or timed out): abort the user's
        // fetch through the signal it was given.
        let mut abort = AbortOnDrop { f: self.0.clone(), id, armed: true };
        let out = call_json(&self.0, crate::dispatch::Arg::of(arg)).await;
        abort.armed = false;
        out
    }
}

/// Tells JS to abort request `id` when dropped while still armed.
struct AbortOnDrop {
    f: Arc<JsonFn>,
    id: u64,
    armed: bool,
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if self.armed {
            // At once when on the JS thread: the user's fetch sees its signal fire before
            // anything waiting on the aborted run hears of it.
            self.f.notify_now(json!({ "abort": self.id }).to_string());
        }
    }
}

fn status_and_headers(out: &Value) -> Result<(u16, Vec<(String, String)>), Error> {
    let status = out.get("status").and_then(Value::as_u64).unwrap_or(0);
    let status =
        u16::try_from(status).map_err(|_| Error::Invalid(format!("fetch: invalid response status {status}")))?;
    let headers = out
        .get("headers")
        .and_then(Value::as_array)
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|p| Some((p.get(0)?.as_str()?.to_ascii_lowercase(), p.get(1)?.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok((status, headers))
}

/// Pulls a streamed body from JS; tells JS to cancel the reader if dropped early.
struct Pull {
    f: Arc<JsonFn>,
    id: u64,
    done: bool,
}

impl Pull {
    /// The body ended on the JS side: nothing to cancel.
    fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for Pull {
    fn drop(&mut self) {
        if !self.done {
            self.f.notify(json!({ "cancel": self.id }).to_string());
        }
    }
}

#[async_trait]
impl Transport for JsTransport {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse, Error> {
        let out = self.open(req, false).await?;
        let (status, headers) = status_and_headers(&out)?;
        let body = out.get("body").and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(HttpResponse { status, headers, body })
    }

    async fn post_stream(&self, req: HttpRequest) -> Result<StreamResponse, Error> {
        let out = self.open(req, true).await?;
        let (status, headers) = status_and_headers(&out)?;
        let body: ByteStream = match out.get("id").and_then(Value::as_u64) {
            Some(id) => {
                let pull = Pull { f: self.0.clone(), id, done: false };
                Box::pin(futures::stream::unfold(pull, |mut p| async move {
                    if p.done {
                        return None;
                    }
                    match call_json(&p.f, json!({ "pull": p.id }).to_string()).await {
                        Ok(v) => match v.get("chunk").and_then(Value::as_str) {
                            Some(chunk) => Some((Ok(chunk.as_bytes().to_vec()), p)),
                            None => {
                                p.finish();
                                None
                            }
                        },
                        Err(e) => {
                            // The reader failed on the JS side; nothing is left to cancel.
                            p.done = true;
                            Some((Err(e), p))
                        }
                    }
                }))
            }
            None => {
                let text = out.get("body").and_then(Value::as_str).unwrap_or_default().as_bytes().to_vec();
                Box::pin(futures::stream::once(async move { Ok(text) }))
            }
        };
        Ok(StreamResponse { status, headers, body })
    }
}

/// A user's ConversationStore: `get(id)` and `save(id, messages)`, bridged.
pub struct JsStore {
    pub get: JsonFn,
    pub save: JsonFn,
}

#[async_trait]
impl ConversationStore for JsStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<Value>>, Error> {
        match call_json(&self.get, Value::String(id.into()).to_string()).await? {
            Value::Array(items) => Ok(Some(items)),
            Value::Null => Ok(None),
            _ => Err(Error::Invalid("ConversationStore.get must resolve to an array of messages or undefined".into())),
        }
    }

    async fn save(&self, id: &str, messages: Vec<Value>) -> Result<(), Error> {
        call_json(&self.save, crate::dispatch::Arg::of(json!([id, messages]))).await.map(|_| ())
    }
}
