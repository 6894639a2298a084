//! The HTTP under an A2A call: Node-`fetch` requests (the core's `fetch`) bounded by a deadline
//! and a cancel token, and one JSON-RPC 2.0 call per POST.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::fetch::{FetchError, Fetcher, Request};
use crate::json::{js_string, truthy};
use crate::jsstr;

/// Why a request got no usable reply.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The caller's cancel token fired while it was in flight.
    Canceled,
    /// The deadline passed while it was in flight (or before it started).
    TimedOut,
    /// The transport failed (`fetch failed` and its cause).
    Fetch(FetchError),
    /// Any other failure, as its message.
    Message(String),
    /// A JSON-RPC error reply: its code (when it has a number) and its message.
    Rpc(Option<i64>, String),
}

impl Fail {
    /// The message the reference reports for this failure (a timer abort reads as fetch's
    /// `AbortError`).
    pub(crate) fn message(&self) -> String {
        match self {
            Fail::Canceled | Fail::TimedOut => crate::cancel::ABORTED.into(),
            Fail::Fetch(e) => e.message.clone(),
            Fail::Message(m) | Fail::Rpc(_, m) => m.clone(),
        }
    }
}

/// The deadline `budget_ms` after `start`: none for a budget too large to matter, `start`
/// itself for a budget of zero or less.
pub(crate) fn deadline(start: Instant, budget_ms: f64) -> Option<Instant> {
    if budget_ms.is_nan() {
        return Some(start);
    }
    let ms = budget_ms.max(0.0);
    // About 31 years: beyond that the call is unbounded in practice.
    if ms > 1e12 {
        return None;
    }
    start.checked_add(Duration::from_secs_f64(ms / 1000.0))
}

/// Whether `token` has fired.
pub(crate) fn fired(token: Option<&CancellationToken>) -> bool {
    token.is_some_and(CancellationToken::is_cancelled)
}

/// Sleep for `ms` (as `setTimeout` reads a delay: below 1, above 2^31-1 or not a number is
/// 1 ms), ending early when the deadline comes or the token fires.
pub(crate) async fn sleep(ms: f64, until: Option<Instant>, token: Option<&CancellationToken>) {
    let ms = if (1.0..=2_147_483_647.0).contains(&ms) { ms } else { 1.0 };
    let mut wake = Instant::now() + Duration::from_secs_f64(ms / 1000.0);
    if let Some(d) = until {
        wake = wake.min(d);
    }
    let _hold = crate::host_thread::hold();
    let nap = tokio::time::sleep_until(wake);
    match token {
        Some(t) => {
            tokio::select! {
                _ = nap => {}
                _ = t.cancelled() => {}
            }
        }
        None => nap.await,
    }
}

/// Header pairs as `fetch` would take them, checked here so that a bad value is refused with
/// a message that names the header and never quotes its value (it may hold a secret).
/// Values are trimmed of HTTP whitespace; a name given twice (in any case) joins its values
/// with ", ", as `Headers` does.
pub(crate) fn checked_headers(pairs: Vec<(String, String)>) -> Result<Vec<(String, String)>, Fail> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(pairs.len());
    for (name, value) in pairs {
        if let Some((i, c)) = value.encode_utf16().enumerate().find(|(_, c)| *c > 0xFF) {
            return Err(Fail::Message(format!(
                "Cannot convert argument to a ByteString because the character at index {i} has a value of {c} which is greater than 255."
            )));
        }
        let value = value.trim_matches([' ', '\t', '\n', '\r']).to_string();
        if value.contains(['\0', '\r', '\n']) {
            return Err(Fail::Message(format!("Headers.append: the value of \"{name}\" is an invalid header value.")));
        }
        // What Node's HTTP client refuses when it writes the request: `fetch failed`.
        if value.chars().any(|c| (c < ' ' && c != '\t') || c == '\u{7f}') {
            return Err(Fail::Fetch(FetchError {
                message: "fetch failed".into(),
                cause: Some(crate::fetch::Cause::new("InvalidArgumentError", format!("invalid {name} header"))),
            }));
        }
        match out.iter_mut().find(|(k, _)| k.eq_ignore_ascii_case(&name)) {
            Some((_, joined)) => {
                joined.push_str(", ");
                joined.push_str(&value);
            }
            None => out.push((name, value)),
        }
    }
    Ok(out)
}

/// A body as `Response.text()` decodes it: a leading BOM dropped, bad bytes replaced.
fn decode(mut body: Vec<u8>) -> String {
    if body.starts_with(b"\xEF\xBB\xBF") {
        body.drain(..3);
    }
    String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Send one request and read its whole body as text, unless the deadline passes or the
/// token fires first.
pub(crate) async fn send(
    req: Request,
    until: Option<Instant>,
    token: Option<&CancellationToken>,
) -> Result<(u16, String), Fail> {
    let exchange = async {
        let res = Fetcher::shared().fetch(req).await.map_err(Fail::Fetch)?;
        let status = res.status;
        match res.bytes_up_to(jsstr::MAX_LENGTH).await {
            Ok(Some(body)) => Ok((status, decode(body))),
            Ok(None) => Err(Fail::Message(jsstr::TOO_LONG.into())),
            Err(e) => Err(Fail::Fetch(e)),
        }
    };
    let timer = async {
        match until {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending::<()>().await,
        }
    };
    let cancelled = async {
        match token {
            Some(t) => t.cancelled().await,
            None => std::future::pending::<()>().await,
        }
    };
    if fired(token) {
        return Err(Fail::Canceled);
    }
    if until.is_some_and(|d| Instant::now() >= d) {
        return Err(Fail::TimedOut);
    }
    let _hold = crate::host_thread::hold();
    tokio::select! {
        biased;
        _ = cancelled => Err(Fail::Canceled),
        _ = timer => Err(Fail::TimedOut),
        r = exchange => r,
    }
}

/// What a JSON-RPC POST got back.
#[derive(Debug)]
pub(crate) enum Reply {
    /// The reply's `result` (`None` when it has none).
    Result(Option<Value>),
    /// A 2xx reply whose body is not JSON.
    NotJson,
}

/// A random (version 4) UUID, as `crypto.randomUUID()` writes it.
pub(crate) fn uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// The message of a JSON-RPC `error` member: its `message`, else `JSON-RPC error <code>`.
fn rpc_error(e: &Value) -> String {
    match e.get("message").filter(|m| !m.is_null()) {
        Some(m) => js_string(m),
        None => {
            let code = e.get("code").filter(|c| !c.is_null()).map(js_string).unwrap_or_default();
            format!("JSON-RPC error {code}").trim().to_string()
        }
    }
}

/// POST `{ jsonrpc: "2.0", id, method, params }` to `endpoint` with `Content-Type:
/// application/json` and the caller's headers. A non-2xx reply is `HTTP <status>: <body>`; a
/// reply with a truthy `error` is that error's message.
pub(crate) async fn json_rpc(
    endpoint: &str,
    method: &str,
    params: Value,
    headers: &[(String, String)],
    until: Option<Instant>,
    token: Option<&CancellationToken>,
) -> Result<Reply, Fail> {
    crate::trace::ready().await;
    let req = rpc_post(endpoint, method, params, headers)?;
    let (status, text) = send(req, until, token).await?;
    read_reply(status, &text, headers)
}

/// The POST of `{ jsonrpc: "2.0", id, method, params }` with `Content-Type:
/// application/json` and the caller's headers (one of that exact name replaces the value in
/// place).
fn rpc_post(endpoint: &str, method: &str, params: Value, headers: &[(String, String)]) -> Result<Request, Fail> {
    let mut pairs = vec![("Content-Type".to_string(), "application/json".to_string())];
    for (k, v) in headers {
        match pairs.iter_mut().find(|(n, _)| n == k) {
            Some(slot) => slot.1 = v.clone(),
            None => pairs.push((k.clone(), v.clone())),
        }
    }
    let mut body = Map::with_capacity(4);
    body.insert("jsonrpc".into(), "2.0".into());
    body.insert("id".into(), uuid().into());
    body.insert("method".into(), method.into());
    body.insert("params".into(), params);
    // Inside a traced tool call the peer is told which span asked.
    crate::trace::inject(&mut pairs);
    Ok(Request {
        method: http::Method::POST,
        url: endpoint.to_string(),
        headers: checked_headers(pairs)?,
        body: Some(Bytes::from(crate::json::to_string(&Value::Object(body)))),
    })
}

/// A JSON-RPC reply read: a non-2xx is `HTTP <status>: <body>`, a truthy `error` that error's
/// message (each with the request's header values cut out), else the `result`.
fn read_reply(status: u16, text: &str, headers: &[(String, String)]) -> Result<Reply, Fail> {
    // What the peer says back may echo the request: its secrets are cut out of it.
    let secrets = || {
        let mut s = crate::redact::Secrets::new();
        s.add_headers(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        s
    };
    if !(200..300).contains(&status) {
        return Err(Fail::Message(secrets().scrub(&format!("HTTP {status}: {text}")).into_owned()));
    }
    let Ok(payload) = crate::json::parse_str::<Value>(text) else { return Ok(Reply::NotJson) };
    if let Some(e) = payload.get("error").filter(|e| truthy(e)) {
        return Err(Fail::Rpc(e.get("code").and_then(Value::as_i64), secrets().scrub(&rpc_error(e)).into_owned()));
    }
    Ok(Reply::Result(payload.get("result").cloned()))
}

/// A streaming JSON-RPC call (`message/stream`, `SendStreamingMessage`): the same POST asking
/// for `text/event-stream`, read to its end within the budget; each event's `data` is one
/// JSON-RPC reply, read as [`json_rpc`] reads one. A reply that is not an event stream is read
/// as one plain reply.
pub(crate) async fn json_rpc_events(
    endpoint: &str,
    method: &str,
    params: Value,
    headers: &[(String, String)],
    until: Option<Instant>,
    token: Option<&CancellationToken>,
) -> Result<Vec<Reply>, Fail> {
    let mut all = headers.to_vec();
    all.push(("Accept".to_string(), "text/event-stream".to_string()));
    crate::trace::ready().await;
    let req = rpc_post(endpoint, method, params, &all)?;
    let (status, text) = send(req, until, token).await?;
    if !(200..300).contains(&status) || text.trim_start().starts_with('{') {
        return read_reply(status, &text, headers).map(|r| vec![r]);
    }
    sse_data(&text).iter().map(|data| read_reply(status, data, headers)).collect()
}

/// The `data` of each event of an event stream (multi-line data joined with newlines).
fn sse_data(text: &str) -> Vec<String> {
    let mut events = Vec::new();
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            events.extend(data.take());
            continue;
        }
        if let Some(rest) = line.strip_prefix("data:") {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(rest);
                }
                None => data = Some(rest.to_string()),
            }
        }
    }
    events.extend(data);
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_rpc_error_messages() {
        assert_eq!(rpc_error(&json!({"code": -32001, "message": "Task not found"})), "Task not found");
        assert_eq!(rpc_error(&json!({"code": -32601})), "JSON-RPC error -32601");
        assert_eq!(rpc_error(&json!({"message": null})), "JSON-RPC error");
        assert_eq!(rpc_error(&json!("boom")), "JSON-RPC error");
        assert_eq!(rpc_error(&json!({"message": 5})), "5");
    }

    #[test]
    fn uuids_have_the_v4_shape() {
        let u = uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(u, uuid());
    }

    #[test]
    fn header_values_are_checked_without_quoting_them() {
        let h =
            checked_headers(vec![("A".into(), " x ".into()), ("a".into(), "y".into()), ("B".into(), "z\u{e9}".into())]);
        assert_eq!(h.unwrap(), [("A".to_string(), "x, y".to_string()), ("B".into(), "z\u{e9}".into())]);
        for bad in ["s3cret\nmore", "s3cret\u{1}", "s3cret\u{100}", "s3cret\u{7f}"] {
            let e = checked_headers(vec![("Authorization".into(), bad.into())]).unwrap_err();
            assert!(!e.message().contains("s3cr"), "{}", e.message());
            if let Fail::Fetch(f) = &e {
                assert!(!f.to_value().to_string().contains("s3cr"));
            }
        }
    }

    #[test]
    fn deadlines() {
        let now = Instant::now();
        assert_eq!(deadline(now, -5.0), Some(now));
        assert_eq!(deadline(now, f64::NAN), Some(now));
        assert_eq!(deadline(now, 1e300), None);
        assert_eq!(deadline(now, 1500.0), Some(now + Duration::from_millis(1500)));
    }

    #[test]
    fn event_stream_data_is_split_per_event() {
        let text = "event: message\r\ndata: {\"a\":1}\r\n\r\n: comment\ndata: {\"b\":\ndata: 2}\n\nid: 3\ndata: last";
        assert_eq!(sse_data(text), ["{\"a\":1}", "{\"b\":\n2}", "last"]);
        assert!(sse_data("").is_empty());
    }
}
