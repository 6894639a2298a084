//! The agent runtime's `resume` (SPEC §7D, §10): the Answer reaches the handle and the call
//! parked on the Request it echoes, once, in one runtime or across runtimes on one store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolnexus_core::agents::runtime::{AgentDef, AgentRuntime, HandleState, RuntimeOptions, TaskStatus, ROOT};
use toolnexus_core::client::store::DurableConversationStore;
use toolnexus_core::client::{HttpRequest, HttpResponse, Transport};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::ToolResult;
use toolnexus_core::{pending, Error};

use crate::common::{fn_tool, map, Log};

/// A request's body, its messages, and the tool results among them.
fn read_request(req: &HttpRequest) -> (Value, Vec<Value>, Vec<String>) {
    let body: Value = serde_json::from_str(&req.body).expect("body");
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let results =
        msgs.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap_or("").to_string()).collect();
    (body, msgs, results)
}

/// A model that asks for the calls named in the user's prompt (`call:a,b`) while no tool
/// result is in the transcript, then answers with every tool result it was given.
struct Model(AtomicUsize);

#[async_trait::async_trait]
impl Transport for Model {
    async fn post(&self, req: HttpRequest) -> toolnexus_core::error::Result<HttpResponse> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let (_, msgs, results) = read_request(&req);
        let prompt = msgs.iter().rev().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap_or("");
        let message = match prompt.strip_prefix("call:") {
            Some(names) if results.is_empty() => {
                let calls: Vec<Value> = names
                    .split(',')
                    .enumerate()
                    .map(|(i, n)| json!({"id": format!("c{i}"), "type": "function", "function": {"name": n, "arguments": "{}"}}))
                    .collect();
                json!({"content": null, "tool_calls": calls})
            }
            _ => json!({"content": format!("final: {}", results.join(" | "))}),
        };
        let reply = json!({"choices": [{"message": message}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}});
        Ok(HttpResponse { status: 200, headers: vec![], body: reply.to_string() })
    }
}

/// A tool that parks until run with an answer (a new Request id each time it asks).
fn approval(name: &str, runs: Log<Option<Value>>) -> SharedTool {
    let (prompt, done) = (format!("approve {name}"), format!("{name} done"));
    fn_tool(name, move |_, ctx| {
        let (runs, prompt, done) = (runs.clone(), prompt.clone(), done.clone());
        async move {
            runs.push(ctx.answer.clone());
            match ctx.answer {
                Some(a) if a["ok"] == true => ToolResult::ok(done),
                Some(_) => ToolResult::error("refused"),
                None => pending(map(json!({"kind": "approval", "prompt": prompt}))).unwrap(),
            }
        }
    })
}

fn agent(tools: Vec<SharedTool>) -> AgentDef {
    AgentDef { name: "worker".into(), does: "works".into(), model: Some("m".into()), tools, ..Default::default() }
}

fn runtime(defs: Vec<AgentDef>, tune: impl FnOnce(&mut RuntimeOptions)) -> (AgentRuntime, Arc<Model>) {
    let llm = Arc::new(Model(AtomicUsize::new(0)));
    let mut opts = RuntimeOptions::new(defs);
    opts.transport = Some(llm.clone());
    tune(&mut opts);
    (AgentRuntime::new(opts), llm)
}

fn code(e: &Error) -> &'static str {
    match e {
        Error::Refused { code, .. } | Error::Store { code, .. } => code,
        _ => "",
    }
}

fn id_of(p: &Option<Value>) -> Value {
    p.as_ref().expect("parked")["id"].clone()
}

#[tokio::test]
async fn each_parked_call_of_a_turn_needs_its_own_answer() {
    let (a, b) = (Log::default(), Log::default());
    let (rt, llm) = runtime(vec![agent(vec![approval("a", a.clone()), approval("b", b.clone())])], |_| {});
    let h = rt.spawn(ROOT, "worker", None).unwrap();
    rt.wake(h, Some("call:a,b".into())).unwrap();
    let first = rt.wait(h, None, None).await;
    assert_eq!(first.status, TaskStatus::Pending);
    assert_eq!(first.pending.as_ref().unwrap()["prompt"], "approve a");

    // Nothing is parked on any other id: refused, nothing changes.
    let e = rt.resume(json!({"id": "pnd-elsewhere", "ok": true})).await.unwrap_err();
    assert_eq!(code(&e), "EUNKNOWNREQUEST", "{e}");
    assert!(e.to_string().contains("pnd-elsewhere") && e.to_string().contains(id_of(&first.pending).as_str().unwrap()));
    assert_eq!(rt.snapshot(h).unwrap().state, HandleState::Suspended);
    assert_eq!((a.len(), b.len(), llm.0.load(Ordering::SeqCst)), (1, 1, 1));

    rt.resume(json!({"id": id_of(&first.pending), "ok": true})).await.unwrap();
    let second = rt.wait(h, None, None).await;
    assert_eq!(second.status, TaskStatus::Pending, "b parks on its own request: {second:?}");
    assert_eq!(second.pending.as_ref().unwrap()["prompt"], "approve b");
    assert_ne!(id_of(&second.pending), id_of(&first.pending));
    assert_eq!(a.all()[1].as_ref().unwrap()["id"], id_of(&first.pending), "a ran with its own answer");
    assert!(b.all()[1].is_none(), "b ran again without one");
    assert_eq!(llm.0.load(Ordering::SeqCst), 1, "resuming asks the model nothing until the turn is whole");

    // The first answer again: already applied.
    let e = rt.resume(json!({"id": id_of(&first.pending), "ok": true})).await.unwrap_err();
    assert_eq!(code(&e), "ESTORECONFLICT", "{e}");

    rt.resume(json!({"id": id_of(&second.pending), "ok": true})).await.unwrap();
    let done = rt.wait(h, None, None).await;
    assert_eq!(done.status, TaskStatus::Done, "{done:?}");
    assert_eq!(done.text, "final: a done | b done");
    assert_eq!((a.len(), b.len()), (2, 3));
}

#[tokio::test]
async fn a_retry_that_asks_again_parks_on_its_new_request() {
    let seen: Log<Option<Value>> = Log::default();
    let s = seen.clone();
    let twice = fn_tool("twice", move |_, ctx| {
        let s = s.clone();
        async move {
            s.push(ctx.answer.clone());
            let step = ctx.answer.as_ref().and_then(|a| a["data"]["step"].as_u64()).unwrap_or(0);
            if step == 2 {
                return ToolResult::ok("both granted");
            }
            pending(map(json!({"kind": "approval", "prompt": format!("approval {}", step + 1)}))).unwrap()
        }
    });
    let (rt, _) = runtime(vec![agent(vec![twice])], |_| {});
    let h = rt.spawn(ROOT, "worker", None).unwrap();
    rt.wake(h, Some("call:twice".into())).unwrap();
    let first = rt.wait(h, None, None).await;
    let one = json!({"id": id_of(&first.pending), "ok": true, "data": {"step": 1}});
    rt.resume(one.clone()).await.unwrap();
    let second = rt.wait(h, None, None).await;
    assert_eq!(second.status, TaskStatus::Pending);
    assert_eq!(second.pending.as_ref().unwrap()["prompt"], "approval 2", "the run stops on the second request");
    assert!(rt.resume(one).await.is_err(), "the first answer cannot approve the second request");
    rt.resume(json!({"id": id_of(&second.pending), "ok": true, "data": {"step": 2}})).await.unwrap();
    assert_eq!(rt.wait(h, None, None).await.text, "final: both granted");
    assert_eq!(seen.len(), 3);
}

#[tokio::test]
async fn an_answer_without_an_id_goes_to_the_deepest_suspended_handle_as_before() {
    let runs = Log::default();
    let (rt, _) = runtime(vec![agent(vec![approval("a", runs.clone())])], |_| {});
    let h = rt.spawn(ROOT, "worker", None).unwrap();
    rt.wake(h, Some("call:a".into())).unwrap();
    assert_eq!(rt.wait(h, None, None).await.status, TaskStatus::Pending);
    rt.resume(json!({"ok": true})).await.unwrap();
    assert_eq!(rt.wait(h, None, None).await.text, "final: a done");
    // Nothing suspended: the reference's error.
    let e = rt.resume(json!({"ok": true})).await.unwrap_err();
    assert_eq!(e.to_string(), "no suspended handle to resume");
}

#[tokio::test]
async fn an_expired_request_refuses_its_answer_and_stays_parked() {
    let expiring = fn_tool("expiring", |_, ctx| async move {
        match ctx.answer {
            Some(_) => ToolResult::ok("ran"),
            None => {
                pending(map(json!({"kind": "approval", "prompt": "ok?", "expiresAt": "2001-01-01T00:00:00Z"}))).unwrap()
            }
        }
    });
    let (rt, _) = runtime(vec![agent(vec![expiring])], |_| {});
    let h = rt.spawn(ROOT, "worker", None).unwrap();
    rt.wake(h, Some("call:expiring".into())).unwrap();
    let first = rt.wait(h, None, None).await;
    let e = rt.resume(json!({"id": id_of(&first.pending), "ok": true})).await.unwrap_err();
    assert_eq!(code(&e), "EREQUESTEXPIRED", "{e}");
    assert!(e.to_string().contains("2001-01-01T00:00:00Z"));
    assert_eq!(rt.snapshot(h).unwrap().state, HandleState::Suspended);
    // The operator's way out is unchanged.
    rt.interrupt(h);
    assert_eq!(rt.snapshot(h).unwrap().state, HandleState::Idle);
}

/// Two runtimes on one durable store: the parked tool's definition is gone in the first, so
/// its resume is refused and the Request stays parked; both others resume at once, and the
/// parked call runs once.
#[tokio::test]
async fn across_runtimes_a_parked_call_runs_once_and_a_missing_tool_leaves_it_parked() {
    let dir = tempfile::tempdir().unwrap();
    for url in crate::common::engine_urls(dir.path()) {
        let runtime_id = format!("once-{}-{}", std::process::id(), toolnexus_core::types::new_pending_id());
        let on_store = |tools: Vec<SharedTool>| {
            let (url, id) = (url.clone(), runtime_id.clone());
            async move {
                let (rt, _) = runtime(vec![agent(tools)], |o| {
                    o.store = Arc::new(DurableConversationStore::new(&url));
                    o.runtime_id = id;
                });
                rt.open_durable().await.expect("open");
                rt
            }
        };
        let runs = Log::default();
        let first = on_store(vec![approval("a", runs.clone())]).await;
        let h = first.spawn(ROOT, "worker", None).unwrap();
        first.wake(h, Some("call:a".into())).unwrap();
        let parked = first.wait(h, None, None).await;
        assert_eq!(parked.status, TaskStatus::Pending, "{url}");
        first.saved().await;
        drop(first);
        let answer = json!({"id": id_of(&parked.pending), "ok": true});

        // A runtime whose agent lost the tool: refused by the tool's name, nothing taken.
        let without = on_store(vec![]).await;
        let e = without.resume(answer.clone()).await.unwrap_err();
        assert_eq!(code(&e), "ETOOLMISSING", "{url}: {e}");
        assert!(e.to_string().contains("\"a\""), "{e}");
        let h2 = without.find("root/worker.1").unwrap();
        assert_eq!(without.snapshot(h2).unwrap().state, HandleState::Suspended);
        without.saved().await;
        drop(without);

        // Two runtimes opened on the store, resuming the same Request at the same moment.
        // Opened at the same moment, too: both open (the one whose write lands last owns it).
        let (x, y) =
            tokio::join!(on_store(vec![approval("a", runs.clone())]), on_store(vec![approval("a", runs.clone())]));
        let (rx, ry) = tokio::join!(x.resume(answer.clone()), y.resume(answer.clone()));
        assert_eq!([rx.is_ok(), ry.is_ok()].iter().filter(|ok| **ok).count(), 1, "{url}: {rx:?} {ry:?}");
        let lost = rx.as_ref().err().or(ry.as_ref().err()).unwrap();
        assert_eq!(code(lost), "ESTORECONFLICT", "{url}: {lost}");
        assert_eq!(runs.all().iter().filter(|a| a.is_some()).count(), 1, "{url}: the call ran once");
        let winner = if rx.is_ok() { &x } else { &y };
        let hw = winner.find("root/worker.1").unwrap();
        let done = winner.wait(hw, None, None).await;
        assert_eq!(done.text, "final: a done", "{url}");
        winner.saved().await;
    }
}

#[tokio::test]
async fn a_parking_that_cannot_be_saved_is_an_error_not_a_pending() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gone").join("rt.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let gone = db.parent().unwrap().to_path_buf();
    let remover = fn_tool("remover", move |_, _| {
        let gone = gone.clone();
        async move {
            // The store's directory goes away while the tool parks.
            let _ = std::fs::remove_dir_all(&gone);
            pending(map(json!({"kind": "approval", "prompt": "ok?"}))).unwrap()
        }
    });
    let url = format!("sqlite:{}", db.display());
    let (rt, _) = runtime(vec![agent(vec![remover])], |o| {
        o.store = Arc::new(DurableConversationStore::new(&url));
        o.runtime_id = "gone".into();
    });
    rt.open_durable().await.expect("open");
    let h = rt.spawn(ROOT, "worker", None).unwrap();
    rt.wake(h, Some("call:remover".into())).unwrap();
    let r = rt.wait(h, None, None).await;
    assert_eq!(r.status, TaskStatus::Error, "{r:?}");
    assert!(r.text.contains("ESTOREUNAVAILABLE") || r.text.contains("removed"), "{}", r.text);
    assert_ne!(rt.snapshot(h).unwrap().state, HandleState::Suspended);
}

/// A runtime's state written by the previous release (layout 1: a parked turn's conversation
/// rewound, its input kept as the checkpoint) still resumes: the turn is replayed, and the
/// replay's first suspension, the parked call asking again, gets the Answer.
#[tokio::test]
async fn a_handle_parked_by_the_previous_layout_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("old.db").display());
    let runs = Log::default();
    let open = |runs: Log<Option<Value>>| {
        let url = url.clone();
        async move {
            let (rt, llm) = runtime(vec![agent(vec![approval("a", runs)])], |o| {
                o.store = Arc::new(DurableConversationStore::new(&url));
                o.runtime_id = "legacy".into();
            });
            rt.open_durable().await.expect("open");
            (rt, llm)
        }
    };
    let (first, _) = open(runs.clone()).await;
    let h = first.spawn(ROOT, "worker", None).unwrap();
    first.wake(h, Some("call:a".into())).unwrap();
    let parked = first.wait(h, None, None).await;
    first.saved().await;
    drop(first);

    // Rewrite the record as layout 1 wrote it: handles named by table index, no halt.
    let records = toolnexus_core::store::records(&url, toolnexus_core::store::Kind::Runtime);
    let mut doc = records.get("legacy").await.unwrap().unwrap();
    doc["layout"] = json!(1);
    let ids: Vec<Value> = doc["handles"].as_array().unwrap().iter().map(|n| n["id"].clone()).collect();
    let index = |v: &Value| ids.iter().position(|i| i == v).map(Value::from).unwrap_or(Value::Null);
    for n in doc["handles"].as_array_mut().unwrap() {
        let m = n.as_object_mut().unwrap();
        for k in ["halt", "lease", "claim", "tookUp"] {
            m.remove(k);
        }
        let parent = index(&m["parent"]);
        m.insert("parent".into(), parent);
        let children: Vec<Value> = m["children"].as_array().unwrap().iter().map(&index).collect();
        m.insert("children".into(), Value::Array(children));
        m.insert("wakeQueue".into(), json!([]));
    }
    doc.as_object_mut().unwrap().remove("answered");
    records.save("legacy", &doc).await.unwrap();
    let conversation = format!("legacy/{}/root/worker.1", doc["tree"].as_str().unwrap());
    let conversations = DurableConversationStore::new(&url);
    use toolnexus_core::client::ConversationStore;
    assert!(conversations.get(&conversation).await.unwrap().is_some());
    conversations.save(&conversation, vec![]).await.unwrap();

    let (second, llm) = open(runs.clone()).await;
    let h = second.find("root/worker.1").unwrap();
    assert_eq!(second.snapshot(h).unwrap().checkpoint.as_deref(), Some("call:a"));
    second.resume(json!({"id": id_of(&parked.pending), "ok": true})).await.unwrap();
    let done = second.wait(h, None, None).await;
    assert_eq!(done.text, "final: a done", "{done:?}");
    assert_eq!(llm.0.load(Ordering::SeqCst), 2, "the turn was replayed: asked again, then answered");
    assert_eq!(runs.len(), 3, "first run, the replay's ask, the answered retry");
    second.saved().await;
    // What it writes now is the current layout.
    let doc = records.get("legacy").await.unwrap().unwrap();
    assert_eq!(doc["layout"], 3);
}

#[tokio::test]
async fn an_interrupted_parking_leaves_a_transcript_the_next_turn_can_send() {
    let (rt, _) = runtime(vec![agent(vec![approval("a", Log::default()), approval("b", Log::default())])], |_| {});
    let h = rt.spawn(ROOT, "worker", None).unwrap();
    rt.wake(h, Some("call:a,b".into())).unwrap();
    assert_eq!(rt.wait(h, None, None).await.status, TaskStatus::Pending);
    rt.interrupt(h);
    rt.wake(h, Some("something else".into())).unwrap();
    let r = rt.wait(h, None, None).await;
    assert_eq!(r.status, TaskStatus::Done, "{r:?}");
    let kept = rt.store().get("root/worker.1").await.unwrap().unwrap();
    let results: Vec<&Value> = kept.iter().filter(|m| m["role"] == "tool").map(|m| &m["tool_call_id"]).collect();
    assert_eq!(results, [&json!("c0"), &json!("c1")], "one result per call: {kept:#?}");
}

/// A lead whose one turn delegates three subtasks (`task` ×3), each worker parking on an
/// approval of its own; the lead answers with its three results.
struct Delegating(AtomicUsize);

#[async_trait::async_trait]
impl Transport for Delegating {
    async fn post(&self, req: HttpRequest) -> toolnexus_core::error::Result<HttpResponse> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let (body, msgs, results) = read_request(&req);
        let user = msgs.iter().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap_or("");
        let call = |id: &str, name: &str, args: Value| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}});
        let message = match (body["model"].as_str(), results.is_empty()) {
            (Some("m-lead"), true) => {
                let calls: Vec<Value> = ["a", "b", "c"]
                    .iter()
                    .enumerate()
                    .map(|(i, p)| call(&format!("t{i}"), "task", json!({"agent": "worker", "prompt": p})))
                    .collect();
                json!({"content": null, "tool_calls": calls})
            }
            (Some("m-lead"), false) => json!({"content": format!("final: {}", results.join(" | "))}),
            (_, true) => json!({"content": null, "tool_calls": [call("w0", "a", json!({}))]}),
            (_, false) => json!({"content": format!("{user}: {}", results.join(" | "))}),
        };
        let reply = json!({"choices": [{"message": message}]});
        Ok(HttpResponse { status: 200, headers: vec![], body: reply.to_string() })
    }
}

/// Three runtimes on one store (three processes, as far as the store can tell), each answering
/// one of the three Requests parked under one turn at the same moment: every answer runs its call
/// once, none breaks another's, and the lead is taken up with all three results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_runtimes_answer_three_requests_of_one_turn_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for url in crate::common::engine_urls(dir.path()) {
        for round in 0..3 {
            let id = format!("fan-{}-{round}-{}", std::process::id(), toolnexus_core::types::new_pending_id());
            let runs: Log<Option<Value>> = Log::default();
            let open = || async {
                let worker = agent(vec![approval("a", runs.clone())]);
                let lead = AgentDef {
                    name: "lead".into(),
                    does: "leads".into(),
                    model: Some("m-lead".into()),
                    team: vec!["worker".into()],
                    ..Default::default()
                };
                let mut opts = RuntimeOptions::new(vec![lead, worker]);
                opts.transport = Some(Arc::new(Delegating(AtomicUsize::new(0))));
                opts.store = Arc::new(DurableConversationStore::new(&url));
                opts.runtime_id = id.clone();
                let rt = AgentRuntime::new(opts);
                rt.open_durable().await.expect("open");
                rt
            };
            let first = open().await;
            let lead = first.spawn(ROOT, "lead", None).unwrap();
            first.wake(lead, Some("go".into())).unwrap();
            assert_eq!(first.wait(lead, None, None).await.status, TaskStatus::Pending, "{url}");
            let requests: Vec<Value> = first
                .list(lead)
                .iter()
                .filter(|v| v.handle != lead)
                .map(|v| first.inspect(v.handle).unwrap().pending.expect("a worker parked")["id"].clone())
                .collect();
            assert_eq!(requests.len(), 3, "{url}");
            first.saved().await;
            drop(first);
            let (one, two, three) = (open().await, open().await, open().await);
            let answer = |i: usize| json!({"id": requests[i], "ok": true});
            let all = async { tokio::join!(one.resume(answer(0)), two.resume(answer(1)), three.resume(answer(2))) };
            let Ok((r1, r2, r3)) = tokio::time::timeout(std::time::Duration::from_secs(20), all).await else {
                panic!(
                    "{url} round {round}: the resumes hang: {:#?}\n{:#?}\n{:#?}",
                    one.trace(),
                    two.trace(),
                    three.trace()
                );
            };
            for r in [r1, r2, r3] {
                r.unwrap_or_else(|e| panic!("{url} round {round}: {e}"));
            }
            for rt in [&one, &two, &three] {
                rt.saved().await;
            }
            assert_eq!(runs.all().iter().filter(|a| a.is_some()).count(), 3, "{url} round {round}: each call once");
            let reader = open().await;
            let lead = reader.find("root/lead.1").unwrap();
            let Ok(done) =
                tokio::time::timeout(std::time::Duration::from_secs(20), reader.wait(lead, None, None)).await
            else {
                panic!("{url} round {round}: the lead never finished: {:#?}", reader.trace());
            };
            assert_eq!(
                (done.status, done.text.as_str()),
                (TaskStatus::Done, "final: a: a done | b: a done | c: a done"),
                "{url} round {round}: {:#?}",
                reader.trace()
            );
        }
    }
}
