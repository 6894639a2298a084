//! Remote A2A agents (SPEC §7A) against a scripted A2A peer on 127.0.0.1.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use toolnexus_core::a2a::{agent_tools, parse_agents_config, Agent};
use toolnexus_core::tool::{SharedTool, ToolContext};
use toolnexus_core::{Toolkit, ToolkitOptions};

use crate::util::serve::{full, serve, Body};

/// What the peer does with one JSON-RPC call.
enum Act {
    /// `{ jsonrpc, id, result }`
    Result(Value),
    /// `{ jsonrpc, id, error }`
    Error(Value),
    /// A reply of this status and body.
    Raw(u16, &'static str),
    /// Never answer.
    Hang,
}

/// One request the peer saw.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    fn rpc(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

type Script = dyn Fn(&Value, usize) -> Act + Send + Sync;

struct Peer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Peer {
    /// A peer serving `card` (its `url` filled with the peer's own address unless `keep_url`)
    /// at `/.well-known/agent-card.json` and answering each JSON-RPC call (with the number of
    /// calls before it) as `script` says.
    async fn start(card: Value, script: impl Fn(&Value, usize) -> Act + Send + Sync + 'static) -> Peer {
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let card = Arc::new(Mutex::new(card));
        let (s, c) = (seen.clone(), card.clone());
        let addr = serve(move |req: hyper::Request<hyper::body::Incoming>| {
            let (seen, script, card) = (s.clone(), script.clone(), c.clone());
            async move {
                let method = req.method().to_string();
                let path = req.uri().path().to_string();
                let headers = req
                    .headers()
                    .iter()
                    .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                    .collect();
                let bytes = req.into_body().collect().await.ok()?.to_bytes();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let n = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(Seen { method: method.clone(), path: path.clone(), headers, body: body.clone() });
                    seen.iter().filter(|s| s.method == "POST").count() - usize::from(method == "POST")
                };
                if method == "GET" {
                    let card = card.lock().unwrap().clone();
                    return Some(reply(200, card.to_string()));
                }
                let id = body["id"].clone();
                match script(&body, n) {
                    Act::Result(r) => Some(reply(200, json!({"jsonrpc": "2.0", "id": id, "result": r}).to_string())),
                    Act::Error(e) => Some(reply(200, json!({"jsonrpc": "2.0", "id": id, "error": e}).to_string())),
                    Act::Raw(status, text) => Some(reply(status, text.to_string())),
                    Act::Hang => {
                        std::future::pending::<()>().await;
                        None
                    }
                }
            }
        })
        .await;
        {
            let mut c = card.lock().unwrap();
            if c.get("url").is_some_and(|u| u == "SELF") {
                c["url"] = json!(format!("http://{addr}/"));
            }
        }
        Peer { addr, seen }
    }

    fn card_url(&self) -> String {
        format!("http://{}/.well-known/agent-card.json", self.addr)
    }

    fn agent(&self) -> Agent {
        Agent { poll_every: Some(json!(5)), ..Agent::new(self.card_url()) }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn rpcs(&self) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.method == "POST").collect()
    }
}

fn reply(status: u16, text: String) -> hyper::Response<Body> {
    hyper::Response::builder().status(status).header("content-type", "application/json").body(full(text)).unwrap()
}

fn card(skills: Value) -> Value {
    json!({"name": "Research Desk", "url": "SELF", "skills": skills})
}

fn one_skill() -> Value {
    card(json!([{"id": "search", "name": "Search", "description": "Search the web"}]))
}

fn task(id: &str, state: &str) -> Value {
    json!({"id": id, "status": {"state": state}})
}

async fn only_tool(peer: &Peer, agent: Agent) -> SharedTool {
    let mut tools = agent_tools(&agent).await.unwrap();
    assert_eq!(tools.len(), 1, "one skill, one tool");
    let _ = peer;
    tools.remove(0)
}

fn call(task: &str) -> Value {
    json!({"task": task})
}

fn meta(r: &toolnexus_core::ToolResult) -> Value {
    r.metadata.clone().unwrap()
}

#[tokio::test]
async fn each_skill_becomes_a_tool_named_after_the_card() {
    let peer = Peer::start(
        card(
            json!([{"id": "web search", "name": "Search"}, {"name": "Sum Up"}, {"id": "x", "description": "X it"}, {}]),
        ),
        |_, _| Act::Hang,
    )
    .await;
    let tools = agent_tools(&Agent::new(peer.card_url())).await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name().to_string()).collect();
    assert_eq!(names, ["Research_Desk_web_search", "Research_Desk_Sum_Up", "Research_Desk_x", "Research_Desk_"]);
    let descriptions: Vec<_> = tools.iter().map(|t| t.description().to_string()).collect();
    assert_eq!(descriptions, ["Search", "Sum Up", "X it", ""]);
    for t in &tools {
        assert_eq!(t.source(), "a2a");
        assert_eq!(
            toolnexus_core::json::to_string(t.input_schema()),
            r#"{"type":"object","properties":{"task":{"type":"string","description":"The task to send to the agent, in natural language."}},"required":["task"],"additionalProperties":false}"#
        );
    }
    let seen = peer.seen();
    assert_eq!(
        (seen.len(), seen[0].method.as_str(), seen[0].path.as_str()),
        (1, "GET", "/.well-known/agent-card.json")
    );
    // No name on the card: "agent"; no skills: no tools.
    let bare = Peer::start(json!({"skills": [{"id": "s"}]}), |_, _| Act::Hang).await;
    let tools = agent_tools(&Agent::new(bare.card_url())).await.unwrap();
    assert_eq!(tools[0].name(), "agent_s");
    let empty = Peer::start(json!({"name": "e"}), |_, _| Act::Hang).await;
    assert!(agent_tools(&Agent::new(empty.card_url())).await.unwrap().is_empty());
}

#[tokio::test]
async fn submit_then_poll_until_completed() {
    let peer = Peer::start(one_skill(), |rpc, n| match (rpc["method"].as_str(), n) {
        (Some("SendMessage"), _) => Act::Result(task("t-1", "submitted")),
        (Some("GetTask"), 1) => Act::Result(task("t-1", "working")),
        (Some("GetTask"), _) => Act::Result(json!({"id": "t-1", "status": {"state": "completed"},
            "artifacts": [{"parts": [{"kind": "text", "text": "3 results"}]}, {"parts": [{"kind": "text", "text": "found"}]}]})),
        _ => Act::Raw(500, "unexpected"),
    })
    .await;
    let tool = only_tool(&peer, peer.agent()).await;
    let r = tool.execute(call("release notes"), ToolContext::default()).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("3 results\nfound", false));
    let m = meta(&r);
    assert_eq!(m.as_object().unwrap().keys().collect::<Vec<_>>(), ["agent", "taskId", "state", "polls", "ms"]);
    assert_eq!(
        (&m["agent"], &m["taskId"], &m["state"], &m["polls"]),
        (&json!("Research Desk"), &json!("t-1"), &json!("completed"), &json!(2))
    );
    let rpcs = peer.rpcs();
    assert_eq!(rpcs.iter().map(Seen::rpc).collect::<Vec<_>>(), ["SendMessage", "GetTask", "GetTask"]);
    let send = &rpcs[0];
    assert_eq!(send.path, "/");
    assert_eq!(send.header("content-type"), Some("application/json"));
    let b = &send.body;
    assert_eq!(b.as_object().unwrap().keys().collect::<Vec<_>>(), ["jsonrpc", "id", "method", "params"]);
    assert_eq!(b["jsonrpc"], "2.0");
    assert_eq!(b["id"].as_str().unwrap().len(), 36);
    let msg = &b["params"]["message"];
    assert_eq!((&msg["role"], &msg["parts"]), (&json!("user"), &json!([{"kind": "text", "text": "release notes"}])));
    assert_eq!(msg["messageId"].as_str().unwrap().len(), 36);
    assert_ne!(msg["messageId"], b["id"]);
    assert_eq!(b["params"]["configuration"], json!({"blocking": false}));
    assert_eq!(rpcs[1].body["params"], json!({"id": "t-1"}));
    assert_ne!(rpcs[1].body["id"], rpcs[2].body["id"]);
}

#[tokio::test]
async fn a_failed_task_carries_its_status_message_and_history_is_the_fallback() {
    let peer = Peer::start(one_skill(), |rpc, _| match rpc["method"].as_str() {
        Some("SendMessage") => Act::Result(task("t-2", "submitted")),
        _ => Act::Result(json!({"id": "t-2", "status": {"state": "failed",
            "message": {"role": "agent", "parts": [{"kind": "text", "text": "quota exceeded"}]}}})),
    })
    .await;
    let tool = only_tool(&peer, peer.agent()).await;
    let r = tool.execute(call("go"), ToolContext::default()).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("A2A task t-2 failed: quota exceeded", true));
    assert_eq!((&meta(&r)["state"], &meta(&r)["polls"]), (&json!("failed"), &json!(1)));

    // A task that is already over when submitted is not polled; a canceled one without a
    // message has no detail; a completed one without artifacts answers with its history.
    let peer = Peer::start(one_skill(), |rpc, _| match rpc["params"]["message"]["parts"][0]["text"].as_str() {
        Some("cancel") => Act::Result(task("t-3", "canceled")),
        _ => Act::Result(json!({"id": "t-4", "status": {"state": "completed"}, "artifacts": [],
            "history": [{"role": "user", "parts": [{"kind": "text", "text": "q"}]},
                {"role": "agent", "parts": [{"kind": "text", "text": "from history"}]},
                {"role": "user", "parts": [{"kind": "text", "text": "later"}]}]})),
    })
    .await;
    let tool = only_tool(&peer, peer.agent()).await;
    let r = tool.execute(call("cancel"), ToolContext::default()).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error, &meta(&r)["polls"]), ("A2A task t-3 canceled", true, &json!(0)));
    let r = tool.execute(call("history"), ToolContext::default()).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("from history", false));
    assert_eq!(peer.rpcs().len(), 2);
}

#[tokio::test]
async fn json_rpc_errors_non_2xx_and_non_json_replies_are_error_results() {
    let peer = Peer::start(one_skill(), |rpc, _| match rpc["params"]["message"]["parts"][0]["text"].as_str() {
        Some("error") => Act::Error(json!({"code": -32601, "message": "Method not found"})),
        Some("code") => Act::Error(json!({"code": -32001})),
        Some("500") => Act::Raw(500, "boom"),
        Some("html") => Act::Raw(200, "<html>hi</html>"),
        _ => Act::Raw(404, ""),
    })
    .await;
    let tool = only_tool(&peer, peer.agent()).await;
    for (text, out) in [
        ("error", "Method not found"),
        ("code", "JSON-RPC error -32001"),
        ("500", "HTTP 500: boom"),
        ("html", "A2A SendMessage: the agent's reply is not JSON"),
    ] {
        let r = tool.execute(call(text), ToolContext::default()).await.unwrap();
        assert_eq!((r.output.as_str(), r.is_error), (out, true), "{text}");
        assert_eq!(
            (&meta(&r)["taskId"], &meta(&r)["state"], &meta(&r)["polls"]),
            (&json!(""), &json!("submitted"), &json!(0))
        );
    }
    // Nothing was polled: a non-JSON reply is not a task.
    assert!(peer.rpcs().iter().all(|s| s.rpc() == "SendMessage"));

    // A GetTask error ends the call with its message.
    let peer = Peer::start(one_skill(), |rpc, _| match rpc["method"].as_str() {
        Some("SendMessage") => Act::Result(task("t-5", "working")),
        _ => Act::Error(json!({"code": -32001, "message": "Task not found"})),
    })
    .await;
    let r = only_tool(&peer, peer.agent()).await.execute(call("x"), ToolContext::default()).await.unwrap();
    assert_eq!(
        (r.output.as_str(), &meta(&r)["taskId"], &meta(&r)["state"]),
        ("Task not found", &json!("t-5"), &json!("working"))
    );
}

#[tokio::test]
async fn a_card_that_cannot_be_resolved_is_an_error() {
    let failing = Peer::start(json!(null), |_, _| Act::Hang).await;
    let e = agent_tools(&Agent::new(failing.card_url())).await.err().unwrap();
    assert_eq!(e.to_string(), "Cannot read properties of null (reading 'name')");
    let e = agent_tools(&Agent::new("http://127.0.0.1:9/.well-known/agent-card.json")).await.err().unwrap();
    assert_eq!(e.to_string(), "fetch failed");
    let e = agent_tools(&Agent::new("not a url")).await.err().unwrap();
    assert_eq!(e.to_string(), "Failed to parse URL from not a url");
    let addr = serve(|_req| async { Some(reply(503, "down".into())) }).await;
    let e = agent_tools(&Agent::new(format!("http://{addr}/card"))).await.err().unwrap();
    assert_eq!(e.to_string(), "HTTP 503: down");
    let addr = serve(|_req| async { Some(reply(200, "<html>".into())) }).await;
    let e = agent_tools(&Agent::new(format!("http://{addr}/card"))).await.err().unwrap();
    assert!(e.to_string().contains("is not valid JSON"), "{e}");
    let bad = Peer::start(json!({"name": "b", "skills": {"id": "s"}}), |_, _| Act::Hang).await;
    assert_eq!(
        agent_tools(&Agent::new(bad.card_url())).await.err().unwrap().to_string(),
        "card.skills.map is not a function"
    );
}

#[tokio::test]
async fn without_a_card_url_the_endpoint_is_the_card_origin() {
    let peer =
        Peer::start(json!({"name": "o", "skills": [{"id": "s"}]}), |_, _| Act::Result(task("t", "completed"))).await;
    let tool = only_tool(&peer, peer.agent()).await;
    let r = tool.execute(call("x"), ToolContext::default()).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("", false));
    assert_eq!(peer.rpcs()[0].path, "/");
}

#[tokio::test]
async fn the_timeout_bounds_the_whole_call() {
    // Polls keep saying `working`: the call ends at its budget.
    let peer = Peer::start(one_skill(), |rpc, _| match rpc["method"].as_str() {
        Some("SendMessage") => Act::Result(task("t-6", "submitted")),
        _ => Act::Result(task("t-6", "working")),
    })
    .await;
    let tool = only_tool(&peer, Agent { timeout: Some(json!(200)), ..peer.agent() }).await;
    let t0 = Instant::now();
    let r = tool.execute(call("x"), ToolContext::default()).await.unwrap();
    let took = t0.elapsed();
    assert_eq!((r.output.as_str(), r.is_error), ("A2A task t-6 timed out after 200ms (state=working)", true));
    assert!(took >= Duration::from_millis(195) && took < Duration::from_millis(600), "{took:?}");
    assert!(meta(&r)["polls"].as_u64().unwrap() >= 2);

    // A GetTask that hangs late is cut at the deadline (not given a whole budget of its own).
    let peer = Peer::start(one_skill(), |rpc, n| match (rpc["method"].as_str(), n) {
        (Some("SendMessage"), _) => Act::Result(task("t-7", "submitted")),
        (_, n) if n < 3 => Act::Result(task("t-7", "working")),
        _ => Act::Hang,
    })
    .await;
    let tool = only_tool(&peer, Agent { timeout: Some(json!(400)), poll_every: Some(json!(50)), ..peer.agent() }).await;
    let t0 = Instant::now();
    let r = tool.execute(call("x"), ToolContext::default()).await.unwrap();
    let took = t0.elapsed();
    assert_eq!(r.output, "A2A task t-7 timed out after 400ms (state=working)");
    assert!(took < Duration::from_millis(700), "the call ran {took:?}, past its 400ms budget");

    // The call's own timeout wins over the descriptor's; a SendMessage cut by it reads as
    // fetch's abort.
    let peer = Peer::start(one_skill(), |_, _| Act::Hang).await;
    let tool = only_tool(&peer, peer.agent()).await;
    let t0 = Instant::now();
    let r = tool.execute(call("x"), ToolContext { timeout: Some(100.0), ..Default::default() }).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("This operation was aborted", true));
    assert!(t0.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn cancellation_before_and_during_a_request() {
    let peer = Peer::start(one_skill(), |rpc, _| match rpc["method"].as_str() {
        Some("SendMessage") => Act::Result(task("t-8", "submitted")),
        _ => Act::Hang,
    })
    .await;
    let tool = only_tool(&peer, peer.agent()).await;
    // Already cancelled: nothing is sent.
    let token = CancellationToken::new();
    token.cancel();
    let r = tool.execute(call("x"), ToolContext { cancel: Some(token), ..Default::default() }).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error, &meta(&r)["state"]), ("A2A task  canceled", true, &json!("canceled")));
    assert!(peer.rpcs().is_empty());
    // Cancelled while GetTask is in flight.
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        t.cancel();
    });
    let t0 = Instant::now();
    let r = tool.execute(call("x"), ToolContext { cancel: Some(token), ..Default::default() }).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("A2A task t-8 canceled", true));
    assert_eq!(
        (&meta(&r)["taskId"], &meta(&r)["state"], &meta(&r)["polls"]),
        (&json!("t-8"), &json!("canceled"), &json!(0))
    );
    assert!(t0.elapsed() < Duration::from_millis(1000));
    // Cancelled during the wait between polls.
    let peer = Peer::start(one_skill(), |rpc, _| match rpc["method"].as_str() {
        Some("SendMessage") => Act::Result(task("t-9", "submitted")),
        _ => Act::Result(task("t-9", "working")),
    })
    .await;
    let tool = only_tool(&peer, Agent { poll_every: Some(json!(10_000)), ..peer.agent() }).await;
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        t.cancel();
    });
    let t0 = Instant::now();
    let r = tool.execute(call("x"), ToolContext { cancel: Some(token), ..Default::default() }).await.unwrap();
    assert_eq!(r.output, "A2A task t-9 canceled");
    assert!(t0.elapsed() < Duration::from_millis(1000));
    assert_eq!(peer.rpcs().len(), 1, "no GetTask after the cancel");
}

#[tokio::test]
async fn env_headers_are_expanded_sent_and_never_shown() {
    crate::alone!(env_headers_are_expanded_sent_and_never_shown, |cmd| {
        cmd.env("TOOLNEXUS_IT_A2A_TOKEN", "s3cret-token");
        cmd.env("TOOLNEXUS_IT_A2A_BAD", "s3cret\nline");
    });
    let peer = Peer::start(one_skill(), |_, _| Act::Result(task("t", "completed"))).await;
    let agent = Agent { headers: Some(json!({"Authorization": "Bearer ${TOOLNEXUS_IT_A2A_TOKEN}"})), ..peer.agent() };
    let tool = only_tool(&peer, agent).await;
    tool.execute(call("x"), ToolContext::default()).await.unwrap();
    let seen = peer.seen();
    assert_eq!(seen.len(), 2);
    for s in &seen {
        assert_eq!(s.header("authorization"), Some("Bearer s3cret-token"), "{} {}", s.method, s.path);
    }
    // A value that cannot be sent is refused by name, its value never quoted.
    let bad = Agent { headers: Some(json!({"Authorization": "Bearer ${TOOLNEXUS_IT_A2A_BAD}"})), ..peer.agent() };
    let e = agent_tools(&bad).await.err().unwrap().to_string();
    assert_eq!(e, "Headers.append: the value of \"Authorization\" is an invalid header value.");
    let warned = Arc::new(Mutex::new(Vec::<String>::new()));
    let w = warned.clone();
    let sink: toolnexus_core::warn::Sink = Arc::new(move |t: &str| w.lock().unwrap().push(t.to_string()));
    let opts = ToolkitOptions { agents: vec![bad], builtins: Some(json!(false)), ..Default::default() };
    let tk = toolnexus_core::warn::scope(Some(sink), Toolkit::create(opts)).await.unwrap();
    assert!(tk.tools().is_empty());
    let warned = warned.lock().unwrap().clone();
    assert_eq!(warned.len(), 1);
    assert!(warned[0].starts_with(&format!("[toolnexus] A2A agent \"{}\" failed: Headers.append", peer.card_url())));
    assert!(!warned[0].contains("s3cret"));
}

#[tokio::test]
async fn the_toolkit_resolves_agents_beside_its_other_sources() {
    let a = Peer::start(card(json!([{"id": "one"}, {"id": "two"}])), |_, _| Act::Result(task("t", "completed"))).await;
    let b = Peer::start(json!({"name": "Other", "url": "SELF", "skills": [{"id": "s"}]}), |_, _| Act::Hang).await;
    let warned = Arc::new(Mutex::new(Vec::<String>::new()));
    let w = warned.clone();
    let sink: toolnexus_core::warn::Sink = Arc::new(move |t: &str| w.lock().unwrap().push(t.to_string()));
    let dead = "http://127.0.0.1:9/.well-known/agent-card.json";
    let extra = toolnexus_core::fn_tool::FnTool::new("Research_Desk_two", "mine", None, |_, _| async {
        toolnexus_core::ToolResult::ok("extra")
    });
    let mut opts = ToolkitOptions::from_json(
        &json!({
            "builtins": false,
            "agents": [{"card": a.card_url()}, {"card": dead}],
            "mcpConfig": {"mcpServers": {}, "agents": {
                "b": {"card": b.card_url()},
                "off": {"card": dead, "disabled": true},
            }},
        })
        .to_string(),
    )
    .unwrap();
    opts.extra_tools = vec![Arc::new(extra)];
    let tk = toolnexus_core::warn::scope(Some(sink), Toolkit::create(opts)).await.unwrap();
    let names: Vec<_> = tk.tools().iter().map(|t| (t.name().to_string(), t.source().to_string())).collect();
    assert_eq!(
        names,
        [
            ("Research_Desk_one".to_string(), "a2a".to_string()),
            ("Research_Desk_two".into(), "a2a".into()),
            ("Other_s".into(), "a2a".into())
        ]
    );
    let warned = warned.lock().unwrap().clone();
    assert_eq!(
        warned,
        [
            format!("[toolnexus] A2A agent \"{dead}\" failed: fetch failed"),
            "[toolnexus] duplicate tool name \"Research_Desk_two\" — keeping first".to_string(),
        ]
    );
    // addAgent: resolves, registers first-name-wins, and a failing card is an error.
    let c =
        Peer::start(json!({"name": "Other", "url": "SELF", "skills": [{"id": "s"}, {"id": "new"}]}), |_, _| Act::Hang)
            .await;
    let added = tk.add_agent(&Agent::new(c.card_url())).await.unwrap();
    assert_eq!(
        added.iter().map(|(t, a)| (t.name().to_string(), *a)).collect::<Vec<_>>(),
        [("Other_s".to_string(), false), ("Other_new".into(), true)]
    );
    assert_eq!(tk.tools().len(), 4);
    assert_eq!(tk.add_agent(&Agent::new(dead)).await.err().unwrap().to_string(), "fetch failed");
    let r = tk.execute("Research_Desk_one", call("go"), ToolContext::default()).await.unwrap();
    assert!(!r.is_error);
}

#[test]
fn config_blocks_parse_with_the_mcp_precedence() {
    let parsed = parse_agents_config(Some(&json!({
        "a": {"card": "http://x/1"},
        "b": {"card": "http://x/2", "disabled": true},
        "c": {"card": "http://x/3", "enabled": false},
        "d": {"card": "http://x/4", "enabled": true, "disabled": true},
        "e": {"headers": {"x": "y"}},
    })));
    assert_eq!(parsed.iter().map(|a| a.card.as_str()).collect::<Vec<_>>(), ["http://x/1"]);
}
