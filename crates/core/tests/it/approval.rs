//! An approval applies only to what was approved (issue 53): a resume goes on with what the
//! library recorded at the park, never with the caller's copy. Every field of the `pending`
//! handed back, every part of the parked turn in the history, and the Answer are changed in
//! turn; the tool never runs with a changed call, each refusal has its own code and changes
//! nothing, and the real approval still resumes, once. On every store: in memory, SQLite, and
//! PostgreSQL and Redis when the run started them.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use toolnexus_core::client::store::DurableConversationStore;
use toolnexus_core::client::{Client, RunOptions, RunResult, RunStatus, Style};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::ToolResult;
use toolnexus_core::{pending, Error, Toolkit};

use crate::common::*;

/// `deploy({ env })`: parks for approval (with `extra` in its Request) until run with an
/// answer; each run is logged with its arguments and answer.
fn deploy(runs: Log<(Value, Option<Value>)>, extra: Value) -> SharedTool {
    fn_tool("deploy", move |args, ctx| {
        let (runs, extra) = (runs.clone(), extra.clone());
        async move {
            runs.push((args.clone(), ctx.answer.clone()));
            let env = args["env"].as_str().unwrap_or("?").to_string();
            match ctx.answer {
                Some(_) => ToolResult::ok(format!("deployed to {env}")),
                None => {
                    let mut r = map(json!({"kind": "approval", "prompt": format!("Deploy to {env}?")}));
                    if let Value::Object(more) = extra {
                        r.extend(more);
                    }
                    pending(r).unwrap()
                }
            }
        }
    })
}

/// A model that asks for `deploy({ env: "staging" })` (and a `noop` before it) until the
/// transcript holds results, then answers with them.
async fn model() -> MockLlm {
    MockLlm::start(|seen, _| {
        let msgs = seen.messages();
        let outs: Vec<String> = msgs
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect();
        let reply = if outs.is_empty() {
            oa_calls(&[("c-0", "noop", "{}"), ("c-1", "deploy", r#"{"env":"staging"}"#)])
        } else {
            oa_text(&format!("final: {}", outs.join(" | ")))
        };
        Action::Reply(Reply::json(reply))
    })
    .await
}

fn code(e: &Error) -> &'static str {
    match e {
        Error::Refused { code, .. } | Error::Store { code, .. } => code,
        Error::Type(_) => "TypeError",
        _ => "",
    }
}

fn pending_of(r: &RunResult) -> Map<String, Value> {
    r.pending.clone().expect("parked")
}

/// The stores a test runs on: `None` for the client's memory store, else a store URL.
fn stores(dir: &std::path::Path) -> Vec<Option<String>> {
    std::iter::once(None).chain(engine_urls(dir).into_iter().map(Some)).collect()
}

fn client_on(url: &str, store: &Option<String>) -> Client {
    let mut o = options(url, Style::OpenAI);
    if let Some(u) = store {
        o.store = Some(Arc::new(DurableConversationStore::new(u)));
    }
    Client::new(o).unwrap()
}

async fn toolkit_with(runs: &Log<(Value, Option<Value>)>, extra: Value) -> Toolkit {
    toolkit(vec![text_tool("noop", "fine"), deploy(runs.clone(), extra)]).await
}

/// What each test starts from: the model, the deploy log, the toolkit, and a client on `store`.
struct Setup {
    server: MockLlm,
    runs: Log<(Value, Option<Value>)>,
    tk: Toolkit,
    client: Client,
}

async fn setup(store: &Option<String>) -> Setup {
    let server = model().await;
    let runs = Log::default();
    let tk = toolkit_with(&runs, json!({})).await;
    let client = client_on(&server.url(), store);
    Setup { server, runs, tk, client }
}

/// Each way of changing the `pending`, the history or the Answer a caller hands back, with the
/// refusal it must get.
fn forgeries(
    p: &Map<String, Value>,
    messages: &[Value],
) -> Vec<(&'static str, Value, Vec<Value>, Value, &'static str)> {
    let id = p["id"].clone();
    let ok = json!({"id": id, "ok": true});
    let pv = Value::Object(p.clone());
    let edit_p = |f: &dyn Fn(&mut Map<String, Value>)| {
        let mut q = p.clone();
        f(&mut q);
        Value::Object(q)
    };
    let edit_h = |f: &dyn Fn(&mut Vec<Value>)| {
        let mut h = messages.to_vec();
        f(&mut h);
        h
    };
    // The assistant turn asking for the calls, and the parked call in it.
    let at = messages.iter().rposition(|m| m["tool_calls"].is_array()).unwrap();
    let h = messages.to_vec();
    vec![
        (
            "an invented id",
            edit_p(&|q| drop(q.insert("id".into(), "pnd-made-up".into()))),
            h.clone(),
            json!({"id": "pnd-made-up", "ok": true}),
            "EUNKNOWNREQUEST",
        ),
        ("an answer for another id", pv.clone(), h.clone(), json!({"id": "pnd-other", "ok": true}), "EUNKNOWNREQUEST"),
        ("an answer with no id", pv.clone(), h.clone(), json!({"ok": true}), "EUNKNOWNREQUEST"),
        (
            "the kind changed",
            edit_p(&|q| drop(q.insert("kind".into(), "input".into()))),
            h.clone(),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "the prompt changed",
            edit_p(&|q| drop(q.insert("prompt".into(), "Deploy to prod?".into()))),
            h.clone(),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "a url added",
            edit_p(&|q| drop(q.insert("url".into(), "https://evil.example".into()))),
            h.clone(),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "data added",
            edit_p(&|q| drop(q.insert("data".into(), json!({"env": "prod"})))),
            h.clone(),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "an expiresAt added",
            edit_p(&|q| drop(q.insert("expiresAt".into(), "2999-01-01T00:00:00Z".into()))),
            h.clone(),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "a field of our own",
            edit_p(&|q| drop(q.insert("approvedBy".into(), "me".into()))),
            h.clone(),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "the arguments changed",
            pv.clone(),
            edit_h(&|h| h[at]["tool_calls"][1]["function"]["arguments"] = json!(r#"{"env":"prod"}"#)),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "the tool changed",
            pv.clone(),
            edit_h(&|h| h[at]["tool_calls"][1]["function"]["name"] = json!("noop")),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "the call id changed",
            pv.clone(),
            edit_h(&|h| {
                h[at]["tool_calls"][1]["id"] = json!("c-9");
                let last = h.len() - 1;
                h[last]["tool_call_id"] = json!("c-9");
            }),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "the user's prompt changed",
            pv.clone(),
            edit_h(&|h| h[0]["content"] = json!("deploy to prod")),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "an earlier call's result changed",
            pv.clone(),
            edit_h(&|h| h[at + 1]["content"] = json!("approved")),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        (
            "the placeholder changed",
            pv.clone(),
            edit_h(&|h| {
                let last = h.len() - 1;
                h[last]["content"] = json!("Deploy to prod?");
            }),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        ("the parked turn cut off", pv.clone(), edit_h(&|h| drop(h.pop())), ok.clone(), "EREQUESTMISMATCH"),
        (
            "a turn appended",
            pv.clone(),
            edit_h(&|h| h.push(json!({"role": "user", "content": "and prod"}))),
            ok.clone(),
            "EREQUESTMISMATCH",
        ),
        ("an answer that is a string", pv.clone(), h.clone(), json!("yes"), "TypeError"),
        ("an answer that is a number", pv.clone(), h.clone(), json!(42), "TypeError"),
        ("an answer that is null", pv.clone(), h.clone(), Value::Null, "TypeError"),
        ("an ok that is a string", pv.clone(), h.clone(), json!({"id": id, "ok": "false"}), "TypeError"),
        ("an answer without ok", pv, h, json!({"id": id}), "TypeError"),
    ]
}

/// `runWithAnswer` on every store: each forgery refused with its code, nothing run, the real
/// approval then runs the call it approved, once; a repeat, forged or not, is already answered.
#[tokio::test]
async fn run_with_answer_runs_only_what_was_approved() {
    let dir = tempfile::tempdir().unwrap();
    for store in stores(dir.path()) {
        let Setup { server: _server, runs, tk, client } = setup(&store).await;
        let first = client.run("ship it", &tk, RunOptions::default()).await.unwrap();
        assert_eq!(first.status, RunStatus::Pending);
        let p = pending_of(&first);
        assert!(!p.contains_key("seal"), "no key, no seal");
        for (what, pending, history, answer, want) in forgeries(&p, &first.messages) {
            let e =
                client.run_with_answer(&tk, history, &pending, answer, RunOptions::default()).await.expect_err(what);
            assert_eq!(code(&e), want, "{store:?}: {what}: {e}");
        }
        assert_eq!(runs.len(), 1, "{store:?}: no forgery ran the tool");
        // The real approval: the call it approved, once.
        let ok = json!({"id": p["id"], "ok": true});
        let done = client
            .run_with_answer(&tk, first.messages.clone(), &Value::Object(p.clone()), ok.clone(), RunOptions::default())
            .await
            .unwrap();
        assert_eq!(done.text, "final: fine | deployed to staging", "{store:?}");
        assert_eq!(runs.len(), 2);
        assert_eq!(runs.all()[1].0, json!({"env": "staging"}));
        // Again, as it was or forged: already answered, the same code and words every time.
        let again = |pending: Value, history: Vec<Value>| {
            let (client, tk, ok) = (&client, &tk, ok.clone());
            async move { client.run_with_answer(tk, history, &pending, ok, RunOptions::default()).await.unwrap_err() }
        };
        let e1 = again(Value::Object(p.clone()), first.messages.clone()).await;
        let at = first.messages.iter().rposition(|m| m["tool_calls"].is_array()).unwrap();
        let mut prod = first.messages.clone();
        prod[at]["tool_calls"][1]["function"]["arguments"] = json!(r#"{"env":"prod"}"#);
        let e2 = again(Value::Object(p.clone()), prod).await;
        for e in [&e1, &e2] {
            assert_eq!(code(e), "ESTORECONFLICT", "{store:?}: {e}");
        }
        assert_eq!(e1.to_string(), e2.to_string());
        assert_eq!(
            e1.to_string(),
            format!(
                "runWithAnswer: request {:?} was already resumed (an answer is applied once); nothing was run again",
                p["id"].as_str().unwrap()
            )
        );
        // An invented id after the real resume is still unknown, and runs nothing.
        let mut made_up = p.clone();
        made_up.insert("id".into(), "pnd-made-up".into());
        let e = client
            .run_with_answer(
                &tk,
                first.messages.clone(),
                &Value::Object(made_up),
                json!({"id": "pnd-made-up", "ok": true}),
                RunOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(code(&e), "EUNKNOWNREQUEST", "{store:?}: {e}");
        assert_eq!(runs.len(), 2, "{store:?}: the tool ran once with the answer");
    }
}

/// The mismatch names what changed.
#[tokio::test]
async fn a_mismatch_names_what_changed() {
    let Setup { server: _server, runs, tk, client } = setup(&None).await;
    let first = client.run("ship it", &tk, RunOptions::default()).await.unwrap();
    let p = pending_of(&first);
    let id = p["id"].as_str().unwrap().to_string();
    let texts: Vec<String> = {
        let mut out = Vec::new();
        for (what, pending, history, answer, _) in forgeries(&p, &first.messages) {
            let e = client.run_with_answer(&tk, history, &pending, answer, RunOptions::default()).await.unwrap_err();
            out.push(format!("{what}: {e}"));
        }
        out
    };
    let find = |what: &str| texts.iter().find(|t| t.starts_with(&format!("{what}: "))).cloned().unwrap();
    assert_eq!(
        find("the arguments changed"),
        format!("the arguments changed: runWithAnswer: the history handed back is not the one request {id:?} parked: its parked call's arguments are not the ones the call parked with; nothing was resumed")
    );
    assert_eq!(
        find("the tool changed"),
        format!("the tool changed: runWithAnswer: the history handed back is not the one request {id:?} parked: its parked call is to the tool \"noop\", and the call parked was to \"deploy\"; nothing was resumed")
    );
    assert!(find("the call id changed").contains("its parked call's id is \"c-9\", and the call parked had \"c-1\""));
    assert!(find("the user's prompt changed")
        .contains("the messages of the parked turn or before it are not the ones that parked"));
    assert!(find("the parked turn cut off").contains("does not end with the turn parked on request"));
    assert!(find("the kind changed").contains("its kind differs from the one recorded"));
    assert!(find("an invented id").contains("no run parked on request \"pnd-made-up\" in this process"));
    assert!(find("an ok that is a string").contains("the answer's ok must be true or false, got \"false\" (string)"));
    assert_eq!(runs.len(), 1);
}

/// Expiry is the record's: deleting `expiresAt` from the `pending` handed back is a mismatch,
/// and the real Request past its time is expired.
#[tokio::test]
async fn expiry_is_judged_on_the_record() {
    let dir = tempfile::tempdir().unwrap();
    for store in stores(dir.path()) {
        let server = model().await;
        let runs = Log::default();
        let soon = toolnexus_core::suspension::now_ms() + 400;
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(soon) * 1_000_000).unwrap();
        let when = at.format(&time::format_description::well_known::Rfc3339).unwrap();
        let tk = toolkit_with(&runs, json!({"expiresAt": when})).await;
        let client = client_on(&server.url(), &store);
        let first = client.run("ship it", &tk, RunOptions::default()).await.unwrap();
        let p = pending_of(&first);
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        let ok = json!({"id": p["id"], "ok": true});
        let mut undated = p.clone();
        undated.remove("expiresAt");
        let e = client
            .run_with_answer(&tk, first.messages.clone(), &Value::Object(undated), ok.clone(), RunOptions::default())
            .await
            .unwrap_err();
        assert_eq!(code(&e), "EREQUESTMISMATCH", "{store:?}: {e}");
        let mut later = p.clone();
        later.insert("expiresAt".into(), "2999-01-01T00:00:00Z".into());
        let e = client
            .run_with_answer(&tk, first.messages.clone(), &Value::Object(later), ok.clone(), RunOptions::default())
            .await
            .unwrap_err();
        assert_eq!(code(&e), "EREQUESTMISMATCH", "{store:?}: {e}");
        let e = client
            .run_with_answer(&tk, first.messages.clone(), &Value::Object(p.clone()), ok, RunOptions::default())
            .await
            .unwrap_err();
        assert_eq!(code(&e), "EREQUESTEXPIRED", "{store:?}: {e}");
        assert_eq!(runs.len(), 1, "{store:?}");
    }
}

/// `askWithAnswer`: the conversation is the store's, and so is the record. A made-up id, or an
/// Answer for another conversation's Request with the same prompt, resumes nothing, and the
/// real answer afterwards still goes through.
#[tokio::test]
async fn ask_with_answer_resumes_only_its_own_conversation() {
    let dir = tempfile::tempdir().unwrap();
    for store in stores(dir.path()) {
        let Setup { server: _server, runs, tk, client } = setup(&store).await;
        let tag = toolnexus_core::types::new_pending_id();
        let (a, b) = (format!("ticket-a-{tag}"), format!("ticket-b-{tag}"));
        let pa = pending_of(&client.ask("ship it", &tk, Some(&a), None, RunOptions::default()).await.unwrap());
        let pb = pending_of(&client.ask("ship it", &tk, Some(&b), None, RunOptions::default()).await.unwrap());
        assert_eq!(pa["prompt"], pb["prompt"]);
        let go = |conv: &str, p: &Map<String, Value>, answer: Value| {
            let (client, tk, conv, p) = (&client, &tk, conv.to_string(), Value::Object(p.clone()));
            async move { client.ask_with_answer(tk, &conv, &p, answer, RunOptions::default()).await }
        };
        // B's Request offered to A: A is not parked on it.
        let e = go(&a, &pb, json!({"id": pb["id"], "ok": true})).await.unwrap_err();
        assert_eq!(code(&e), "EUNKNOWNREQUEST", "{store:?}: {e}");
        // A made-up id.
        let mut made_up = pa.clone();
        made_up.insert("id".into(), "pnd-made-up".into());
        let e = go(&a, &made_up, json!({"id": "pnd-made-up", "ok": true})).await.unwrap_err();
        assert_eq!(code(&e), "EUNKNOWNREQUEST", "{store:?}: {e}");
        // Answers of the wrong type use nothing up.
        for bad in [json!("yes"), json!(42), Value::Null, json!({"id": pa["id"], "ok": "false"})] {
            let e = go(&a, &pa, bad).await.unwrap_err();
            assert_eq!(code(&e), "TypeError", "{store:?}: {e}");
        }
        assert_eq!(runs.len(), 2, "{store:?}: nothing ran");
        // The real answers.
        let done = go(&a, &pa, json!({"id": pa["id"], "ok": true})).await.unwrap();
        assert_eq!(done.status, RunStatus::Done, "{store:?}");
        let declined = go(&b, &pb, json!({"id": pb["id"], "ok": false})).await.unwrap();
        assert_eq!(declined.text, "final: fine | declined/expired: Deploy to staging?", "{store:?}");
        // Once each, with one code.
        for (conv, p) in [(&a, &pa), (&b, &pb)] {
            let e = go(conv, p, json!({"id": p["id"], "ok": true})).await.unwrap_err();
            assert_eq!(code(&e), "ESTORECONFLICT", "{store:?}: {e}");
            assert!(e.to_string().contains("was already resumed"), "{e}");
        }
        assert_eq!(runs.len(), 3, "{store:?}: a ran once with its approval; b, declined, never again");
    }
}

/// A conversation deleted goes with what it parked: its Request is then unknown.
#[tokio::test]
async fn a_deleted_conversation_takes_its_parks_with_it() {
    let dir = tempfile::tempdir().unwrap();
    for store in stores(dir.path()) {
        let Setup { server: _server, runs: _, tk, client } = setup(&store).await;
        let conv = format!("ticket-{}", toolnexus_core::types::new_pending_id());
        let other = format!("{conv}-other");
        let p = pending_of(&client.ask("ship it", &tk, Some(&conv), None, RunOptions::default()).await.unwrap());
        let q = pending_of(&client.ask("ship it", &tk, Some(&other), None, RunOptions::default()).await.unwrap());
        assert!(client.delete_conversation(&conv).await.unwrap(), "{store:?}");
        assert!(!client.delete_conversation(&conv).await.unwrap(), "{store:?}: gone already");
        assert!(client.store().get(&conv).await.unwrap().is_none());
        let e = client
            .ask_with_answer(
                &tk,
                &conv,
                &Value::Object(p.clone()),
                json!({"id": p["id"], "ok": true}),
                RunOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(code(&e), "EUNKNOWNREQUEST", "{store:?}: {e}");
        // Another conversation whose id starts with the same text keeps its own.
        let done = client
            .ask_with_answer(
                &tk,
                &other,
                &Value::Object(q.clone()),
                json!({"id": q["id"], "ok": true}),
                RunOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(done.status, RunStatus::Done, "{store:?}");
    }
}

/// With a `resumeKey`, the Request handed out carries a seal over what parked, and the seal is
/// the only thing added to it.
#[tokio::test]
async fn a_resume_key_seals_the_request_handed_out() {
    let server = model().await;
    let runs = Log::default();
    let tk = toolkit_with(&runs, json!({})).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.resume_key = Some(b"a key of sixteen+ characters".to_vec());
    let client = Client::new(o).unwrap();
    let first = client.run("ship it", &tk, RunOptions::default()).await.unwrap();
    let p = pending_of(&first);
    let seal = p["seal"].as_str().unwrap();
    assert!(seal.starts_with("tn1."), "{seal}");
    let keys: Vec<&str> = p.keys().map(String::as_str).collect();
    assert_eq!(keys, ["kind", "prompt", "id", "seal"]);
    // A forged seal on a forged Request is a mismatch; the real one resumes.
    let mut forged = p.clone();
    forged.insert("id".into(), "pnd-made-up".into());
    let e = client
        .run_with_answer(
            &tk,
            first.messages.clone(),
            &Value::Object(forged),
            json!({"id": "pnd-made-up", "ok": true}),
            RunOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), "EUNKNOWNREQUEST", "{e}");
    let done = client
        .run_with_answer(
            &tk,
            first.messages.clone(),
            &Value::Object(p.clone()),
            json!({"id": p["id"], "ok": true}),
            RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(done.text, "final: fine | deployed to staging");
}

/// A park the store cannot record fails the run with the store's code: a `pending` nobody could
/// resume is never handed out.
#[tokio::test]
async fn a_park_that_cannot_be_recorded_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    let url = format!("sqlite:{}", gone.join("s.db").display());
    let server = model().await;
    let g = gone.clone();
    let remover = fn_tool("deploy", move |_, _| {
        let g = g.clone();
        async move {
            // The store's directory goes away while the tool parks.
            let _ = std::fs::remove_dir_all(&g);
            pending(map(json!({"kind": "approval", "prompt": "ok?"}))).unwrap()
        }
    });
    let tk = toolkit(vec![text_tool("noop", "fine"), remover]).await;
    let client = client_on(&server.url(), &Some(url));
    let e = client.run("ship it", &tk, RunOptions::default()).await.unwrap_err();
    assert_eq!(code(&e), "ESTOREUNAVAILABLE", "{e}");
    assert!(e.to_string().contains("the suspension could not be saved"), "{e}");
}
