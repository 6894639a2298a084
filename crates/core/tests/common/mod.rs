//! Shared fixtures for the client-loop integration tests: a scripted LLM endpoint served
//! over real HTTP/1.1 on 127.0.0.1, plus small builders for clients, tools and replies.
//!
//! Every test binary compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use toolnexus_core::client::{ClientOptions, Style};
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
        Reply {
            status: 200,
            headers: vec![],
            body: v.to_string(),
        }
    }

    pub fn raw(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![],
            body: body.to_string(),
        }
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
}

type Handler = Box<dyn FnMut(&Seen, usize) -> Action + Send>;

struct Shared {
    seen: Mutex<Vec<Seen>>,
    arrived: Notify,
    handler: Mutex<Handler>,
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
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the mock endpoint");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            seen: Mutex::new(vec![]),
            arrived: Notify::new(),
            handler: Mutex::new(Box::new(handler)),
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
            Action::Reply(
                queue
                    .pop_front()
                    .unwrap_or_else(|| Reply::raw(418, "mock script exhausted")),
            )
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
        self.requests()
            .get(i)
            .cloned()
            .unwrap_or_else(|| panic!("request #{i} never arrived"))
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
    let Some(seen) = read_request(&mut sock).await else {
        return;
    };
    let action = {
        let mut seen_list = shared.seen.lock().unwrap();
        let index = seen_list.len();
        seen_list.push(seen.clone());
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
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                r.body.len()
            ));
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(r.body.as_bytes()).await;
            let _ = sock.flush().await;
            let _ = sock.shutdown().await;
        }
        Action::Close => drop(sock),
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
async fn read_request(sock: &mut TcpStream) -> Option<Seen> {
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
    let body = serde_json::from_str(&raw).unwrap_or(Value::Null);
    Some(Seen {
        method,
        path,
        headers,
        raw,
        body,
    })
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
    Toolkit::create(ToolkitOptions {
        extra_tools: tools,
        builtins: Some(json!(false)),
        ..Default::default()
    })
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
    Arc::new(FnTool::new(name, "echo", None, |args: Value, _| async move {
        RunOutput::Text(args.to_string())
    }))
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
#[derive(Clone, Default)]
pub struct Log<T>(Arc<Mutex<Vec<T>>>);

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
