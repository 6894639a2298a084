//! `serve` over real HTTP on 127.0.0.1: routing and status codes, the Agent Card, the A2A
//! Task lifecycle, the Task stores, and the server's guards (auth, Origin, body cap, stop).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use toolnexus_core::callback::{callback, SharedCallback};
use toolnexus_core::error::{Error, Result};
use toolnexus_core::serve::a2a::CardSkill;
use toolnexus_core::serve::http::Server;
use toolnexus_core::serve::options::ServeSecurity;
use toolnexus_core::serve::start::{start_server, StartOptions};
use toolnexus_core::serve::store::{file_stem, FileTaskStore, InMemoryTaskStore, SharedTaskStore, TaskStore};

use crate::common::text_tool;

type Log = Arc<Mutex<Vec<Value>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn taken(l: &Log) -> Vec<Value> {
    l.lock().unwrap().clone()
}

/// A runTask that answers `{ text: "echo: <text>", status: "done" }`, fails on "boom", and
/// suspends on "wait".
fn echo_runner(calls: Log) -> SharedCallback {
    callback(move |arg: Value| {
        let calls = calls.clone();
        async move {
            calls.lock().unwrap().push(arg.clone());
            let text = arg["text"].as_str().unwrap_or_default().to_string();
            if text.contains("boom") {
                return Err(Error::host_message("runner exploded"));
            }
            if text.contains("deep") {
                let n = 100_000;
                let deep: Value =
                    toolnexus_core::json::parse_str(&format!("{}{}", "[".repeat(n), "]".repeat(n))).unwrap();
                // Built by hand: `json!` would serialize the value again, recursively.
                let mut r = serde_json::Map::new();
                r.insert("text".into(), deep);
                r.insert("status".into(), json!("done"));
                return Ok(Value::Object(r));
            }
            if text.contains("wait") {
                return Ok(
                    json!({"text": "", "status": "pending", "pending": {"id": "p1", "kind": "approval", "prompt": "Approve?"}}),
                );
            }
            Ok(json!({"text": format!("echo: {text}"), "status": "done", "turns": 1}))
        }
    })
}

fn options(a2a: Option<Value>, run_task: SharedCallback) -> StartOptions {
    StartOptions {
        addr: "127.0.0.1:0".into(),
        a2a,
        store: None,
        skills: vec![CardSkill { name: Some(json!("echo")), description: Some(json!("Echoes")) }],
        run_task,
        on_task: None,
        resume_task: None,
        mcp: None,
        mcp_profile: None,
        mcp_tools: Vec::new(),
        mcp_skills: Vec::new(),
        on_call: None,
        security: ServeSecurity::default(),
        reachable_tools: Vec::new(),
        hold: None,
        owner: None,
        body_timeout: None,
        logger: None,
        telemetry: None,
    }
}

async fn a2a_server() -> (Server, Log) {
    let calls = log();
    let srv = start_server(options(Some(json!({"name": "desk"})), echo_runner(calls.clone()))).await.unwrap();
    (srv, calls)
}

fn http() -> reqwest::Client {
    toolnexus_core::net::client_builder().no_proxy().build().unwrap()
}

async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params});
    http().post(format!("{url}/")).body(body.to_string()).send().await.unwrap().json().await.unwrap()
}

async fn send(url: &str, text: &str, context: Option<&str>) -> Value {
    let mut message = json!({"role": "user", "parts": [{"kind": "text", "text": text}]});
    if let Some(c) = context {
        message["contextId"] = json!(c);
    }
    rpc(url, "SendMessage", json!({"message": message})).await
}

async fn terminal(url: &str, id: &str) -> Value {
    for _ in 0..200 {
        let env = rpc(url, "GetTask", json!({"id": id})).await;
        let state = env["result"]["status"]["state"].as_str().unwrap_or_default().to_string();
        if ["completed", "failed", "input-required"].contains(&state.as_str()) {
            return env["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never reached a final state")
}

// ---- routing --------------------------------------------------------------------------

#[tokio::test]
async fn without_a_profile_every_request_is_a_404() {
    let srv = start_server(options(None, echo_runner(log()))).await.unwrap();
    for (method, path) in [("GET", "/.well-known/agent-card.json"), ("POST", "/"), ("GET", "/mcp")] {
        let res = http().request(method.parse().unwrap(), format!("{}{path}", srv.url())).send().await.unwrap();
        assert_eq!(res.status(), 404, "{method} {path}");
        assert_eq!(res.text().await.unwrap(), "not found");
    }
    srv.stop().await;
}

#[tokio::test]
async fn the_card_is_served_with_the_json_rpc_endpoint_as_its_url() {
    let (srv, _) = a2a_server().await;
    assert!(srv.url().starts_with("http://127.0.0.1:"));
    let res = http().get(format!("{}/.well-known/agent-card.json", srv.url())).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    let card: Value = res.json().await.unwrap();
    assert_eq!(card["name"], "desk");
    assert_eq!(card["url"], format!("{}/", srv.url()));
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["skills"], json!([{"id": "echo", "name": "echo", "description": "Echoes", "tags": ["echo"]}]));
    // Beside SPEC's fields, what the A2A SDKs of both generations read.
    let endpoint = format!("{}/", srv.url());
    assert_eq!(
        card["supportedInterfaces"],
        json!([
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        ])
    );
    assert_eq!(card["preferredTransport"], "JSONRPC");
    // Exact paths only; other GETs are 404s; the MCP path without the MCP profile too.
    for path in ["/.well-known/agent-card.json?x=1", "/", "/mcp"] {
        let res = http().get(format!("{}{path}", srv.url())).send().await.unwrap();
        assert_eq!(res.status(), 404, "{path}");
    }
    srv.stop().await;
}

#[tokio::test]
async fn json_rpc_errors_parse_and_unknown_method() {
    let (srv, _) = a2a_server().await;
    let bad: Value =
        http().post(format!("{}/anything", srv.url())).body("{nope").send().await.unwrap().json().await.unwrap();
    assert_eq!(bad, json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}));
    let res = rpc(srv.url(), "tasks/list", json!({})).await;
    assert_eq!(
        res,
        json!({"jsonrpc": "2.0", "id": "r1", "error": {"code": -32601, "message": "Method not found: tasks/list"}})
    );
    let none: Value = http().post(format!("{}/", srv.url())).body("{}").send().await.unwrap().json().await.unwrap();
    assert_eq!(none["error"]["message"], "Method not found: undefined");
    let missing = rpc(srv.url(), "GetTask", json!({"id": "nope"})).await;
    assert_eq!(missing["error"], json!({"code": -32001, "message": "Task not found: nope"}));
    srv.stop().await;
}

// ---- the Task lifecycle ---------------------------------------------------------------

/// A store that records every save, and can be told to fail.
struct Recording {
    inner: InMemoryTaskStore,
    saves: Log,
    fail_saves: AtomicUsize,
    fail_gets: AtomicUsize,
    slow: Duration,
}

impl Recording {
    fn new() -> Arc<Recording> {
        Recording::slow(Duration::ZERO)
    }
    fn slow(slow: Duration) -> Arc<Recording> {
        Arc::new(Recording {
            inner: InMemoryTaskStore::new(),
            saves: log(),
            fail_saves: AtomicUsize::new(0),
            fail_gets: AtomicUsize::new(0),
            slow,
        })
    }
}

#[async_trait]
impl TaskStore for Recording {
    async fn get(&self, id: &str) -> Result<Option<Value>> {
        if self.fail_gets.load(Ordering::SeqCst) > 0 {
            self.fail_gets.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::host_message("store get rejected"));
        }
        self.inner.get(id).await
    }
    async fn save(&self, task: Value) -> Result<()> {
        tokio::time::sleep(self.slow).await;
        if self.fail_saves.load(Ordering::SeqCst) > 0 {
            self.fail_saves.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::host_message("store save rejected"));
        }
        self.saves.lock().unwrap().push(task.clone());
        self.inner.save(task).await
    }
}

#[tokio::test]
async fn send_message_answers_submitted_then_fulfils_in_the_background_keeping_the_context() {
    let calls = log();
    let events = log();
    let store = Recording::new();
    let mut o = options(Some(json!({})), echo_runner(calls.clone()));
    o.store = Some(store.clone() as SharedTaskStore);
    let ev = events.clone();
    o.on_task = Some(callback(move |v| {
        let ev = ev.clone();
        async move {
            ev.lock().unwrap().push(v);
            Err(Error::host_message("a failing onTask is isolated"))
        }
    }));
    let srv = start_server(o).await.unwrap();

    let sent = send(srv.url(), "hi", Some("ctx-1")).await;
    let task = &sent["result"];
    assert_eq!(sent["id"], "r1");
    assert_eq!(task["status"]["state"], "submitted");
    assert_eq!(task["contextId"], "ctx-1");
    let id = task["id"].as_str().unwrap().to_string();
    let done = terminal(srv.url(), &id).await;
    assert_eq!(done["status"]["state"], "completed");
    assert_eq!(done["artifacts"][0]["parts"], json!([{"kind": "text", "text": "echo: hi"}]));
    assert_eq!(done["artifacts"][0]["artifactId"].as_str().map(str::len), Some(36));
    assert_eq!(crate::common::keys(&done), ["id", "contextId", "status", "artifacts"]);
    // runTask got the text, the context and the Task's id (what a cancel names); every saved
    // state kept the context.
    assert_eq!(taken(&calls), [json!({"text": "hi", "contextId": "ctx-1", "call": id})]);
    let saves = taken(&store.saves);
    let states: Vec<&str> = saves.iter().map(|t| t["status"]["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["submitted", "working", "completed"]);
    assert!(saves.iter().all(|t| t["contextId"] == "ctx-1"));
    // onTask: { id, task, result, state }.
    for _ in 0..100 {
        if !taken(&events).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ev = taken(&events);
    assert_eq!(crate::common::keys(&ev[0]), ["id", "task", "result", "state"]);
    assert_eq!(ev[0]["state"], "completed");
    assert_eq!(ev[0]["result"]["turns"], 1);

    // Without a context: none on the Task, none to runTask.
    let sent = send(srv.url(), "plain", None).await;
    assert!(sent["result"].get("contextId").is_none());
    let done = terminal(srv.url(), sent["result"]["id"].as_str().unwrap()).await;
    assert!(done.get("contextId").is_none());
    assert_eq!(taken(&calls)[1], json!({"text": "plain", "call": sent["result"]["id"]}));
    srv.stop().await;
}

#[tokio::test]
async fn a_pending_run_is_input_required_and_a_failing_run_is_failed() {
    let events = log();
    let mut o = options(Some(json!({})), echo_runner(log()));
    let ev = events.clone();
    o.on_task = Some(callback(move |v| {
        let ev = ev.clone();
        async move {
            ev.lock().unwrap().push(v);
            Ok(Value::Null)
        }
    }));
    let srv = start_server(o).await.unwrap();
    let id = send(srv.url(), "wait for me", None).await["result"]["id"].as_str().unwrap().to_string();
    let mut t = terminal(srv.url(), &id).await;
    assert_eq!(
        t["status"],
        json!({"state": "input-required", "message": {"role": "agent", "parts": [{"kind": "text", "text": "Approve?"}]}})
    );
    // On what it waits, and since when (RFC 3339): a message carrying the Answer takes it up.
    let at = t["metadata"].as_object_mut().unwrap().remove("parkedAt").unwrap();
    assert!(at.as_str().unwrap().ends_with('Z') && at.as_str().unwrap().len() == 24, "{at}");
    assert_eq!(t["metadata"], json!({"pending": {"id": "p1", "kind": "approval", "prompt": "Approve?"}}));
    let id = send(srv.url(), "boom", None).await["result"]["id"].as_str().unwrap().to_string();
    let t = terminal(srv.url(), &id).await;
    assert_eq!(
        t["status"],
        json!({"state": "failed", "message": {"role": "agent", "parts": [{"kind": "text", "text": "runner exploded"}]}})
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let ev = taken(&events);
    assert_eq!(ev.iter().map(|e| e["state"].clone()).collect::<Vec<_>>(), [json!("input-required"), json!("failed")]);
    assert!(ev[1].get("result").is_none(), "a thrown run has no result");
    srv.stop().await;
}

// ---- stores ---------------------------------------------------------------------------

#[tokio::test]
async fn a_failing_store_is_a_json_rpc_error_and_the_server_keeps_serving() {
    let store = Recording::new();
    store.fail_saves.store(1, Ordering::SeqCst);
    store.fail_gets.store(1, Ordering::SeqCst);
    let calls = log();
    let mut o = options(Some(json!({})), echo_runner(calls.clone()));
    o.store = Some(store.clone() as SharedTaskStore);
    let srv = start_server(o).await.unwrap();
    let failed = send(srv.url(), "hi", None).await;
    assert_eq!(failed["error"], json!({"code": -32603, "message": "store save rejected"}));
    assert!(failed.get("result").is_none());
    let failed = rpc(srv.url(), "GetTask", json!({"id": "x"})).await;
    assert_eq!(failed["error"], json!({"code": -32603, "message": "store get rejected"}));
    // Nothing was started for the refused Task; the next one goes through.
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(taken(&calls).is_empty());
    let ok = send(srv.url(), "again", None).await;
    let t = terminal(srv.url(), ok["result"]["id"].as_str().unwrap()).await;
    assert_eq!(t["status"]["state"], "completed");
    srv.stop().await;
}

#[tokio::test]
async fn the_file_store_keeps_distinct_ids_apart_and_plain_ids_readable() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b");
    let store = FileTaskStore::new(&nested).unwrap();
    assert!(nested.is_dir(), "created at construction");
    for id in ["a/b", "a_b", "abc-123", "../escape"] {
        store.save(json!({"id": id, "status": {"state": "completed"}})).await.unwrap();
    }
    for id in ["a/b", "a_b", "abc-123", "../escape"] {
        assert_eq!(store.get(id).await.unwrap().unwrap()["id"], id);
    }
    assert!(nested.join("abc-123.json").is_file());
    assert_eq!(store.file("a/b").parent(), Some(nested.as_path()));
    assert_ne!(file_stem("a/b"), file_stem("a_b"));
    assert!(store.get("missing").await.unwrap().is_none());
    // Nothing but the four Task files is left behind.
    assert_eq!(std::fs::read_dir(&nested).unwrap().count(), 4);
}

#[tokio::test]
async fn file_store_writes_are_atomic_under_concurrent_reads() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileTaskStore::new(dir.path()).unwrap());
    let big = "x".repeat(512 * 1024);
    store.save(json!({"id": "t", "n": 0, "blob": big})).await.unwrap();
    let writer = {
        let store = store.clone();
        let big = big.clone();
        tokio::spawn(async move {
            for n in 1..40 {
                store.save(json!({"id": "t", "n": n, "blob": big})).await.unwrap();
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        let t = store.get("t").await.unwrap().expect("a reader never sees a missing or half-written Task");
        assert_eq!(t["blob"].as_str().map(str::len), Some(big.len()));
        reads += 1;
    }
    writer.await.unwrap();
    assert!(reads > 0);
    assert_eq!(store.get("t").await.unwrap().unwrap()["n"], 39);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
}

#[tokio::test]
async fn an_unknown_store_selector_fails_before_binding() {
    let o = options(Some(json!({"store": "redis:x"})), echo_runner(log()));
    let e = start_server(o).await.err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(e, "Unknown A2A store: \"redis:x\" (expected \"memory\" or \"file:<dir>\")");
}

// ---- guards ---------------------------------------------------------------------------

/// Raw HTTP/1.1 exchange: write `head`, then `body_len` bytes of body in 64 KiB chunks (or
/// forever when `None`) while reading the answer; returns the answer's status line.
async fn raw_status(url: &str, head: String, body_len: Option<usize>) -> String {
    let addr = url.trim_start_matches("http://").to_string();
    let sock = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = sock.into_split();
    wr.write_all(head.as_bytes()).await.unwrap();
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 64 * 1024];
        let mut sent = 0usize;
        loop {
            if body_len.is_some_and(|n| sent >= n) {
                break;
            }
            if wr.write_all(&chunk).await.is_err() {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), rd.read(&mut buf)).await.expect("an answer").unwrap();
    writer.abort();
    String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn bodies_over_the_cap_are_refused_with_413_even_when_endless() {
    let (srv, calls) = a2a_server().await;
    let host = srv.url().trim_start_matches("http://").to_string();
    // Declared: refused from the headers.
    let head = format!("POST / HTTP/1.1\r\nhost: {host}\r\ncontent-length: {}\r\n\r\n", 10 * 1024 * 1024);
    assert_eq!(raw_status(srv.url(), head, Some(10 * 1024 * 1024)).await, "HTTP/1.1 413 Payload Too Large");
    // Chunked and endless: refused once the cap is passed, while the client is still sending.
    let head = format!("POST / HTTP/1.1\r\nhost: {host}\r\ntransfer-encoding: chunked\r\n\r\n");
    let addr = host.clone();
    let sock = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = sock.into_split();
    wr.write_all(head.as_bytes()).await.unwrap();
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 64 * 1024];
        loop {
            let frame = format!("{:x}\r\n", chunk.len());
            if wr.write_all(frame.as_bytes()).await.is_err()
                || wr.write_all(&chunk).await.is_err()
                || wr.write_all(b"\r\n").await.is_err()
            {
                break;
            }
        }
    });
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), rd.read(&mut buf)).await.expect("an answer").unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 413"));
    writer.abort();
    // A body under the cap is fine; the server is still up; nothing ran.
    let ok = send(srv.url(), "small", None).await;
    assert_eq!(ok["result"]["status"]["state"], "submitted");
    assert!(taken(&calls).len() <= 1);
    srv.stop().await;
}

#[tokio::test]
async fn a_body_nested_as_deep_as_the_cap_allows_is_answered_and_the_server_lives() {
    let (srv, _) = a2a_server().await;
    let depth = 100_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    for method in ["GetTask", "SendMessage", "Nope"] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{deep},"method":"{method}","params":{{"id":{deep},"message":{{"parts":{deep},"contextId":{deep}}}}}}}"#
        );
        assert!(body.len() < 4 * 1024 * 1024);
        let res = http().post(format!("{}/", srv.url())).body(body).send().await.unwrap();
        assert_eq!(res.status(), 200, "{method}");
        let text = res.text().await.unwrap();
        assert!(text.starts_with(r#"{"jsonrpc":"2.0","id":[[["#), "{method}");
    }
    // A run whose result nests as deep: the Task holds it, the server lives.
    let sent = send(srv.url(), "deep result", None).await;
    let id = sent["result"]["id"].as_str().unwrap().to_string();
    for _ in 0..500 {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}});
        let text =
            http().post(format!("{}/", srv.url())).body(body.to_string()).send().await.unwrap().text().await.unwrap();
        if text.contains("completed") {
            assert!(text.contains(r#""text":[[[["#));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ok = send(srv.url(), "still up", None).await;
    assert_eq!(ok["result"]["status"]["state"], "submitted");
    srv.stop().await;
}

/// Write `head`, then all of `body`, then read the whole answer until the server closes (or
/// 10 s pass). A client like Node's `fetch` gives up on a write that fails (EPIPE, ECONNRESET)
/// before it looks for an answer: so does this one.
async fn send_all_then_read(host: &str, head: &str, body: &[u8]) -> std::result::Result<String, std::io::Error> {
    let mut sock = TcpStream::connect(host).await?;
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body).await?;
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), sock.read_to_end(&mut got)).await.expect("the server closes")?;
    Ok(String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test]
async fn an_over_cap_body_gets_its_413_read_by_a_client_that_sent_it_all() {
    // Before, the server closed with the body unread and the client, still sending, got a reset
    // (EPIPE on write, ECONNRESET on read) instead of the 413.
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.security = ServeSecurity::from_value(&json!({"maxBodyBytes": 1024})).unwrap();
    let srv = start_server(o).await.unwrap();
    let host = srv.url().trim_start_matches("http://").to_string();
    let size = 8 * 1024 * 1024;
    for round in 0..3 {
        let head = format!("POST / HTTP/1.1\r\nhost: {host}\r\ncontent-length: {size}\r\n\r\n");
        let got = send_all_then_read(&host, &head, &vec![b'x'; size]).await;
        let got = got.unwrap_or_else(|e| panic!("declared, round {round}: the client saw {e} instead of the answer"));
        assert!(got.starts_with("HTTP/1.1 413"), "declared, round {round}: {got:.60}");
        let mut chunked = Vec::with_capacity(size + 4096);
        for _ in 0..size / (64 * 1024) {
            chunked.extend_from_slice(format!("{:x}\r\n", 64 * 1024).as_bytes());
            chunked.extend_from_slice(&[b'x'; 64 * 1024]);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let head = format!("POST / HTTP/1.1\r\nhost: {host}\r\ntransfer-encoding: chunked\r\n\r\n");
        let got = send_all_then_read(&host, &head, &chunked).await;
        let got = got.unwrap_or_else(|e| panic!("chunked, round {round}: the client saw {e} instead of the answer"));
        assert!(got.starts_with("HTTP/1.1 413"), "chunked, round {round}: {got:.60}");
    }
    srv.stop().await;
}

#[tokio::test]
async fn a_body_that_trickles_in_is_answered_408_at_the_body_timeout_and_its_connection_freed() {
    let calls = log();
    let mut o = options(Some(json!({})), echo_runner(calls.clone()));
    o.body_timeout = Some(Duration::from_millis(300));
    let srv = start_server(o).await.unwrap();
    let host = srv.url().trim_start_matches("http://").to_string();
    let sock = TcpStream::connect(&host).await.unwrap();
    let (mut rd, mut wr) = sock.into_split();
    // The headers are complete; the body then comes one byte every 100 ms (never idle long).
    wr.write_all(format!("POST / HTTP/1.1\r\nhost: {host}\r\ncontent-length: 1000\r\n\r\n").as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let trickle = tokio::spawn(async move {
        let mut sent = 0;
        while wr.write_all(b"x").await.is_ok() && sent < 1000 {
            sent += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        sent
    });
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), rd.read_to_end(&mut got)).await;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(text.starts_with("HTTP/1.1 408"), "{text:.60} ({read:?})");
    assert!(read.is_ok(), "the connection is closed, not kept for the trickle");
    let linger = toolnexus_core::serve::http::LINGER;
    assert!(took >= Duration::from_millis(300) && took < linger + Duration::from_secs(2), "{took:?}");
    let sent = tokio::time::timeout(Duration::from_secs(5), trickle).await.expect("the writer is stopped").unwrap();
    assert!(sent < 100, "the server stopped taking the body: {sent} bytes");
    assert!(taken(&calls).is_empty(), "nothing ran");
    // The server goes on.
    assert_eq!(send(srv.url(), "after", None).await["result"]["status"]["state"], "submitted");
    srv.stop().await;
}

#[tokio::test]
async fn the_cap_is_configurable() {
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.security = ServeSecurity::from_value(&json!({"maxBodyBytes": 64})).unwrap();
    let srv = start_server(o).await.unwrap();
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x".repeat(100)}});
    let res = http().post(format!("{}/", srv.url())).body(big.to_string()).send().await.unwrap();
    assert_eq!(res.status(), 413);
    let small = http().post(format!("{}/", srv.url())).body("{}").send().await.unwrap();
    assert_eq!(small.status(), 200);
    srv.stop().await;
}

#[tokio::test]
async fn auth_guards_json_rpc_and_mcp_but_not_the_card() {
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.mcp = Some(json!({}));
    o.security = ServeSecurity::from_value(&json!({"auth": {"token": "s3cret"}})).unwrap();
    let srv = start_server(o).await.unwrap();
    let post = |auth: Option<&str>, path: &str| {
        let mut r = http().post(format!("{}{path}", srv.url())).body("{}");
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        r.send()
    };
    let denied = post(None, "/").await.unwrap();
    assert_eq!(denied.status(), 401);
    assert_eq!(denied.headers()["www-authenticate"], "Bearer");
    assert_eq!(post(Some("Bearer wrong"), "/").await.unwrap().status(), 401);
    assert_eq!(post(Some("Basic s3cret"), "/").await.unwrap().status(), 401);
    assert_eq!(post(Some("Bearer s3cret"), "/").await.unwrap().status(), 200);
    assert_eq!(post(Some("bearer s3cret"), "/").await.unwrap().status(), 200);
    assert_eq!(post(None, "/mcp").await.unwrap().status(), 401);
    assert_ne!(post(Some("Bearer s3cret"), "/mcp").await.unwrap().status(), 401);
    let card = http().get(format!("{}/.well-known/agent-card.json", srv.url())).send().await.unwrap();
    assert_eq!(card.status(), 200, "the card stays public: peers discover the agent with it");
    srv.stop().await;
}

#[tokio::test]
async fn mcp_origins_are_checked_against_dns_rebinding() {
    let mut o = options(None, echo_runner(log()));
    o.mcp = Some(json!({}));
    o.security = ServeSecurity::from_value(&json!({"allowedOrigins": ["https://app.example"]})).unwrap();
    let srv = start_server(o).await.unwrap();
    let with_origin = |origin: Option<&str>| {
        let mut r = http().post(format!("{}/mcp", srv.url())).body("{}");
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };
    assert_eq!(with_origin(Some("http://evil.example")).await.unwrap().status(), 403);
    assert_eq!(with_origin(Some("null")).await.unwrap().status(), 403);
    for ok in
        [None, Some("http://localhost:5173"), Some("http://127.0.0.1:9"), Some("https://app.example"), Some(srv.url())]
    {
        assert_ne!(with_origin(ok).await.unwrap().status(), 403, "{ok:?}");
    }
    // Only the MCP profile is there: every other path is a 404.
    assert_eq!(http().post(format!("{}/", srv.url())).send().await.unwrap().status(), 404);
    srv.stop().await;
}

#[tokio::test]
async fn a2a_json_rpc_refuses_a_foreign_browser_origin_too() {
    let (srv, calls) = a2a_server().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"parts": [{"kind": "text", "text": "csrf"}]}}});
    let res = http()
        .post(format!("{}/", srv.url()))
        .header("origin", "http://evil.example")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let res = http()
        .post(format!("{}/", srv.url()))
        .header("origin", "http://localhost:3000")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let card = http()
        .get(format!("{}/.well-known/agent-card.json", srv.url()))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), 200, "the card is public");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(taken(&calls).len(), 1, "only the allowed request ran");
    srv.stop().await;
}

#[tokio::test]
async fn open_addresses_serving_risky_tools_without_auth_are_warned_about() {
    let seen = log();
    let sink: toolnexus_core::warn::Sink = {
        let seen = seen.clone();
        Arc::new(move |t: &str| seen.lock().unwrap().push(json!(t)))
    };
    let run = |addr: &str, auth: Option<&str>, tools: Vec<&str>| {
        let mut o = options(Some(json!({})), echo_runner(log()));
        o.addr = addr.into();
        o.reachable_tools = tools.into_iter().map(String::from).collect();
        if let Some(a) = auth {
            o.security = ServeSecurity::from_value(&json!({ "auth": a })).unwrap();
        }
        let sink = sink.clone();
        async move {
            let srv = toolnexus_core::warn::scope(Some(sink), start_server(o)).await.unwrap();
            srv.stop().await;
        }
    };
    run("0.0.0.0:0", None, vec!["read", "bash", "apply_patch"]).await;
    let w = taken(&seen);
    assert_eq!(w.len(), 1);
    assert!(w[0].as_str().unwrap().starts_with("[toolnexus] serve: 0.0.0.0:0 "));
    assert!(w[0].as_str().unwrap().contains("bash, apply_patch"));
    run("0.0.0.0:0", Some("t"), vec!["bash"]).await;
    run("127.0.0.1:0", None, vec!["bash"]).await;
    run("0.0.0.0:0", None, vec!["read"]).await;
    assert_eq!(taken(&seen).len(), 1, "a token, a loopback address or harmless tools: no warning");
    // The MCP profile's exposed tools count too.
    let mut o = options(None, echo_runner(log()));
    o.addr = "0.0.0.0:0".into();
    o.mcp = Some(json!({}));
    o.mcp_tools = vec![text_tool("write", "x"), text_tool("edit", "y")];
    let srv = toolnexus_core::warn::scope(Some(sink.clone()), start_server(o)).await.unwrap();
    srv.stop().await;
    assert_eq!(taken(&seen).len(), 2);
    assert!(taken(&seen)[1].as_str().unwrap().contains("write, edit"));
}

#[tokio::test]
async fn a_servers_logger_gets_its_warnings_over_the_callers_sink_and_a_served_toolkits_logger_is_the_fallback() {
    let sink_into = |seen: &Log| -> toolnexus_core::warn::Sink {
        let seen = seen.clone();
        Arc::new(move |t: &str| seen.lock().unwrap().push(json!(t)))
    };
    let (of_caller, of_server, of_toolkit) = (log(), log(), log());
    let open = |logger: Option<toolnexus_core::warn::Sink>| {
        let mut o = options(Some(json!({})), echo_runner(log()));
        o.addr = "0.0.0.0:0".into();
        o.reachable_tools = vec!["bash".into()];
        o.logger = logger;
        o
    };
    let caller = sink_into(&of_caller);
    let srv = toolnexus_core::warn::scope(Some(caller.clone()), start_server(open(Some(sink_into(&of_server)))))
        .await
        .unwrap();
    srv.stop().await;
    assert!(taken(&of_caller).is_empty());
    assert_eq!(taken(&of_server).len(), 1);
    // Serving a toolkit with a logger and none of its own: the toolkit's.
    let tk =
        toolnexus_core::Toolkit::from_tools(vec![text_tool("bash", "x")]).with_logger(Some(sink_into(&of_toolkit)));
    let mut o = open(None).serving(&tk);
    o.addr = "0.0.0.0:0".into();
    let srv = toolnexus_core::warn::scope(Some(caller), start_server(o)).await.unwrap();
    srv.stop().await;
    assert!(taken(&of_caller).is_empty());
    let w = taken(&of_toolkit);
    assert_eq!(w.len(), 1);
    assert!(w[0].as_str().unwrap().starts_with("[toolnexus] serve: 0.0.0.0:0 "));
}

// ---- connections and stopping -----------------------------------------------------------

#[tokio::test]
async fn a_caller_hanging_up_mid_call_leaves_no_half_started_task() {
    let store = Recording::slow(Duration::from_millis(150));
    let calls = log();
    let mut o = options(Some(json!({})), echo_runner(calls.clone()));
    o.store = Some(store.clone() as SharedTaskStore);
    let srv = start_server(o).await.unwrap();
    let host = srv.url().trim_start_matches("http://").to_string();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"parts": [{"kind": "text", "text": "gone"}]}}}).to_string();
    let mut sock = TcpStream::connect(&host).await.unwrap();
    sock.write_all(
        format!("POST / HTTP/1.1\r\nhost: {host}\r\ncontent-length: {}\r\n\r\n{body}", body.len()).as_bytes(),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(sock);
    // The Task saved before the hang-up is still fulfilled.
    for _ in 0..200 {
        if taken(&store.saves).iter().any(|t| t["status"]["state"] == "completed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let states: Vec<Value> = taken(&store.saves).iter().map(|t| t["status"]["state"].clone()).collect();
    assert_eq!(states, [json!("submitted"), json!("working"), json!("completed")]);
    let calls = taken(&calls);
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0]["text"].as_str(), calls[0]["call"].is_string()), (Some("gone"), true));
    let next = send(srv.url(), "still here", None).await;
    assert_eq!(next["result"]["status"]["state"], "submitted");
    srv.stop().await;
}

#[tokio::test]
async fn stop_lets_calls_in_flight_finish_then_releases_the_port() {
    let store = Recording::slow(Duration::from_millis(300));
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.store = Some(store.clone() as SharedTaskStore);
    let srv = Arc::new(start_server(o).await.unwrap());
    let url = srv.url().to_string();
    let in_flight = tokio::spawn({
        let url = url.clone();
        async move { send(&url, "slow", None).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (a, b) = (srv.clone(), srv.clone());
    let started = std::time::Instant::now();
    tokio::join!(a.stop(), b.stop());
    assert!(started.elapsed() >= Duration::from_millis(150), "stop waited for the call in flight");
    let answered = in_flight.await.unwrap();
    assert_eq!(answered["result"]["status"]["state"], "submitted");
    // New connections are refused; the port can be bound again.
    assert!(http().get(format!("{url}/.well-known/agent-card.json")).send().await.is_err());
    let again = tokio::net::TcpListener::bind(srv.local_addr()).await;
    assert!(again.is_ok(), "the port was released: {again:?}");
    srv.stop().await;
}

#[tokio::test]
async fn a_toolkit_config_block_is_the_fallback_profile() {
    use toolnexus_core::serve::start::or_block;
    let tk = toolnexus_core::Toolkit::create(toolnexus_core::ToolkitOptions {
        mcp_config: Some(json!({"mcpServers": {}, "a2a": {"name": "from-config"}, "mcpServer": {"name": "m"}})),
        builtins: Some(json!(false)),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(or_block(None, tk.a2a_block()), Some(json!({"name": "from-config"})));
    assert_eq!(or_block(Some(Value::Null), tk.a2a_block()), Some(json!({"name": "from-config"})));
    assert_eq!(or_block(Some(json!({"name": "inline"})), tk.a2a_block()), Some(json!({"name": "inline"})));
    assert_eq!(tk.mcp_server_block(), Some(&json!({"name": "m"})));
}

/// A store whose reads never answer.
struct Stuck;

#[async_trait]
impl TaskStore for Stuck {
    async fn get(&self, _id: &str) -> Result<Option<Value>> {
        futures::future::pending().await
    }
    async fn save(&self, _task: Value) -> Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn stop_closes_a_call_that_never_finishes_after_its_grace() {
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.store = Some(Arc::new(Stuck) as SharedTaskStore);
    let srv = start_server(o).await.unwrap();
    let url = srv.url().to_string();
    let stuck = tokio::spawn(async move {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
        http().post(format!("{url}/")).body(body.to_string()).send().await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    srv.stop().await;
    let waited = started.elapsed();
    assert!(waited >= toolnexus_core::serve::http::STOP_GRACE, "the call had its grace: {waited:?}");
    assert!(
        waited < toolnexus_core::serve::http::STOP_GRACE + Duration::from_secs(2),
        "then it was closed: {waited:?}"
    );
    let answer =
        tokio::time::timeout(Duration::from_secs(2), stuck).await.expect("the caller is not left hanging").unwrap();
    assert!(answer.is_err(), "the caller sees its connection closed");
}

#[tokio::test]
async fn each_a2a_generation_is_answered_in_its_own_dialect() {
    let (srv, _) = a2a_server().await;
    let post = |method: &str, version: Option<&str>, params: Value| {
        let mut req = http().post(format!("{}/", srv.url()));
        if let Some(v) = version {
            req = req.header("A2A-Version", v);
        }
        req.json(&json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params})).send()
    };
    let msg = json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}});
    // v0.3: blocks by default, answers the settled Task with `kind` and a contextId made for it.
    let v03: Value = post("message/send", None, msg.clone()).await.unwrap().json().await.unwrap();
    let task = &v03["result"];
    assert_eq!((task["kind"].as_str(), task["status"]["state"].as_str()), (Some("task"), Some("completed")), "{v03}");
    assert!(task["contextId"].as_str().is_some_and(|c| !c.is_empty()));
    assert_eq!(v03["id"], "r1");
    let got: Value = post("tasks/get", None, json!({"id": task["id"]})).await.unwrap().json().await.unwrap();
    assert_eq!(got["result"]["kind"], "task");
    // v1.0: `{ task }`, enum spellings, no `kind`; `returnImmediately` answers at once.
    let v1: Value = post("SendMessage", Some("1.0"), msg.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(v1["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v1}");
    assert!(v1["result"]["task"].get("kind").is_none());
    let mut quick = msg.clone();
    quick["configuration"] = json!({"returnImmediately": true});
    let v1q: Value = post("SendMessage", Some("1.0"), quick).await.unwrap().json().await.unwrap();
    assert_eq!(v1q["result"]["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let id = v1["result"]["task"]["id"].clone();
    let g1: Value = post("GetTask", Some("1.0"), json!({"id": id})).await.unwrap().json().await.unwrap();
    assert_eq!(g1["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    // SPEC, as before: no header, the bare Task at once, nothing added.
    let spec: Value = post("SendMessage", None, msg).await.unwrap().json().await.unwrap();
    assert_eq!(spec["result"]["status"], json!({"state": "submitted"}));
    assert!(spec["result"].get("contextId").is_none() && spec["result"].get("kind").is_none());
    srv.stop().await;
}

#[tokio::test]
async fn a_server_whose_owner_is_gone_ends_at_once_and_frees_its_port() {
    use toolnexus_core::serve::http::OwnerGone;
    let owner = OwnerGone::new();
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.store = Some(Arc::new(Stuck) as SharedTaskStore);
    o.owner = Some(owner.clone());
    let srv = start_server(o).await.unwrap();
    let url = srv.url().to_string();
    let stuck = tokio::spawn({
        let url = url.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
            http().post(format!("{url}/")).body(body.to_string()).send().await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    owner.fire();
    // No grace: the call in flight is cut, the listener closed, the port free.
    let answer = tokio::time::timeout(Duration::from_secs(2), stuck).await.expect("the caller is cut at once").unwrap();
    assert!(answer.is_err(), "the caller sees its connection closed");
    srv.stop().await;
    assert!(started.elapsed() < Duration::from_secs(2), "ended without the grace: {:?}", started.elapsed());
    assert!(http().get(format!("{url}/.well-known/agent-card.json")).send().await.is_err());
    let again = tokio::net::TcpListener::bind(srv.local_addr()).await;
    assert!(again.is_ok(), "the port was released: {again:?}");
    // An owner already gone when the server would start: nothing is left bound.
    let gone = OwnerGone::new();
    gone.fire();
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.addr = srv.local_addr().to_string();
    o.owner = Some(gone);
    drop(again);
    let e = start_server(o).await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("is gone"), "{e}");
    assert!(tokio::net::TcpListener::bind(srv.local_addr()).await.is_ok());
}

// ---- a Task parked for input, continued (SPEC §10 across A2A, issue 42) -----------------

/// A resumeTask that finishes with the answer it got, logging each call.
fn resumer(calls: Log) -> SharedCallback {
    callback(move |arg: Value| {
        let calls = calls.clone();
        async move {
            calls.lock().unwrap().push(arg.clone());
            tokio::time::sleep(Duration::from_millis(30)).await;
            let ok = arg["answer"]["ok"].as_bool().unwrap_or(false);
            Ok(json!({"text": format!("resumed ok={ok}"), "status": "done", "turns": 1}))
        }
    })
}

async fn continue_task(url: &str, id: &str, parts: Value) -> Value {
    rpc(url, "SendMessage", json!({"message": {"role": "user", "taskId": id, "parts": parts}})).await
}

async fn parked_task(url: &str, context: Option<&str>) -> (String, Value) {
    let id = send(url, "wait for me", context).await["result"]["id"].as_str().unwrap().to_string();
    let t = terminal(url, &id).await;
    assert_eq!(t["status"]["state"], "input-required");
    (id, t)
}

#[tokio::test]
async fn a_parked_task_is_continued_once_by_the_answer_it_waits_for() {
    let resumed = log();
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.resume_task = Some(resumer(resumed.clone()));
    let srv = start_server(o).await.unwrap();
    let (id, t) = parked_task(srv.url(), Some("ctx-1")).await;
    let request = t["metadata"]["pending"].clone();

    // Refusals first: each leaves the Task parked.
    let none = continue_task(srv.url(), "no-such-task", json!([{"kind": "data", "data": {"ok": true}}])).await;
    assert_eq!(none["error"]["code"], -32001);
    let text_only = continue_task(srv.url(), &id, json!([{"kind": "text", "text": "yes"}])).await;
    assert_eq!(text_only["error"]["code"], -32602);
    assert!(text_only["error"]["message"].as_str().unwrap().contains("\"p1\""), "{text_only}");
    let other = continue_task(srv.url(), &id, json!([{"kind": "data", "data": {"id": "p2", "ok": true}}])).await;
    assert_eq!(other["error"]["data"]["code"], "EUNKNOWNREQUEST", "{other}");
    assert_eq!(terminal(srv.url(), &id).await["status"]["state"], "input-required");
    assert!(taken(&resumed).is_empty());

    // Three replies at once with the Answer: one takes the Task up.
    let answer = json!([{"kind": "data", "data": {"id": request["id"], "ok": true, "data": {"by": "ops"}}}]);
    let (a, b, c) = tokio::join!(
        continue_task(srv.url(), &id, answer.clone()),
        continue_task(srv.url(), &id, answer.clone()),
        continue_task(srv.url(), &id, answer.clone())
    );
    let all = [a, b, c];
    let taken_up: Vec<&Value> = all.iter().filter(|r| r.get("result").is_some()).collect();
    assert_eq!(taken_up.len(), 1, "{all:?}");
    assert_eq!(taken_up[0]["result"]["id"], id.as_str(), "the same Task goes on");
    assert_eq!(taken_up[0]["result"]["status"]["state"], "working");
    for r in all.iter().filter(|r| r.get("error").is_some()) {
        let e = &r["error"];
        assert!(e["data"]["code"] == "ESTORECONFLICT" || e["message"].as_str().unwrap().contains("is working"), "{e}");
    }
    let done = terminal(srv.url(), &id).await;
    assert_eq!(done["status"]["state"], "completed");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "resumed ok=true");
    let calls = taken(&resumed);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["contextId"], "ctx-1");
    assert_eq!(calls[0]["pending"], request);
    assert_eq!(calls[0]["answer"]["data"]["by"], "ops");
    assert_eq!(calls[0]["call"], id.as_str());
    // Done: no longer continued.
    let again = continue_task(srv.url(), &id, answer).await;
    assert_eq!(again["error"]["code"], -32602);
    srv.stop().await;
}

#[tokio::test]
async fn a_parked_task_without_a_context_or_a_resumer_is_refused() {
    let mut o = options(Some(json!({})), echo_runner(log()));
    o.resume_task = Some(resumer(log()));
    let srv = start_server(o).await.unwrap();
    let (id, _) = parked_task(srv.url(), None).await;
    let r = continue_task(srv.url(), &id, json!([{"kind": "data", "data": {"ok": true}}])).await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("without a contextId"), "{r}");
    srv.stop().await;

    let srv = start_server(options(Some(json!({})), echo_runner(log()))).await.unwrap();
    let (id, _) = parked_task(srv.url(), Some("c")).await;
    let r = continue_task(srv.url(), &id, json!([{"kind": "data", "data": {"ok": true}}])).await;
    assert_eq!(r["error"]["code"], -32004, "{r}");
    srv.stop().await;
}

/// A store whose reads, once armed, wait until two readers are there: both replicas read the
/// parked Task before either takes it up, so only the compare-and-set can tell them apart.
struct Together {
    inner: SharedTaskStore,
    armed: Arc<std::sync::atomic::AtomicBool>,
    barrier: Arc<tokio::sync::Barrier>,
}

#[async_trait]
impl TaskStore for Together {
    async fn get(&self, id: &str) -> Result<Option<Value>> {
        let found = self.inner.get(id).await;
        if self.armed.load(Ordering::SeqCst) {
            self.barrier.wait().await;
        }
        found
    }
    async fn save(&self, task: Value) -> Result<()> {
        self.inner.save(task).await
    }
    async fn save_own(&self, task: Value) -> Result<()> {
        self.inner.save_own(task).await
    }
    async fn take_parked(&self, id: &str, parked_at: &str, working: Value) -> Result<bool> {
        self.inner.take_parked(id, parked_at, working).await
    }
}

/// Two replicas on one durable store, each sent the Answer at the same moment (both reading
/// the parked Task before either claims it): one of them takes the Task up.
#[tokio::test]
async fn two_replicas_on_one_store_take_a_parked_task_up_once() {
    let dir = tempfile::tempdir().unwrap();
    for url in crate::common::engine_urls(dir.path()) {
        let resumed = log();
        let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let replica = || {
            let mut o = options(Some(json!({})), echo_runner(log()));
            o.resume_task = Some(resumer(resumed.clone()));
            let inner = toolnexus_core::serve::store::resolve_store(Some(&json!(url))).unwrap();
            o.store = Some(Arc::new(Together { inner, armed: armed.clone(), barrier: barrier.clone() }));
            start_server(o)
        };
        let (one, two) = (replica().await.unwrap(), replica().await.unwrap());
        let (id, t) = parked_task(one.url(), Some("ctx")).await;
        let answer = json!([{"kind": "data", "data": {"id": t["metadata"]["pending"]["id"], "ok": true}}]);
        armed.store(true, Ordering::SeqCst);
        let (a, b) = tokio::join!(continue_task(one.url(), &id, answer.clone()), continue_task(two.url(), &id, answer));
        armed.store(false, Ordering::SeqCst);
        assert_eq!([&a, &b].iter().filter(|r| r.get("result").is_some()).count(), 1, "{url}: {a} {b}");
        let lost = if a.get("error").is_some() { &a } else { &b };
        assert_eq!(lost["error"]["data"]["code"], "ESTORECONFLICT", "{url}: {lost}");
        assert_eq!(terminal(two.url(), &id).await["status"]["state"], "completed", "{url}");
        assert_eq!(taken(&resumed).len(), 1, "{url}");
        one.stop().await;
        two.stop().await;
    }
}

/// Two callers send the answer to one parked Task at once, on one server, again and again, on
/// every store: one of them is told the Task went on, and the store then holds what that caller
/// sees at the end (never a Task left `working`); the other is refused as already answered.
#[tokio::test]
async fn two_answers_at_once_on_one_server_leave_the_stored_task_as_the_winner_was_told() {
    let dir = tempfile::tempdir().unwrap();
    let mut stores: Vec<String> = vec!["memory".into(), format!("file:{}", dir.path().join("tasks").display())];
    stores.extend(crate::common::engine_urls(dir.path()));
    for store in stores {
        let resumed = log();
        let mut o = options(Some(json!({"store": store})), echo_runner(log()));
        o.resume_task = Some(resumer(resumed.clone()));
        let srv = start_server(o).await.unwrap();
        for round in 0..5 {
            let (id, t) = parked_task(srv.url(), Some("ctx")).await;
            let answer = json!([{"kind": "data", "data": {"id": t["metadata"]["pending"]["id"], "ok": true}}]);
            let (a, b) =
                tokio::join!(continue_task(srv.url(), &id, answer.clone()), continue_task(srv.url(), &id, answer));
            let (won, lost): (Vec<&Value>, Vec<&Value>) = [&a, &b].into_iter().partition(|r| r.get("result").is_some());
            assert_eq!((won.len(), lost.len()), (1, 1), "{store} round {round}: {a} {b}");
            assert_eq!(lost[0]["error"]["data"]["code"], "ESTORECONFLICT", "{store}: {}", lost[0]);
            // The stored Task ends as the caller that won sees it end.
            let end = terminal(srv.url(), &id).await;
            assert_eq!(end["status"]["state"], "completed", "{store} round {round}: {end}");
            let again = rpc(srv.url(), "GetTask", json!({"id": id})).await;
            assert_eq!(again["result"]["status"]["state"], "completed", "{store}: {again}");
        }
        assert_eq!(taken(&resumed).len(), 5, "{store}: each Task went on once");
        srv.stop().await;
    }
}
