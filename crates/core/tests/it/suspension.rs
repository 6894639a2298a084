//! Suspension (SPEC §10): a tool returns a pending request; with no `wait_for` the run
//! halts with `status: pending`, with one the tool is retried once with the answer.

use std::time::Duration;

use serde_json::{json, Value};
use toolnexus_core::callback::callback;
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::ToolResult;
use toolnexus_core::{pending, Error};

use crate::common::*;

fn login_request() -> Value {
    json!({"kind": "authorization", "prompt": "Log in", "url": "https://x.test/login", "id": "req-login"})
}

fn approve_request() -> Value {
    json!({"kind": "approval", "prompt": "Approve?", "id": "req-approve"})
}

/// A tool that always suspends with `request`, counting its runs. `delay_ms` lets a test
/// make it suspend later than a sibling.
fn suspending(name: &str, request: Value, runs: Counter, delay_ms: u64) -> SharedTool {
    fn_tool(name, move |_, _| {
        let (request, runs) = (request.clone(), runs.clone());
        async move {
            runs.bump();
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            pending(map(request)).unwrap()
        }
    })
}

/// A tool that suspends until it is given an answer, logging the `ctx.answer` of every run.
fn login_tool(seen: Log<Option<Value>>) -> SharedTool {
    fn_tool("login", move |_, ctx| {
        let seen = seen.clone();
        async move {
            seen.push(ctx.answer.clone());
            match ctx.answer {
                Some(ans) => ToolResult::ok(format!("signed in with {}", ans["data"]["token"].as_str().unwrap_or("?"))),
                None => pending(map(login_request())).unwrap(),
            }
        }
    })
}

#[tokio::test]
async fn openai_without_wait_for_halts_on_the_first_suspension_in_call_order() {
    let server = MockLlm::script(vec![
        Reply::json(with_usage(
            oa_calls(&[("c_login", "login", "{}"), ("c_approve", "approve", "{}")]),
            json!({"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}),
        )),
        Reply::json(oa_text("must not be asked")),
    ])
    .await;
    let (login_runs, approve_runs) = (Counter::default(), Counter::default());
    let tk = toolkit(vec![
        // login suspends after approve does: the halt must still be login's.
        suspending("login", login_request(), login_runs.clone(), 50),
        suspending("approve", approve_request(), approve_runs.clone(), 0),
    ])
    .await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = client.run("do it", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(server.count(), 1, "a halted run asks the model nothing more");
    assert_eq!(r.status, RunStatus::Pending);
    assert_eq!(r.pending, Some(map(login_request())));
    assert_eq!(r.text, "Log in", "the text is the request's prompt (no url)");
    assert_eq!(r.turns, 1);
    assert_eq!(r.usage.total_tokens, 6);
    assert!(r.limit.is_none());
    assert_eq!(login_runs.get(), 1);

    assert_eq!(r.tool_calls.len(), 1, "only the halted call is recorded");
    let rec = &r.tool_calls[0];
    assert_eq!(rec.name, "login");
    assert_eq!(rec.result.output, "Log in");
    assert!(rec.result.is_error);
    assert!(rec.result.metadata.is_none());

    assert_eq!(r.messages.len(), 3);
    assert_eq!(r.messages[2], json!({"role": "tool", "tool_call_id": "c_login", "content": "Log in"}));
    assert!(r.messages.iter().all(|m| m["tool_call_id"] != "c_approve"));

    let v = r.to_value();
    assert_eq!(
        keys(&v),
        ["text", "messages", "toolCalls", "toolCallCount", "turns", "usage", "model", "status", "pending"]
    );
    assert_eq!(v["status"], "pending");
    assert_eq!(v["pending"], login_request());
    assert_eq!(v["toolCallCount"], 1);
    assert_eq!(v["toolCalls"][0], json!({"name": "login", "args": {}, "output": "Log in", "isError": true}));
}

/// Without `wait_for`, a turn calling `plain`, then `login` and `approve` (both suspend) halts
/// on `login`, the first suspension in call order even though it suspends last; the calls
/// before it are kept, with their results, and the model is asked nothing more.
async fn calls_before_the_halt_are_kept(style: Style) {
    let (calls, plain_args, login_args) = match style {
        Style::OpenAI => (
            oa_calls(&[("c_plain", "plain", r#"{"a":1}"#), ("c_login", "login", "{}"), ("c_approve", "approve", "{}")]),
            json!({"a": 1}),
            json!({}),
        ),
        Style::Anthropic => (
            an_reply(json!([
                an_use("tu_plain", "plain", json!({})),
                an_use("tu_login", "login", json!({"who": "me"})),
                an_use("tu_approve", "approve", json!({})),
            ])),
            json!({}),
            json!({"who": "me"}),
        ),
    };
    let server = MockLlm::script(vec![Reply::json(calls)]).await;
    let tk = toolkit(vec![
        text_tool("plain", "fine"),
        suspending("login", login_request(), Counter::default(), 30),
        suspending("approve", approve_request(), Counter::default(), 0),
    ])
    .await;
    let client = Client::new(options(&server.url(), style)).unwrap();

    let r = client.run("do it", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(server.count(), 1);
    assert_eq!(r.status, RunStatus::Pending);
    assert_eq!(r.pending, Some(map(login_request())));
    assert_eq!(r.text, "Log in");
    let names: Vec<_> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["plain", "login"]);
    assert_eq!(r.tool_calls[0].args, plain_args);
    assert_eq!(r.tool_calls[1].args, login_args);
    assert!(r.tool_calls[1].result.metadata.is_none());
    match style {
        Style::OpenAI => assert_eq!(
            r.messages[2..],
            [
                json!({"role": "tool", "tool_call_id": "c_plain", "content": "fine"}),
                json!({"role": "tool", "tool_call_id": "c_login", "content": "Log in"}),
            ]
        ),
        Style::Anthropic => {
            // One tool_result block a call before the halt, in one user message.
            assert_eq!(r.messages.len(), 3);
            assert_eq!(
                r.messages[2],
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "tu_plain", "content": "fine", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "tu_login", "content": "Log in", "is_error": true},
                ]})
            );
        }
    }
}

crate::per_style!(calls_before_the_halt_are_kept);

#[tokio::test]
async fn a_generated_request_id_is_surfaced() {
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c", "ask", "{}")]))]).await;
    let tk =
        toolkit(vec![suspending("ask", json!({"kind": "input", "prompt": "Which env?"}), Counter::default(), 0)]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    let p = r.pending.expect("pending");
    assert_eq!(keys(&Value::Object(p.clone())), ["kind", "prompt", "id"]);
    assert!(p["id"].as_str().unwrap().starts_with("pnd-"));
    assert_eq!(r.text, "Which env?");
}

#[tokio::test]
async fn wait_for_ok_retries_the_tool_once_with_the_answer() {
    let server = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c_login", "login", r#"{"scope":"all"}"#)])),
        Reply::json(oa_text("all set")),
    ])
    .await;
    let seen = Log::default();
    let requests: Log<Value> = Log::default();
    let tk = toolkit(vec![login_tool(seen.clone())]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    let rq = requests.clone();
    o.wait_for = Some(callback(move |req: Value| {
        let rq = rq.clone();
        async move {
            rq.push(req.clone());
            Ok(json!({"id": req["id"], "ok": true, "data": {"token": "t0k"}}))
        }
    }));
    let client = Client::new(o).unwrap();

    let r = client.run("sign in", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(requests.all(), [login_request()], "wait_for gets the request as the tool built it");
    let answer = json!({"id": "req-login", "ok": true, "data": {"token": "t0k"}});
    assert_eq!(seen.all(), [None, Some(answer)], "one plain run, then exactly one retry carrying the answer");

    assert_eq!(r.status, RunStatus::Done);
    assert!(r.pending.is_none());
    assert_eq!(r.text, "all set");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].args, json!({"scope": "all"}));
    assert_eq!(r.tool_calls[0].result.output, "signed in with t0k");
    assert!(!r.tool_calls[0].result.is_error);
    assert_eq!(
        server.request(1).messages()[2],
        json!({"role": "tool", "tool_call_id": "c_login", "content": "signed in with t0k"})
    );
    assert_eq!(r.to_value()["status"], "done");
    assert!(r.to_value().get("pending").is_none());
}

#[tokio::test]
async fn the_retry_gets_the_args_as_rewritten_by_before_tool() {
    let server =
        MockLlm::script(vec![Reply::json(oa_calls(&[("c", "login", r#"{"v":1}"#)])), Reply::json(oa_text("ok"))]).await;
    let args_seen: Log<Value> = Log::default();
    let a = args_seen.clone();
    let tk = toolkit(vec![fn_tool("login", move |args, ctx| {
        let a = a.clone();
        async move {
            a.push(args);
            match ctx.answer {
                Some(_) => ToolResult::ok("in"),
                None => pending(map(login_request())).unwrap(),
            }
        }
    })])
    .await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.before_tool = Some(callback(|_| async { Ok(json!({"args": {"v": 2}})) }));
    o.wait_for = Some(callback(|_| async { Ok(json!({"ok": true})) }));
    let client = Client::new(o).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(args_seen.all(), [json!({"v": 2}), json!({"v": 2})]);
    assert_eq!(r.tool_calls[0].args, json!({"v": 2}));
    assert_eq!(r.tool_calls[0].result.output, "in");
}

#[tokio::test]
async fn a_declined_answer_is_an_error_result_and_the_run_goes_on() {
    for answer in [json!({"id": "req-login", "ok": false, "reason": "declined"}), Value::Null, json!({})] {
        let server = MockLlm::script(vec![
            Reply::json(oa_calls(&[("c_login", "login", "{}")])),
            Reply::json(oa_text("okay, not signed in")),
        ])
        .await;
        let seen = Log::default();
        let tk = toolkit(vec![login_tool(seen.clone())]).await;
        let mut o = options(&server.url(), Style::OpenAI);
        let ans = answer.clone();
        o.wait_for = Some(callback(move |_| {
            let ans = ans.clone();
            async move { Ok(ans) }
        }));
        let client = Client::new(o).unwrap();

        let r = client.run("sign in", &tk, RunOptions::default()).await.unwrap();

        assert_eq!(seen.all(), [None], "no retry after {answer}");
        assert_eq!(r.status, RunStatus::Done);
        assert_eq!(r.text, "okay, not signed in");
        assert_eq!(r.tool_calls[0].result.output, "declined/expired: Log in");
        assert!(r.tool_calls[0].result.is_error);
        assert!(r.tool_calls[0].result.metadata.is_none());
        assert_eq!(server.request(1).messages()[2]["content"], "declined/expired: Log in");
    }
}

#[tokio::test]
async fn a_retry_that_suspends_again_is_unresolved() {
    let server = MockLlm::script(vec![
        Reply::json(an_reply(json!([an_use("tu_1", "login", json!({}))]))),
        Reply::json(an_reply(json!([an_text("gave up")]))),
    ])
    .await;
    let runs = Counter::default();
    let asked = Counter::default();
    let tk = toolkit(vec![suspending("login", login_request(), runs.clone(), 0)]).await;
    let mut o = options(&server.url(), Style::Anthropic);
    let a = asked.clone();
    o.wait_for = Some(callback(move |_| {
        let a = a.clone();
        async move {
            a.bump();
            Ok(json!({"ok": true}))
        }
    }));
    let client = Client::new(o).unwrap();

    let r = client.run("sign in", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(runs.get(), 2, "the tool is retried exactly once");
    assert_eq!(asked.get(), 1, "wait_for is not asked again");
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.tool_calls[0].result.output, "unresolved: Log in");
    assert!(r.tool_calls[0].result.is_error);
    assert_eq!(
        server.request(1).messages()[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu_1", "content": "unresolved: Log in", "is_error": true}
        ]})
    );
}

#[tokio::test]
async fn a_before_tool_suspension_halts_without_running_the_tool() {
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c_trade", "trade", r#"{"qty":5}"#)]))]).await;
    let runs = Counter::default();
    let after = Counter::default();
    let r2 = runs.clone();
    let tk = toolkit(vec![fn_tool("trade", move |_, _| {
        let r2 = r2.clone();
        async move {
            r2.bump();
            ToolResult::ok("traded")
        }
    })])
    .await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.before_tool = Some(callback(|_| async {
        let guard = pending(map(approve_request())).unwrap();
        Ok(json!({"result": guard.to_value()}))
    }));
    let a = after.clone();
    o.hooks.after_tool = Some(callback(move |_| {
        let a = a.clone();
        async move {
            a.bump();
            Ok(Value::Null)
        }
    }));
    let client = Client::new(o).unwrap();

    let r = client.run("buy", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(runs.get(), 0, "the real tool never runs");
    assert_eq!(after.get(), 0, "after_tool does not see a suspension");
    assert_eq!(r.status, RunStatus::Pending);
    assert_eq!(r.pending, Some(map(approve_request())));
    assert_eq!(r.text, "Approve?");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].args, json!({"qty": 5}));
    assert_eq!(r.tool_calls[0].result.output, "Approve?");
    assert!(r.tool_calls[0].result.is_error);
    assert!(r.tool_calls[0].result.metadata.is_none());
    assert_eq!(r.messages[2], json!({"role": "tool", "tool_call_id": "c_trade", "content": "Approve?"}));
}

#[tokio::test]
async fn a_failing_wait_for_fails_the_run() {
    let server =
        MockLlm::script(vec![Reply::json(oa_calls(&[("c", "login", "{}")])), Reply::json(oa_text("no"))]).await;
    let tk = toolkit(vec![login_tool(Log::default())]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.wait_for = Some(callback(|_| async { Err(Error::host_message("resolver down")) }));
    let client = Client::new(o).unwrap();

    let e = client.run("sign in", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(e.to_string(), "resolver down");
    assert!(matches!(e, Error::Host(_)));
    assert_eq!(server.count(), 1);
}
