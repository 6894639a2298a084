//! The client's seams as host functions: a host `fetch` as the LLM transport, a host store's
//! `get` and `save` as the conversation store. The host's side of each (reading a WHATWG
//! `Response`, calling a store's methods) is the host's; the protocol between them is here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::store::ConversationStore;
use super::transport::{HttpRequest, HttpResponse, StreamResponse, Transport};
use crate::body::ByteStream;
use crate::callback::SharedCallback;
use crate::error::{Error, Result};

/// The `fetch` option. The host's function is called with `{ url, headers, body, stream, req }`
/// and answers `{ status, headers: [[name, value]...], body }`, or for a stream it reads as it
/// arrives `{ status, headers, id }` and then one `{ chunk }` per `{ pull: id }` until
/// `{ done: true }`. It is told `{ abort: req }` when the request is given up before its
/// answer, and `{ cancel: id }` when a stream is left unread.
pub struct HostTransport {
    fetch: SharedCallback,
    next: AtomicU64,
}

impl HostTransport {
    pub fn new(fetch: SharedCallback) -> Self {
        HostTransport { fetch, next: AtomicU64::new(1) }
    }

    async fn open(&self, req: HttpRequest, stream: bool) -> Result<Value> {
        let mut headers = serde_json::Map::with_capacity(req.headers.len());
        for (k, v) in req.headers {
            headers.insert(k, Value::String(v));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let arg = json!({ "url": req.url, "headers": headers, "body": req.body, "stream": stream, "req": id });
        // Dropped before the answer (the run was aborted or timed out): the host aborts its
        // request through the signal it gave it.
        let mut abort = AbortOnDrop { fetch: self.fetch.clone(), id, armed: true };
        let out = self.fetch.call(arg).await;
        abort.armed = false;
        out
    }
}

/// Tells the host to abort request `id` when dropped while still armed.
struct AbortOnDrop {
    fetch: SharedCallback,
    id: u64,
    armed: bool,
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if self.armed {
            // At once where the host can take it: its fetch sees its signal fire before
            // anything waiting on the aborted run hears of it.
            self.fetch.notify_now(json!({ "abort": self.id }));
        }
    }
}

fn status_and_headers(out: &Value) -> Result<(u16, Vec<(String, String)>)> {
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

/// Pulls a streamed body from the host; tells it to cancel the reader if dropped early.
struct Pull {
    fetch: SharedCallback,
    id: u64,
    done: bool,
}

impl Pull {
    /// The body ended on the host's side: nothing to cancel.
    fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for Pull {
    fn drop(&mut self) {
        if !self.done {
            self.fetch.notify(json!({ "cancel": self.id }));
        }
    }
}

#[async_trait]
impl Transport for HostTransport {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse> {
        let out = self.open(req, false).await?;
        let (status, headers) = status_and_headers(&out)?;
        let body = out.get("body").and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(HttpResponse { status, headers, body })
    }

    async fn post_stream(&self, req: HttpRequest) -> Result<StreamResponse> {
        let out = self.open(req, true).await?;
        let (status, headers) = status_and_headers(&out)?;
        let body: ByteStream = match out.get("id").and_then(Value::as_u64) {
            Some(id) => {
                let pull = Pull { fetch: self.fetch.clone(), id, done: false };
                Box::pin(futures::stream::unfold(pull, |mut p| async move {
                    if p.done {
                        return None;
                    }
                    match p.fetch.call(json!({ "pull": p.id })).await {
                        Ok(v) => match v.get("chunk").and_then(Value::as_str) {
                            Some(chunk) => Some((Ok(chunk.as_bytes().to_vec()), p)),
                            None => {
                                p.finish();
                                None
                            }
                        },
                        Err(e) => {
                            // The reader failed on the host's side; nothing is left to cancel.
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

/// A host's ConversationStore: its `get(id)` and `save(id, messages)`. A method that is
/// missing (or not a function) fails when it is called, as calling it would.
pub struct HostStore {
    pub get: Option<SharedCallback>,
    pub save: Option<SharedCallback>,
    /// Its `delete(id)`, when it has one (an addition: `deleteConversation` calls it).
    pub delete: Option<SharedCallback>,
}

#[async_trait]
impl ConversationStore for HostStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<Value>>> {
        let get = self.get.as_ref().ok_or_else(|| Error::Type("store.get is not a function".into()))?;
        match get.call(Value::String(id.into())).await? {
            Value::Array(items) => Ok(Some(items)),
            Value::Null => Ok(None),
            _ => Err(Error::Invalid("ConversationStore.get must resolve to an array of messages or undefined".into())),
        }
    }

    async fn save(&self, id: &str, messages: Vec<Value>) -> Result<()> {
        let save = self.save.as_ref().ok_or_else(|| Error::Type("store.save is not a function".into()))?;
        save.call(json!([id, messages])).await.map(|_| ())
    }

    async fn delete(&self, id: &str) -> Result<bool> {
        let delete = self
            .delete
            .as_ref()
            .ok_or_else(|| Error::Type("deleteConversation: the store has no delete(id) method".into()))?;
        Ok(!matches!(delete.call(Value::String(id.into())).await?, Value::Bool(false)))
    }
}

/// The `store` option: unset (absent or `null`: the default store), the host's own store
/// object (the core's [`InMemoryStore`](super::store::InMemoryStore) behind it), or an object
/// whose `get` and `save` are the host's functions. Anything else is accepted too, as the
/// reference accepts it, and fails when it is used.
#[derive(Default)]
pub struct StoreOption(pub Option<Arc<dyn ConversationStore>>);

impl<'de> Deserialize<'de> for StoreOption {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use crate::fn_markers::HostFn;
        let v = Value::deserialize(d)?;
        if v.is_null() {
            return Ok(StoreOption(None));
        }
        if let Value::String(url) = &v {
            if crate::store::StoreUrl::is_store_url(url) {
                return Ok(StoreOption(Some(Arc::new(super::store::DurableConversationStore::new(url)))));
            }
        }
        if crate::fn_markers::is_marker(&v) {
            if let Some(native) = HostFn::from_value(&v).object::<super::store::InMemoryStore>() {
                return Ok(StoreOption(Some(native)));
            }
        }
        let method = |name: &str| match v.get(name).map(HostFn::from_value) {
            Some(HostFn::Fn(f)) => Some(f),
            _ => None,
        };
        let store = HostStore { get: method("get"), save: method("save"), delete: method("delete") };
        crate::json::release(v);
        Ok(StoreOption(Some(Arc::new(store))))
    }
}
