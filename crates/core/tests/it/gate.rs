//! The completion gate and the guardrails (SPEC §7D-§7E) around a real client, against a
//! scripted model served over HTTP.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolnexus_core::agents::gate::{retry_prompt, COMPLETION_LIMIT};
use toolnexus_core::agents::{all_todos_done, guarded_hooks, run_gated, Completion};
use toolnexus_core::callback::{callback, SharedCallback};
use toolnexus_core::client::{Client, RunOptions, RunResult, RunStatus, Style};
use toolnexus_core::{Error, Toolkit, ToolkitOptions};

use crate::common::*;

/// A toolkit with only the `todowrite` builtin.
async fn todo_toolkit() -> Toolkit {
    let builtins = json!({ "tools": {
        "todowrite": true, "bash": false, "read": false, "write": false, "edit": false,
        "glob": false, "grep": false, "webfetch": false, "apply_patch": false, "question": false
    }});
    Toolkit::create(ToolkitOptions { builtins: Some(builtins), ..Default::default() }).await.unwrap()
}

fn todo_call(items: Value) -> Value {
    oa_calls(&[("t1", "todowrite", &json!({ "todos": items }).to_string())])
}

fn usage(prompt: i64, completion: i64) -> Value {
    json!({ "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion })
}

fn todos_verifier() -> SharedCallback {
    callback(|r: Value| async move { Ok(all_todos_done(&r)) })
}

/// Run `prompt` behind the gate with `client`, each attempt continuing the previous one's
/// transcript; answers the result and the number of attempts.
async fn gated(
    client: &Client,
    tk: &Toolkit,
    prompt: &str,
    c: Option<&Completion>,
) -> Result<(RunResult, usize), Error> {
    let history: Arc<Mutex<Vec<Value>>> = Arc::default();
    let attempts = Counter::default();
    let ask = |p: String| {
        let history = history.clone();
        let attempts = attempts.clone();
        async move {
            attempts.bump();
            let h = history.lock().unwrap().clone();
            let r = client.run(&p, tk, RunOptions { history: Some(h), ..Default::default() }).await?;
            *history.lock().unwrap() = r.messages.clone();
            Ok(r)
        }
    };
    let r = run_gated(ask, prompt, c).await?;
    Ok((r, attempts.get()))
}

#[tokio::test]
async fn an_open_todo_is_sent_back_and_the_closed_list_passes() {
    let server = MockLlm::script(vec![
        Reply::json(with_usage(
            todo_call(json!([{ "id": "1", "text": "draft", "completed": true }, { "id": "2", "text": "proofread" }])),
            usage(10, 1),
        )),
        Reply::json(with_usage(oa_text("I think I am finished"), usage(20, 2))),
        Reply::json(with_usage(
            todo_call(json!([{ "id": "1", "text": "draft", "completed": true }, { "id": "2", "text": "proofread", "completed": true }])),
            usage(30, 3),
        )),
        Reply::json(with_usage(oa_text("all done"), usage(40, 4))),
    ])
    .await;
    let tk = todo_toolkit().await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let c = Completion { verify: todos_verifier(), max_attempts: json!(3) };
    let (r, attempts) = gated(&client, &tk, "write the essay", Some(&c)).await.unwrap();

    assert_eq!(attempts, 2);
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.text, "all done");
    assert_eq!(r.limit, None);
    // The retry went out as the next user turn, after the whole first attempt.
    let third = server.request(2).messages();
    assert_eq!(
        third.last().unwrap(),
        &json!({ "role": "user", "content": retry_prompt("1 item(s) still open: proofread") })
    );
    assert_eq!(third[0], json!({ "role": "user", "content": "write the essay" }));
    // Both attempts' calls, turns and tokens.
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.turns, 4);
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens), (100, 10, 110));
    assert_eq!(server.count(), 4);
}

#[tokio::test]
async fn a_retry_that_drops_its_plan_still_answers_for_the_open_one() {
    let server = MockLlm::script(vec![
        Reply::json(todo_call(json!([{ "id": "1", "text": "ship it", "completed": false }]))),
        Reply::json(oa_text("finished")),
        Reply::json(oa_text("finished, honest")),
    ])
    .await;
    let tk = todo_toolkit().await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let c = Completion { verify: todos_verifier(), max_attempts: json!(2) };
    let (r, attempts) = gated(&client, &tk, "go", Some(&c)).await.unwrap();

    assert_eq!(attempts, 2);
    assert_eq!(r.status, RunStatus::Incomplete);
    assert_eq!(r.limit.as_deref(), Some(COMPLETION_LIMIT));
    assert_eq!(r.text, "completion.verify failed 2×: 1 item(s) still open: ship it");
    assert_eq!(r.turns, 3);
    assert_eq!(server.count(), 3);
}

#[tokio::test]
async fn without_a_todo_list_the_built_in_verdict_passes_at_once() {
    let server = MockLlm::script(vec![Reply::json(oa_text("answered"))]).await;
    let tk = todo_toolkit().await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let c = Completion { verify: todos_verifier(), max_attempts: json!(2) };
    let (r, attempts) = gated(&client, &tk, "go", Some(&c)).await.unwrap();
    assert_eq!((attempts, r.status, r.text.as_str()), (1, RunStatus::Done, "answered"));
}

#[tokio::test]
async fn a_bad_max_attempts_fails_before_the_model_is_called() {
    let server = MockLlm::script(vec![Reply::json(oa_text("hi"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let c = Completion { verify: todos_verifier(), max_attempts: json!(0) };
    let e = gated(&client, &tk, "go", Some(&c)).await.unwrap_err();
    assert_eq!(e.to_string(), "toolnexus: completion.maxAttempts must be an integer >= 1");
    assert_eq!(e.js_class(), "Error");
    assert_eq!(server.count(), 0);
}

#[tokio::test]
async fn a_turn_limit_during_a_retry_names_both_reasons() {
    // The first answer has no text, so the exhausted second attempt finds none in its
    // transcript either and stops as incomplete.
    let server = MockLlm::script(vec![Reply::json(oa_text("")), Reply::json(oa_calls(&[("c1", "look", "{}")]))]).await;
    let tk = toolkit(vec![text_tool("look", "seen")]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.max_turns = 1;
    let client = Client::new(o).unwrap();
    let verify = callback(|_| async { Ok(json!({ "ok": false, "reason": "tests are red" })) });
    let c = Completion { verify, max_attempts: json!(3) };
    let (r, attempts) = gated(&client, &tk, "go", Some(&c)).await.unwrap();

    assert_eq!(attempts, 2);
    assert_eq!(r.status, RunStatus::Incomplete);
    assert_eq!(r.limit.as_deref(), Some("maxTurns"));
    assert!(r.text.ends_with(" [while verifying: attempt 2 last failed: tests are red]"), "{}", r.text);
    assert_eq!(r.turns, 2);
}

#[tokio::test]
async fn a_refused_call_never_runs_and_the_model_reads_the_refusal() {
    let server = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "danger", "{}"), ("c2", "safe", "{}")])),
        Reply::json(oa_text("ok")),
    ])
    .await;
    let ran: Log<String> = Log::default();
    let tool = |name: &str| {
        let ran = ran.clone();
        let label = name.to_string();
        fn_tool(name, move |_, _| {
            let ran = ran.clone();
            let label = label.clone();
            async move {
                ran.push(label);
                toolnexus_core::ToolResult::ok("ran")
            }
        })
    };
    let tk = toolkit(vec![tool("danger"), tool("safe")]).await;
    let events: Log<Value> = Log::default();
    let seen = events.clone();
    let rail = callback(move |ev: Value| {
        let seen = seen.clone();
        async move {
            let deny = ev["name"] == "danger";
            seen.push(ev);
            Ok(if deny { json!("policy: no") } else { json!("allow") })
        }
    });
    let prior_runs = Counter::default();
    let n = prior_runs.clone();
    let prior = callback(move |_| {
        let n = n.clone();
        async move {
            n.bump();
            Ok(Value::Null)
        }
    });
    let mut o = options(&server.url(), Style::OpenAI);
    let mut hooks = o.hooks.clone();
    hooks.before_tool = Some(prior);
    o.hooks = guarded_hooks(vec![rail], hooks);
    let client = Client::new(o).unwrap();
    let r = client.run("go", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(ran.all(), vec!["safe".to_string()]);
    assert_eq!(prior_runs.get(), 1, "the earlier hook runs for the allowed call only");
    assert_eq!(r.tool_calls[0].result.output, "denied: policy: no");
    assert!(r.tool_calls[0].result.is_error);
    let ev = &events.all()[0];
    assert_eq!((ev["name"].clone(), ev["id"].clone(), ev["turn"].clone()), (json!("danger"), json!("c1"), json!(0)));
    let sent = server.request(1).messages();
    let refusal = sent.iter().find(|m| m["tool_call_id"] == "c1").unwrap();
    assert_eq!(refusal["content"], "denied: policy: no");
}
