//! The four lifecycle hooks (SPEC §8) and `duringTool`: what they see, what they may change, and that a
//! failing hook fails the run.

use serde_json::{json, Value};
use toolnexus_core::callback::{callback, SharedCallback};
use toolnexus_core::client::{Client, Hooks, RunOptions, RunStatus, Style};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::ToolResult;
use toolnexus_core::{pending, Error};

use crate::common::*;

/// A hook that logs every event and answers `answer(event)`.
fn logging_hook(log: Log<Value>, answer: fn(&Value) -> Value) -> SharedCallback {
    callback(move |ev: Value| {
        let log = log.clone();
        async move {
            let out = answer(&ev);
            log.push(ev);
            Ok(out)
        }
    })
}

fn nothing(_: &Value) -> Value {
    Value::Null
}

/// A tool logging the args it was run with.
fn recording_tool(name: &str, out: &'static str, args_log: Log<Value>) -> SharedTool {
    fn_tool(name, move |args, _| {
        let log = args_log.clone();
        async move {
            log.push(args);
            ToolResult::ok(out)
        }
    })
}

#[tokio::test]
async fn before_llm_sees_each_turn_and_can_replace_messages_and_tools() {
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "t", "{}")])), Reply::json(oa_text("done"))]).await;
    let tk = toolkit(vec![text_tool("t", "out")]).await;
    let log = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.before_llm = Some(logging_hook(log.clone(), |ev| {
        if ev["turn"] == 0 {
            json!({
                "messages": [{"role": "user", "content": "rewritten"}],
                "tools": [{"type": "function", "function": {"name": "other", "description": "d", "parameters": {"type": "object"}}}],
            })
        } else {
            // An empty tool list is still a replacement: the tool keys then leave the body.
            json!({"tools": []})
        }
    }));
    let client = Client::new(o).unwrap();

    let r = client.run("original", &tk, RunOptions::default()).await.unwrap();

    let events = log.all();
    assert_eq!(events.len(), 2);
    assert_eq!(keys(&events[0]), ["messages", "tools", "model", "turn"]);
    assert_eq!(events[0]["messages"], json!([{"role": "user", "content": "original"}]));
    assert_eq!(events[0]["tools"], Value::Array(tk.to_openai()));
    assert_eq!(events[0]["model"], "m");
    assert_eq!(events[0]["turn"], 0);
    assert_eq!(events[1]["turn"], 1);

    let first = server.request(0);
    assert_eq!(first.messages(), vec![json!({"role": "user", "content": "rewritten"})]);
    assert_eq!(first.body["tools"][0]["function"]["name"], "other");
    assert_eq!(first.body["tool_choice"], "auto");

    // The replacement is the working transcript for the rest of the run.
    let second = server.request(1);
    let msgs = second.messages();
    assert_eq!(msgs[0], json!({"role": "user", "content": "rewritten"}));
    assert_eq!(msgs.len(), 3);
    assert_eq!(second.body_keys(), ["model", "messages"]);
    // The hook saw the transcript (the provider's null content); the wire carries "" for it.
    let mut seen = events[1]["messages"].clone();
    seen[1]["content"] = "".into();
    assert_eq!(seen, Value::Array(msgs.clone()));
    assert_eq!(events[1]["messages"][1]["content"], Value::Null);

    assert_eq!(r.messages[0], json!({"role": "user", "content": "rewritten"}));
    assert_eq!(r.text, "done");
}

#[tokio::test]
async fn after_llm_sees_the_raw_response() {
    let raw1 = with_usage(
        oa_calls(&[("c1", "t", "{}")]),
        json!({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "cost": 0.5}),
    );
    let mut raw2 = oa_text("fin");
    raw2["system_fingerprint"] = json!("fp_123");
    let server = MockLlm::script(vec![Reply::json(raw1.clone()), Reply::json(raw2.clone())]).await;
    let tk = toolkit(vec![text_tool("t", "out")]).await;
    let log = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.after_llm = Some(logging_hook(log.clone(), nothing));
    let client = Client::new(o).unwrap();

    client.run("q", &tk, RunOptions::default()).await.unwrap();

    let events = log.all();
    assert_eq!(events.len(), 2);
    assert_eq!(keys(&events[0]), ["response", "model", "turn"]);
    assert_eq!(events[0], json!({"response": raw1, "model": "m", "turn": 0}));
    assert_eq!(events[1], json!({"response": raw2, "model": "m", "turn": 1}));
}

#[tokio::test]
async fn before_tool_can_rewrite_args() {
    let server = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "t", r#"{"path":"/etc/passwd"}"#)])),
        Reply::json(oa_text("done")),
    ])
    .await;
    let args_log = Log::default();
    let tk = toolkit(vec![recording_tool("t", "read", args_log.clone())]).await;
    let (before, after) = (Log::default(), Log::default());
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.before_tool = Some(logging_hook(before.clone(), |_| json!({"args": {"path": "/tmp/safe"}})));
    o.hooks.after_tool = Some(logging_hook(after.clone(), nothing));
    let client = Client::new(o).unwrap();

    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(before.all(), [json!({"name": "t", "args": {"path": "/etc/passwd"}, "id": "c1", "turn": 0})]);
    assert_eq!(keys(&before.all()[0]), ["name", "args", "id", "turn"]);
    assert_eq!(args_log.all(), [json!({"path": "/tmp/safe"})]);
    assert_eq!(r.tool_calls[0].args, json!({"path": "/tmp/safe"}));
    assert_eq!(
        after.all(),
        [
            json!({"name": "t", "args": {"path": "/tmp/safe"}, "result": {"output": "read", "isError": false}, "id": "c1", "turn": 0})
        ]
    );
    assert_eq!(keys(&after.all()[0]), ["name", "args", "result", "id", "turn"]);
}

#[tokio::test]
async fn before_tool_can_short_circuit_with_a_result() {
    let server = MockLlm::script(vec![
        Reply::json(an_reply(json!([an_use("tu_1", "rm", json!({"all": true}))]))),
        Reply::json(an_reply(json!([an_text("denied, fine")]))),
    ])
    .await;
    let args_log = Log::default();
    let tk = toolkit(vec![recording_tool("rm", "deleted everything", args_log.clone())]).await;
    let after = Log::default();
    let mut o = options(&server.url(), Style::Anthropic);
    o.hooks.before_tool = Some(logging_hook(
        Log::default(),
        |_| json!({"result": {"output": "denied by policy", "isError": true, "metadata": {"rule": "no-rm"}}}),
    ));
    o.hooks.after_tool = Some(logging_hook(after.clone(), nothing));
    let client = Client::new(o).unwrap();

    let r = client.run("clean up", &tk, RunOptions::default()).await.unwrap();

    assert!(args_log.all().is_empty(), "the real tool never runs");
    assert!(after.all().is_empty(), "a short-circuit skips after_tool");
    let rec = &r.tool_calls[0];
    assert_eq!(rec.args, json!({"all": true}));
    assert_eq!(rec.result.output, "denied by policy");
    assert!(rec.result.is_error);
    assert_eq!(rec.result.metadata, Some(json!({"rule": "no-rm"})));
    assert_eq!(
        r.to_value()["toolCalls"][0],
        json!({"name": "rm", "args": {"all": true}, "output": "denied by policy", "isError": true, "metadata": {"rule": "no-rm"}})
    );
    assert_eq!(
        server.request(1).messages()[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "tu_1", "content": "denied by policy", "is_error": true})
    );
    assert_eq!(r.status, RunStatus::Done);
}

#[tokio::test]
async fn after_tool_can_replace_the_result() {
    let server =
        MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "secret", "{}")])), Reply::json(oa_text("done"))]).await;
    let tk = toolkit(vec![text_tool("secret", "password=hunter2")]).await;
    let after = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.after_tool =
        Some(logging_hook(after.clone(), |_| json!({"result": {"output": "[redacted]", "isError": false}})));
    let client = Client::new(o).unwrap();

    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(after.all()[0]["result"], json!({"output": "password=hunter2", "isError": false}));
    assert_eq!(r.tool_calls[0].result.output, "[redacted]");
    assert_eq!(server.request(1).messages()[2], json!({"role": "tool", "tool_call_id": "c1", "content": "[redacted]"}));
}

#[tokio::test]
async fn after_tool_skips_the_suspension_but_sees_the_resolved_result() {
    // Without wait_for: never called.
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "login", "{}")]))]).await;
    let login = fn_tool("login", |_, ctx| async move {
        match ctx.answer {
            Some(_) => ToolResult::ok("welcome"),
            None => pending(map(json!({"kind": "authorization", "prompt": "Log in"}))).unwrap(),
        }
    });
    let tk = toolkit(vec![login]).await;
    let after = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.after_tool = Some(logging_hook(after.clone(), nothing));
    let client = Client::new(o.clone()).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.status, RunStatus::Pending);
    assert!(after.all().is_empty(), "after_tool must not be called for a suspension");

    // With wait_for: called once, for the retry's result only.
    let server =
        MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "login", "{}")])), Reply::json(oa_text("in"))]).await;
    let after = Log::default();
    o.base_url = server.url();
    o.hooks.after_tool = Some(logging_hook(after.clone(), |_| json!({"result": {"output": "welcome (checked)"}})));
    o.wait_for = Some(callback(|_| async { Ok(json!({"ok": true})) }));
    let client = Client::new(o).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    let events = after.all();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["result"], json!({"output": "welcome", "isError": false}));
    assert_eq!(r.tool_calls[0].result.output, "welcome (checked)");
    assert!(!r.tool_calls[0].result.is_error);
}

#[tokio::test]
async fn a_failing_hook_fails_the_run_with_its_message() {
    type Pick = fn(&mut Hooks, SharedCallback);
    let cases: [(&str, Pick); 4] = [
        ("before_llm", |h, cb| h.before_llm = Some(cb)),
        ("after_llm", |h, cb| h.after_llm = Some(cb)),
        ("before_tool", |h, cb| h.before_tool = Some(cb)),
        ("after_tool", |h, cb| h.after_tool = Some(cb)),
    ];
    for (name, install) in cases {
        let server =
            MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "t", "{}")])), Reply::json(oa_text("done"))]).await;
        let tk = toolkit(vec![text_tool("t", "out")]).await;
        let mut o = options(&server.url(), Style::OpenAI);
        let message = format!("{name} says no");
        install(
            &mut o.hooks,
            callback(move |_| {
                let message = message.clone();
                async move { Err(Error::host_message(message)) }
            }),
        );
        let client = Client::new(o).unwrap();

        let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

        assert_eq!(e.to_string(), format!("{name} says no"));
        assert!(matches!(e, Error::Host(_)), "{name}: {e:?}");
        let expected_requests = if name == "before_llm" { 0 } else { 1 };
        assert_eq!(server.count(), expected_requests, "{name}");
    }
}

/// A tool that reports twice (a progress, a log) when its caller takes reports, and says
/// whether it had one.
fn reporting_tool() -> SharedTool {
    use toolnexus_core::tool::ToolEvent;
    fn_tool("r", |_, ctx| async move {
        let Some(ear) = ctx.events else { return ToolResult::ok("unheard") };
        ear.event(ToolEvent::Progress { progress: 1.0, total: Some(2.0), message: Some("half".into()) });
        ear.event(ToolEvent::CloseStream);
        ear.event(ToolEvent::Log { level: "info".into(), data: json!({"k": 1}), logger: None });
        ToolResult::ok("heard")
    })
}

#[tokio::test]
async fn during_tool_and_on_metric_hear_a_tools_reports_in_order_before_after_tool() {
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "r", "{}")])), Reply::json(oa_text("done"))]).await;
    let tk = toolkit(vec![reporting_tool()]).await;
    let log = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.during_tool = Some(logging_hook(log.clone(), nothing));
    o.hooks.after_tool = Some(logging_hook(log.clone(), nothing));
    o.on_metric = Some(logging_hook(log.clone(), nothing));
    let r = Client::new(o).unwrap().run("go", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.text, "done");
    let seen: Vec<Value> =
        log.all().into_iter().filter(|e| e.get("event").is_none_or(|k| k != "llm" && k != "run")).collect();
    assert_eq!(
        seen,
        vec![
            json!({"type": "progress", "name": "r", "id": "c1", "turn": 0, "progress": 1.0, "total": 2.0, "message": "half"}),
            json!({"event": "tool_progress", "tool": "r", "source": "native", "progress": 1.0, "total": 2.0, "message": "half"}),
            json!({"type": "log", "name": "r", "id": "c1", "turn": 0, "level": "info", "data": {"k": 1}}),
            json!({"event": "tool_log", "tool": "r", "source": "native", "level": "info", "data": {"k": 1}}),
            json!({"name": "r", "args": {}, "result": {"output": "heard", "isError": false}, "id": "c1", "turn": 0}),
            json!({"event": "tool", "tool": "r", "source": "native", "isError": false, "ms": seen[5]["ms"]}),
        ]
    );
}

#[tokio::test]
async fn without_during_tool_or_on_metric_a_tool_has_no_one_to_report_to() {
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "r", "{}")])), Reply::json(oa_text("done"))]).await;
    let tk = toolkit(vec![reporting_tool()]).await;
    let log = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.after_tool = Some(logging_hook(log.clone(), nothing));
    Client::new(o).unwrap().run("go", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(log.all()[0]["result"]["output"], "unheard");
}

#[tokio::test]
async fn a_during_tool_that_fails_fails_the_run_once_the_tool_has_finished() {
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "r", "{}")])), Reply::json(oa_text("done"))]).await;
    let tk = toolkit(vec![reporting_tool()]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.during_tool = Some(callback(|_: Value| async { Err::<Value, _>(Error::Invalid("listener broke".into())) }));
    let e = Client::new(o).unwrap().run("go", &tk, RunOptions::default()).await.unwrap_err();
    assert!(e.to_string().contains("listener broke"), "{e}");
    assert_eq!(server.count(), 1);
}

/// A run's other listener (a served A2A Task's caller) hears the reports too, with no hook set.
#[tokio::test]
async fn a_runs_own_listener_hears_reports_as_during_tool_sees_them() {
    struct Heard(std::sync::Mutex<Vec<Value>>);
    impl toolnexus_core::client::RunReports for Heard {
        fn report(&self, report: &Value) {
            self.0.lock().unwrap().push(report.clone());
        }
    }
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "r", "{}")])), Reply::json(oa_text("done"))]).await;
    let tk = toolkit(vec![reporting_tool()]).await;
    let heard = std::sync::Arc::new(Heard(Default::default()));
    let ro = RunOptions { reports: Some(heard.clone()), ..Default::default() };
    let r = Client::new(options(&server.url(), Style::OpenAI)).unwrap().run("go", &tk, ro).await.unwrap();
    assert_eq!(r.tool_calls[0].result.output, "heard");
    let got = heard.0.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0],
        json!({"type": "progress", "name": "r", "id": "c1", "turn": 0, "progress": 1.0, "total": 2.0, "message": "half"})
    );
    assert_eq!(got[1]["level"], "info");
}
