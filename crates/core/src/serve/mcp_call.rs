//! A `tools/call` over stateless HTTP from a client of the revisions before 2026-07-28, answered
//! here rather than by rmcp: rmcp answers each stateless request with a server of its own whose
//! transport takes no further message, so a request the call makes of its client (an
//! elicitation, a sampling) could never be answered. Here the call's messages go out on the
//! POST's reply, and the client's answers, each POSTed on its own, are routed back by their id
//! ([`Replies`]) to the call that asked, from the same client only.
//!
//! The reply is plain JSON when the call sends nothing before its result, and an event stream
//! when it does (progress, logs, requests, then the result), resumable (`mcp_stream`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use rmcp::model::{CallToolRequestParams, ErrorData};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::serve::mcp::{call_result, client_key, offer_index, EventSink, Served};
use crate::serve::mcp_stream::{reader, Streams};
use crate::serve::mcp_wire::{json_reply, plain, CallKey};
use crate::tool::{Caller, ToolEvent};

/// A response body (the same type as `serve::Body`).
type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The requests this server has put to its clients and awaits answers to, by client and id.
#[derive(Default)]
pub struct Replies {
    slots: Mutex<HashMap<(String, String), oneshot::Sender<Value>>>,
    next: AtomicU64,
}

/// A request awaiting its answer: dropping it (the call ended) forgets the request.
struct Awaited<'a> {
    owner: &'a Replies,
    key: (String, String),
}

impl Drop for Awaited<'_> {
    fn drop(&mut self) {
        self.owner.lock().remove(&self.key);
    }
}

impl Replies {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), oneshot::Sender<Value>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh request id for client `who`, and where its answer will arrive.
    fn expect(&self, who: &str) -> (String, oneshot::Receiver<Value>, Awaited<'_>) {
        let id = format!("tn-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = oneshot::channel();
        let key = (who.to_string(), id.clone());
        self.lock().insert(key.clone(), tx);
        (id, rx, Awaited { owner: self, key })
    }

    /// Hand `message` (a JSON-RPC result or error sent with `parts`) to the call that awaits
    /// it. Whether one did: an answer nobody awaits, or from another client, is not taken.
    pub fn deliver(&self, parts: &http::request::Parts, message: &Value) -> bool {
        let Some(id) = message.get("id").and_then(Value::as_str) else { return false };
        if message.get("method").is_some() || (message.get("result").is_none() && message.get("error").is_none()) {
            return false;
        }
        let slot = self.lock().remove(&(client_key(Some(parts)), id.to_string()));
        slot.is_some_and(|tx| tx.send(message.clone()).is_ok())
    }

    /// How many requests await their answers.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether a message sent with these headers is a `tools/call` answered here: a request of the
/// revisions before 2026-07-28 (which the `MCP-Protocol-Version` header names, or none).
pub fn answers_here(headers: &http::HeaderMap, message: &Value) -> bool {
    message.get("method").and_then(Value::as_str) == Some("tools/call")
        && message.get("id").is_some_and(|id| id.is_string() || id.is_number())
        && matches!(
            headers.get("mcp-protocol-version").map(|v| v.to_str().unwrap_or("")),
            None | Some("2024-11-05" | "2025-03-26" | "2025-06-18" | "2025-11-25")
        )
}

/// What a call sends on its reply: a message, or the stream's end for now.
enum Out {
    Message(Value),
    Close,
}

/// The client of one `tools/call` POST: what the call sends goes to the reply, in order.
struct HttpCaller {
    out: mpsc::UnboundedSender<Out>,
    filter: crate::serve::mcp::Filter,
    offers: [bool; 3],
    who: String,
    replies: Arc<Replies>,
}

#[async_trait::async_trait]
impl Caller for HttpCaller {
    fn event(&self, event: ToolEvent) {
        if let ToolEvent::CloseStream = event {
            let _ = self.out.send(Out::Close);
        } else if let Some(mut n) = self.filter.notification(event) {
            n["jsonrpc"] = json!("2.0");
            let _ = self.out.send(Out::Message(n));
        }
    }
    fn offers(&self, what: &str) -> bool {
        offer_index(what).is_some_and(|i| self.offers[i])
    }
    async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let (id, answer, _awaited) = self.replies.expect(&self.who);
        let gone = || Error::Invalid(format!("{method}: the client left before it answered"));
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.out.send(Out::Message(request)).map_err(|_| gone())?;
        let reply = answer.await.map_err(|_| gone())?;
        match reply.get("error") {
            Some(e) => Err(Error::Invalid(format!(
                "{method}: the client answered with an error: {}",
                e.get("message").and_then(Value::as_str).unwrap_or("(no message)")
            ))),
            None => Ok(reply.get("result").cloned().unwrap_or(Value::Null)),
        }
    }
}

/// What the client of a request speaking `version` can be asked, when its session does not
/// say: elicitation from 2025-06-18 on (its URL mode from 2025-11-25), sampling at every
/// version. A client that does not offer one answers with an error, and the call goes on as
/// without it.
pub fn offers_at(version: Option<&str>) -> [bool; 3] {
    match version {
        Some("2025-11-25") => [true, true, true],
        Some("2025-06-18") => [true, false, true],
        _ => [false, false, true],
    }
}

/// Where a `tools/call` answered here is served: the server, the requests awaiting answers, the
/// streams kept for resuming, and the token that stops it all with the server.
pub struct Place<'a> {
    pub served: &'a Served,
    pub replies: &'a Arc<Replies>,
    pub streams: &'a Arc<Streams>,
    pub stop: &'a CancellationToken,
}

/// One `tools/call` (`message`, sent with `parts`, from a client that offers `offers`, when its
/// session says), answered: see the module's text.
pub async fn call(
    at: Place<'_>,
    parts: http::request::Parts,
    message: &Value,
    offers: Option<[bool; 3]>,
) -> http::Response<Body> {
    let Place { served, replies, streams, stop } = at;
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let params = match message.get("params").map(CallToolRequestParams::deserialize) {
        Some(Ok(p)) => p,
        Some(Err(e)) => return json_reply(&error_message(&id, ErrorData::invalid_params(e.to_string(), None))),
        None => return json_reply(&error_message(&id, ErrorData::invalid_params("missing params", None))),
    };
    let who = client_key(Some(&parts));
    let token = params.meta.as_ref().and_then(|m| m.get_progress_token()).and_then(|t| serde_json::to_value(t).ok());
    let version = parts.headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok());
    let (out, mut rx) = mpsc::unbounded_channel::<Out>();
    let caller = Arc::new(HttpCaller {
        out: out.clone(),
        filter: served.filter(&who, token),
        offers: offers.unwrap_or_else(|| offers_at(version)),
        who: who.clone(),
        replies: replies.clone(),
    });
    let cancel = stop.child_token();
    let key = CallKey::new(&parts, &id);
    let served = served.clone();
    let call_cancel = cancel.clone();
    let answer_id = id.clone();
    tokio::spawn(async move {
        // Findable by `notifications/cancelled` until it ends.
        let _registered = served.in_flight().register(key, call_cancel.clone());
        let r = served.call(&params.name, params.arguments, call_cancel, Some(caller as EventSink)).await;
        let message = match r {
            Ok(r) => {
                let mut result = call_result(&params.name, r);
                // The revisions before 2026-07-28 have no `resultType`.
                result.result_type = None;
                json!({ "jsonrpc": "2.0", "id": answer_id, "result": result })
            }
            Err(e) => error_message(&answer_id, e),
        };
        let _ = out.send(Out::Message(message));
    });
    // The client hanging up before anything is sent cancels the call.
    let guard = cancel.clone().drop_guard();
    let Some(first) = rx.recv().await else {
        return plain(500);
    };
    if let Out::Message(m) = &first {
        if is_final(m) {
            guard.disarm();
            return json_reply(m);
        }
    }
    // From here on the answer is a stream, kept for the client to resume; the client leaving
    // before the call ends (unless the server closed the stream for it) cancels the call.
    guard.disarm();
    let log = streams.open(&who);
    let pump = log.clone();
    let keep = streams.clone();
    tokio::spawn(async move {
        let mut next = Some(first);
        loop {
            let out = match next.take() {
                Some(o) => o,
                None => match rx.recv().await {
                    Some(o) => o,
                    None => break,
                },
            };
            match out {
                Out::Close => pump.close(),
                Out::Message(m) => {
                    let last = is_final(&m);
                    pump.push(&m, last);
                    if last {
                        break;
                    }
                }
            }
        }
        if !pump.is_done() {
            pump.abandon();
        }
        keep.retire(&pump);
    });
    reader(log, 0, true, stop.clone(), Some(cancel))
}

/// Whether `message` answers the call (a result or an error with the call's id).
fn is_final(message: &Value) -> bool {
    message.get("method").is_none() && (message.get("result").is_some() || message.get("error").is_some())
}

/// A JSON-RPC error answering `id`.
fn error_message(id: &Value, e: ErrorData) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": e })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(auth: &str) -> http::request::Parts {
        http::Request::builder().header("authorization", auth).body(()).unwrap().into_parts().0
    }

    #[test]
    fn answers_reach_the_call_that_asked_from_its_client_only() {
        let replies = Replies::default();
        let me = parts("Bearer a");
        let (id, mut rx, awaited) = replies.expect(&client_key(Some(&me)));
        let answer = json!({ "jsonrpc": "2.0", "id": id, "result": { "action": "accept" } });
        assert!(!replies.deliver(&parts("Bearer b"), &answer), "another client's answer is not taken");
        assert!(!replies.deliver(&me, &json!({ "jsonrpc": "2.0", "id": "tn-999", "result": {} })));
        assert!(!replies.deliver(&me, &json!({ "jsonrpc": "2.0", "id": id, "method": "x" })));
        assert!(replies.deliver(&me, &answer));
        assert_eq!(rx.try_recv().unwrap()["result"]["action"], "accept");
        assert!(!replies.deliver(&me, &answer), "an answer is taken once");
        drop(awaited);
        assert!(replies.is_empty());
    }

    #[test]
    fn calls_of_the_older_revisions_are_answered_here() {
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "x" } });
        let mut h = http::HeaderMap::new();
        assert!(answers_here(&h, &call));
        h.insert("mcp-protocol-version", "2025-11-25".parse().unwrap());
        assert!(answers_here(&h, &call));
        h.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        assert!(!answers_here(&h, &call));
        assert!(!answers_here(&http::HeaderMap::new(), &json!({ "jsonrpc": "2.0", "method": "tools/call" })));
        assert!(!answers_here(&http::HeaderMap::new(), &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })));
    }
}
