//! The agent runtime (§7D) replaying the shared `subagent-*` fixtures on a virtual clock:
//! the per-handle transition traces they record, and the gates under load.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolnexus_core::agents::runtime::{
    AgentDef, AgentRuntime, Budget, HandleState, Heartbeat, InboxItem, RuntimeOptions, TaskStatus, VirtualClock, ROOT,
};
use toolnexus_core::client::{HttpRequest, HttpResponse, Transport};
use toolnexus_core::fn_tool::FnTool;
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::{pending_value, ToolResult};

fn fixture(name: &str) -> Value {
    let path = format!("{}/../../__test__/fixtures/{name}/fixture.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture json")
}

/// The fixtures' scripted LLM: answers by `body.model`, counting tool messages.
struct Scripted {
    calls: AtomicUsize,
    slow_started: tokio::sync::Notify,
}

impl Scripted {
    fn new() -> Arc<Scripted> {
        Arc::new(Scripted { calls: AtomicUsize::new(0), slow_started: tokio::sync::Notify::new() })
    }
}

fn tool_msgs(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap_or("").to_string()).collect()
        })
        .unwrap_or_default()
}

fn call(name: &str, args: Value, i: usize) -> Value {
    json!({ "id": format!("c{i}"), "type": "function", "function": { "name": name, "arguments": args.to_string() } })
}

#[async_trait::async_trait]
impl Transport for Scripted {
    async fn post(&self, req: HttpRequest) -> toolnexus_core::error::Result<HttpResponse> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_str(&req.body).expect("body");
        let tools = tool_msgs(&body);
        let message = match body["model"].as_str().unwrap_or("") {
            "m-coordinator" if tools.is_empty() => json!({ "content": null, "tool_calls": [
                call("task", json!({"agent": "explore", "prompt": "find A"}), 1),
                call("task", json!({"agent": "explore", "prompt": "find B"}), 2)] }),
            "m-coordinator" => json!({ "content": format!("synthesis: {}", tools.join(" + ")) }),
            "m-explore" if tools.is_empty() => {
                json!({ "content": null, "tool_calls": [call("lookup", json!({"q": "x"}), 1)] })
            }
            "m-explore" => json!({ "content": format!("found:{}", tools[0]) }),
            "m-loop" => json!({ "content": null, "tool_calls": [call("lookup", json!({"q": "again"}), 1)] }),
            "m-approver-parent" if tools.is_empty() => json!({ "content": null, "tool_calls": [
                call("task", json!({"agent": "asker", "prompt": "get the secret"}), 1)] }),
            "m-approver-parent" => {
                json!({ "content": format!("parent-final: {}", tools.last().cloned().unwrap_or_default()) })
            }
            "m-asker" if !tools.iter().any(|t| t.contains("secret-token")) => {
                json!({ "content": null, "tool_calls": [call("check_secret", json!({}), 1)] })
            }
            "m-asker" => json!({ "content": "asker-done: secret-token" }),
            "m-peer" => {
                let last =
                    body["messages"].as_array().and_then(|m| m.iter().rev().find(|m| m["role"] == "user")).cloned();
                let text = last.and_then(|m| m["content"].as_str().map(str::to_string)).unwrap_or_default();
                let items = text
                    .lines()
                    .filter(|l| l.split_once(". [from=").is_some_and(|(n, _)| n.parse::<u32>().is_ok()))
                    .count();
                json!({ "content": format!("processed {items} items") })
            }
            "m-silent" => json!({ "content": "all quiet HEARTBEAT_OK" }),
            "m-slow" => {
                self.slow_started.notify_one();
                std::future::pending::<()>().await;
                json!({ "content": "slow-done" })
            }
            other => json!({ "content": format!("unscripted {other}") }),
        };
        let reply = json!({ "choices": [{ "message": message }], "usage": { "prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40 } });
        Ok(HttpResponse { status: 200, headers: vec![], body: reply.to_string() })
    }
}

fn lookup() -> SharedTool {
    Arc::new(FnTool::new("lookup", "look up", None, |args: Value, _ctx| async move {
        ToolResult::ok(format!("data({})", args["q"].as_str().unwrap_or("")))
    }))
}

fn check_secret() -> SharedTool {
    Arc::new(FnTool::new(
        "check_secret",
        "needs approval",
        None,
        |_args, ctx: toolnexus_core::tool::ToolContext| async move {
            match ctx.answer {
                Some(a) if a["ok"] == true => ToolResult::ok("secret-token"),
                _ => pending_value(json!({ "kind": "approval", "prompt": "approve secret access?" }))
                    .unwrap_or_else(|e| ToolResult::error(e.to_string())),
            }
        },
    ))
}

fn registry(fx: &Value) -> Vec<AgentDef> {
    let mut defs = Vec::new();
    for (name, d) in fx["registry"].as_object().expect("registry") {
        let tools = d["tools"]
            .as_array()
            .map(|t| t.iter().map(|n| if n == "lookup" { lookup() } else { check_secret() }).collect())
            .unwrap_or_default();
        let wait_for = d.get("waitFor").map(|_| {
            toolnexus_core::callback::callback(|req: Value| async move { Ok(json!({ "id": req["id"], "ok": true })) })
        });
        defs.push(AgentDef {
            name: name.clone(),
            does: d["does"].as_str().unwrap_or("").into(),
            model: d["model"].as_str().map(str::to_string),
            team: d["team"]
                .as_array()
                .map(|t| t.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
            tools,
            wait_for,
            ..Default::default()
        });
    }
    defs
}

fn runtime(fx: &Value) -> (AgentRuntime, Arc<Scripted>) {
    runtime_with(registry(fx), |_| {})
}

fn runtime_with(defs: Vec<AgentDef>, tune: impl FnOnce(&mut RuntimeOptions)) -> (AgentRuntime, Arc<Scripted>) {
    let llm = Scripted::new();
    let mut opts = RuntimeOptions::new(defs);
    opts.transport = Some(llm.clone());
    opts.clock = Arc::new(VirtualClock::new());
    tune(&mut opts);
    (AgentRuntime::new(opts), llm)
}

/// `<id>: <from>→<to> (…)` lines of the trace, per handle, as "from→to".
fn transitions(trace: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in trace {
        let Some((id, rest)) = line.split_once(": ") else { continue };
        let head = rest.split(" (").next().unwrap_or("");
        if let Some((from, to)) = head.split_once('\u{2192}') {
            if ["idle", "running", "suspended", "closed"].contains(&to) && !from.contains(' ') {
                out.entry(id.to_string()).or_default().push(format!("{from}\u{2192}{to}"));
            }
        }
    }
    out
}

fn assert_transitions(got: &BTreeMap<String, Vec<String>>, want: &Value) {
    for (id, steps) in want.as_object().expect("transitions") {
        let seen = got.get(id).cloned().unwrap_or_default();
        let want: Vec<&str> = steps.as_array().expect("steps").iter().filter_map(Value::as_str).collect();
        assert_eq!(seen.len(), want.len(), "{id}: {seen:?} vs {want:?}");
        for (s, w) in seen.iter().zip(want) {
            if let Some(to) = w.strip_prefix('\u{2192}') {
                assert!(s.ends_with(&format!("\u{2192}{to}")), "{id}: {s} vs {w}");
            } else {
                assert_eq!(s, w, "{id}");
            }
        }
    }
}

async fn run_entry(rt: &AgentRuntime, fx: &Value) -> toolnexus_core::agents::runtime::TaskResult {
    let entry = fx["run"]["entry"].as_str().expect("entry");
    let h = rt.spawn(ROOT, entry, None).expect("spawn");
    rt.wake(h, fx["run"]["prompt"].as_str().map(str::to_string)).expect("wake");
    rt.wait(h, None, None).await
}

#[tokio::test]
async fn fanout_runs_two_children_and_rolls_their_usage_up() {
    let fx = fixture("subagent-fanout");
    let (rt, _) = runtime(&fx);
    let r = run_entry(&rt, &fx).await;
    assert_eq!(r.status, TaskStatus::Done);
    assert_eq!(r.text.matches("found:").count(), 2);
    assert!(r.text.contains("found:data(x)"));
    assert_eq!(r.turns, 2.0);
    let coord = rt.find("root/coordinator.1").expect("coordinator");
    assert_eq!(rt.snapshot(coord).expect("snapshot").usage_total, 240.0);
    assert!(rt.find("root/coordinator.1/explore.2").is_some());
    assert!(rt.max_observed_concurrent_turns() >= 1);
    assert_transitions(&transitions(&rt.trace()), &fx["expect"]["transitions"]);
}

#[tokio::test]
async fn escalation_is_answered_inline_by_the_parent() {
    let fx = fixture("subagent-escalation");
    let (rt, _) = runtime(&fx);
    let r = run_entry(&rt, &fx).await;
    assert_eq!(r.status, TaskStatus::Done, "{r:?}");
    assert!(r.text.contains("asker-done: secret-token"), "{}", r.text);
    assert_transitions(&transitions(&rt.trace()), &fx["expect"]["transitions"]);
    assert!(rt.trace().iter().any(|l| l.contains("escalate \u{2192} root/approverParent.1 answers")));
}

#[tokio::test]
async fn durable_resume_reattaches_instead_of_spawning_again() {
    let fx = fixture("subagent-durable-resume");
    let (rt, _) = runtime(&fx);
    let r = run_entry(&rt, &fx).await;
    assert_eq!(r.status, TaskStatus::Pending);
    let leaf = rt.find("root/approverParent.1/asker.1").expect("leaf");
    let turns_before = rt.snapshot(leaf).expect("leaf").turns_total;
    rt.resume(json!({ "id": r.pending.as_ref().expect("pending")["id"], "ok": true })).await.expect("resume");
    let parent = rt.find("root/approverParent.1").expect("parent");
    let done = rt.wait(parent, None, None).await;
    assert_eq!(done.status, TaskStatus::Done, "{done:?}");
    assert!(rt.snapshot(leaf).expect("leaf").turns_total > turns_before);
    assert!(rt.find("root/approverParent.1/asker.2").is_none(), "no duplicate child");
    assert!(rt.trace().iter().any(|l| l.contains("task replay \u{2192} REATTACH")));
    assert_transitions(&transitions(&rt.trace()), &fx["phase2_expect"]["transitions"]);
}

#[tokio::test]
async fn budgets_carve_at_spawn_and_stop_live() {
    let fx = fixture("subagent-budgets");
    let (rt, llm) = runtime(&fx);
    let b = |tokens: Option<f64>, children: Option<f64>| Budget {
        max_tokens: tokens,
        max_children: children,
        ..Default::default()
    };
    let coord = rt.spawn(ROOT, "coordinator", Some(&b(Some(100.0), Some(2.0)))).expect("coordinator");
    let e1 = rt.spawn(coord, "explore", Some(&b(Some(500.0), None))).expect("explore 1");
    let e2 = rt.spawn(coord, "explore", None).expect("explore 2");
    assert!(rt.spawn(coord, "explore", None).unwrap_err().contains("maxChildren 2 exceeded"));
    assert_eq!(rt.inspect(e1).expect("e1").pool_tokens, 100.0, "carve: min(own, parent remaining)");
    rt.wake(e1, Some("go".into())).expect("wake");
    assert_eq!(rt.wait(e1, None, None).await.status, TaskStatus::Done);
    assert_eq!(rt.inspect(coord).expect("coord").pool_tokens, 20.0);
    // Live: the shared pool runs dry during explore.2's first turn, so it stops there.
    let calls = llm.calls.load(Ordering::SeqCst);
    rt.wake(e2, Some("go".into())).expect("wake");
    let r = rt.wait(e2, None, None).await;
    assert_eq!(r.status, TaskStatus::Incomplete);
    assert!(r.text.contains("budget exhausted (maxTokens)"), "{}", r.text);
    assert_eq!(llm.calls.load(Ordering::SeqCst) - calls, 1);
    assert!(rt.wake(e2, Some("again".into())).unwrap_err().contains("budget exhausted"));
    let looper =
        rt.spawn(ROOT, "looper", Some(&Budget { max_turns: Some(3.0), ..Default::default() })).expect("looper");
    rt.wake(looper, Some("loop forever".into())).expect("wake");
    let r = rt.wait(looper, None, None).await;
    assert_eq!(r.status, TaskStatus::Incomplete);
    assert_eq!(rt.snapshot(looper).expect("looper").turns_total, 3.0);
}

#[tokio::test]
async fn a_thousand_children_under_both_gates_all_settle() {
    let fx = fixture("subagent-fanout");
    let llm = Scripted::new();
    let mut defs = registry(&fx);
    for d in &mut defs {
        if d.name == "coordinator" {
            d.budget = Budget { max_concurrent: Some(8.0), max_children: Some(1000.0), ..Default::default() };
        }
    }
    let mut opts = RuntimeOptions::new(defs);
    opts.transport = Some(llm.clone());
    opts.max_concurrent_turns = 4.0;
    let rt = AgentRuntime::new(opts);
    let coord = rt.spawn(ROOT, "coordinator", None).expect("coordinator");
    let kids: Vec<_> = (0..1000).map(|_| rt.spawn(coord, "explore", None).expect("child")).collect();
    for &k in &kids {
        rt.wake(k, Some("go".into())).expect("wake");
    }
    for &k in &kids {
        assert_eq!(rt.wait(k, None, None).await.status, TaskStatus::Done);
    }
    assert!(rt.max_observed_concurrent_turns() <= 4);
    assert_eq!(llm.calls.load(Ordering::SeqCst), 2000);
    assert_eq!(rt.trace().iter().filter(|l| l.contains("wake QUEUED")).count(), 992);
    rt.close(ROOT, false, None).await;
    assert!(rt.list(ROOT).iter().all(|v| v.state.as_str() == "closed"));
}

fn item(from: &str, channel: &str, text: &str) -> InboxItem {
    InboxItem { from: from.into(), channel: channel.into(), text: text.into() }
}

#[tokio::test]
async fn lifecycle_one_wake_drains_the_whole_inbox_as_one_block() {
    let fx = fixture("subagent-lifecycle");
    let (rt, _) = runtime(&fx);
    let peer = rt.spawn(ROOT, "peer", None).expect("peer");
    rt.post(peer, item("root/coordinator.1", "peer", "update 1")).expect("post");
    rt.post(peer, item("external", "external", "webhook payload")).expect("post");
    for _ in 0..3 {
        rt.post(peer, item("clock", "timer", "tick")).expect("tick");
    }
    assert_eq!(rt.snapshot(peer).expect("peer").inbox.len(), 3, "ticks coalesce as they arrive");
    rt.wake(peer, None).expect("wake");
    let r = rt.wait(peer, None, None).await;
    assert_eq!((r.text.as_str(), r.turns), ("processed 3 items", 1.0));
    let sent = rt.store().get("root/peer.1").await.expect("store").expect("transcript");
    let input = sent[0]["content"].as_str().expect("input");
    assert!(
        input.contains("[from=external channel=external UNTRUSTED] <untrusted>webhook payload</untrusted>"),
        "{input}"
    );
    assert!(input.contains("[from=root/coordinator.1 channel=peer UNTRUSTED]"), "not an ancestor: {input}");
    assert!(input.contains("[from=clock channel=timer] tick (x3 coalesced)"), "{input}");
}

#[tokio::test]
async fn lifecycle_a_full_inbox_refuses_at_once() {
    let fx = fixture("subagent-lifecycle");
    let (rt, _) = runtime_with(registry(&fx), |o| o.inbox_cap = 2.0);
    let peer = rt.spawn(ROOT, "peer", None).expect("peer");
    rt.post(peer, item("root", "peer", "1")).expect("1");
    rt.post(peer, item("root", "peer", "2")).expect("2");
    assert_eq!(rt.post(peer, item("root", "peer", "3")).unwrap_err(), "inbox full: root/peer.1 (cap 2)");
    assert!(rt.trace().iter().any(|l| l == "root/peer.1: post REJECTED (inbox full, cap 2) from root"));
}

#[tokio::test]
async fn lifecycle_the_concurrency_and_turn_gates_hold_without_deadlock() {
    let fx = fixture("subagent-lifecycle");
    let mut defs = registry(&fx);
    for d in &mut defs {
        if d.name == "coordinator" {
            d.budget.max_concurrent = Some(1.0);
        }
    }
    let (rt, _) = runtime_with(defs, |_| {});
    let coord = rt.spawn(ROOT, "coordinator", None).expect("coordinator");
    rt.wake(coord, Some("go".into())).expect("wake");
    assert_eq!(rt.wait(coord, None, None).await.status, TaskStatus::Done);
    let trace = rt.trace();
    assert!(trace.iter().any(|l| l.contains("wake QUEUED")) && trace.iter().any(|l| l.contains("DEQUEUED wake")));

    let (rt, _) = runtime_with(registry(&fx), |o| o.max_concurrent_turns = 1.0);
    let coord = rt.spawn(ROOT, "coordinator", None).expect("coordinator");
    rt.wake(coord, Some("go".into())).expect("wake");
    assert_eq!(rt.wait(coord, None, None).await.status, TaskStatus::Done);
    assert_eq!(rt.max_observed_concurrent_turns(), 1);
}

/// Polls its future with the thread marked as the host's, as the Node binding polls turns.
struct OnHost(futures::future::BoxFuture<'static, ()>);

impl std::future::Future for OnHost {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        toolnexus_core::host_thread::polling_on_host(|| self.0.as_mut().poll(cx))
    }
}

/// Two `task` calls of one reply start together, as two calls of one `Promise.all` do, even
/// when turns are polled on a host's thread and the runtime has threads of its own: the
/// second child of a `maxConcurrent: 1` parent always queues behind the first, however fast
/// the first one's turns are.
#[test]
fn lifecycle_two_task_calls_of_one_reply_start_together_on_a_host_thread() {
    let tokio_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let fx = fixture("subagent-lifecycle");
    for round in 0..200 {
        let mut defs = registry(&fx);
        for d in &mut defs {
            if d.name == "coordinator" {
                d.budget.max_concurrent = Some(1.0);
            }
        }
        let handle = tokio_rt.handle().clone();
        let (rt, _) = runtime_with(defs, |o| {
            o.spawner = Arc::new(move |f| {
                handle.spawn(OnHost(f));
            })
        });
        let trace = tokio_rt.block_on(async {
            let coord = rt.spawn(ROOT, "coordinator", None).expect("coordinator");
            rt.wake(coord, Some("go".into())).expect("wake");
            assert_eq!(rt.wait(coord, None, None).await.status, TaskStatus::Done);
            rt.trace()
        });
        let queued = trace.iter().position(|l| l.starts_with("root/coordinator.1/explore.2: wake QUEUED"));
        let first_done = trace.iter().position(|l| l.starts_with("root/coordinator.1/explore.1: running\u{2192}idle"));
        assert!(
            matches!((queued, first_done), (Some(q), Some(d)) if q < d),
            "round {round}: the second child did not queue behind the first\n{}",
            trace.join("\n")
        );
    }
}

#[tokio::test]
async fn lifecycle_interrupt_aborts_the_turn_and_restores_the_inbox() {
    let fx = fixture("subagent-lifecycle");
    let (rt, llm) = runtime(&fx);
    let slow = rt.spawn(ROOT, "slow", None).expect("slow");
    rt.post(slow, item("root", "peer", "for later")).expect("post");
    let started = llm.slow_started.notified();
    rt.wake(slow, Some("work slowly".into())).expect("wake");
    let waiting = rt.wait(slow, None, None);
    started.await;
    assert_eq!(rt.snapshot(slow).expect("slow").state, HandleState::Running);
    rt.interrupt(slow);
    let r = waiting.await;
    assert_eq!((r.status, r.is_error), (TaskStatus::Interrupted, true));
    let s = rt.snapshot(slow).expect("slow");
    assert_eq!(s.state, HandleState::Idle);
    assert_eq!(s.inbox, vec![item("root", "peer", "for later")]);
    assert_eq!(transitions(&rt.trace())["root/slow.1"], vec!["idle\u{2192}running", "running\u{2192}idle"]);
}

#[tokio::test]
async fn lifecycle_close_cascades_leaf_first_and_keeps_the_final_state() {
    let fx = fixture("subagent-lifecycle");
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut defs = registry(&fx);
    for d in &mut defs {
        let order = order.clone();
        d.on_close = Some(toolnexus_core::callback::callback(move |ev: Value| {
            let order = order.clone();
            async move {
                order.lock().expect("order").push(ev["id"].as_str().unwrap_or("").to_string());
                Ok(Value::Null)
            }
        }));
    }
    let (rt, _) = runtime_with(defs, |_| {});
    let coord = rt.spawn(ROOT, "coordinator", None).expect("coordinator");
    let child = rt.spawn(coord, "peer", None).expect("child");
    let grandchild = rt.spawn(child, "peer", None).expect("grandchild");
    let (close1, close2) = (rt.close(ROOT, false, None), rt.close(coord, false, None));
    futures::future::join(close1, close2).await;
    assert_eq!(
        *order.lock().expect("order"),
        vec!["root/coordinator.1/peer.1/peer.1", "root/coordinator.1/peer.1", "root/coordinator.1"],
        "leaf-first, each once"
    );
    assert!(rt.post(child, item("root", "peer", "late")).unwrap_err().contains("closed"));
    for h in [coord, child, grandchild] {
        assert_eq!(rt.snapshot(h).expect("handle").state, HandleState::Closed);
        assert_eq!(rt.wait(h, None, None).await.status, TaskStatus::Closed);
    }
}

fn looper_runtime(
    verdict: &'static str,
    wait_for: Option<bool>,
) -> (AgentRuntime, Arc<Scripted>, Arc<std::sync::Mutex<Vec<Value>>>) {
    let fx = fixture("subagent-budgets");
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut defs = registry(&fx);
    for d in &mut defs {
        if d.name == "looper" {
            d.budget = Budget { max_turns: Some(4.0), max_tool_calls: Some(2.0), ..Default::default() };
            d.wait_for = wait_for.map(|ok| {
                toolnexus_core::callback::callback(
                    move |req: Value| async move { Ok(json!({ "id": req["id"], "ok": ok })) },
                )
            });
        }
    }
    let seen = asked.clone();
    let (rt, llm) = runtime_with(defs, move |o| {
        o.on_budget = Some(toolnexus_core::callback::callback(move |info: Value| {
            let seen = seen.clone();
            async move {
                seen.lock().expect("asked").push(info);
                Ok(Value::String(verdict.into()))
            }
        }));
    });
    (rt, llm, asked)
}

async fn loop_once(rt: &AgentRuntime) -> (usize, toolnexus_core::agents::runtime::TaskResult) {
    let h = rt.spawn(ROOT, "looper", None).expect("looper");
    rt.wake(h, Some("loop".into())).expect("wake");
    (h, rt.wait(h, None, None).await)
}

#[tokio::test]
async fn on_budget_stop_ends_the_turn_at_the_limit() {
    let (rt, _, asked) = looper_runtime("stop", None);
    let (h, r) = loop_once(&rt).await;
    assert_eq!(r.status, TaskStatus::Incomplete);
    assert_eq!(r.text, "budget exhausted (maxToolCalls); partial work preserved");
    assert_eq!(rt.snapshot(h).expect("looper").tool_calls_total, 2.0);
    let asked = asked.lock().expect("asked");
    assert_eq!(asked.len(), 1);
    assert_eq!((asked[0]["id"].as_str(), asked[0]["limit"].as_str()), (Some("root/looper.1"), Some("maxToolCalls")));
}

#[tokio::test]
async fn on_budget_extend_lets_the_turn_go_on() {
    let (rt, _, asked) = looper_runtime("extend", None);
    let (h, r) = loop_once(&rt).await;
    assert_eq!(r.status, TaskStatus::Incomplete);
    assert_eq!(r.text, "hit maxTurns without a final answer", "the turn cap stopped it, not the tool-call pool");
    assert_eq!(rt.snapshot(h).expect("looper").tool_calls_total, 4.0);
    assert_eq!(asked.lock().expect("asked").len(), 2, "asked at each call past the limit");
}

#[tokio::test]
async fn on_budget_suspend_asks_the_agents_own_authority() {
    let (rt, _, _) = looper_runtime("suspend", Some(false));
    let (_, r) = loop_once(&rt).await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (TaskStatus::Incomplete, "budget exhausted (maxToolCalls); partial work preserved")
    );
    let (rt, _, _) = looper_runtime("suspend", Some(true));
    let (h, r) = loop_once(&rt).await;
    assert_eq!(r.status, TaskStatus::Incomplete);
    assert_eq!(r.text, "hit maxTurns without a final answer", "approved: the rest of the turn runs past the limit");
    assert_eq!(rt.snapshot(h).expect("looper").tool_calls_total, 4.0);
}

#[tokio::test]
async fn on_budget_suspend_without_authority_parks_the_handle_until_resumed() {
    let (rt, _, _) = looper_runtime("suspend", None);
    let (h, r) = loop_once(&rt).await;
    assert_eq!(r.status, TaskStatus::Pending);
    let pending = r.pending.expect("request");
    assert_eq!(pending["kind"], "approval");
    assert_eq!(pending["prompt"], "budget exhausted (maxToolCalls): continue past it?");
    assert_eq!(pending["data"]["limit"], "maxToolCalls");
    assert_eq!(pending["data"]["path"], json!(["root", "looper.1"]));
    assert_eq!(rt.snapshot(h).expect("looper").state, HandleState::Suspended);
    rt.resume(json!({ "id": pending["id"], "ok": true })).await.expect("resume");
    let r = rt.wait(h, None, None).await;
    assert_eq!(r.status, TaskStatus::Incomplete, "{r:?}");
    assert_eq!(r.text, "hit maxTurns without a final answer");
}

#[tokio::test]
async fn a_heartbeat_beats_on_the_runtime_clock_and_keeps_silent_replies_quiet() {
    let def = |name: &str, model: &str| AgentDef {
        name: name.into(),
        does: "persona".into(),
        model: Some(model.into()),
        ..Default::default()
    };
    let clock = VirtualClock::new();
    let beats = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (rt, llm) =
        runtime_with(vec![def("talker", "m-peer"), def("quiet", "m-silent")], |o| o.clock = Arc::new(clock.clone()));
    let mut stops = Vec::new();
    for name in ["talker", "quiet"] {
        let h = rt.spawn(ROOT, name, None).expect("persona");
        let seen = beats.clone();
        let on_beat = toolnexus_core::callback::callback(move |text: Value| {
            let seen = seen.clone();
            async move {
                seen.lock().expect("beats").push(text);
                Ok(Value::Null)
            }
        });
        let hb = Heartbeat {
            every_ms: 1000.0,
            prompt: "beat".into(),
            silent: "HEARTBEAT_OK".into(),
            on_beat: Some(on_beat),
        };
        stops.push(rt.start_heartbeat(h, hb));
    }
    for _ in 0..3 {
        clock.advance(1000.0);
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }
    assert_eq!(llm.calls.load(Ordering::SeqCst), 6, "one turn per beat per persona");
    let got = beats.lock().expect("beats").clone();
    assert_eq!(got, vec![json!("processed 1 items"); 3], "the talker's beats only; each drained one tick");
    for s in &stops {
        s.stop();
    }
    clock.advance(5000.0);
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(llm.calls.load(Ordering::SeqCst), 6, "no beat after stop");
    assert_eq!(clock.pending(), 0);
}

// ---- A runtime on a durable store (issue 26): its state outlives it. ----

/// The engines a durable runtime is tried on (each test keeps its state under a runtime id of
/// its own).
fn durable_urls(dir: &std::path::Path) -> Vec<String> {
    crate::common::engine_urls(dir)
}

fn fresh_id(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{name}-{}-{nanos}", std::process::id())
}

/// A runtime on `url`, its state under `id`, opened (the previous runtime's state read).
async fn durable_runtime(fx: &Value, url: &str, id: &str) -> (AgentRuntime, Arc<Scripted>) {
    let (rt, llm) = runtime_with(registry(fx), |o| {
        o.store = Arc::new(toolnexus_core::client::store::DurableConversationStore::new(url));
        o.runtime_id = id.to_string();
    });
    rt.open_durable().await.expect("open");
    (rt, llm)
}

#[tokio::test]
async fn a_suspended_tree_resumes_in_a_new_runtime_with_the_single_runtime_trace() {
    let fx = fixture("subagent-durable-resume");
    // One runtime, start to end: the trace to match.
    let (one, _) = runtime(&fx);
    let r = run_entry(&one, &fx).await;
    one.resume(json!({ "id": r.pending.as_ref().expect("pending")["id"], "ok": true })).await.expect("resume");
    let parent = one.find("root/approverParent.1").expect("parent");
    let whole = one.wait(parent, None, None).await;
    assert_eq!(whole.status, TaskStatus::Done);

    let dir = tempfile::tempdir().expect("tmp");
    for url in durable_urls(dir.path()) {
        let id = fresh_id("resume");
        let (first, _) = durable_runtime(&fx, &url, &id).await;
        let r = run_entry(&first, &fx).await;
        assert_eq!(r.status, TaskStatus::Pending, "{url}");
        first.saved().await;
        drop(first);

        let (second, llm) = durable_runtime(&fx, &url, &id).await;
        let leaf = second.find("root/approverParent.1/asker.1").expect("the suspended leaf is found");
        assert_eq!(second.snapshot(leaf).expect("leaf").state, HandleState::Suspended, "{url}");
        let parent = second.find("root/approverParent.1").expect("parent");
        assert_eq!(second.inspect(parent).expect("parent").pending, r.pending, "{url}: the pending Request");
        assert_eq!(
            second.inspect(leaf).expect("leaf").pending.map(|p| p["id"].clone()),
            r.pending.as_ref().map(|p| p["id"].clone()),
            "{url}"
        );
        second.resume(json!({ "id": r.pending.as_ref().expect("pending")["id"], "ok": true })).await.expect("resume");
        let done = second.wait(parent, None, None).await;
        assert_eq!(done, whole, "{url}: the same result as one runtime");
        assert!(second.find("root/approverParent.1/asker.2").is_none(), "{url}: reattached, not spawned again");
        assert_eq!(second.trace(), one.trace(), "{url}: the trace of one runtime");
        assert!(llm.calls.load(Ordering::SeqCst) >= 2, "{url}");
        second.saved().await;
    }
}

#[tokio::test]
async fn a_turn_running_when_its_runtime_ended_comes_back_interrupted_with_its_inbox() {
    let dir = tempfile::tempdir().expect("tmp");
    let defs = || {
        vec![AgentDef { name: "slow".into(), does: "slow".into(), model: Some("m-slow".into()), ..Default::default() }]
    };
    for url in durable_urls(dir.path()) {
        let id = fresh_id("crash");
        let open = move |url: String, id: String| async move {
            let (rt, llm) = runtime_with(defs(), |o| {
                o.store = Arc::new(toolnexus_core::client::store::DurableConversationStore::new(&url));
                o.runtime_id = id;
            });
            rt.open_durable().await.expect("open");
            (rt, llm)
        };
        // The first runtime lives on a tokio runtime of its own, shut down mid-turn: its
        // process "ends" (its turn never finishes, its lease is never renewed).
        {
            let (url, id) = (url.clone(), id.clone());
            std::thread::spawn(move || {
                let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
                tokio.block_on(async {
                    let (first, llm) = open(url, id).await;
                    let h = first.spawn(ROOT, "slow", None).expect("spawn");
                    first
                        .post(h, InboxItem { from: "root".into(), channel: "note".into(), text: "keep me".into() })
                        .expect("post");
                    first.wake(h, Some("go".into())).expect("wake");
                    llm.slow_started.notified().await;
                    first.saved().await;
                });
                tokio.shutdown_background();
            })
            .join()
            .expect("the first runtime's thread");
        }

        let (second, _) = open(url.clone(), id.clone()).await;
        let h2 = second.find("root/slow.1").expect("found");
        let s = second.snapshot(h2).expect("snapshot");
        assert_eq!(s.state, HandleState::Idle, "{url}");
        let last = s.last_result.expect("a result");
        assert_eq!(last.status, TaskStatus::Interrupted, "{url}");
        assert_eq!(s.inbox.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(), ["keep me"], "{url}: the item is back");
        assert!(
            second
                .trace()
                .last()
                .is_some_and(|l| l
                    == "root/slow.1: running\u{2192}idle (interrupted: its turn was running when its process ended)"),
            "{url}: {:?}",
            second.trace()
        );
        assert_eq!(second.wait(h2, None, None).await.status, TaskStatus::Interrupted, "{url}");

        // Runtimes side by side on one store: each one's changes reach it, merged, and none
        // undoes the other's.
        let (third, _) = open(url.clone(), id.clone()).await;
        let h3 = third.find("root/slow.1").expect("found");
        second
            .post(h2, InboxItem { from: "root".into(), channel: "note".into(), text: "from second".into() })
            .expect("post");
        third
            .post(h3, InboxItem { from: "root".into(), channel: "note".into(), text: "from third".into() })
            .expect("post");
        second.saved().await;
        third.saved().await;
        let (fourth, _) = open(url.clone(), id.clone()).await;
        let h4 = fourth.find("root/slow.1").expect("found");
        let mut inbox: Vec<String> = fourth.snapshot(h4).expect("snapshot").inbox.into_iter().map(|i| i.text).collect();
        inbox.sort();
        assert_eq!(inbox, ["from second", "from third", "keep me"], "{url}");
        fourth.saved().await;
    }
}

#[tokio::test]
async fn a_finished_tree_is_not_reopened_and_closed_branches_are_left_behind() {
    let fx = fixture("subagent-fanout");
    let dir = tempfile::tempdir().expect("tmp");
    let url = durable_urls(dir.path()).remove(0);
    let id = fresh_id("done");
    let (first, _) = durable_runtime(&fx, &url, &id).await;
    let h = first.spawn(ROOT, "coordinator", None).expect("spawn");
    first.wake(h, Some("go".into())).expect("wake");
    assert_eq!(first.wait(h, None, None).await.status, TaskStatus::Done);
    let kept = first.spawn(ROOT, "explore", None).expect("spawn");
    first.close(h, false, None).await;
    first.saved().await;
    let (second, _) = durable_runtime(&fx, &url, &id).await;
    assert!(second.find("root/coordinator.1").is_none(), "the closed branch is left behind");
    let e = second.find("root/explore.2").expect("the open handle stays");
    assert_eq!(second.snapshot(e).expect("e").state, HandleState::Idle);
    assert_eq!(
        second.spawn(ROOT, "explore", None).map(|h| second.snapshot(h).expect("new").id),
        Ok("root/explore.3".to_string()),
        "ids go on"
    );
    let _ = kept;
    second.close(ROOT, false, None).await;
    second.saved().await;
    let (third, _) = durable_runtime(&fx, &url, &id).await;
    assert_eq!(third.list(ROOT).len(), 0, "a closed root starts a new tree");
    assert!(third.trace().is_empty());
}

#[tokio::test]
async fn a_runtime_on_a_durable_store_goes_on_in_memory_while_its_engine_is_down() {
    // A port nothing listens on: opening fails clearly, naming the URL without its password.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let url = format!("postgres://u:hunter2@127.0.0.1:{port}/x");
    let fx = fixture("subagent-fanout");
    let (rt, _) = runtime_with(registry(&fx), |o| {
        o.store = Arc::new(toolnexus_core::client::store::DurableConversationStore::new(&url));
    });
    let e = rt.open_durable().await.expect_err("no engine");
    let text = e.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")) && !text.contains("hunter2"), "{text}");
    assert!(matches!(e, toolnexus_core::error::Error::Store { code: "ESTOREUNAVAILABLE", .. }), "{e:?}");
}

/// An LLM endpoint on a raw socket that answers each request after `delay`, unless the client
/// closes its connection first: that is recorded, as the time from the request's arrival.
async fn slow_llm(delay: Duration) -> (String, Arc<std::sync::Mutex<Vec<Duration>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let closed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = closed.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let (mut rd, mut wr) = sock.into_split();
                let mut buf = vec![0u8; 64 * 1024];
                // A small request arrives in one read, or nearly: what follows is either
                // nothing (the client waits) or the end of the connection.
                if !matches!(rd.read(&mut buf).await, Ok(n) if n > 0) {
                    return;
                }
                let arrived = std::time::Instant::now();
                let eof = async {
                    while let Ok(n) = rd.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                };
                tokio::select! {
                    _ = eof => seen.lock().expect("closed").push(arrived.elapsed()),
                    _ = tokio::time::sleep(delay) => {
                        let body = json!({"choices": [{"message": {"role": "assistant", "content": "late"}}]}).to_string();
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = wr.write_all(reply.as_bytes()).await;
                    }
                }
            });
        }
    });
    (url, closed)
}

#[tokio::test]
async fn max_wall_ms_cuts_the_llm_call_in_flight_at_the_deadline() {
    // Before, a 300 ms budget ended only once the model's 6 s reply had come.
    let (url, closed) = slow_llm(Duration::from_secs(6)).await;
    let def = AgentDef {
        name: "slow".into(),
        does: "waits on a slow model".into(),
        budget: Budget { max_wall_ms: Some(300.0), ..Default::default() },
        ..Default::default()
    };
    let mut opts = RuntimeOptions::new(vec![def]);
    opts.llm.base_url = Some(format!("{url}/v1"));
    opts.llm.model = Some("m".into());
    let rt = AgentRuntime::new(opts);
    let h = rt.spawn(ROOT, "slow", None).expect("spawn");
    let started = std::time::Instant::now();
    rt.wake(h, Some("go".into())).expect("wake");
    let r = tokio::time::timeout(Duration::from_secs(5), rt.wait(h, None, None)).await.expect("the run settles");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(2), "settled after {took:?}");
    assert_eq!(r.status, TaskStatus::Incomplete);
    assert_eq!(r.text, "budget exhausted (maxWallMs); partial work preserved");
    assert!(r.is_error);
    // The endpoint sees the connection closed, at about the deadline.
    let mut waited = 0;
    while closed.lock().expect("closed").is_empty() && waited < 100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += 1;
    }
    let closed = closed.lock().expect("closed").clone();
    assert_eq!(closed.len(), 1, "the call in flight was dropped and its connection closed");
    assert!(closed[0] < Duration::from_secs(2), "{:?}", closed[0]);
    // Past the deadline, the handle refuses another wake as the reference does.
    assert!(rt.wake(h, Some("again".into())).unwrap_err().contains("budget exhausted (maxWallMs)"));
}

#[tokio::test]
async fn max_wall_ms_cuts_a_retry_back_off_too() {
    use crate::common::{MockLlm, Reply};
    // The model asks for 10 s before a retry: the deadline does not wait for it.
    let llm = MockLlm::script(vec![Reply::raw(429, "slow down").header("retry-after", "10")]).await;
    let def = AgentDef {
        name: "slow".into(),
        does: "waits on a busy model".into(),
        budget: Budget { max_wall_ms: Some(300.0), ..Default::default() },
        ..Default::default()
    };
    let mut opts = RuntimeOptions::new(vec![def]);
    opts.llm.base_url = Some(format!("{}/v1", llm.url()));
    opts.llm.model = Some("m".into());
    let rt = AgentRuntime::new(opts);
    let h = rt.spawn(ROOT, "slow", None).expect("spawn");
    let started = std::time::Instant::now();
    rt.wake(h, Some("go".into())).expect("wake");
    let r = tokio::time::timeout(Duration::from_secs(5), rt.wait(h, None, None)).await.expect("the run settles");
    assert!(started.elapsed() < Duration::from_secs(2), "settled after {:?}", started.elapsed());
    assert_eq!(
        (r.status, r.text.as_str()),
        (TaskStatus::Incomplete, "budget exhausted (maxWallMs); partial work preserved")
    );
    assert_eq!(llm.count(), 1, "no retry was sent after the deadline");
}

#[tokio::test]
async fn an_agents_llm_call_falls_back_as_a_clients_does() {
    use crate::common::{oa_text, MockLlm, Reply};
    let primary = MockLlm::start(|_, _| crate::common::Action::Reply(Reply::raw(503, "busy"))).await;
    let backup = MockLlm::script(vec![Reply::json(oa_text("answered by the backup"))]).await;
    let def = AgentDef { name: "a".into(), does: "answers".into(), ..Default::default() };
    let mut opts = RuntimeOptions::new(vec![def]);
    opts.llm.base_url = Some(primary.url());
    opts.llm.model = Some("m".into());
    opts.llm.fallback = toolnexus_core::client::Fallback::list_of(&json!([{ "baseUrl": backup.url(), "model": "m2" }]));
    let rt = AgentRuntime::new(opts);
    let h = rt.spawn(ROOT, "a", None).expect("spawn");
    rt.wake(h, Some("go".into())).expect("wake");
    let r = tokio::time::timeout(Duration::from_secs(5), rt.wait(h, None, None)).await.expect("the run settles");
    assert_eq!((r.status, r.text.as_str()), (TaskStatus::Done, "answered by the backup"));
    assert_eq!(backup.request(0).body["model"], "m2");
}

#[tokio::test]
async fn a_handles_fields_name_its_definition_and_the_budget_it_runs_under() {
    let lead = AgentDef {
        name: "lead".into(),
        does: "leads".into(),
        budget: Budget { max_turns: Some(4.0), max_tokens: Some(500.0), ..Default::default() },
        ..Default::default()
    };
    let (rt, _) = runtime_with(vec![lead], |_| {});
    let fields = |h| serde_json::to_value(rt.fields(h).expect("fields")).expect("json");
    let root = fields(ROOT);
    let keys: Vec<&str> = root.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "id",
            "def",
            "parent",
            "depth",
            "children",
            "inbox",
            "state",
            "pool",
            "eff",
            "deadline",
            "usageTotal",
            "toolCallsTotal",
            "turnsTotal",
            "pendingRequest",
            "lastResult",
            "abort",
            "checkpoint",
            "drained",
            "wakeQueue",
            "taskKey",
            "runningChildren",
            "seq"
        ],
        "the reference Handle's fields, in its order"
    );
    assert_eq!(root["def"], json!({ "own": { "name": "root", "does": "runtime root", "model": "none" } }));
    assert_eq!(root["parent"], Value::Null);

    let plain = rt.spawn(ROOT, "lead", None).expect("spawn");
    assert_eq!(fields(plain)["def"], json!({ "registered": "lead" }), "the registered definition, as registered");
    let capped = rt.spawn(ROOT, "lead", Some(&Budget { max_turns: Some(2.0), ..Default::default() })).expect("spawn");
    let f = fields(capped);
    assert_eq!(f["def"], json!({ "registered": "lead", "budget": { "maxTurns": 2.0, "maxTokens": 500.0 } }));
    assert_eq!(f["eff"]["maxTurns"], 2.0, "the merged budget is the one applied");
    assert_eq!(f["pool"]["tokens"], 500.0);
    assert_eq!(f["parent"], json!(ROOT));
    assert_eq!(fields(ROOT)["children"], json!([plain, capped]));
    assert!(rt.fields(99).is_none());
}
