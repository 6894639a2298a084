//! The MCP profile (SPEC §7C) against rmcp's own client: `McpProfile::handle` behind a small
//! hyper server on 127.0.0.1 (streamable HTTP), and `McpSession` over a message channel.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use http_body_util::BodyExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ErrorCode};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransport, StreamableHttpClientTransportConfig};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use toolnexus_core::callback::{callback, SharedCallback};
use toolnexus_core::fn_tool::FnTool;
use toolnexus_core::serve::{exposed_tools, McpProfile, McpServeConfig, McpSession};
use toolnexus_core::tool::{SharedTool, ToolDecl};
use toolnexus_core::{Error, Tool, ToolContext, ToolResult};

use crate::util::serve::serve;

/// A tool whose execution fails outside any result (a host callback that threw).
struct Throws(ToolDecl);

#[async_trait]
impl Tool for Throws {
    fn decl(&self) -> &ToolDecl {
        &self.0
    }
    async fn execute(&self, _args: Value, _ctx: ToolContext) -> toolnexus_core::error::Result<ToolResult> {
        Err(Error::Invalid("kaboom".into()))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `echo` (native), `fails` (an error result, source "http"), `boom` (throws) and `wait`
/// (runs until its cancellation fires, then reports that on `cancelled`).
fn tools(cancelled: mpsc::UnboundedSender<&'static str>) -> Vec<SharedTool> {
    let schema = json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] });
    let echo = FnTool::new("echo", "echo back text", Some(schema), |args, _| async move {
        ToolResult::ok(args.get("text").and_then(Value::as_str).unwrap_or_default().to_string())
    });
    let fails = FnTool::new("fails", "an error result", None, |_, _| async { ToolResult::error("no luck") })
        .with_source("http");
    let wait = FnTool::new("wait", "waits for its cancellation", None, move |_, ctx: ToolContext| {
        let cancelled = cancelled.clone();
        async move {
            match ctx.cancel {
                Some(token) => {
                    token.cancelled().await;
                    let _ = cancelled.send("cancelled");
                    ToolResult::error("stopped")
                }
                None => ToolResult::error("no cancellation handed over"),
            }
        }
    });
    vec![
        Arc::new(echo),
        Arc::new(fails),
        Arc::new(Throws(ToolDecl::new("boom", "always throws", json!({ "type": "object" }), "custom"))),
        Arc::new(wait),
    ]
}

type Calls = Arc<Mutex<Vec<Value>>>;

/// An `onCall` that records each event; it fails every other time (a failure is swallowed).
fn recorder() -> (Calls, SharedCallback) {
    let calls: Calls = Arc::default();
    let seen = calls.clone();
    let cb = callback(move |ev: Value| {
        let seen = seen.clone();
        async move {
            let mut list = seen.lock().unwrap();
            list.push(ev);
            if list.len().is_multiple_of(2) {
                Err(Error::Invalid("observer failed".into()))
            } else {
                Ok(Value::Null)
            }
        }
    });
    (calls, cb)
}

/// The profile behind a hyper server on 127.0.0.1: the `/mcp` URL.
async fn http_server(profile: McpProfile) -> String {
    let addr = serve(move |req: hyper::Request<hyper::body::Incoming>| {
        let profile = profile.clone();
        async move {
            let (parts, body) = req.into_parts();
            let bytes = body.collect().await.ok()?.to_bytes();
            let res = profile.handle(hyper::Request::from_parts(parts, bytes)).await;
            Some(res.map(|b| b.boxed_unsync()))
        }
    })
    .await;
    format!("http://{addr}/mcp")
}

async fn http_client(url: &str) -> RunningService<RoleClient, ()> {
    let client = toolnexus_core::net::client_builder().build().expect("reqwest client");
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    ().serve(StreamableHttpClientTransport::with_client(client, config)).await.expect("client connects")
}

fn text(r: &CallToolResult) -> String {
    let v = serde_json::to_value(r).unwrap();
    assert_eq!(v["content"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["content"][0]["type"], "text");
    v["content"][0]["text"].as_str().unwrap().to_string()
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let mut params = CallToolRequestParams::new(name.to_string());
    if let Value::Object(m) = args {
        params = params.with_arguments(m);
    }
    client.call_tool(params).await
}

fn invalid_params(e: ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => {
            assert_eq!(data.code, ErrorCode::INVALID_PARAMS);
            data.message.to_string()
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn http_lists_calls_and_reports() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let (calls, on_call) = recorder();
    let cfg = McpServeConfig {
        name: Some("gateway".into()),
        version: Some("2.0.0".into()),
        tools: None,
        ..Default::default()
    };
    let url = http_server(McpProfile::new(tools(tx), cfg, Some(on_call))).await;
    let client = http_client(&url).await;

    let info = client.peer_info().expect("server info");
    let server = info.server_info.clone().expect("serverInfo");
    assert_eq!((server.name.as_str(), server.version.as_str()), ("gateway", "2.0.0"));
    assert!(info.capabilities.tools.is_some());

    let listed = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["echo", "fails", "boom", "wait"]);
    assert_eq!(listed[0].description.as_deref(), Some("echo back text"));
    assert_eq!(Value::Object((*listed[0].input_schema).clone())["required"], json!(["text"]));

    let r = call(&client, "echo", json!({ "text": "hi" })).await.expect("echo");
    assert_eq!((text(&r), r.is_error), ("hi".to_string(), Some(false)));
    let r = call(&client, "fails", json!({})).await.expect("fails");
    assert_eq!((text(&r), r.is_error), ("no luck".to_string(), Some(true)));
    let r = call(&client, "boom", json!({})).await.expect("boom answers");
    assert_eq!((text(&r), r.is_error), ("kaboom".to_string(), Some(true)));
    // No arguments at all: the tool gets `{}`.
    let r = call(&client, "echo", Value::Null).await.expect("echo without arguments");
    assert_eq!(text(&r), "");

    let e = call(&client, "nope", json!({})).await.unwrap_err();
    assert_eq!(invalid_params(e), "Unknown tool: nope");

    let seen = calls.lock().unwrap().clone();
    let shape: Vec<(String, String, bool)> = seen
        .iter()
        .map(|ev| {
            (
                ev["name"].as_str().unwrap().into(),
                ev["source"].as_str().unwrap().into(),
                ev["isError"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("echo".into(), "native".into(), false),
            ("fails".into(), "http".into(), true),
            ("boom".into(), "custom".into(), true),
            ("echo".into(), "native".into(), false)
        ]
    );
    assert!(seen.iter().all(|ev| ev["ms"].is_u64()), "{seen:?}");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn http_filter_exposes_only_named_tools() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let all = tools(tx);
    let cfg = McpServeConfig { tools: Some(vec!["wait".into(), "nope".into(), "echo".into()]), ..Default::default() };
    let exposed = exposed_tools(&all, &cfg);
    assert_eq!(exposed.iter().map(|t| t.name()).collect::<Vec<_>>(), ["echo", "wait"]);
    let url = http_server(McpProfile::new(exposed, cfg, None)).await;
    let client = http_client(&url).await;
    let server = client.peer_info().and_then(|i| i.server_info.clone()).expect("serverInfo");
    assert_eq!((server.name.as_str(), server.version.as_str()), ("toolnexus", "0.1.0"));
    let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["echo", "wait"]);
    let e = call(&client, "boom", json!({})).await.unwrap_err();
    assert_eq!(invalid_params(e), "Unknown tool: boom");
    let _ = client.cancel().await;
}

fn post(url: &str, body: Value) -> reqwest::RequestBuilder {
    toolnexus_core::net::client_builder()
        .build()
        .unwrap()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
}

#[tokio::test]
async fn http_client_leaving_cancels_the_call() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let url = http_server(McpProfile::new(tools(tx), McpServeConfig::default(), None)).await;
    let call =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "wait", "arguments": {} } });
    // The answer is one JSON body: nothing comes back before the tool ends.
    let pending = tokio::spawn(post(&url, call).send());
    assert!(tokio::time::timeout(Duration::from_millis(300), rx.recv()).await.is_err(), "not cancelled yet");
    assert!(!pending.is_finished(), "no answer while the tool runs");
    pending.abort();
    let seen = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.expect("the tool saw its cancellation");
    assert_eq!(seen, Some("cancelled"));
}

#[tokio::test]
async fn http_a_cancelled_notification_on_its_own_post_cancels_the_call() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let url = http_server(McpProfile::new(tools(tx), McpServeConfig::default(), None)).await;
    let call =
        json!({ "jsonrpc": "2.0", "id": "c-1", "method": "tools/call", "params": { "name": "wait", "arguments": {} } });
    let pending = tokio::spawn(post(&url, call).send());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancel =
        |id: Value| json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id } });
    // Another id (a number where the call's is a string) cancels nothing.
    for other in [json!("c-2"), json!(1)] {
        assert_eq!(post(&url, cancel(other)).send().await.unwrap().status(), 202);
    }
    assert!(tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_err(), "not cancelled yet");
    for version in [None, Some("2025-06-18")] {
        let mut req = post(&url, cancel(json!("c-1")));
        if let Some(v) = version {
            req = req.header("mcp-protocol-version", v);
        }
        assert_eq!(req.send().await.unwrap().status(), 202);
    }
    let seen = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.expect("the tool saw its cancellation");
    assert_eq!(seen, Some("cancelled"));
    let answered = tokio::time::timeout(Duration::from_secs(5), pending).await.expect("the call's exchange ends");
    assert!(answered.is_ok());
}

#[tokio::test]
async fn http_wire_errors_batches_and_unknown_methods() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let url = http_server(McpProfile::new(tools(tx), McpServeConfig::default(), None)).await;
    let http = toolnexus_core::net::client_builder().build().unwrap();
    let raw = |body: &str, version: Option<&str>| {
        let mut req = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(v) = version {
            req = req.header("mcp-protocol-version", v);
        }
        req.send()
    };
    let res = raw("{oops", None).await.unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!((body["error"]["code"].clone(), body["id"].clone()), (json!(-32700), Value::Null));

    let res = post(&url, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/nope" })).send().await.unwrap();
    assert_eq!(res.headers()["content-type"], "application/json");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body, json!({ "jsonrpc": "2.0", "id": 3, "error": { "code": -32601, "message": "Method not found" } }));

    let batch = json!([
        { "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "echo", "arguments": { "text": "a" } } },
        { "jsonrpc": "2.0", "method": "notifications/initialized" },
        { "jsonrpc": "2.0", "id": 2, "method": "prompts/list" },
    ])
    .to_string();
    let body: Value = raw(&batch, None).await.unwrap().json().await.unwrap();
    assert_eq!(body[0]["id"], 1);
    assert_eq!(body[0]["result"]["content"][0]["text"], "a");
    assert_eq!(
        body[1],
        json!({ "jsonrpc": "2.0", "id": 2, "error": { "code": -32601, "message": "Method not found" } })
    );
    assert_eq!(body.as_array().map(Vec::len), Some(2));
    let res = raw(&batch, Some("2025-06-18")).await.unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
}

#[tokio::test]
async fn http_any_host_and_the_other_methods() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let profile = McpProfile::new(tools(tx), McpServeConfig::default(), None);
    let url = http_server(profile.clone()).await;
    let http = toolnexus_core::net::client_builder().build().unwrap();

    // Addressed by another name (a LAN address): still served.
    let list = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/list" });
    let res = post(&url, list).header("host", "192.168.1.20:8080").send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("\"echo\""));

    // A notification is accepted with no body.
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(post(&url, note).send().await.unwrap().status(), 202);

    let res = http.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 406);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32000);

    let res = http.delete(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);

    let res = http.put(&url).send().await.unwrap();
    assert_eq!(res.status(), 405);
    assert_eq!(res.headers()["allow"], "GET, POST, DELETE");

    // GET with an event stream accepted: a stream that stays open until the server stops.
    let mut res = http.get(&url).header("accept", "text/event-stream").send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    assert!(tokio::time::timeout(Duration::from_millis(200), res.chunk()).await.is_err(), "still open");
    profile.shutdown();
    let end = tokio::time::timeout(Duration::from_secs(5), res.chunk()).await.expect("the stream ends");
    assert!(matches!(end, Ok(None)), "{end:?}");
}

/// The channel session: what the client sent in, every answer out.
struct Channel {
    session: McpSession,
    out: mpsc::UnboundedReceiver<Value>,
}

impl Channel {
    fn start(tools: Vec<SharedTool>, cfg: McpServeConfig, on_call: Option<SharedCallback>) -> Channel {
        let (tx, out) = mpsc::unbounded_channel();
        let outbound = callback(move |msg: Value| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(msg);
                Ok(Value::Null)
            }
        });
        Channel { session: McpSession::start(tools, cfg, on_call, outbound).expect("session"), out }
    }

    async fn next(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(5), self.out.recv()).await.expect("a message in time").expect("open")
    }

    async fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.session.receive(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let answer = self.next().await;
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }
}

#[tokio::test]
async fn channel_session_serves_the_protocol() {
    let (tx, mut cancelled) = mpsc::unbounded_channel();
    let (calls, on_call) = recorder();
    let cfg = McpServeConfig { name: Some("chan".into()), ..Default::default() };
    let mut ch = Channel::start(tools(tx), cfg, Some(on_call));

    let init =
        json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } });
    let r = ch.ask(1, "initialize", init).await;
    assert_eq!(r["result"]["serverInfo"], json!({ "name": "chan", "version": "0.1.0" }));
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    assert!(r["result"]["capabilities"]["tools"].is_object(), "{r}");
    ch.session.receive(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));

    let r = ch.ask(2, "tools/list", json!({})).await;
    let names: Vec<&str> =
        r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "fails", "boom", "wait"]);
    assert_eq!(r["result"]["tools"][0]["inputSchema"]["required"], json!(["text"]));

    let r = ch.ask(3, "tools/call", json!({ "name": "echo", "arguments": { "text": "yo" } })).await;
    assert_eq!(r["result"]["content"], json!([{ "type": "text", "text": "yo" }]));
    assert_eq!(r["result"]["isError"], false);
    let r = ch.ask(4, "tools/call", json!({ "name": "boom" })).await;
    assert_eq!(
        (r["result"]["content"][0]["text"].as_str(), r["result"]["isError"].as_bool()),
        (Some("kaboom"), Some(true))
    );
    let r = ch.ask(5, "tools/call", json!({ "name": "nope", "arguments": {} })).await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["message"], "Unknown tool: nope");
    assert_eq!(calls.lock().unwrap().len(), 2);
    for (id, method) in [(6, "no/such/method"), (7, "resources/list")] {
        let r = ch.ask(id, method, json!({})).await;
        assert_eq!(r["error"], json!({ "code": -32601, "message": "Method not found" }), "{method}");
    }

    // A cancelled request reaches the tool's cancellation and gets no answer.
    ch.session.receive(json!({ "jsonrpc": "2.0", "id": "w", "method": "tools/call", "params": { "name": "wait" } }));
    tokio::time::sleep(Duration::from_millis(50)).await;
    ch.session
        .receive(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "w" } }));
    let seen =
        tokio::time::timeout(Duration::from_secs(5), cancelled.recv()).await.expect("cancellation reached the tool");
    assert_eq!(seen, Some("cancelled"));
    let r = ch.ask(6, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));

    // Not a JSON-RPC message of MCP: an error for what has an id.
    ch.session.receive(json!({ "jsonrpc": "2.0", "id": 9, "method": 5 }));
    let r = ch.next().await;
    assert_eq!((r["id"].as_u64(), r["error"]["code"].as_i64()), (Some(9), Some(-32600)));

    // Closed: a call still running is cancelled and nothing more is answered.
    ch.session.receive(json!({ "jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": { "name": "wait" } }));
    tokio::time::sleep(Duration::from_millis(50)).await;
    ch.session.close();
    let seen = tokio::time::timeout(Duration::from_secs(5), cancelled.recv()).await.expect("close cancels");
    assert_eq!(seen, Some("cancelled"));
    ch.session.receive(json!({ "jsonrpc": "2.0", "id": 11, "method": "ping" }));
    assert!(tokio::time::timeout(Duration::from_millis(200), ch.out.recv()).await.map_or(true, |m| m.is_none()));
}

#[tokio::test]
async fn channel_session_filters_and_answers_without_initialize() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let cfg = McpServeConfig { tools: Some(vec!["fails".into()]), ..Default::default() };
    let exposed = exposed_tools(&tools(tx), &cfg);
    let mut ch = Channel::start(exposed, cfg, None);
    let r = ch.ask(1, "tools/list", json!({})).await;
    assert_eq!(r["result"]["tools"].as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(r["result"]["tools"][0]["name"], "fails");
    let r = ch.ask(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } })).await;
    assert_eq!(r["error"]["message"], "Unknown tool: echo");
}

#[tokio::test]
async fn channel_session_answers_ping_at_every_protocol_version() {
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut ch = Channel::start(tools(tx), McpServeConfig::default(), None);
        let init =
            json!({ "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } });
        ch.ask(1, "initialize", init).await;
        let r = ch.ask(2, "ping", json!({})).await;
        assert_eq!(r, json!({ "jsonrpc": "2.0", "id": 2, "result": {} }), "{version}");
    }
}

/// The official TypeScript SDK's streamable-HTTP client against the profile: the route a real
/// MCP client takes.
#[tokio::test]
async fn http_the_typescript_sdk_client_round_trips() {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    if !std::path::Path::new(repo).join("node_modules/@modelcontextprotocol/sdk").exists() {
        eprintln!("skipped: the MCP SDK is not installed");
        return;
    }
    let (tx, _rx) = mpsc::unbounded_channel();
    let (calls, on_call) = recorder();
    let cfg = McpServeConfig { name: Some("http-gateway".into()), ..Default::default() };
    let url = http_server(McpProfile::new(tools(tx), cfg, Some(on_call))).await;
    let script = r#"
        import { Client } from "@modelcontextprotocol/sdk/client/index.js"
        import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
        const client = new Client({ name: "ts", version: "1" })
        await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[1])))
        const { tools } = await client.listTools()
        const ok = await client.callTool({ name: "echo", arguments: { text: "over http" } })
        const bad = await client.callTool({ name: "boom", arguments: {} })
        let unknown
        try { await client.callTool({ name: "nope", arguments: {} }) } catch (e) { unknown = { code: e.code, message: e.message } }
        await client.close()
        console.log(JSON.stringify({ server: client.getServerVersion(), names: tools.map((t) => t.name), ok, bad, unknown }))
    "#;
    let out = tokio::process::Command::new("node")
        .args(["--input-type=module", "-e", script, &url])
        .current_dir(repo)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), out).await.expect("in time").expect("node runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(v["server"], json!({ "name": "http-gateway", "version": "0.1.0" }));
    assert_eq!(v["names"], json!(["echo", "fails", "boom", "wait"]));
    assert_eq!(v["ok"]["content"], json!([{ "type": "text", "text": "over http" }]));
    assert_eq!(v["ok"]["isError"], false);
    assert_eq!((v["bad"]["content"][0]["text"].as_str(), v["bad"]["isError"].as_bool()), (Some("kaboom"), Some(true)));
    assert_eq!(v["unknown"]["code"], -32602);
    assert!(v["unknown"]["message"].as_str().is_some_and(|m| m.contains("Unknown tool: nope")), "{v}");
    assert_eq!(calls.lock().unwrap().len(), 2);
}
