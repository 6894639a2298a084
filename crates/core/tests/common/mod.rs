//! Shared fixtures for the client-loop integration tests: a scripted LLM endpoint served
//! over real HTTP/1.1 on 127.0.0.1, plus small builders for clients, tools and replies.
//!
//! Every test binary compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::{ClientOptions, HttpRequest, HttpResponse, Style, Transport};
use toolnexus_core::fetch::{Fetcher, TokioConnect};
use toolnexus_core::native::{FnTool, RunOutput};
use toolnexus_core::tool::{SharedTool, ToolContext};
use toolnexus_core::{Toolkit, ToolkitOptions};

// ---------------------------------------------------------------------------------------
// The scripted endpoint
// ---------------------------------------------------------------------------------------

/// One request as the endpoint saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// Names lower-cased, in the order they arrived.
    pub headers: Vec<(String, String)>,
    /// The body text exactly as sent.
    pub raw: String,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// The top-level keys of the JSON body, in wire order.
    pub fn body_keys(&self) -> Vec<String> {
        keys(&self.body)
    }

    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"].as_array().cloned().unwrap_or_default()
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(v: Value) -> Reply {
        Reply { status: 200, headers: vec![], body: v.to_string() }
    }

    pub fn raw(status: u16, body: &str) -> Reply {
        Reply { status, headers: vec![], body: body.to_string() }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// What the endpoint does with a request.
pub enum Action {
    Reply(Reply),
    /// Keep the connection open and never answer.
    Hang,
    /// Close the connection without answering (a network failure for the client).
    Close,
    /// Answer with a server-sent-events body written piece by piece.
    Stream(SseReply),
}

/// A streamed (chunked) answer: each piece goes out as its own HTTP chunk, flushed, with
/// an optional pause between pieces and an optional gate that holds the rest back until
/// someone calls `notify_one` on it.
#[derive(Debug, Clone)]
pub struct SseReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub pieces: Vec<String>,
    pub pause: Duration,
    /// After writing this many pieces, wait on the `Notify` before writing the rest.
    pub gate: Option<(usize, Arc<Notify>)>,
}

impl SseReply {
    /// Pieces sent as given (each should already be one or more SSE lines).
    pub fn pieces(pieces: Vec<String>) -> SseReply {
        SseReply { status: 200, headers: vec![], pieces, pause: Duration::ZERO, gate: None }
    }

    /// OpenAI style: one `data:` event per payload, then `data: [DONE]`.
    pub fn openai(payloads: Vec<Value>) -> SseReply {
        let mut pieces: Vec<String> = payloads.iter().map(|p| format!("data: {p}\n\n")).collect();
        pieces.push("data: [DONE]\n\n".into());
        SseReply::pieces(pieces)
    }

    /// Anthropic style: an `event:` line named after the payload's `type`, then its `data:`.
    pub fn anthropic(events: Vec<Value>) -> SseReply {
        let pieces = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("message")))
            .collect();
        SseReply::pieces(pieces)
    }

    pub fn pause_ms(mut self, ms: u64) -> SseReply {
        self.pause = Duration::from_millis(ms);
        self
    }

    /// Hold everything after the first `after` pieces until `notify` is notified.
    pub fn gate(mut self, after: usize, notify: Arc<Notify>) -> SseReply {
        self.gate = Some((after, notify));
        self
    }
}

type Handler = Box<dyn FnMut(&Seen, usize) -> Action + Send>;

struct Shared {
    seen: Mutex<Vec<Seen>>,
    arrived: Notify,
    handler: Mutex<Handler>,
    /// Record request bodies (a lean server keeps only the head of each request).
    keep_bodies: bool,
}

/// A real HTTP server on a random local port answering from a script.
pub struct MockLlm {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
}

impl MockLlm {
    /// Serve with a handler deciding per request (it gets the request and its 0-based index).
    pub async fn start<F>(handler: F) -> MockLlm
    where
        F: FnMut(&Seen, usize) -> Action + Send + 'static,
    {
        MockLlm::serve(handler, true).await
    }

    /// Like [`MockLlm::start`], but bodies are not parsed (the handler gets `raw` only, `body`
    /// is `Null`) and the recorded requests keep only their head: for tests that send very
    /// many large requests.
    pub async fn lean<F>(handler: F) -> MockLlm
    where
        F: FnMut(&Seen, usize) -> Action + Send + 'static,
    {
        MockLlm::serve(handler, false).await
    }

    /// Take the actions in order; once they run out every request gets a 418.
    pub async fn sequence(actions: Vec<Action>) -> MockLlm {
        let mut queue: VecDeque<Action> = actions.into();
        MockLlm::start(move |_, _| {
            queue.pop_front().unwrap_or_else(|| Action::Reply(Reply::raw(418, "mock script exhausted")))
        })
        .await
    }

    async fn serve<F>(handler: F, keep_bodies: bool) -> MockLlm
    where
        F: FnMut(&Seen, usize) -> Action + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the mock endpoint");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            seen: Mutex::new(vec![]),
            arrived: Notify::new(),
            handler: Mutex::new(Box::new(handler)),
            keep_bodies,
        });
        let state = shared.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(serve_one(sock, state.clone()));
            }
        });
        MockLlm { addr, shared }
    }

    /// Serve the replies in order; once they run out every request gets a 418.
    pub async fn script(replies: Vec<Reply>) -> MockLlm {
        let mut queue: VecDeque<Reply> = replies.into();
        MockLlm::start(move |_, _| {
            Action::Reply(queue.pop_front().unwrap_or_else(|| Reply::raw(418, "mock script exhausted")))
        })
        .await
    }

    /// Accept, read the request, and never answer.
    pub async fn hanging() -> MockLlm {
        MockLlm::start(|_, _| Action::Hang).await
    }

    /// `http://127.0.0.1:<port>`, no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.shared.seen.lock().unwrap().len()
    }

    pub fn request(&self, i: usize) -> Seen {
        self.requests().get(i).cloned().unwrap_or_else(|| panic!("request #{i} never arrived"))
    }

    /// Wait until at least `n` requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let notified = self.shared.arrived.notified();
            if self.count() >= n {
                return;
            }
            notified.await;
        }
    }
}

async fn serve_one(mut sock: TcpStream, shared: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    let Some(seen) = read_request(&mut sock, shared.keep_bodies).await else {
        return;
    };
    let action = {
        let mut seen_list = shared.seen.lock().unwrap();
        let index = seen_list.len();
        if shared.keep_bodies {
            seen_list.push(seen.clone());
        } else {
            seen_list.push(Seen {
                method: seen.method.clone(),
                path: seen.path.clone(),
                headers: seen.headers.clone(),
                raw: String::new(),
                body: Value::Null,
            });
        }
        let mut handler = shared.handler.lock().unwrap();
        (handler)(&seen, index)
    };
    shared.arrived.notify_waiters();
    match action {
        Action::Reply(r) => {
            let mut head = format!("HTTP/1.1 {} {}\r\n", r.status, reason(r.status));
            let has_type = r.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
            if !has_type {
                head.push_str("Content-Type: application/json\r\n");
            }
            for (k, v) in &r.headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", r.body.len()));
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(r.body.as_bytes()).await;
            let _ = sock.flush().await;
            let _ = sock.shutdown().await;
        }
        Action::Close => drop(sock),
        Action::Stream(r) => write_stream(&mut sock, r).await,
        Action::Hang => {
            // Hold the socket open until the client gives up (or the test's runtime ends).
            let mut sink = [0u8; 1024];
            while let Ok(n) = sock.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        }
    }
}

/// Write a chunked response piece by piece, honouring the pause and the gate.
async fn write_stream(sock: &mut TcpStream, r: SseReply) {
    let mut head = format!("HTTP/1.1 {} {}\r\n", r.status, reason(r.status));
    let has_type = r.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
    if !has_type {
        head.push_str("Content-Type: text/event-stream\r\n");
    }
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    if sock.write_all(head.as_bytes()).await.is_err() || sock.flush().await.is_err() {
        return;
    }
    for (i, piece) in r.pieces.iter().enumerate() {
        if let Some((after, notify)) = &r.gate {
            if i == *after {
                notify.notified().await;
            }
        }
        if i > 0 && !r.pause.is_zero() {
            tokio::time::sleep(r.pause).await;
        }
        let chunk = format!("{:x}\r\n{piece}\r\n", piece.len());
        if sock.write_all(chunk.as_bytes()).await.is_err() || sock.flush().await.is_err() {
            return;
        }
    }
    let _ = sock.write_all(b"0\r\n\r\n").await;
    let _ = sock.flush().await;
    let _ = sock.shutdown().await;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        418 => "I'm a teapot",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Read one HTTP/1.1 request: head, then a Content-Length or chunked body.
async fn read_request(sock: &mut TcpStream, parse: bool) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut rest = buf[head_end + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let get = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let body = if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut out = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(&rest, b"\r\n") {
                    break i;
                }
                let n = sock.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                rest.extend_from_slice(&chunk[..n]);
            };
            let size_text = String::from_utf8_lossy(&rest[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            rest.drain(..line_end + 2);
            while rest.len() < size + 2 {
                let n = sock.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                rest.extend_from_slice(&chunk[..n]);
            }
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest.drain(..size + 2);
        }
        out
    } else {
        let len: usize = get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        while rest.len() < len {
            let n = sock.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        rest.truncate(len);
        rest
    };
    let raw = String::from_utf8_lossy(&body).into_owned();
    let body = if parse { serde_json::from_str(&raw).unwrap_or(Value::Null) } else { Value::Null };
    Some(Seen { method, path, headers, raw, body })
}

// ---------------------------------------------------------------------------------------
// Clients, toolkits and tools
// ---------------------------------------------------------------------------------------

/// Client options with the test key and a 1ms retry base.
pub fn options(base: &str, style: Style) -> ClientOptions {
    let mut o = ClientOptions::new(base, style, "m");
    o.api_key = Some("k".into());
    o.retry_base_ms = 1.0;
    o
}

/// A toolkit holding exactly `tools` (builtins off, so the declared list is deterministic).
pub async fn toolkit(tools: Vec<SharedTool>) -> Toolkit {
    Toolkit::create(ToolkitOptions { extra_tools: tools, builtins: Some(json!(false)), ..Default::default() })
        .await
        .expect("toolkit")
}

/// A tool answering a fixed text.
pub fn text_tool(name: &str, out: &str) -> SharedTool {
    let out = out.to_string();
    Arc::new(FnTool::new(name, format!("the {name} tool"), None, move |_, _| {
        let out = out.clone();
        async move { RunOutput::Text(out) }
    }))
}

/// A tool answering its arguments' JSON text.
pub fn echo_tool(name: &str) -> SharedTool {
    Arc::new(FnTool::new(name, "echo", None, |args: Value, _| async move { RunOutput::Text(args.to_string()) }))
}

/// A tool whose behaviour is an arbitrary closure over (args, ctx).
pub fn fn_tool<F, Fut>(name: &str, run: F) -> SharedTool
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = RunOutput> + Send + 'static,
{
    Arc::new(FnTool::new(name, format!("the {name} tool"), None, run))
}

/// A counter shared between a test and its tools or hooks.
#[derive(Clone, Default)]
pub struct Counter(Arc<std::sync::atomic::AtomicUsize>);

impl Counter {
    pub fn bump(&self) -> usize {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
    }
    pub fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A list of values shared between a test and its tools or hooks.
#[derive(Clone)]
pub struct Log<T>(Arc<Mutex<Vec<T>>>);

impl<T> Default for Log<T> {
    fn default() -> Self {
        Log(Arc::new(Mutex::new(Vec::new())))
    }
}

impl<T: Clone> Log<T> {
    pub fn push(&self, v: T) {
        self.0.lock().unwrap().push(v);
    }
    pub fn all(&self) -> Vec<T> {
        self.0.lock().unwrap().clone()
    }
    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

// ---------------------------------------------------------------------------------------
// JSON helpers and provider replies
// ---------------------------------------------------------------------------------------

pub fn keys(v: &Value) -> Vec<String> {
    v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

pub fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("a JSON object")
}

/// An OpenAI chat-completion reply carrying a final text.
pub fn oa_text(text: &str) -> Value {
    json!({
        "id": "chatcmpl-text",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
    })
}

/// An OpenAI reply asking for tool calls: `(id, name, raw arguments text)`.
pub fn oa_calls(calls: &[(&str, &str, &str)]) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    json!({
        "id": "chatcmpl-calls",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": tool_calls},
            "finish_reason": "tool_calls"
        }]
    })
}

/// Attach a `usage` object to a reply.
pub fn with_usage(mut reply: Value, usage: Value) -> Value {
    reply.as_object_mut().unwrap().insert("usage".into(), usage);
    reply
}

/// An Anthropic messages reply with the given content blocks.
pub fn an_reply(content: Value) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content, "stop_reason": "end_turn"})
}

pub fn an_text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

pub fn an_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

// ---------------------------------------------------------------------------------------
// Streaming replies
// ---------------------------------------------------------------------------------------

/// An OpenAI chat-completion chunk carrying one `delta`.
pub fn oa_delta(delta: Value) -> Value {
    json!({
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]
    })
}

/// The chunk closing an OpenAI stream's choice.
pub fn oa_finish(reason: &str) -> Value {
    json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

/// The usage-only chunk `stream_options.include_usage` asks for.
pub fn oa_usage_chunk(prompt: i64, completion: i64) -> Value {
    json!({
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    })
}

/// A whole OpenAI text stream: role chunk, one chunk per part, finish, usage, `[DONE]`.
pub fn oa_text_stream(parts: &[&str], prompt: i64, completion: i64) -> SseReply {
    let mut payloads = vec![oa_delta(json!({"role": "assistant", "content": ""}))];
    payloads.extend(parts.iter().map(|p| oa_delta(json!({"content": p}))));
    payloads.push(oa_finish("stop"));
    payloads.push(oa_usage_chunk(prompt, completion));
    SseReply::openai(payloads)
}

pub fn an_message_start(input_tokens: i64) -> Value {
    json!({
        "type": "message_start",
        "message": {"id": "msg_s", "type": "message", "role": "assistant", "content": [], "model": "m",
                    "stop_reason": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}
    })
}

pub fn an_block_start(index: usize, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

pub fn an_text_delta(index: usize, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

pub fn an_json_delta(index: usize, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": partial}})
}

pub fn an_block_stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

/// `message_delta` with the stop reason and the output token count, as Anthropic sends it.
pub fn an_message_delta(stop_reason: &str, output_tokens: i64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}})
}

pub fn an_message_stop() -> Value {
    json!({"type": "message_stop"})
}

/// A whole Anthropic text stream: one text block with one delta per part.
/// Usage: `input_tokens` at the start, `output_tokens` in the closing delta (the start's
/// placeholder output count of 1 is added too, as the loop sums every usage it sees).
pub fn an_text_stream(parts: &[&str], input_tokens: i64, output_tokens: i64) -> SseReply {
    let mut events = vec![an_message_start(input_tokens), an_block_start(0, json!({"type": "text", "text": ""}))];
    events.extend(parts.iter().map(|p| an_text_delta(0, p)));
    events.push(an_block_stop(0));
    events.push(an_message_delta("end_turn", output_tokens));
    events.push(an_message_stop());
    SseReply::anthropic(events)
}

// ---------------------------------------------------------------------------------------
// Recording seams
// ---------------------------------------------------------------------------------------

/// A callback that records every value it is given and answers `null`.
pub fn recorder(log: Log<Value>) -> toolnexus_core::client::SharedCallback {
    toolnexus_core::client::callback(move |v: Value| {
        let log = log.clone();
        async move {
            log.push(v);
            Ok(Value::Null)
        }
    })
}

/// A callback that records `{"<tag>": value}` into a log shared with other recorders, so a
/// test can read the interleaving of sink events, metrics, store calls and the like.
pub fn tagged(log: Log<Value>, tag: &'static str) -> toolnexus_core::client::SharedCallback {
    toolnexus_core::client::callback(move |v: Value| {
        let log = log.clone();
        async move {
            log.push(json!({ tag: v }));
            Ok(Value::Null)
        }
    })
}

/// The value with every `ms` field (at any depth of objects) checked to be a non-negative
/// integer and replaced by 0, so timing-free comparisons can be exact.
pub fn zero_ms(mut v: Value) -> Value {
    fn walk(v: &mut Value) {
        if let Value::Object(m) = v {
            if let Some(ms) = m.get_mut("ms") {
                assert!(ms.is_u64(), "`ms` must be a non-negative integer, got {ms}");
                *ms = json!(0);
            }
            m.values_mut().for_each(walk);
        }
    }
    walk(&mut v);
    v
}

/// A transport that records each request exactly as the client assembled it, then sends
/// it over the real HTTP transport.
pub struct RecordingTransport {
    inner: FetchTransport,
    pub seen: Mutex<Vec<HttpRequest>>,
}

impl RecordingTransport {
    pub fn new() -> Arc<RecordingTransport> {
        Arc::new(RecordingTransport {
            inner: FetchTransport::new(Fetcher::new(TokioConnect)),
            seen: Mutex::new(vec![]),
        })
    }

    pub fn requests(&self) -> Vec<HttpRequest> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Transport for RecordingTransport {
    async fn post(&self, req: HttpRequest) -> toolnexus_core::error::Result<HttpResponse> {
        self.seen.lock().unwrap().push(req.clone());
        self.inner.post(req).await
    }
}
