//! Shared fixtures for the client-loop tests: a scripted LLM endpoint served over real
//! HTTP/1.1 on 127.0.0.1 (hyper's server side, `util/serve.rs`), plus small builders for
//! clients, tools and replies.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Map, Value};
use tokio::sync::Notify;

use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::{ClientOptions, HttpRequest, HttpResponse, Style, Transport};
use toolnexus_core::fetch::{Fetcher, TokioConnect};
use toolnexus_core::fn_tool::FnTool;
use toolnexus_core::tool::{SharedTool, ToolContext};
use toolnexus_core::types::ToolResult;
use toolnexus_core::{Toolkit, ToolkitOptions};

use crate::util::serve::{full, serve, streamed, Body};

// ---------------------------------------------------------------------------------------
// The scripted endpoint
// ---------------------------------------------------------------------------------------

/// One request as the endpoint saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// Names lower-cased, in the order they arrived (hyper puts a repeated name's values
    /// together at its first place; the hyper-based clients under test send them so anyway).
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
        MockLlm::launch(handler, true).await
    }

    /// Like [`MockLlm::start`], but bodies are not parsed (the handler gets `raw` only, `body`
    /// is `Null`) and the recorded requests keep only their head: for tests that send very
    /// many large requests.
    pub async fn lean<F>(handler: F) -> MockLlm
    where
        F: FnMut(&Seen, usize) -> Action + Send + 'static,
    {
        MockLlm::launch(handler, false).await
    }

    /// Take the actions in order; once they run out every request gets a 418.
    pub async fn sequence(actions: Vec<Action>) -> MockLlm {
        let mut queue: VecDeque<Action> = actions.into();
        MockLlm::start(move |_, _| {
            queue.pop_front().unwrap_or_else(|| Action::Reply(Reply::raw(418, "mock script exhausted")))
        })
        .await
    }

    async fn launch<F>(handler: F, keep_bodies: bool) -> MockLlm
    where
        F: FnMut(&Seen, usize) -> Action + Send + 'static,
    {
        let shared = Arc::new(Shared {
            seen: Mutex::new(vec![]),
            arrived: Notify::new(),
            handler: Mutex::new(Box::new(handler)),
            keep_bodies,
        });
        let state = shared.clone();
        let addr = serve(move |req| answer(req, state.clone())).await;
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

/// Read one request (hyper parses it and undoes any chunked framing), record it, ask the
/// handler, and carry out its action. `None` drops the connection unanswered.
async fn answer(req: Request<Incoming>, shared: Arc<Shared>) -> Option<Response<Body>> {
    let (head, body) = req.into_parts();
    let body = body.collect().await.ok()?.to_bytes();
    let raw = String::from_utf8_lossy(&body).into_owned();
    let seen = Seen {
        method: head.method.as_str().to_string(),
        path: head.uri.path_and_query().map_or_else(|| head.uri.to_string(), |p| p.as_str().to_string()),
        headers: head
            .headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        body: if shared.keep_bodies { serde_json::from_str(&raw).unwrap_or(Value::Null) } else { Value::Null },
        raw,
    };
    let action = {
        let mut seen_list = shared.seen.lock().unwrap();
        let index = seen_list.len();
        if shared.keep_bodies {
            seen_list.push(seen.clone());
        } else {
            seen_list.push(Seen { raw: String::new(), body: Value::Null, ..seen.clone() });
        }
        let mut handler = shared.handler.lock().unwrap();
        (handler)(&seen, index)
    };
    shared.arrived.notify_waiters();
    match action {
        Action::Reply(r) => Some(response(r.status, "application/json", &r.headers, full(r.body))),
        Action::Close => None,
        // Never answer; hyper ends the connection (and drops this future) once the client
        // closes its end.
        Action::Hang => std::future::pending().await,
        Action::Stream(r) => {
            let (status, headers) = (r.status, r.headers.clone());
            let mut res = response(status, "text/event-stream", &headers, streamed(sse_pieces(r)));
            res.headers_mut().insert("cache-control", HeaderValue::from_static("no-cache"));
            Some(res)
        }
    }
}

/// A response with `content_type` unless the script names one, the script's headers in
/// order, and `connection: close` (one request per connection, as a client may count on).
fn response(status: u16, content_type: &'static str, headers: &[(String, String)], body: Body) -> Response<Body> {
    let mut res = Response::new(body);
    *res.status_mut() = StatusCode::from_u16(status).expect("a valid status code");
    let out = res.headers_mut();
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
        out.insert("content-type", HeaderValue::from_static(content_type));
    }
    for (k, v) in headers {
        out.append(
            HeaderName::from_bytes(k.as_bytes()).expect("a header name"),
            HeaderValue::from_bytes(v.as_bytes()).expect("a header value"),
        );
    }
    out.insert("connection", HeaderValue::from_static("close"));
    res
}

/// The pieces of a streamed answer, one HTTP chunk each, honouring the gate and the pause.
fn sse_pieces(r: SseReply) -> impl futures::Stream<Item = Bytes> + Send {
    futures::stream::unfold((r, 0usize), |(r, i)| async move {
        let piece = r.pieces.get(i)?.clone();
        if let Some((after, notify)) = &r.gate {
            if i == *after {
                notify.notified().await;
            }
        }
        if i > 0 && !r.pause.is_zero() {
            tokio::time::sleep(r.pause).await;
        }
        Some((Bytes::from(piece), (r, i + 1)))
    })
}

// ---------------------------------------------------------------------------------------
// Clients, toolkits and tools
// ---------------------------------------------------------------------------------------

/// How long a test gives what must not hang before it fails instead of stalling the run.
pub const GUARD: Duration = Duration::from_secs(5);

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
        async move { ToolResult::ok(out) }
    }))
}

/// A tool answering its arguments' JSON text.
pub fn echo_tool(name: &str) -> SharedTool {
    Arc::new(FnTool::new(name, "echo", None, |args: Value, _| async move { ToolResult::ok(args.to_string()) }))
}

/// A tool whose behaviour is an arbitrary closure over (args, ctx).
pub fn fn_tool<F, Fut>(name: &str, run: F) -> SharedTool
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolResult> + Send + 'static,
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

/// `per_style!(check)`, after `async fn check(style: Style)`: a module `check` with two tests,
/// `openai` and `anthropic`, each running `check` in its wire style.
#[macro_export]
macro_rules! per_style {
    ($check:ident) => {
        mod $check {
            #[tokio::test]
            async fn openai() {
                super::$check(toolnexus_core::client::Style::OpenAI).await;
            }

            #[tokio::test]
            async fn anthropic() {
                super::$check(toolnexus_core::client::Style::Anthropic).await;
            }
        }
    };
}

/// A reply carrying a final text, in `style`.
pub fn text_reply(style: Style, text: &str) -> Value {
    match style {
        Style::OpenAI => oa_text(text),
        Style::Anthropic => an_reply(json!([an_text(text)])),
    }
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
pub fn recorder(log: Log<Value>) -> toolnexus_core::callback::SharedCallback {
    toolnexus_core::callback::callback(move |v: Value| {
        let log = log.clone();
        async move {
            log.push(v);
            Ok(Value::Null)
        }
    })
}

/// A callback that records `{"<tag>": value}` into a log shared with other recorders, so a
/// test can read the interleaving of sink events, metrics, store calls and the like.
pub fn tagged(log: Log<Value>, tag: &'static str) -> toolnexus_core::callback::SharedCallback {
    toolnexus_core::callback::callback(move |v: Value| {
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

/// The durable engines a test runs against: a fresh SQLite file in `dir` always; PostgreSQL and
/// Redis when `.ci/run` (or the developer) started them and named them in
/// `TOOLNEXUS_TEST_POSTGRES` / `TOOLNEXUS_TEST_REDIS`. Tests keep their records under ids of
/// their own, so one server serves them all.
pub fn engine_urls(dir: &std::path::Path) -> Vec<String> {
    let mut urls = vec![format!("sqlite:{}", dir.join("state.db").display())];
    for var in ["TOOLNEXUS_TEST_POSTGRES", "TOOLNEXUS_TEST_REDIS"] {
        match std::env::var(var) {
            Ok(u) if !u.is_empty() => urls.push(u),
            _ => eprintln!("{var} is not set: that engine is not tested in this run"),
        }
    }
    urls
}
