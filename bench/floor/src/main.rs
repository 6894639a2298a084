//! The benchmark's `floor-hyper` runner: the physical floor of the work a run does. The scenario
//! of `bench/lib/scenario.mjs` with no toolnexus at all: hyper's HTTP/1.1 client connection over
//! tokio's sockets, serde_json, the two tools called inline, everything polled by one
//! current-thread runtime, mimalloc as the allocator. Two loopback round trips, two trivial
//! tools, about 1 KB of JSON each way, and nothing else: no hooks, no retries, no validation,
//! no transcript kept beyond the one request list.
//!
//!   toolnexus-bench-floor measure|leak
//!
//! Started by `bench/run.mjs` like the `limit` runner (`bench/limit`), measured by the same
//! harness (`bench/harness`); the limit's figures over these are the "core cost" row of
//! `bench/results.md`: what the toolnexus core adds to the least a program can do.
//!
//! What it does per run: POST `{model, messages, tools}` to `<base>/chat/completions`; the reply's
//! `choices[0].message` names two tool calls; the tools answer from their parsed arguments; the
//! assistant message and the two `tool` messages are appended and posted again; the second
//! reply's `content` is the run's text. Connections are kept alive in a stack of idle ones (the
//! 32 lanes of the throughput phase each take one, or open one).

use std::cell::RefCell;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::{json, Value};
use toolnexus_bench_harness::{self as harness, Config, Res, Runner};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The request body, serialized straight from borrowed parts.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: &'a [Value],
    tools: &'a Value,
}

struct Floor {
    /// host:port to connect to, and the Host header.
    authority: String,
    /// `<base path>/chat/completions`.
    path: String,
    bearer: String,
    tools: Value,
    idle: RefCell<Vec<SendRequest<Full<Bytes>>>>,
}

impl Floor {
    async fn setup(cfg: Config) -> Res<Floor> {
        let rest = cfg
            .base_url
            .strip_prefix("http://")
            .ok_or_else(|| format!("BENCH_BASE_URL must be an http:// URL, got {:?}", cfg.base_url))?;
        let (authority, base_path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let tools = json!([
            { "type": "function", "function": { "name": "get_weather", "description": harness::WEATHER_DESCRIPTION, "parameters": harness::weather_schema() } },
            { "type": "function", "function": { "name": "add", "description": harness::ADD_DESCRIPTION, "parameters": harness::add_schema() } },
        ]);
        Ok(Floor {
            authority: authority.to_string(),
            path: format!("{base_path}/chat/completions"),
            bearer: format!("Bearer {}", harness::API_KEY),
            tools,
            idle: RefCell::new(Vec::new()),
        })
    }

    /// An idle keep-alive connection, or a new one.
    async fn connection(&self) -> Res<SendRequest<Full<Bytes>>> {
        loop {
            let Some(mut sender) = self.idle.borrow_mut().pop() else { break };
            if sender.ready().await.is_ok() {
                return Ok(sender);
            }
        }
        let stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| format!("connect {}: {e}", self.authority))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream)).await.map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(async move {
            // The connection ends when the endpoint closes it or the sender is dropped.
            let _ = conn.await;
        });
        Ok(sender)
    }

    /// One chat completion: the reply's `choices[0].message`.
    async fn complete(&self, messages: &[Value]) -> Res<Value> {
        let body = serde_json::to_vec(&Body { model: harness::MODEL, messages, tools: &self.tools })
            .map_err(|e| e.to_string())?;
        let req = Request::post(&self.path)
            .header(HOST, &self.authority)
            .header(CONTENT_TYPE, "application/json")
            .header(AUTHORIZATION, &self.bearer)
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let mut sender = self.connection().await?;
        let res = sender.send_request(req).await.map_err(|e| format!("request: {e}"))?;
        let status = res.status();
        let bytes = res.into_body().collect().await.map_err(|e| format!("reply body: {e}"))?.to_bytes();
        self.idle.borrow_mut().push(sender);
        if status != StatusCode::OK {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&bytes)));
        }
        let mut reply: Value = serde_json::from_slice(&bytes).map_err(|e| format!("reply: {e}"))?;
        match reply.pointer_mut("/choices/0/message") {
            Some(message) => Ok(message.take()),
            None => Err(format!("reply without choices[0].message: {}", String::from_utf8_lossy(&bytes))),
        }
    }
}

/// What a tool call asks for: the tool message answering it.
fn answer(call: &Value) -> Res<Value> {
    let id = call.get("id").cloned().unwrap_or(Value::Null);
    let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or_default();
    let args = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("{}");
    let args: Value = serde_json::from_str(args).map_err(|e| format!("{name} arguments: {e}"))?;
    let content = match name {
        "get_weather" => harness::get_weather().to_string(),
        "add" => harness::add(&args),
        other => return Err(format!("the model called an unknown tool {other:?}")),
    };
    Ok(json!({ "role": "tool", "tool_call_id": id, "content": content }))
}

impl Runner for Floor {
    async fn run(&self) -> Res<String> {
        let mut messages = vec![json!({ "role": "user", "content": harness::PROMPT })];
        loop {
            let message = self.complete(&messages).await?;
            let calls = match message.get("tool_calls").and_then(Value::as_array) {
                Some(calls) if !calls.is_empty() => calls.iter().map(answer).collect::<Res<Vec<_>>>()?,
                _ => return Ok(message.get("content").and_then(Value::as_str).unwrap_or_default().to_string()),
            };
            messages.push(message);
            messages.extend(calls);
        }
    }
}

fn main() {
    harness::main(
        "floor-hyper",
        "hyper HTTP/1.1 client connections over tokio sockets, current-thread runtime, no toolnexus",
        Floor::setup,
    )
}

#[cfg(test)]
mod tests {
    use super::{answer, Floor};
    use serde_json::{json, Value};
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};
    use toolnexus_bench_harness::{Config, Runner, FINAL_TEXT};

    /// The benchmark's own scripted endpoint (bench/server.mjs), on a free loopback port.
    struct Endpoint {
        child: Child,
        origin: String,
    }

    impl Endpoint {
        fn start() -> Endpoint {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../server.mjs");
            let mut child = Command::new("node")
                .args([script, "--port", "0"])
                .stdout(Stdio::piped())
                .spawn()
                .expect("node must be on PATH to start bench/server.mjs");
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            let port = serde_json::from_str::<Value>(&line).unwrap()["listening"].as_u64().unwrap();
            Endpoint { child, origin: format!("http://127.0.0.1:{port}") }
        }

        async fn stats(&self) -> Value {
            let floor = Floor::setup(config(&self.origin)).await.unwrap();
            let mut sender = floor.connection().await.unwrap();
            let req = hyper::Request::get("/stats")
                .header(hyper::header::HOST, &floor.authority)
                .body(Default::default())
                .unwrap();
            let res = sender.send_request(req).await.unwrap();
            let body = http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes();
            serde_json::from_slice(&body).unwrap()
        }
    }

    impl Drop for Endpoint {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn config(base_url: &str) -> Config {
        Config {
            base_url: base_url.into(),
            spawn_ns: None,
            warmup: 0,
            runs: 0,
            tput_runs: 0,
            concurrency: 1,
            leak_runs: 0,
            leak_every: 1,
            node_major: None,
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn runs_the_scenario_against_the_scripted_endpoint_on_kept_alive_connections() {
        let endpoint = Endpoint::start();
        let floor = Floor::setup(config(&format!("{}/v1", endpoint.origin))).await.unwrap();
        assert_eq!(floor.path, "/v1/chat/completions");
        for _ in 0..3 {
            assert_eq!(floor.run().await.unwrap(), FINAL_TEXT);
        }
        // Two lanes at once need a second connection; afterwards both wait idle.
        let (a, b) = tokio::join!(floor.run(), floor.run());
        assert_eq!((a.unwrap(), b.unwrap()), (FINAL_TEXT.to_string(), FINAL_TEXT.to_string()));
        assert_eq!(floor.idle.borrow().len(), 2);
        let stats = endpoint.stats().await;
        assert_eq!((stats["requests"].as_u64(), stats["invalid"].as_u64()), (Some(10), Some(0)), "{stats}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_endpoint_that_refuses_is_the_runs_error() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A loopback server that answers every request with a 503 and its reason.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            // The whole request first (its head, then as many body bytes as it announces), so
            // the reply never races the request's own writes.
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = Vec::new();
            loop {
                let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
                if let Some(end) = head_end {
                    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if got.len() >= end + length {
                        break;
                    }
                }
                match socket.read(&mut buf).await {
                    Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                    _ => return,
                }
            }
            let reply = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 9\r\n\r\noverload!";
            socket.write_all(reply.as_bytes()).await.unwrap();
            // Read whatever of the request is still coming until the client closes: closing with
            // unread bytes would reset the connection, and the reset can overtake the reply.
            while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
        });
        let floor = Floor::setup(config(&format!("http://127.0.0.1:{port}/v1"))).await.unwrap();
        assert_eq!(floor.run().await.unwrap_err(), "HTTP 503 Service Unavailable: overload!");
        // A port bound but not listening refuses (and, being taken, cannot be the client's own
        // source port, as a freshly closed one can: a socket connecting to itself succeeds). For a
        // runner with no connection kept, the connect is the error.
        let closed = tokio::net::TcpSocket::new_v4().unwrap();
        closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = closed.local_addr().unwrap().port();
        let fresh = Floor::setup(config(&format!("http://127.0.0.1:{port}/v1"))).await.unwrap();
        let err = fresh.run().await.unwrap_err();
        assert!(err.starts_with(&format!("connect 127.0.0.1:{port}")), "{err}");
        drop(closed);
        assert!(Floor::setup(config("https://example.test/v1")).await.is_err());
    }

    #[test]
    fn tool_calls_are_answered_from_their_arguments() {
        let call = json!({ "id": "c1", "type": "function", "function": { "name": "add", "arguments": "{\"a\":2,\"b\":2.5}" } });
        assert_eq!(answer(&call).unwrap(), json!({ "role": "tool", "tool_call_id": "c1", "content": "4.5" }));
        let unknown = json!({ "id": "c2", "function": { "name": "nope", "arguments": "{}" } });
        assert!(answer(&unknown).unwrap_err().contains("unknown tool \"nope\""));
        let broken = json!({ "id": "c3", "function": { "name": "add", "arguments": "{" } });
        assert!(answer(&broken).unwrap_err().starts_with("add arguments"));
    }
}
