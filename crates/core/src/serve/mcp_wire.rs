//! The MCP profile's POST on `/mcp` before rmcp sees it: what the streamable-HTTP transport asks
//! of a server that rmcp's stateless side leaves out.
//!
//! - A body that is not JSON is a JSON-RPC Parse error (-32700, HTTP 400, `id: null`), and one
//!   that is JSON but no JSON-RPC message is one too; a missing `Accept` or a foreign
//!   `Content-Type` is refused with the reference transport's JSON-RPC bodies (406, 415).
//! - A JSON-RPC batch (an array) is honoured where the protocol version has them: 2025-03-26
//!   and before (the version is the `MCP-Protocol-Version` header, 2025-03-26 without one, as
//!   the spec tells a server to assume). Each message goes through rmcp on its own and the
//!   answers come back as one array; a batch of notifications only is 202. From 2025-06-18 on
//!   (batching was removed) a batch is an Invalid Request (-32600, HTTP 400).
//! - `notifications/cancelled` reaches the call it names: stateless, rmcp answers each POST
//!   with a server of its own, so a notification on a POST of its own finds nothing to cancel.
//!   [`InFlight`] keeps every `tools/call` in flight by who sent it and its request id.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::model::{ClientJsonRpcMessage, ErrorCode};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// A response body (the same type as `serve::Body`).
type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The most messages one batch may carry (the reference transport's cap).
pub const MAX_BATCH: usize = 100;

/// The version a request without an `MCP-Protocol-Version` header speaks (the spec's rule for
/// clients that predate the header).
pub const DEFAULT_WIRE_VERSION: &str = "2025-03-26";

/// The message a forwarded request carries, as parsed here (an extension of the request).
#[derive(Clone, Debug)]
pub struct Parsed(pub Value);

/// The address of the peer an HTTP request came from (an extension the HTTP server sets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// A JSON-RPC error reply with no id: `{ jsonrpc, error: { code, message }, id: null }`.
pub fn rpc_error(status: u16, code: ErrorCode, message: &str, allow: Option<&str>) -> http::Response<Body> {
    let body = json!({ "jsonrpc": "2.0", "error": { "code": code.0, "message": message }, "id": null });
    let mut b = http::Response::builder().status(status).header(http::header::CONTENT_TYPE, "application/json");
    if let Some(allow) = allow {
        b = b.header(http::header::ALLOW, allow);
    }
    b.body(Full::new(Bytes::from(body.to_string())).boxed()).unwrap_or_else(|_| plain(500))
}

/// An empty reply with `status`.
pub fn plain(status: u16) -> http::Response<Body> {
    let mut r = http::Response::new(Full::new(Bytes::new()).boxed());
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    r
}

/// The protocol version a request speaks: its `MCP-Protocol-Version` header, else 2025-03-26.
pub fn wire_version(headers: &http::HeaderMap) -> &str {
    match headers.get("mcp-protocol-version") {
        Some(v) => v.to_str().unwrap_or(""),
        None => DEFAULT_WIRE_VERSION,
    }
}

/// Whether `version` has JSON-RPC batches: 2024-11-05 and 2025-03-26 do; 2025-06-18 removed them.
pub fn batches_allowed(version: &str) -> bool {
    matches!(version.trim(), "2024-11-05" | "2025-03-26")
}

/// Who sent a call and which call it is: the peer's address, its credentials and session (so
/// one client never cancels another's call that happens to share an id), and the request id
/// as JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallKey {
    peer: Option<IpAddr>,
    authorization: Option<Vec<u8>>,
    session: Option<Vec<u8>>,
    id: String,
}

impl CallKey {
    /// The key of request `id` (its JSON) sent with these request parts.
    pub fn new(parts: &http::request::Parts, id: &Value) -> CallKey {
        let header = |name: http::header::HeaderName| parts.headers.get(name).map(|v| v.as_bytes().to_vec());
        CallKey {
            peer: parts.extensions.get::<PeerAddr>().map(|p| p.0.ip()),
            authorization: header(http::header::AUTHORIZATION),
            session: header(http::header::HeaderName::from_static("mcp-session-id")),
            id: id.to_string(),
        }
    }
}

/// The calls in flight over stateless HTTP, each with the token that cancels it.
#[derive(Default)]
pub struct InFlight {
    calls: Mutex<HashMap<CallKey, Vec<(u64, CancellationToken)>>>,
    next: AtomicU64,
}

/// A call's place in [`InFlight`]: dropping it (the call ended) takes the call out.
pub struct Registered<'a> {
    owner: &'a InFlight,
    key: CallKey,
    serial: u64,
}

impl InFlight {
    /// Put a call in flight until the returned guard is dropped.
    pub fn register(&self, key: CallKey, cancel: CancellationToken) -> Registered<'_> {
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().entry(key.clone()).or_default().push((serial, cancel));
        Registered { owner: self, key, serial }
    }

    /// Cancel the call `key` names. Two calls in flight under one key (two clients behind one
    /// address with the same credentials and the same id) cannot be told apart: neither is
    /// cancelled (a receiver may ignore a cancellation; cancelling the wrong call may not).
    /// Whether a call was cancelled.
    pub fn cancel(&self, key: &CallKey) -> bool {
        match self.lock().get(key).map(Vec::as_slice) {
            Some([(_, token)]) => {
                token.cancel();
                true
            }
            _ => false,
        }
    }

    /// How many calls are in flight.
    pub fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    /// Whether no call is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CallKey, Vec<(u64, CancellationToken)>>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut calls = self.owner.lock();
        if let Some(list) = calls.get_mut(&self.key) {
            list.retain(|(s, _)| *s != self.serial);
            if list.is_empty() {
                calls.remove(&self.key);
            }
        }
    }
}

/// The refusal a POST's headers earn before its body is read: 406 without both JSON and an
/// event stream in `Accept`, 415 without a JSON `Content-Type` (the reference's texts).
fn refuse_headers(headers: &http::HeaderMap) -> Option<http::Response<Body>> {
    let accept =
        headers.get_all(http::header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(",");
    if !accept.contains("application/json") || !accept.contains("text/event-stream") {
        return Some(rpc_error(
            406,
            ErrorCode(-32000),
            "Not Acceptable: Client must accept both application/json and text/event-stream",
            None,
        ));
    }
    let json_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim())
        .is_some_and(|essence| essence.eq_ignore_ascii_case("application/json"));
    if !json_type {
        return Some(rpc_error(
            415,
            ErrorCode(-32000),
            "Unsupported Media Type: Content-Type must be application/json",
            None,
        ));
    }
    None
}

/// Whether `v` reads as a JSON-RPC message a client may send.
fn is_message(v: &Value) -> bool {
    ClientJsonRpcMessage::deserialize(v).is_ok()
}

/// The id of the request `notifications/cancelled` names, when `v` is one.
fn cancelled_id(v: &Value) -> Option<&Value> {
    if v.get("method").and_then(Value::as_str) != Some("notifications/cancelled") || v.get("id").is_some() {
        return None;
    }
    v.get("params")?.get("requestId").filter(|id| id.is_string() || id.is_number())
}

/// The answer to a `ping` request, `{}` at every protocol version. rmcp refuses ping from
/// 2026-07-28 on (that revision dropped it), but clients of that revision still send it to check a
/// server is alive (the official Python SDK's `send_ping`), and a method the server answered a
/// moment ago must not turn into `-32601` because the client's version moved; answering costs
/// nothing. `None` for any other message.
pub fn pong(msg: &Value) -> Option<Value> {
    if msg.get("method").and_then(Value::as_str) != Some("ping") {
        return None;
    }
    let id = msg.get("id").filter(|id| id.is_string() || id.is_number())?;
    Some(json!({ "jsonrpc": "2.0", "id": id, "result": {} }))
}

/// Whether `v` is a request (it has a method and an id): it gets an answer.
fn is_request(v: &Value) -> bool {
    v.get("method").is_some() && v.get("id").is_some()
}

/// One POST on `/mcp` (its body read and capped): checked, a batch taken apart, each message
/// handed to `forward` (rmcp's stateless server) as a POST of its own with the same headers.
pub async fn post<F, Fut>(req: http::Request<Bytes>, in_flight: &InFlight, forward: F) -> http::Response<Body>
where
    F: Fn(http::Request<Full<Bytes>>) -> Fut,
    Fut: Future<Output = http::Response<Body>>,
{
    let (parts, body) = req.into_parts();
    if let Some(refused) = refuse_headers(&parts.headers) {
        return refused;
    }
    let Ok(value) = serde_json::from_slice::<Value>(&body) else {
        return rpc_error(400, ErrorCode::PARSE_ERROR, "Parse error: Invalid JSON", None);
    };
    let Value::Array(items) = value else {
        if !is_message(&value) {
            return rpc_error(400, ErrorCode::PARSE_ERROR, "Parse error: Invalid JSON-RPC message", None);
        }
        return one(parts, body, &value, in_flight, &forward).await;
    };
    let version = wire_version(&parts.headers);
    if !batches_allowed(version) {
        let message = format!("Invalid Request: JSON-RPC batches are not supported in protocol version {version}");
        return rpc_error(400, ErrorCode::INVALID_REQUEST, &message, None);
    }
    if items.is_empty() {
        return rpc_error(400, ErrorCode::INVALID_REQUEST, "Invalid Request: empty batch", None);
    }
    if items.len() > MAX_BATCH {
        let message = format!("Invalid Request: Batch must not exceed {MAX_BATCH} messages");
        return rpc_error(400, ErrorCode::INVALID_REQUEST, &message, None);
    }
    if !items.iter().all(is_message) {
        return rpc_error(400, ErrorCode::PARSE_ERROR, "Parse error: Invalid JSON-RPC message", None);
    }
    if items.iter().any(|m| m.get("method").and_then(Value::as_str) == Some("initialize")) && items.len() > 1 {
        let message = "Invalid Request: Only one initialization request is allowed";
        return rpc_error(400, ErrorCode::INVALID_REQUEST, message, None);
    }
    let answers = futures::future::join_all(items.iter().map(|item| {
        let parts = parts.clone();
        let forward = &forward;
        async move {
            let body = Bytes::from(item.to_string());
            let res = one(parts, body, item, in_flight, forward).await;
            match item.get("id").filter(|_| is_request(item)) {
                Some(id) => Some(answer_of(res, id).await),
                None => None,
            }
        }
    }))
    .await;
    let answers: Vec<Value> = answers.into_iter().flatten().collect();
    if answers.is_empty() {
        return plain(202);
    }
    json_reply(&Value::Array(answers))
}

/// A 200 reply whose body is `value`'s JSON.
pub fn json_reply(value: &Value) -> http::Response<Body> {
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(value.to_string())).boxed())
        .unwrap_or_else(|_| plain(500))
}

/// One message, forwarded; a `notifications/cancelled` that rmcp accepts then cancels the call
/// it names.
async fn one<F, Fut>(
    parts: http::request::Parts,
    body: Bytes,
    msg: &Value,
    in_flight: &InFlight,
    forward: &F,
) -> http::Response<Body>
where
    F: Fn(http::Request<Full<Bytes>>) -> Fut,
    Fut: Future<Output = http::Response<Body>>,
{
    if let Some(answer) = pong(msg) {
        return json_reply(&answer);
    }
    let cancels = cancelled_id(msg).map(|id| CallKey::new(&parts, id));
    let mut req = http::Request::from_parts(parts, Full::new(body));
    req.extensions_mut().insert(Parsed(msg.clone()));
    let res = forward(req).await;
    if let Some(key) = cancels {
        if res.status() == http::StatusCode::ACCEPTED {
            in_flight.cancel(&key);
        }
    }
    res
}

/// The JSON-RPC answer to request `id` in rmcp's reply to it: a JSON body, or the event of an
/// event stream that answers it; a reply that carries none (a refusal in plain text) is an
/// internal error for that id.
async fn answer_of(res: http::Response<Body>, id: &Value) -> Value {
    let status = res.status();
    let is_stream = res
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let bytes = match res.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(never) => match never {},
    };
    let answers_id = |m: &Value| m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some());
    let found = if is_stream {
        sse_messages(&bytes).into_iter().find(answers_id)
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            // A refusal of the message itself names no id: it is this request's.
            Ok(mut m) if m.get("error").is_some() && m.get("id").is_none_or(Value::is_null) => {
                if let Some(o) = m.as_object_mut() {
                    o.insert("id".into(), id.clone());
                }
                Some(m)
            }
            Ok(m) if answers_id(&m) => Some(m),
            _ => None,
        }
    };
    found.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&bytes);
        let message = if text.trim().is_empty() { format!("HTTP {status}") } else { text.trim().to_string() };
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": ErrorCode::INTERNAL_ERROR.0, "message": message } })
    })
}

/// The JSON messages of an event stream's `data` fields (one message per event).
fn sse_messages(bytes: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    let mut data = String::new();
    let mut flush = |data: &mut String| {
        if !data.is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(data) {
                out.push(v);
            }
            data.clear();
        }
    };
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            flush(&mut data);
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    flush(&mut data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)], peer: Option<&str>) -> http::request::Parts {
        let mut b = http::Request::builder().method("POST").uri("/mcp");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let (mut parts, ()) = b.body(()).unwrap().into_parts();
        if let Some(p) = peer {
            parts.extensions.insert(PeerAddr(p.parse().unwrap()));
        }
        parts
    }

    #[test]
    fn the_wire_version_defaults_to_2025_03_26_and_batches_end_with_it() {
        assert_eq!(wire_version(&http::HeaderMap::new()), "2025-03-26");
        let p = parts(&[("mcp-protocol-version", "2025-06-18")], None);
        assert_eq!(wire_version(&p.headers), "2025-06-18");
        assert!(batches_allowed("2025-03-26") && batches_allowed("2024-11-05"));
        for v in ["2025-06-18", "2025-11-25", "", "banana"] {
            assert!(!batches_allowed(v), "{v}");
        }
    }

    #[test]
    fn a_cancellation_reaches_only_the_call_it_names_and_only_when_unambiguous() {
        let flight = InFlight::default();
        let a = parts(&[], Some("127.0.0.1:1000"));
        let a_other_port = parts(&[], Some("127.0.0.1:2000"));
        let b = parts(&[("authorization", "Bearer b")], Some("127.0.0.1:1000"));
        let (ta, tb) = (CancellationToken::new(), CancellationToken::new());
        let ga = flight.register(CallKey::new(&a, &json!(1)), ta.clone());
        let gb = flight.register(CallKey::new(&b, &json!(1)), tb.clone());
        assert_eq!(flight.len(), 2);
        assert!(!flight.cancel(&CallKey::new(&a, &json!(2))), "another id");
        assert!(!flight.cancel(&CallKey::new(&a, &json!("1"))), "a string id is not a number id");
        assert!(!ta.is_cancelled() && !tb.is_cancelled());
        // The notification comes on another connection: the port differs, the peer is the same.
        assert!(flight.cancel(&CallKey::new(&a_other_port, &json!(1))));
        assert!(ta.is_cancelled() && !tb.is_cancelled(), "the other client's call 1 runs on");
        drop(ga);
        drop(gb);
        assert!(flight.is_empty());

        let (t1, t2) = (CancellationToken::new(), CancellationToken::new());
        let g1 = flight.register(CallKey::new(&a, &json!(7)), t1.clone());
        let g2 = flight.register(CallKey::new(&a_other_port, &json!(7)), t2.clone());
        assert!(!flight.cancel(&CallKey::new(&a, &json!(7))), "two calls under one key: neither");
        drop(g2);
        assert!(flight.cancel(&CallKey::new(&a, &json!(7))));
        assert!(t1.is_cancelled() && !t2.is_cancelled());
        drop(g1);
        assert!(flight.is_empty());
    }

    #[test]
    fn only_a_cancelled_notification_names_a_call() {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}});
        assert_eq!(cancelled_id(&note), Some(&json!(3)));
        let as_request =
            json!({"jsonrpc": "2.0", "id": 9, "method": "notifications/cancelled", "params": {"requestId": 3}});
        assert_eq!(cancelled_id(&as_request), None);
        let no_id = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}});
        assert_eq!(cancelled_id(&no_id), None);
        let other = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(cancelled_id(&other), None);
    }

    #[test]
    fn event_stream_messages_are_read_per_event() {
        let text = b"event: message\r\ndata: {\"a\":1}\r\n\r\n: keep-alive\n\nid: 2\ndata: {\"id\":1,\n data: \"result\":{}}\n\n";
        // The second event's data spans two `data:` lines (" data:" with a leading space is not one).
        let got = sse_messages(text);
        assert_eq!(got, vec![json!({"a": 1})]);
        let text = b"data: {\"id\":1,\ndata: \"result\":{}}\n\n";
        assert_eq!(sse_messages(text), vec![json!({"id": 1, "result": {}})]);
    }

    async fn echo_forward(req: http::Request<Full<Bytes>>) -> http::Response<Body> {
        let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match msg.get("id") {
            Some(id) => {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"echo": msg["method"]}});
                http::Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(answer.to_string())).boxed())
                    .unwrap()
            }
            None => plain(202),
        }
    }

    fn post_req(body: &str, version: Option<&str>) -> http::Request<Bytes> {
        let mut b = http::Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(v) = version {
            b = b.header("mcp-protocol-version", v);
        }
        b.body(Bytes::from(body.to_string())).unwrap()
    }

    async fn reply(res: http::Response<Body>) -> (u16, Value) {
        let status = res.status().as_u16();
        let bytes = res.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    #[tokio::test]
    async fn parse_errors_batches_and_their_versions() {
        let flight = InFlight::default();
        let (status, body) = reply(post(post_req("{not json", None), &flight, echo_forward).await).await;
        assert_eq!((status, body["error"]["code"].clone(), body["id"].clone()), (400, json!(-32700), Value::Null));
        let (status, body) = reply(post(post_req(r#"{"foo":1}"#, None), &flight, echo_forward).await).await;
        assert_eq!((status, body["error"]["code"].clone()), (400, json!(-32700)));

        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"resources/list"}]"#;
        for version in [None, Some("2025-03-26")] {
            let (status, body) = reply(post(post_req(batch, version), &flight, echo_forward).await).await;
            assert_eq!(status, 200, "{version:?}");
            assert_eq!(
                body,
                json!([
                    {"jsonrpc": "2.0", "id": 1, "result": {"echo": "tools/list"}},
                    {"jsonrpc": "2.0", "id": "b", "result": {"echo": "resources/list"}},
                ])
            );
        }
        for version in ["2025-06-18", "2025-11-25"] {
            let (status, body) = reply(post(post_req(batch, Some(version)), &flight, echo_forward).await).await;
            assert_eq!((status, body["error"]["code"].clone(), body["id"].clone()), (400, json!(-32600), Value::Null));
        }
        let notes = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
        let res = post(post_req(notes, None), &flight, echo_forward).await;
        assert_eq!(res.status(), 202);
        let (status, body) = reply(post(post_req("[]", None), &flight, echo_forward).await).await;
        assert_eq!((status, body["error"]["code"].clone()), (400, json!(-32600)));
        let bad_item = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"x":1}]"#;
        let (status, body) = reply(post(post_req(bad_item, None), &flight, echo_forward).await).await;
        assert_eq!((status, body["error"]["code"].clone()), (400, json!(-32700)));
        let many =
            format!("[{}]", vec![r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#; MAX_BATCH + 1].join(","));
        let (status, body) = reply(post(post_req(&many, None), &flight, echo_forward).await).await;
        assert_eq!((status, body["error"]["code"].clone()), (400, json!(-32600)));
    }

    #[tokio::test]
    async fn a_refusal_without_an_id_answers_its_batch_entry() {
        let flight = InFlight::default();
        let refuse =
            |_req: http::Request<Full<Bytes>>| async { rpc_error(400, ErrorCode(-32000), "Bad Request: nope", None) };
        let batch = r#"[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]"#;
        let (status, body) = reply(post(post_req(batch, None), &flight, refuse).await).await;
        assert_eq!(status, 200);
        assert_eq!(
            body,
            json!([{"jsonrpc": "2.0", "id": 4, "error": {"code": -32000, "message": "Bad Request: nope"}}])
        );
        let text = |_req: http::Request<Full<Bytes>>| async {
            let mut r = http::Response::new(Full::new(Bytes::from_static(b"Not Acceptable")).boxed());
            *r.status_mut() = http::StatusCode::NOT_ACCEPTABLE;
            r
        };
        let (_, body) = reply(post(post_req(batch, None), &flight, text).await).await;
        assert_eq!(body[0]["error"], json!({"code": -32603, "message": "Not Acceptable"}));
        assert_eq!(body[0]["id"], json!(4));
    }

    #[tokio::test]
    async fn ping_is_answered_at_every_version_alone_and_in_a_batch() {
        let flight = InFlight::default();
        let never =
            |_req: http::Request<Full<Bytes>>| async { rpc_error(500, ErrorCode(-32603), "not forwarded", None) };
        for version in [None, Some("2025-03-26"), Some("2025-06-18"), Some("2025-11-25"), Some("2026-07-28")] {
            let (status, body) =
                reply(post(post_req(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#, version), &flight, never).await)
                    .await;
            assert_eq!((status, body), (200, json!({"jsonrpc": "2.0", "id": "p", "result": {}})), "{version:?}");
        }
        let batch = r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"tools/list"}]"#;
        let (_, body) = reply(post(post_req(batch, None), &flight, echo_forward).await).await;
        assert_eq!(body[0], json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
        assert_eq!(body[1]["result"], json!({"echo": "tools/list"}));
        assert_eq!(pong(&json!({"jsonrpc": "2.0", "method": "ping"})), None, "a notification gets no answer");
        assert_eq!(pong(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})), None);
    }

    #[tokio::test]
    async fn headers_are_refused_with_json_rpc_bodies() {
        let flight = InFlight::default();
        let mut req = post_req("{}", None);
        req.headers_mut().insert("accept", http::HeaderValue::from_static("application/json"));
        let (status, body) = reply(post(req, &flight, echo_forward).await).await;
        assert_eq!((status, body["error"]["code"].clone()), (406, json!(-32000)));
        let mut req = post_req("{}", None);
        req.headers_mut().insert("content-type", http::HeaderValue::from_static("text/plain"));
        let (status, body) = reply(post(req, &flight, echo_forward).await).await;
        assert_eq!((status, body["error"]["code"].clone()), (415, json!(-32000)));
    }
}
