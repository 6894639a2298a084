//! Taking a parked run up again (SPEC §10, durable resume): an Answer reaches only the call
//! whose Request it echoes, once; every other parked call of the turn parks again with its own
//! Request; the turn the provider sees stays balanced; refusals change nothing.

use std::sync::Arc;

use serde_json::{json, Value};
use toolnexus_core::callback::callback;
use toolnexus_core::client::store::DurableConversationStore;
use toolnexus_core::client::{Client, RunOptions, RunResult, RunStatus, Style};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::{pending_of, ToolResult};
use toolnexus_core::{pending, Error};

use crate::common::*;

/// A tool that parks until it is run with an answer, logging each run's answer. The Request
/// id is generated, so each run of it asks under a new id.
fn approval(name: &str, runs: Log<Option<Value>>) -> SharedTool {
    let prompt = format!("approve {name}");
    let done = format!("{name} done");
    fn_tool(name, move |_, ctx| {
        let (runs, prompt, done) = (runs.clone(), prompt.clone(), done.clone());
        async move {
            runs.push(ctx.answer.clone());
            match ctx.answer {
                Some(a) => ToolResult::ok(format!("{done} ({})", a["data"]["note"].as_str().unwrap_or("-"))),
                None => pending(map(json!({"kind": "approval", "prompt": prompt}))).unwrap(),
            }
        }
    })
}

/// A model that asks for `calls` once, then answers with the tool results it was given.
async fn model(style: Style, calls: &[(&str, &str)]) -> MockLlm {
    let calls: Vec<(String, String)> = calls.iter().map(|(i, n)| (i.to_string(), n.to_string())).collect();
    MockLlm::start(move |seen, _| {
        let msgs = seen.messages();
        let results = msgs.iter().any(|m| m["role"] == "tool" || m["content"][0]["type"] == "tool_result");
        let reply = match (style, results) {
            (Style::OpenAI, false) => {
                let c: Vec<(&str, &str, &str)> = calls.iter().map(|(i, n)| (i.as_str(), n.as_str(), "{}")).collect();
                oa_calls(&c)
            }
            (Style::Anthropic, false) => {
                an_reply(Value::Array(calls.iter().map(|(i, n)| an_use(i, n, json!({}))).collect()))
            }
            (Style::OpenAI, true) => {
                let outs: Vec<String> = msgs
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .map(|m| m["content"].as_str().unwrap_or("").to_string())
                    .collect();
                oa_text(&format!("final: {}", outs.join(" | ")))
            }
            (Style::Anthropic, true) => {
                let last = msgs.last().cloned().unwrap_or_default();
                let outs: Vec<String> = last["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(|b| b["content"].as_str().unwrap_or("").to_string())
                    .collect();
                an_reply(json!([an_text(&format!("final: {}", outs.join(" | ")))]))
            }
        };
        Action::Reply(Reply::json(reply))
    })
    .await
}

fn answer(r: &RunResult, note: &str) -> Value {
    json!({"id": r.pending.as_ref().expect("parked")["id"], "ok": true, "data": {"note": note}})
}

fn pending_value(r: &RunResult) -> Value {
    Value::Object(r.pending.clone().expect("parked"))
}

fn code(e: &Error) -> &'static str {
    match e {
        Error::Refused { code, .. } | Error::Store { code, .. } => code,
        _ => "",
    }
}

/// The transcript sent to the provider has one result per call in every assistant turn.
fn balanced(style: Style, messages: &[Value]) {
    for (i, m) in messages.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        match style {
            Style::OpenAI => {
                let ids: Vec<&Value> =
                    m["tool_calls"].as_array().map(|a| a.iter().map(|c| &c["id"]).collect()).unwrap_or_default();
                let got: Vec<&Value> =
                    messages[i + 1..].iter().take_while(|x| x["role"] == "tool").map(|x| &x["tool_call_id"]).collect();
                assert_eq!(got, ids, "one result per call, in order: {messages:#?}");
            }
            Style::Anthropic => {
                let uses: Vec<&Value> = m["content"]
                    .as_array()
                    .map(|a| a.iter().filter(|b| b["type"] == "tool_use").map(|b| &b["id"]).collect())
                    .unwrap_or_default();
                if uses.is_empty() {
                    continue;
                }
                let next = &messages[i + 1];
                let got: Vec<&Value> = next["content"]
                    .as_array()
                    .map(|a| a.iter().map(|b| &b["tool_use_id"]).collect())
                    .unwrap_or_default();
                assert_eq!(got, uses, "one result per call, in order: {messages:#?}");
            }
        }
    }
}

/// Two calls park in one turn: the run parks on the first; its Answer reaches it alone, the
/// second runs again without one and parks on its own new Request; a second Answer finishes.
async fn each_parked_call_needs_its_own_answer(style: Style) {
    let server = model(style, &[("c-a", "a"), ("c-b", "b")]).await;
    let (a_runs, b_runs) = (Log::default(), Log::default());
    let tk = toolkit(vec![approval("a", a_runs.clone()), approval("b", b_runs.clone())]).await;
    let client = Client::new(options(&server.url(), style)).unwrap();

    let first = client.run("do a and b", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(first.status, RunStatus::Pending);
    assert_eq!(first.pending.as_ref().unwrap()["prompt"], "approve a");

    // b's Request never surfaced: an answer carrying some other id reaches nothing.
    let stray = json!({"id": "pnd-not-parked", "ok": true});
    let e = client
        .run_with_answer(&tk, first.messages.clone(), &pending_value(&first), stray, RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(code(&e), "EUNKNOWNREQUEST", "{e}");
    assert_eq!((a_runs.len(), b_runs.len()), (1, 1), "a refusal runs nothing");
    assert_eq!(server.count(), 1);

    let second = client
        .run_with_answer(
            &tk,
            first.messages.clone(),
            &pending_value(&first),
            answer(&first, "yes-a"),
            RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(second.status, RunStatus::Pending, "b parks on its own request");
    assert_eq!(second.pending.as_ref().unwrap()["prompt"], "approve b");
    assert_ne!(second.pending.as_ref().unwrap()["id"], first.pending.as_ref().unwrap()["id"]);
    assert_eq!(a_runs.all()[1].as_ref().unwrap()["data"]["note"], "yes-a", "a ran again with its answer");
    assert!(b_runs.all()[1].is_none(), "b ran again without an answer");
    assert_eq!(server.count(), 1, "nothing new was asked of the model yet");
    assert_eq!(second.tool_calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(second.tool_calls[0].result.output, "a done (yes-a)");

    let third = client
        .run_with_answer(
            &tk,
            second.messages.clone(),
            &pending_value(&second),
            answer(&second, "yes-b"),
            RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(third.status, RunStatus::Done, "{third:?}");
    assert_eq!(third.text, "final: a done (yes-a) | b done (yes-b)");
    assert_eq!((a_runs.len(), b_runs.len()), (2, 3));
    assert_eq!(server.count(), 2);
    let sent = server.request(1).messages();
    balanced(style, &sent);
    let users = sent.iter().filter(|m| m["role"] == "user" && m["content"].is_string()).count();
    assert_eq!(users, 1, "a resume adds no user turn");
}
crate::per_style!(each_parked_call_needs_its_own_answer);

#[tokio::test]
async fn an_answer_is_applied_once() {
    let server = model(Style::OpenAI, &[("c-a", "a")]).await;
    let runs = Log::default();
    let tk = toolkit(vec![approval("a", runs.clone())]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let first = client.run("do a", &tk, RunOptions::default()).await.unwrap();
    let p = pending_value(&first);
    let go = || client.run_with_answer(&tk, first.messages.clone(), &p, answer(&first, "y"), RunOptions::default());
    let (x, y) = tokio::join!(go(), go());
    let (ok, err): (Vec<_>, Vec<_>) = [x, y].into_iter().partition(|r| r.is_ok());
    assert_eq!((ok.len(), err.len()), (1, 1));
    let e = err.into_iter().next().unwrap().unwrap_err();
    assert_eq!(code(&e), "ESTORECONFLICT");
    assert!(e.to_string().contains("was already resumed"), "{e}");
    assert_eq!(runs.len(), 2, "one first run, one resumed run");
    // Later, too.
    let e = go().await.unwrap_err();
    assert_eq!(code(&e), "ESTORECONFLICT");
    assert_eq!(runs.len(), 2);
}

#[tokio::test]
async fn a_tool_reusing_one_request_id_parks_afresh_each_time() {
    // A tool that always asks under the same id: each parking is its own, and each may be
    // answered once.
    let server = model(Style::OpenAI, &[("c", "fixed")]).await;
    let tk = toolkit(vec![fn_tool("fixed", |_, ctx| async move {
        match ctx.answer {
            Some(_) => ToolResult::ok("granted"),
            None => pending(map(json!({"id": "always-the-same", "kind": "approval", "prompt": "ok?"}))).unwrap(),
        }
    })])
    .await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    for prompt in ["one", "two"] {
        let r = client.run(prompt, &tk, RunOptions::default()).await.unwrap();
        let done = client
            .run_with_answer(
                &tk,
                r.messages.clone(),
                &pending_value(&r),
                json!({"id": "always-the-same", "ok": true}),
                RunOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(done.status, RunStatus::Done);
    }
}

#[tokio::test]
async fn a_stale_answer_cannot_approve_the_next_request() {
    // A tool that needs two approvals in a row: the first Answer reaches the retry, which asks
    // again; the run parks on that new Request, which the first Answer cannot approve.
    let server = model(Style::OpenAI, &[("c", "twice")]).await;
    let seen: Log<Option<Value>> = Log::default();
    let s = seen.clone();
    let tk = toolkit(vec![fn_tool("twice", move |_, ctx| {
        let s = s.clone();
        async move {
            s.push(ctx.answer.clone());
            let step = ctx.answer.as_ref().and_then(|a| a["data"]["step"].as_u64()).unwrap_or(0);
            match step {
                2 => ToolResult::ok("both granted"),
                _ => pending(map(json!({"kind": "approval", "prompt": format!("approval {}", step + 1)}))).unwrap(),
            }
        }
    })])
    .await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let first = client.run("go", &tk, RunOptions::default()).await.unwrap();
    let one = json!({"id": first.pending.as_ref().unwrap()["id"], "ok": true, "data": {"step": 1}});
    let second = client
        .run_with_answer(&tk, first.messages.clone(), &pending_value(&first), one.clone(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(second.status, RunStatus::Pending, "the retry asked again: parked on the new request");
    assert_eq!(second.pending.as_ref().unwrap()["prompt"], "approval 2");
    assert_eq!(second.tool_calls.len(), 1);
    assert!(pending_of(&second.tool_calls[0].result).is_none());
    // The first answer, offered for the second request, echoes the wrong id.
    let e = client
        .run_with_answer(&tk, second.messages.clone(), &pending_value(&second), one, RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(code(&e), "EUNKNOWNREQUEST");
    let two = json!({"id": second.pending.as_ref().unwrap()["id"], "ok": true, "data": {"step": 2}});
    let done = client
        .run_with_answer(&tk, second.messages.clone(), &pending_value(&second), two, RunOptions::default())
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Done);
    assert_eq!(done.text, "final: both granted");
    assert_eq!(seen.len(), 3);
}

#[tokio::test]
async fn refusals_name_the_request_and_change_nothing() {
    let server = model(Style::OpenAI, &[("c-a", "a")]).await;
    let runs = Log::default();
    let tk = toolkit(vec![approval("a", runs.clone())]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let first = client.run("do a", &tk, RunOptions::default()).await.unwrap();
    let id = first.pending.as_ref().unwrap()["id"].as_str().unwrap().to_string();
    let p = pending_value(&first);
    let run = |pending: Value, answer: Value, tk: &'static toolnexus_core::Toolkit| {
        let (client, msgs) = (&client, first.messages.clone());
        async move { client.run_with_answer(tk, msgs, &pending, answer, RunOptions::default()).await }
    };
    let tk: &'static toolnexus_core::Toolkit = Box::leak(Box::new(tk));

    // No id in the answer.
    let e = run(p.clone(), json!({"ok": true}), tk).await.unwrap_err();
    assert_eq!(code(&e), "EUNKNOWNREQUEST");
    assert!(e.to_string().contains(&format!("{id:?}")), "{e}");
    // An expiresAt the caller wrote in: not the Request that parked.
    let mut expired = p.clone();
    expired["expiresAt"] = json!("2020-01-01T00:00:00Z");
    let e = run(expired, json!({"id": id, "ok": true}), tk).await.unwrap_err();
    assert_eq!(code(&e), "EREQUESTMISMATCH");
    assert_eq!(
        e.to_string(),
        format!("runWithAnswer: the pending handed back is not the Request that parked as {id:?}: its expiresAt differs from the one recorded; nothing was resumed")
    );
    // Not an object.
    let e = run(json!("nope"), json!({"id": id, "ok": true}), tk).await.unwrap_err();
    assert!(matches!(e, Error::Type(_)), "{e}");
    // The tool is gone: refused, and the request stays parked for a toolkit that has it.
    let bare = Box::leak(Box::new(toolkit(vec![]).await));
    let e = run(p.clone(), json!({"id": id, "ok": true}), bare).await.unwrap_err();
    assert_eq!(code(&e), "ETOOLMISSING");
    assert!(e.to_string().contains("\"a\""), "{e}");
    assert_eq!(runs.len(), 1);
    assert_eq!(server.count(), 1);
    let done = run(p, json!({"id": id, "ok": true, "data": {"note": "late"}}), tk).await.unwrap();
    assert_eq!(done.text, "final: a done (late)");
}

#[tokio::test]
async fn a_declined_answer_reaches_the_model_as_declined() {
    let server = model(Style::OpenAI, &[("c-a", "a")]).await;
    let runs = Log::default();
    let tk = toolkit(vec![approval("a", runs.clone())]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let first = client.run("do a", &tk, RunOptions::default()).await.unwrap();
    let no = json!({"id": first.pending.as_ref().unwrap()["id"], "ok": false});
    let r = client
        .run_with_answer(&tk, first.messages.clone(), &pending_value(&first), no, RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.text, "final: declined/expired: approve a");
    assert_eq!(runs.len(), 1, "a declined call is not run again");
}

#[tokio::test]
async fn wait_for_answers_reach_only_the_request_they_echo() {
    // Two calls park in one turn; waitFor answers both with the first request's id.
    let server = model(Style::OpenAI, &[("c-a", "a"), ("c-b", "b")]).await;
    let (a_runs, b_runs) = (Log::default(), Log::default());
    let tk = toolkit(vec![approval("a", a_runs.clone()), approval("b", b_runs.clone())]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    let first_id: Arc<std::sync::Mutex<Option<Value>>> = Arc::default();
    let f = first_id.clone();
    o.wait_for = Some(callback(move |req: Value| {
        let f = f.clone();
        async move {
            let id = f.lock().unwrap().get_or_insert_with(|| req["id"].clone()).clone();
            Ok(json!({"id": id, "ok": true, "data": {"note": "one answer"}}))
        }
    }));
    // An expired request is declined even when waitFor says ok.
    let client = Client::new(o).unwrap();
    let r = client.run("do a and b", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.status, RunStatus::Done);
    let outs: Vec<&str> = r.tool_calls.iter().map(|c| c.result.output.as_str()).collect();
    let (applied, refused) = if outs[0].ends_with("(one answer)") { (0, 1) } else { (1, 0) };
    assert!(outs[applied].ends_with("done (one answer)"), "{outs:?}");
    assert!(outs[refused].starts_with("declined/expired: approve"), "{outs:?}");
    assert!(outs[refused].contains("another request"), "{outs:?}");
    assert_eq!(a_runs.len() + b_runs.len(), 3, "two first runs, one retry");
}

#[tokio::test]
async fn wait_for_cannot_approve_an_expired_request() {
    let server = model(Style::OpenAI, &[("c", "late")]).await;
    let runs: Log<Option<Value>> = Log::default();
    let r2 = runs.clone();
    let tk = toolkit(vec![fn_tool("late", move |_, ctx| {
        let r2 = r2.clone();
        async move {
            r2.push(ctx.answer.clone());
            match ctx.answer {
                Some(_) => ToolResult::ok("ran"),
                None => pending(map(json!({"kind": "approval", "prompt": "ok?", "expiresAt": "2001-01-01T00:00:00Z"})))
                    .unwrap(),
            }
        }
    })])
    .await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.wait_for = Some(callback(|req: Value| async move { Ok(json!({"id": req["id"], "ok": true})) }));
    let client = Client::new(o).unwrap();
    let r = client.run("go", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.tool_calls[0].result.output, "declined/expired: ok?");
    assert_eq!(runs.len(), 1);
}

/// `askWithAnswer` over a conversation on a durable store: of many resumes at once, on
/// clients that share nothing but the store's URL, exactly one runs the parked call.
#[tokio::test]
async fn concurrent_resumes_of_one_conversation_run_the_call_once() {
    let dir = tempfile::tempdir().unwrap();
    for url in crate::common::engine_urls(dir.path()) {
        let server = model(Style::OpenAI, &[("c-a", "a")]).await;
        let runs = Log::default();
        let tk = toolkit(vec![approval("a", runs.clone())]).await;
        let client_on = || {
            let mut o = options(&server.url(), Style::OpenAI);
            o.store = Some(Arc::new(DurableConversationStore::new(&url)));
            Client::new(o).unwrap()
        };
        let conv = format!("conv-{}-{}", std::process::id(), toolnexus_core::types::new_pending_id());
        let first = client_on().ask("do a", &tk, Some(&conv), None, RunOptions::default()).await.unwrap();
        assert_eq!(first.status, RunStatus::Pending);
        let clients: Vec<Client> = (0..6).map(|_| client_on()).collect();
        let p = pending_value(&first);
        let tries =
            clients.iter().map(|c| c.ask_with_answer(&tk, &conv, &p, answer(&first, "go"), RunOptions::default()));
        let outcomes = futures::future::join_all(tries).await;
        let won = outcomes.iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "{url}: {outcomes:?}");
        for e in outcomes.iter().filter_map(|r| r.as_ref().err()) {
            // Refused as taken, whenever it read the store (one outcome, one code).
            assert_eq!(code(e), "ESTORECONFLICT", "{url}: {e}");
        }
        assert_eq!(runs.all().iter().filter(|a| a.is_some()).count(), 1, "{url}: the side effect happened once");
        // The conversation holds the finished turn: asking on goes from there.
        let kept = client_on().store().get(&conv).await.unwrap().unwrap();
        assert_eq!(kept.last().unwrap()["content"], "final: a done (go)");
        balanced(Style::OpenAI, &kept);
    }
}

#[tokio::test]
async fn ask_with_answer_keeps_the_calls_results_when_the_model_then_fails() {
    let calls = Counter::default();
    let c = calls.clone();
    let server = MockLlm::start(move |_, _| match c.bump() {
        1 => Action::Reply(Reply::json(oa_calls(&[("c-a", "a", "{}")]))),
        _ => Action::Reply(Reply::raw(400, "model down")),
    })
    .await;
    let runs = Log::default();
    let tk = toolkit(vec![approval("a", runs.clone())]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let first = client.ask("do a", &tk, Some("t"), None, RunOptions::default()).await.unwrap();
    let e = client.ask_with_answer(&tk, "t", &pending_value(&first), answer(&first, "y"), RunOptions::default()).await;
    assert!(e.is_err());
    let kept = client.store().get("t").await.unwrap().unwrap();
    assert_eq!(kept.last().unwrap(), &json!({"role": "tool", "tool_call_id": "c-a", "content": "a done (y)"}));
    assert_eq!(runs.len(), 2);
    // The request was used: it cannot be answered again.
    let again =
        client.ask_with_answer(&tk, "t", &pending_value(&first), answer(&first, "y"), RunOptions::default()).await;
    assert!(again.is_err());
    assert_eq!(runs.len(), 2);
    // No conversation: refused by name.
    let e = client
        .ask_with_answer(&tk, "nope", &pending_value(&first), answer(&first, "y"), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(code(&e), "EUNKNOWNREQUEST");
    assert!(e.to_string().contains("\"nope\""));
}

/// A run parked on one of two calls, then left for a new prompt instead of resumed: the next
/// request still has one result per call (the unanswered call reads that it did not run).
async fn a_parked_turn_left_for_a_new_prompt_stays_balanced(style: Style) {
    let server = model(style, &[("c-a", "a"), ("c-b", "b")]).await;
    let tk = toolkit(vec![approval("a", Log::default()), approval("b", Log::default())]).await;
    let client = Client::new(options(&server.url(), style)).unwrap();
    let parked = client.ask("do a and b", &tk, Some("t"), None, RunOptions::default()).await.unwrap();
    assert_eq!(parked.status, RunStatus::Pending);
    let next = client.ask("never mind", &tk, Some("t"), None, RunOptions::default()).await.unwrap();
    assert_eq!(next.status, RunStatus::Done, "{next:?}");
    let sent = server.request(1).messages();
    balanced(style, &sent);
    assert!(sent.iter().any(|m| m.to_string().contains("not run: the turn stopped")), "{sent:#?}");
}
crate::per_style!(a_parked_turn_left_for_a_new_prompt_stays_balanced);
