//! The MCP source against real servers: a small dependency-free Node MCP server
//! (tests/fixtures/mcp_server.mjs) over stdio, streamable HTTP and legacy SSE.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use toolnexus_core::callback::callback;
use toolnexus_core::cancel::Abort;
use toolnexus_core::mcp::{self, LoadOptions, McpSource, McpStatus, McpTool};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::{ToolContext, Toolkit, ToolkitOptions};

use crate::util::serve::{full, serve};

const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp_server.mjs");

fn local(flags: &[&str]) -> Value {
    let mut command = vec![json!("node"), json!(SERVER)];
    command.extend(flags.iter().map(|f| json!(f)));
    json!({ "type": "local", "command": command })
}

fn with(mut cfg: Value, extra: Value) -> Value {
    if let (Some(m), Value::Object(e)) = (cfg.as_object_mut(), extra) {
        m.extend(e);
    }
    cfg
}

async fn load(config: Value) -> McpSource {
    mcp::load_mcp(&config, LoadOptions::default()).await.expect("load")
}

fn names(source: &McpSource) -> Vec<String> {
    source.tools.iter().map(|t| t.name().to_string()).collect()
}

fn tool<'a>(source: &'a McpSource, name: &str) -> &'a SharedTool {
    source.tools.iter().find(|t| t.name() == name).unwrap_or_else(|| panic!("no tool {name}"))
}

fn status(source: &McpSource) -> Vec<(String, &'static str)> {
    source.status.iter().map(|(k, s)| (k.clone(), s.as_str())).collect()
}

async fn call(source: &McpSource, name: &str, args: Value) -> toolnexus_core::ToolResult {
    tool(source, name).execute(args, ToolContext::default()).await.expect("execute")
}

async fn whoami(source: &McpSource, server: &str) -> Value {
    let r = call(source, &format!("{server}_whoami"), json!({})).await;
    assert!(!r.is_error, "{}", r.output);
    serde_json::from_str(&r.output).expect("whoami json")
}

/// A process that exited and was reaped, or is a zombie, counts as gone.
#[cfg(target_os = "linux")]
fn alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Without /proc (macOS, the BSDs): what `ps` says, a zombie (state Z) counting as gone.
#[cfg(not(target_os = "linux"))]
fn alive(pid: u64) -> bool {
    let out = std::process::Command::new("ps").args(["-o", "stat=", "-p", &pid.to_string()]).output().expect("ps");
    let state = String::from_utf8_lossy(&out.stdout);
    !state.trim().is_empty() && !state.trim_start().starts_with('Z')
}

/// Live processes whose command line carries `tag`.
#[cfg(target_os = "linux")]
fn tagged(tag: &str) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == tag.as_bytes()))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// Without /proc: `ps`'s list of every process and its arguments (split on spaces; the tags
/// have none).
#[cfg(not(target_os = "linux"))]
fn tagged(tag: &str) -> Vec<u64> {
    let out = std::process::Command::new("ps").args(["-axww", "-o", "pid=,args="]).output().expect("ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (pid, args) = line.trim_start().split_once(' ')?;
            args.split(' ').any(|a| a == tag).then(|| pid.parse().ok())?
        })
        .filter(|pid| alive(*pid))
        .collect()
}

fn fresh_tag(what: &str) -> String {
    let ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("tn-{what}-{}-{ns}", std::process::id())
}

async fn none_tagged_within(tag: &str, limit: Duration) -> Vec<u64> {
    let t0 = Instant::now();
    loop {
        let left = tagged(tag);
        if left.is_empty() || t0.elapsed() > limit {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn gone_within(pid: u64, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    !alive(pid)
}

/// The fixture in HTTP mode; the child is killed when the guard drops.
struct HttpServer {
    _child: tokio::process::Child,
    port: u16,
}

/// Start `node <script> <args>` (killed on drop) and read the first line it prints.
async fn node_printing(script: &str, args: &[&str]) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("its first line in time")
        .expect("read")
        .expect("a line");
    (child, line)
}

async fn http_server() -> HttpServer {
    let (child, line) = node_printing(SERVER, &["--http"]).await;
    let port = line.trim_start_matches("PORT ").trim().parse().expect("port");
    HttpServer { _child: child, port }
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_names_and_maps_schemas() {
    let src = load(json!({ "mcpServers": { "fx": local(&[]) } })).await;
    assert_eq!(status(&src), [("fx".to_string(), "connected")]);
    assert_eq!(
        names(&src),
        [
            "fx_echo",
            "fx_multi",
            "fx_structured",
            "fx_fail",
            "fx_fail_blank",
            "fx_rpc_error",
            "fx_slow",
            "fx_hang",
            "fx_die",
            "fx_ask",
            "fx_ask_url",
            "fx_whoami",
            "fx_weird_name_v2"
        ]
    );
    let echo = tool(&src, "fx_echo");
    assert_eq!(echo.source(), "mcp");
    assert_eq!(echo.description(), "Echo the text back");
    assert_eq!(
        serde_json::to_string(echo.input_schema()).unwrap(),
        r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}"#
    );
    let multi = tool(&src, "fx_multi");
    assert_eq!(multi.description(), "");
    assert_eq!(*multi.input_schema(), json!({"type": "object", "properties": {}, "additionalProperties": false}));
    // The MCP SDK's schema parse puts `type`, `properties` and `required` first; the reference
    // reads the tool through it.
    assert_eq!(
        serde_json::to_string(tool(&src, "fx_structured").input_schema()).unwrap(),
        r#"{"type":"object","$schema":"http://json-schema.org/draft-07/schema#","title":"S","additionalProperties":false,"properties":{}}"#
    );
    let mcp_tool = tool(&src, "fx_weird_name_v2").as_any().downcast_ref::<McpTool>().expect("an McpTool");
    assert_eq!((mcp_tool.server(), mcp_tool.original_name()), ("fx", "weird name.v2"));
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_map_results_as_the_reference() {
    let src = load(json!({ "servers": { "fx": local(&[]) } })).await;
    let r = call(&src, "fx_echo", json!({"text": "hi there"})).await;
    assert_eq!(r.to_value(), json!({"output": "hi there", "isError": false, "metadata": {"server": "fx"}}));
    assert_eq!(call(&src, "fx_multi", json!({})).await.output, "one\n\ntwo");
    assert_eq!(call(&src, "fx_structured", json!({})).await.output, r#"{"2":"x","b":1,"a":[1.5,2]}"#);
    let r = call(&src, "fx_fail", json!({})).await;
    assert_eq!((r.output.as_str(), r.is_error), ("first\n\nsecond", true));
    assert_eq!(r.metadata, Some(json!({"server": "fx"})));
    let r = call(&src, "fx_fail_blank", json!({})).await;
    assert_eq!((r.output.as_str(), r.is_error), ("MCP tool returned an error", true));
    let r = call(&src, "fx_rpc_error", json!({})).await;
    assert_eq!((r.output.as_str(), r.is_error), ("MCP error -32602: bad arguments", true));
    assert_eq!(call(&src, "fx_weird_name_v2", Value::Null).await.output, "weird");
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_outside_the_typed_model_are_still_read() {
    let src = load(json!({"o": local(&["--odd"])})).await;
    assert_eq!(status(&src), [("o".to_string(), "connected")]);
    assert_eq!(names(&src), ["o_bare", "o_odd"]);
    assert_eq!(
        *tool(&src, "o_bare").input_schema(),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    assert_eq!(tool(&src, "o_odd").description(), "7");
    assert_eq!(
        *tool(&src, "o_odd").input_schema(),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    let r = call(&src, "o_bare", json!({})).await;
    assert_eq!((r.output.as_str(), r.is_error), ("seen", false));
    let r = call(&src, "o_odd", json!({})).await;
    assert_eq!((r.output.as_str(), r.is_error), ("odd", true));
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn call_timeouts_come_from_the_context_or_the_server() {
    let src = load(json!({ "fx": with(local(&[]), json!({"timeout": 1500})) })).await;
    let t0 = Instant::now();
    let ctx = ToolContext { timeout: Some(200.0), ..Default::default() };
    let r = tool(&src, "fx_slow").execute(json!({"ms": 5000}), ctx).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("MCP error -32001: Request timed out", true));
    assert!(t0.elapsed() < Duration::from_millis(1200), "{:?}", t0.elapsed());
    let t0 = Instant::now();
    let r = call(&src, "fx_hang", json!({})).await;
    assert_eq!(r.output, "MCP error -32001: Request timed out");
    assert!(t0.elapsed() >= Duration::from_millis(1400) && t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    // The session survives a timed-out call.
    assert_eq!(call(&src, "fx_echo", json!({"text": "still"})).await.output, "still");
    let cancel = tokio_util::sync::CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let r = tool(&src, "fx_hang")
        .execute(json!({}), ToolContext { cancel: Some(cancel), ..Default::default() })
        .await
        .unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("This operation was aborted", true));
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn allowlists_follow_the_three_modes() {
    let cfg = json!({
        "all": with(local(&[]), json!({"tools": {}})),
        "allow": with(local(&[]), json!({"tools": {"echo": true, "fail": false, "nope": true}})),
        "drop": with(local(&[]), json!({"tools": {"echo": false, "multi": false, "nope": false}})),
    });
    let src = load(cfg).await;
    let of = |prefix: &str| names(&src).into_iter().filter(|n| n.starts_with(prefix)).count();
    assert_eq!(of("all_"), 13);
    assert_eq!(names(&src).into_iter().filter(|n| n.starts_with("allow_")).collect::<Vec<_>>(), ["allow_echo"]);
    assert_eq!(of("drop_"), 11);
    assert!(!names(&src).contains(&"drop_echo".to_string()));
    // MCP tools keep config order across servers.
    assert!(names(&src)[0].starts_with("all_"));
    assert!(names(&src).last().unwrap().starts_with("drop_"));
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn statuses_come_in_config_order_and_failures_are_isolated() {
    let tag = fresh_tag("status");
    let cfg = json!({
        "missing": {"command": ["/no/such/binary-tn"]},
        "off": {"url": "http://127.0.0.1:9/mcp", "enabled": false},
        "exits": with(local(&["--exit"]), json!({"timeout": 20000})),
        "ok": local(&[]),
        "hangs": with(local(&["--hang-init", "--grandchild", "--tag", &tag]), json!({"timeout": 300})),
        "also_off": with(local(&[]), json!({"disabled": true})),
        "empty": {"type": "local", "command": []},
        "bad_url": {"type": "remote", "url": "not a url"},
    });
    let t0 = Instant::now();
    let src = load(cfg).await;
    assert!(t0.elapsed() < Duration::from_secs(5), "bounded by the hung server's timeout: {:?}", t0.elapsed());
    assert_eq!(
        status(&src),
        [
            ("missing".to_string(), "failed"),
            ("off".to_string(), "disabled"),
            ("exits".to_string(), "failed"),
            ("ok".to_string(), "connected"),
            ("hangs".to_string(), "failed"),
            ("also_off".to_string(), "disabled"),
            ("empty".to_string(), "failed"),
            ("bad_url".to_string(), "failed"),
        ]
    );
    assert_eq!(
        src.status_value().to_string(),
        r#"{"missing":"failed","off":"disabled","exits":"failed","ok":"connected","hangs":"failed","also_off":"disabled","empty":"failed","bad_url":"failed"}"#
    );
    assert_eq!(src.tools.len(), 13);
    assert!(names(&src).iter().all(|n| n.starts_with("ok_")));
    assert_eq!(
        none_tagged_within(&tag, Duration::from_secs(3)).await,
        Vec::<u64>::new(),
        "a timed-out server outlived its failure"
    );
    assert_eq!(call(&src, "ok_echo", json!({"text": "fine"})).await.output, "fine");
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_exits_at_once_fails_fast() {
    let t0 = Instant::now();
    let src = load(json!({"x": with(local(&["--exit"]), json!({"timeout": 30000}))})).await;
    assert_eq!(status(&src), [("x".to_string(), "failed")]);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hung_list_is_bounded_by_the_server_timeout() {
    let t0 = Instant::now();
    let src = load(json!({"h": with(local(&["--hang-list"]), json!({"timeout": 400})), "ok": local(&[])})).await;
    assert_eq!(status(&src), [("h".to_string(), "failed"), ("ok".to_string(), "connected")]);
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pagination_is_followed_and_bounded() {
    let src = load(json!({"p": local(&["--page-size", "2"])})).await;
    assert_eq!(src.tools.len(), 13);
    assert_eq!(names(&src)[12], "p_weird_name_v2");
    src.close().await;
    let src = load(json!({"d": local(&["--dup-cursor"]), "e": local(&["--endless"])})).await;
    assert_eq!(status(&src), [("d".to_string(), "failed"), ("e".to_string(), "failed")]);
    assert!(src.tools.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_killed_mid_call_gives_an_error_result() {
    let src = load(json!({"fx": local(&[])})).await;
    let who = whoami(&src, "fx").await;
    let pid = who["pid"].as_i64().unwrap();
    let slow = tool(&src, "fx_slow").clone();
    let pending = tokio::spawn(async move { slow.execute(json!({"ms": 20000}), ToolContext::default()).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t0 = Instant::now();
    unsafe_kill(pid);
    let r = tokio::time::timeout(Duration::from_secs(5), pending).await.expect("no hang").unwrap().unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("MCP error -32000: Connection closed", true));
    assert!(t0.elapsed() < Duration::from_secs(3));
    // Later calls fail at once too.
    let r = call(&src, "fx_echo", json!({"text": "x"})).await;
    assert_eq!((r.output.as_str(), r.is_error), ("MCP error -32000: Connection closed", true));
    // A server that exits on its own mid-call.
    let src2 = load(json!({"fx": local(&[])})).await;
    let r = tokio::time::timeout(Duration::from_secs(5), call(&src2, "fx_die", json!({}))).await.expect("no hang");
    assert_eq!((r.output.as_str(), r.is_error), ("MCP error -32000: Connection closed", true));
    src.close().await;
    src2.close().await;
}

fn unsafe_kill(pid: i64) {
    let status = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status().expect("kill");
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn close_ends_every_child_and_is_idempotent() {
    let cfg = json!({
        "a": local(&["--grandchild", "--ignore-eof"]),
        "b": local(&["--grandchild"]),
    });
    let src = load(cfg).await;
    let mut pids = Vec::new();
    for server in ["a", "b"] {
        let who = whoami(&src, server).await;
        pids.push(who["pid"].as_u64().unwrap());
        pids.push(who["grandchild"].as_u64().unwrap());
    }
    assert!(pids.iter().all(|p| alive(*p)));
    let pid_of_tool = tool(&src, "a_echo").as_any().downcast_ref::<McpTool>().unwrap().server_pid().unwrap();
    assert_eq!(u64::from(pid_of_tool), pids[0]);
    let t0 = Instant::now();
    src.close().await;
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    for pid in &pids {
        assert!(gone_within(*pid, Duration::from_secs(3)).await, "pid {pid} outlived close()");
    }
    src.close().await;
    let r = call(&src, "a_echo", json!({"text": "x"})).await;
    assert!(r.is_error);
    assert_eq!(r.metadata, Some(json!({"server": "a"})));
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_source_also_ends_the_children() {
    let src = load(json!({"a": local(&["--grandchild", "--ignore-eof"])})).await;
    let who = whoami(&src, "a").await;
    let pids = [who["pid"].as_u64().unwrap(), who["grandchild"].as_u64().unwrap()];
    drop(src);
    for pid in pids {
        assert!(gone_within(pid, Duration::from_secs(3)).await, "pid {pid} outlived the source");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn environment_and_cwd_reach_the_child() {
    let dir = std::env::temp_dir();
    let cwd = dir.canonicalize().unwrap();
    let cfg = json!({
        "e": with(local(&[]), json!({"environment": {"TN_FIXTURE_FOO": "bar"}, "env": {"TN_FIXTURE_FOO": "ignored"}, "cwd": cwd})),
        "v": with(local(&[]), json!({"env": {"TN_FIXTURE_FOO": 42}})),
    });
    let src = load(cfg).await;
    let e = whoami(&src, "e").await;
    assert_eq!(e["foo"], "bar");
    assert_eq!(e["cwd"], json!(cwd));
    assert_eq!(whoami(&src, "v").await["foo"], "42");
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn elicitation_round_trips_through_wait_for() {
    let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
    let log = seen.clone();
    let wait_for = callback(move |req: Value| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push(req.clone());
            Ok(if req["kind"] == "input" {
                json!({"id": req["id"], "ok": true, "data": {"env": "production"}})
            } else {
                json!({"id": req["id"], "ok": false, "reason": "declined"})
            })
        }
    });
    let opts = LoadOptions { wait_for: Some(wait_for), ..LoadOptions::default() };
    let src = mcp::load_mcp(&json!({"fx": local(&[])}), opts).await.unwrap();
    assert_eq!(whoami(&src, "fx").await["capabilities"]["elicitation"], json!({}));
    let r = call(&src, "fx_ask", json!({})).await;
    assert_eq!(r.output, r#"{"action":"accept","content":{"env":"production"}}"#);
    let r = call(&src, "fx_ask_url", json!({})).await;
    assert_eq!(r.output, r#"{"action":"decline"}"#);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["kind"], "input");
    assert_eq!(seen[0]["prompt"], "Which environment?");
    assert_eq!(seen[0]["data"]["schema"]["required"], json!(["env"]));
    assert_eq!(seen[0]["data"]["schema"]["properties"]["env"]["type"], "string");
    assert!(seen[0]["id"].as_str().unwrap().starts_with("elc-"));
    assert_eq!(seen[1]["kind"], "authorization");
    assert_eq!(seen[1]["url"], "https://example.com/auth");
    assert!(seen[1].get("data").is_none());
    src.close().await;

    // Without a waitFor nothing is advertised, and an elicitation is refused.
    let src = load(json!({"fx": local(&[])})).await;
    assert!(whoami(&src, "fx").await["capabilities"].get("elicitation").is_none());
    let r = call(&src, "fx_ask", json!({})).await;
    assert!(r.output.contains("\"error\""), "{}", r.output);
    src.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn streamable_http_with_env_headers_and_the_sse_fallback() {
    // The headers' variables are read from the process environment: run in a process that has
    // the one and not the other.
    crate::alone!(streamable_http_with_env_headers_and_the_sse_fallback, |cmd| {
        cmd.env("TN_MCP_TEST_TOKEN", "tok-123").env_remove("TN_MCP_TEST_UNSET");
    });
    let server = http_server().await;
    let cfg = json!({
        "web": {
            "url": format!("http://127.0.0.1:{}/mcp", server.port),
            "headers": {"Authorization": "Bearer ${TN_MCP_TEST_TOKEN}", "X-Custom": "a${TN_MCP_TEST_UNSET}b"},
        },
        "legacy": {"type": "remote", "url": format!("http://127.0.0.1:{}/sse", server.port)},
        "nowhere": {"url": "http://127.0.0.1:9/mcp", "timeout": 3000},
    });
    let src = load(cfg).await;
    assert_eq!(
        status(&src),
        [("web".to_string(), "connected"), ("legacy".to_string(), "connected"), ("nowhere".to_string(), "failed")]
    );
    assert_eq!(call(&src, "web_echo", json!({"text": "over http"})).await.output, "over http");
    let who = whoami(&src, "web").await;
    assert_eq!(who["authorization"], "Bearer tok-123");
    assert_eq!(who["custom"], "ab");
    assert_eq!(call(&src, "legacy_echo", json!({"text": "over sse"})).await.output, "over sse");
    assert_eq!(call(&src, "legacy_structured", json!({})).await.output, r#"{"2":"x","b":1,"a":[1.5,2]}"#);
    let r = call(&src, "legacy_rpc_error", json!({})).await;
    assert_eq!(r.output, "MCP error -32602: bad arguments");
    src.close().await;
    src.close().await;
}

/// A TCP endpoint that accepts and reads but never answers; counts connections still open.
async fn black_hole() -> (u16, Arc<std::sync::atomic::AtomicUsize>, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (opened, open) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (o2, n2) = (opened.clone(), open.clone());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            o2.fetch_add(1, Ordering::SeqCst);
            n2.fetch_add(1, Ordering::SeqCst);
            let n3 = n2.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while matches!(sock.read(&mut buf).await, Ok(n) if n > 0) {}
                n3.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (port, opened, open)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_server_that_never_answers_fails_in_time_and_keeps_no_connection() {
    use std::sync::atomic::Ordering;
    let (port, opened, open) = black_hole().await;
    let t0 = Instant::now();
    let src = load(json!({"void": {"url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 500}})).await;
    assert_eq!(status(&src), [("void".to_string(), "failed")]);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(opened.load(Ordering::SeqCst) >= 1);
    let t1 = Instant::now();
    while open.load(Ordering::SeqCst) > 0 && t1.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(open.load(Ordering::SeqCst), 0, "the abandoned request still holds its connection");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_abort_fails_the_whole_load_promptly_and_leaves_nothing_running() {
    let abort = Abort::new();
    let a2 = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        a2.abort(Some("stop now".into()));
    });
    let t0 = Instant::now();
    let tag = fresh_tag("abort");
    let cfg = json!({
        "h": with(local(&["--hang-list", "--grandchild", "--tag", &tag]), json!({"timeout": 60000})),
        "ok": local(&["--grandchild", "--tag", &tag]),
    });
    let err = mcp::load_mcp(&cfg, LoadOptions { cancel: Some(abort), ..LoadOptions::default() })
        .await
        .err()
        .expect("aborted");
    assert_eq!(err.to_string(), "stop now");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(
        none_tagged_within(&tag, Duration::from_secs(3)).await,
        Vec::<u64>::new(),
        "processes outlived the aborted load"
    );
    // An already-aborted signal does not stop a config with nothing to connect.
    let done = Abort::new();
    done.abort(None);
    let src = mcp::load_mcp(
        &json!({"off": {"url": "http://x", "enabled": false}}),
        LoadOptions { cancel: Some(done), ..LoadOptions::default() },
    )
    .await
    .unwrap();
    assert_eq!(status(&src), [("off".to_string(), "disabled")]);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_mcp_tools_is_unfiltered_and_disconnects() {
    let tag = fresh_tag("list");
    let cfg = json!({
        "srv": with(local(&["--grandchild", "--ignore-eof", "--tag", &tag]), json!({"tools": {"echo": true}})),
        "bad": {"type": "local", "command": ["node", "/no/such/script.mjs"]},
        "off": {"url": "http://x", "disabled": true},
    });
    let inv = mcp::list_mcp_tools(&cfg, None).await.unwrap();
    // The group is signalled before the listing returns; a loaded machine may take a moment to
    // carry the deaths out.
    assert_eq!(
        none_tagged_within(&tag, Duration::from_secs(3)).await,
        Vec::<u64>::new(),
        "listing left a process running"
    );
    assert_eq!(
        inv.status,
        [("srv".into(), McpStatus::Connected), ("bad".into(), McpStatus::Failed), ("off".into(), McpStatus::Disabled)]
    );
    assert_eq!(inv.tools.len(), 1);
    let (server, infos) = &inv.tools[0];
    assert_eq!(server, "srv");
    assert_eq!(infos.len(), 13);
    assert_eq!(infos[0].name, "echo");
    assert_eq!(infos[12].name, "weird name.v2");
    assert_eq!(infos[1].description, "");
    assert_eq!(
        serde_json::to_string(&infos[0].input_schema).unwrap(),
        r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#
    );
    let v = inv.to_value();
    assert_eq!(v["status"], json!({"srv": "connected", "bad": "failed", "off": "disabled"}));
    assert_eq!(
        v["tools"]["srv"][0],
        json!({"name": "echo", "description": "Echo the text back", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_toolkit_puts_mcp_tools_first_and_closes_them() {
    use toolnexus_core::fn_tool::FnTool;
    use toolnexus_core::ToolResult;
    let extra: SharedTool = Arc::new(FnTool::new("mine", "d", None, |_, _| async { ToolResult::ok("m") }));
    let tk = Toolkit::create(ToolkitOptions {
        extra_tools: vec![extra],
        disable_tools: vec!["fx_hang".into()],
        builtins: Some(json!(false)),
        mcp_config: Some(json!({"mcpServers": {"fx": with(local(&["--grandchild"]), json!({"tools": {"echo": true, "whoami": true, "hang": true}})), "off": {"url": "http://x", "enabled": false}}})),
        ..Default::default()
    })
    .await
    .unwrap();
    let listed: Vec<_> = tk.tools().iter().map(|t| t.name().to_string()).collect();
    assert_eq!(listed, ["fx_echo", "fx_whoami", "mine"]);
    assert_eq!(tk.mcp_status(), [("fx".to_string(), McpStatus::Connected), ("off".to_string(), McpStatus::Disabled)]);
    let r = tk.execute("fx_echo", json!({"text": "via toolkit"}), ToolContext::default()).await.unwrap();
    assert_eq!(r.output, "via toolkit");
    let who: Value =
        serde_json::from_str(&tk.execute("fx_whoami", json!({}), ToolContext::default()).await.unwrap().output)
            .unwrap();
    tk.close().await;
    tk.close().await;
    for pid in [who["pid"].as_u64().unwrap(), who["grandchild"].as_u64().unwrap()] {
        assert!(gone_within(pid, Duration::from_secs(3)).await, "pid {pid} outlived the toolkit");
    }
    // No mcpConfig: no statuses, close is a no-op.
    let plain = Toolkit::create(ToolkitOptions::default()).await.unwrap();
    assert!(plain.mcp_status().is_empty());
    plain.close().await;
    // A bad config fails the build.
    let e =
        Toolkit::create(ToolkitOptions { mcp_config: Some(json!("/no/such/mcp.json")), ..Default::default() }).await;
    assert!(e.err().unwrap().to_string().starts_with("ENOENT"));
}

// ---------------------------------------------------------------------------------------
// Child-process tests: the test binary runs itself with `TN_MCP_CHILD` set, so a test can
// read what the core prints to stderr, or end a host process while its servers are up.
// ---------------------------------------------------------------------------------------

const SECRET: &str = "SECRET-7f3a";

/// The child's side: a no-op unless this binary was started by one of the tests below.
#[test]
fn child_process_helper() {
    let Ok(mode) = std::env::var("TN_MCP_CHILD") else { return };
    let config: Value = serde_json::from_str(&std::env::var("TN_MCP_CHILD_CONFIG").unwrap_or_default()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    rt.block_on(async {
        let src = load(config).await;
        let statuses: Vec<_> = status(&src).into_iter().map(|(k, s)| format!("{k}={s}")).collect();
        println!("STATUS {}", statuses.join(","));
        for t in &src.tools {
            if let Some(pid) = t.as_any().downcast_ref::<McpTool>().and_then(McpTool::server_pid) {
                if t.name().ends_with("_whoami") {
                    let who = whoami(&src, t.name().trim_end_matches("_whoami")).await;
                    println!("PIDS {pid} {} {}", who["pid"], who["grandchild"]);
                }
            }
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        match mode.as_str() {
            "exit" => std::process::exit(7),
            "hang" => loop {
                tokio::time::sleep(Duration::from_secs(60)).await;
            },
            _ => {}
        }
    });
}

/// Start this binary as a child running `child_process_helper` in `mode` with `config`.
fn start_child(mode: &str, config: &Value) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([&crate::util::alone::test_name(module_path!(), "child_process_helper")])
        .args(["--exact", "--nocapture", "--test-threads", "1"])
        .env("TN_MCP_CHILD", mode)
        .env("TN_MCP_CHILD_CONFIG", config.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// A URL with a token in its query and credentials in its userinfo.
fn secret_url(port: u16, path: &str) -> String {
    format!("http://user:pw-{SECRET}@127.0.0.1:{port}{path}?api_key={SECRET}#frag-{SECRET}")
}

/// An HTTP endpoint that answers every request with a 500 whose body is plain text.
async fn failing_http() -> u16 {
    let addr = serve(|_| async {
        let res = hyper::Response::builder()
            .status(500)
            .header("content-type", "text/plain")
            .header("connection", "close")
            .body(full("boom"))
            .unwrap();
        Some(res)
    })
    .await;
    addr.port()
}

fn assert_clean(text: &str) {
    assert!(!text.contains(SECRET), "the secret leaked: {text}");
    assert!(!text.contains("user:"), "the userinfo leaked: {text}");
    assert!(!text.contains("api_key"), "the query leaked: {text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_in_a_remote_url_never_reach_the_warning() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let failing = failing_http().await;
    let config = json!({
        "closed": {"url": secret_url(closed, "/mcp"), "timeout": 5000},
        "broken": {"type": "remote", "url": secret_url(failing, "/mcp"), "timeout": 5000},
        "odd": secret_url(closed, "/x"),
    });
    let child = start_child("warn", &config);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("STATUS closed=failed,broken=failed,odd=failed"), "{stdout}");
    for name in ["closed", "broken", "odd"] {
        let line = stderr
            .lines()
            .find(|l| l.starts_with(&format!("[toolnexus] MCP server \"{name}\" failed: ")))
            .unwrap_or_else(|| panic!("no warning for {name}: {stderr}"));
        assert_clean(line);
    }
    // The 500 is the server's answer, said as such (a 500 is no sign of an old HTTP+SSE server,
    // so the legacy transport is not tried); what is left of a URL keeps its host and path.
    assert!(stderr.contains("[toolnexus] MCP server \"broken\" failed: the server answered HTTP 500"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{closed}/x")), "{stderr}");
    assert_clean(&stderr);
    assert_clean(&stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_in_a_remote_url_never_reach_a_tool_result() {
    let mut server = http_server().await;
    let src = load(json!({"web": {"url": secret_url(server.port, "/mcp"), "timeout": 3000}})).await;
    assert_eq!(status(&src), [("web".to_string(), "connected")]);
    assert_eq!(call(&src, "web_echo", json!({"text": "hi"})).await.output, "hi");
    server._child.kill().await.unwrap();
    let r = call(&src, "web_echo", json!({"text": "hi"})).await;
    assert!(r.is_error, "{}", r.output);
    assert_clean(&r.output);
    src.close().await;
}

/// A load from a thread that then ends: the server must live on as long as the process does
/// (a parent-death signal set up on that thread would have ended it).
#[test]
fn a_server_outlives_the_thread_that_started_it() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let handle = rt.handle().clone();
    let src = std::thread::spawn(move || handle.block_on(load(json!({"a": local(&["--grandchild"])})))).join().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let who = rt.block_on(whoami(&src, "a"));
    let pids = [who["pid"].as_u64().unwrap(), who["grandchild"].as_u64().unwrap()];
    assert!(pids.iter().all(|p| alive(*p)), "{pids:?}");
    rt.block_on(src.close());
    rt.block_on(async {
        for pid in pids {
            assert!(gone_within(pid, Duration::from_secs(3)).await, "pid {pid} outlived close()");
        }
    });
}

/// A host process started by a test; killed if the test ends early.
struct Host(std::process::Child);

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Host {
    async fn wait(&mut self) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "the host did not end");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Start a host with a server that ignores stdin EOF and has a grandchild, wrapped in `sh -c`
/// (as `npx` or a shell script would wrap it), and another one unwrapped; returns the host and
/// every pid of the servers' trees.
async fn host_with_servers(mode: &str) -> (Host, Vec<u64>) {
    let wrapped = json!({"type": "local", "command": ["/bin/sh", "-c", "node \"$0\" \"$@\"; exit $?", SERVER, "--grandchild", "--ignore-eof"]});
    let config = json!({"plain": local(&["--grandchild", "--ignore-eof"]), "wrapped": wrapped});
    let mut host = Host(start_child(mode, &config));
    let stdout = host.0.stdout.take().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut pids = Vec::new();
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("PIDS ") {
                pids.extend(rest.split(' ').filter_map(|p| p.parse::<u64>().ok()));
                if pids.len() == 6 {
                    break;
                }
            }
        }
        pids
    });
    let pids = tokio::time::timeout(Duration::from_secs(20), lines).await.expect("pids in time").unwrap();
    assert_eq!(pids.len(), 6, "{pids:?}");
    (host, pids)
}

/// Every descendant of `pid` (through /proc's parent links).
#[cfg(target_os = "linux")]
fn descendants(root: u64) -> Vec<u64> {
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok()) {
                let ppid = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| {
                    s.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<u64>().ok())
                });
                if ppid == Some(parent) && !found.contains(&pid) {
                    found.push(pid);
                }
            }
        }
        i += 1;
    }
    found.remove(0);
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_end_when_their_host_exits_without_closing() {
    let (mut host, pids) = host_with_servers("exit").await;
    assert_eq!(host.wait().await.code(), Some(7));
    for pid in &pids {
        assert!(gone_within(*pid, Duration::from_secs(3)).await, "pid {pid} outlived its host ({pids:?})");
    }
}

// Linux: the process tree is read from /proc.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn servers_end_when_their_host_is_killed() {
    let (mut host, pids) = host_with_servers("hang").await;
    let tree = descendants(u64::from(host.0.id()));
    // plain: node → node; wrapped: sh → node → node; a watcher for each.
    assert_eq!(tree.len(), 7, "{tree:?}");
    host.0.kill().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(host.wait().await.signal(), Some(9));
    for pid in pids.iter().chain(&tree) {
        assert!(gone_within(*pid, Duration::from_secs(4)).await, "pid {pid} outlived its host ({tree:?})");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_url_given_where_a_config_path_belongs_is_not_quoted_whole() {
    let url = secret_url(9, "/mcp.json");
    let e = mcp::parse_mcp_config(&json!(url)).unwrap_err().to_string();
    assert_eq!(e, "ENOENT: no such file or directory, open 'http://127.0.0.1:9/mcp.json'");
    let e = mcp::load_mcp(&json!(url), LoadOptions::default()).await.err().unwrap().to_string();
    assert_clean(&e);
    let e = mcp::list_mcp_tools(&json!(url), None).await.unwrap_err().to_string();
    assert_clean(&e);
}

/// What a remote server's start is said to have failed on: an HTTP server answering every request
/// with `status` (and `headers`), its requests' methods logged.
async fn answering(status: u16, headers: &'static [(&'static str, &'static str)]) -> (u16, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let addr = serve(move |req| {
        log.lock().unwrap().push(req.method().to_string());
        async move {
            let mut res = hyper::Response::builder().status(status).header("content-type", "text/plain");
            for (k, v) in headers {
                res = res.header(*k, *v);
            }
            Some(res.body(full("no")).unwrap())
        }
    })
    .await;
    (addr.port(), seen)
}

async fn failure_of(port: u16) -> String {
    let warned: Arc<Mutex<Vec<String>>> = Arc::default();
    let w = warned.clone();
    let sink: toolnexus_core::warn::Sink = Arc::new(move |t: &str| w.lock().unwrap().push(t.to_string()));
    let config = json!({"remote": {"url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 5000}});
    let source = toolnexus_core::warn::scope(Some(sink), load(config)).await;
    assert_eq!(status(&source), [("remote".to_string(), "failed")]);
    let lines = warned.lock().unwrap().clone();
    lines.into_iter().find(|l| l.starts_with("[toolnexus] MCP server \"remote\" failed: ")).expect("a warning")
}

/// Issue 54: a server that wants authorization says so (and where its metadata is), instead of
/// a fall back to the legacy SSE transport failing on a 404; a server that answers the POST as an
/// old HTTP+SSE server does (a 4xx such as 405) still gets the legacy transport tried.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_start_names_its_cause_and_only_an_old_servers_answer_tries_sse() {
    const CHALLENGE: &str =
        "Bearer error=\"invalid_token\", resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\"";
    let challenge = CHALLENGE;
    let (port, seen) = answering(401, &[("www-authenticate", CHALLENGE)]).await;
    let line = failure_of(port).await;
    assert_eq!(
        line,
        format!("[toolnexus] MCP server \"remote\" failed: authorization required: the server answered HTTP 401 (WWW-Authenticate: {challenge}); its protected-resource metadata is at http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp")
    );
    assert_eq!(*seen.lock().unwrap(), ["POST"], "no legacy SSE GET after a 401");

    let (port, seen) =
        answering(403, &[("www-authenticate", "Bearer error=\"insufficient_scope\", scope=\"admin\"")]).await;
    let line = failure_of(port).await;
    assert!(line.contains("authorization required: the server answered HTTP 403"), "{line}");
    assert_eq!(*seen.lock().unwrap(), ["POST"]);

    let (port, seen) = answering(405, &[]).await;
    let line = failure_of(port).await;
    assert!(line.contains("the server answered HTTP 405 Method Not Allowed"), "{line}");
    assert!(line.contains("then the legacy SSE transport: "), "{line}");
    assert_eq!(*seen.lock().unwrap(), ["POST", "GET"], "an old server's answer: SSE tried");
}

/// The OAuth peer (the official TypeScript SDK's authorization server and bearer middleware in
/// front of an MCP tool, `__test__/peers/mcp/oauth-server.mjs`), its MCP URL; killed on drop.
async fn oauth_server(args: &[&str]) -> (tokio::process::Child, String) {
    let peer = concat!(env!("CARGO_MANIFEST_DIR"), "/../../__test__/peers/mcp/oauth-server.mjs");
    let (child, line) = node_printing(peer, args).await;
    (child, line.trim().to_string())
}

/// What a person's browser does at a sign-in URL the peer approves at once: where it is sent back.
async fn landed_on(url: &str) -> String {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let res = client.get(url).send().await.expect("the sign-in page");
    res.headers().get("location").expect("a redirect").to_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn oauth_sign_in_through_wait_for_and_a_login_parked_on_a_store_finished_elsewhere() {
    let (_peer, url) = oauth_server(&["--protect", "calls"]).await;
    let stats = || async {
        let text = reqwest::get(url.replace("/mcp", "/stats")).await.unwrap().text().await.unwrap();
        serde_json::from_str::<Value>(&text).unwrap()
    };

    // A person signs in through waitFor when the call meets the challenge.
    let asked = Arc::new(Mutex::new(Vec::<Value>::new()));
    let log = asked.clone();
    let wait_for = callback(move |req: Value| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push(req.clone());
            let back = landed_on(req["url"].as_str().unwrap_or_default()).await;
            Ok(json!({"id": req["id"], "ok": true, "data": {"url": back}}))
        }
    });
    let cfg = json!({"hosted": {"url": url, "timeout": 20000}});
    let opts = LoadOptions { wait_for: Some(wait_for), ..LoadOptions::default() };
    let src = mcp::load_mcp(&cfg, opts).await.unwrap();
    let r = call(&src, "hosted_whoami", json!({})).await;
    assert!(!r.is_error && r.output.starts_with("client "), "{}", r.output);
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["kind"], "authorization");
    assert_eq!(asked[0]["data"], json!({"server": "hosted", "redirectUri": "http://127.0.0.1/callback"}));
    src.close().await;

    // Without waitFor the call parks on the login; a second source on the same store finishes it.
    let dir = std::env::temp_dir().join(format!("tn-oauth-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = format!("sqlite:{}", dir.join("state.db").display());
    let on_store = || LoadOptions { store: Some(store.clone()), ..LoadOptions::default() };
    let first = mcp::load_mcp(&cfg, on_store()).await.unwrap();
    let parked = call(&first, "hosted_whoami", json!({})).await;
    let request = parked.metadata.as_ref().and_then(|m| m.get("pending")).cloned().expect("a pending login");
    assert_eq!(request["kind"], "authorization");
    first.close().await;
    let back = landed_on(request["url"].as_str().unwrap()).await;
    let second = mcp::load_mcp(&cfg, on_store()).await.unwrap();
    let answer = json!({"id": request["id"], "ok": true, "data": {"url": back}});
    let ctx = ToolContext { answer: Some(answer), ..ToolContext::default() };
    let r = tool(&second, "hosted_whoami").execute(json!({}), ctx).await.unwrap();
    assert!(!r.is_error && r.output.starts_with("client "), "{}", r.output);
    second.close().await;
    // A third source on the store is signed in already.
    let third = mcp::load_mcp(&cfg, on_store()).await.unwrap();
    let r = call(&third, "hosted_whoami", json!({})).await;
    assert!(!r.is_error, "{}", r.output);
    third.close().await;
    let s = stats().await;
    assert_eq!(s["grants"]["authorization_code"], 2);
    assert_eq!(s["authorized"], 2);
    let _ = std::fs::remove_dir_all(dir);
}
