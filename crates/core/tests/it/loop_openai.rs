//! The OpenAI-style loop against a scripted endpoint: the wire request, tool turns,
//! usage, the result shape, the system prompt and the turn limit.

use serde_json::{json, Value};
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};
use toolnexus_core::native::RunOutput;

use crate::common::*;

fn add_tool() -> toolnexus_core::tool::SharedTool {
    fn_tool("add", |args: Value, _| async move {
        let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
        RunOutput::Text(sum.to_string())
    })
}

#[tokio::test]
async fn a_tool_turn_then_a_text_turn_on_the_wire() {
    let server = MockLlm::script(vec![
        Reply::json(with_usage(
            oa_calls(&[("call_1", "add", r#"{"a":2,"b":3}"#)]),
            json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
        )),
        // No total_tokens: the total is prompt + completion.
        Reply::json(with_usage(oa_text("It is 5."), json!({"prompt_tokens": 20, "completion_tokens": 3}))),
    ])
    .await;
    let tk = toolkit(vec![add_tool()]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = client.run("what is 2+3?", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(server.count(), 2);
    for seen in server.requests() {
        assert_eq!(seen.method, "POST");
        assert_eq!(seen.path, "/chat/completions");
        assert_eq!(seen.header("authorization"), Some("Bearer k"));
        assert_eq!(seen.header("content-type"), Some("application/json"));
        assert_eq!(seen.body_keys(), ["model", "messages", "tools", "tool_choice"]);
        assert!(seen.raw.starts_with(r#"{"model":"m","messages":["#), "raw body: {}", seen.raw);
        assert_eq!(seen.body["model"], "m");
        assert_eq!(seen.body["tool_choice"], "auto");
        assert_eq!(seen.body["tools"], Value::Array(tk.to_openai()));
    }

    // Turn 1: only the user prompt (no system prompt configured, no skills).
    let first = server.request(0);
    assert_eq!(first.messages(), vec![json!({"role": "user", "content": "what is 2+3?"})]);

    // Turn 2: the assistant message exactly as the endpoint sent it, then the tool message.
    let second = server.request(1);
    let sent_assistant = oa_calls(&[("call_1", "add", r#"{"a":2,"b":3}"#)])["choices"][0]["message"].clone();
    let msgs = second.messages();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0], json!({"role": "user", "content": "what is 2+3?"}));
    assert_eq!(msgs[1], sent_assistant);
    assert_eq!(msgs[2], json!({"role": "tool", "tool_call_id": "call_1", "content": "5"}));
    assert_eq!(keys(&msgs[2]), ["role", "tool_call_id", "content"]);

    // The result.
    assert_eq!(r.text, "It is 5.");
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.turns, 2);
    assert_eq!(r.model, "m");
    assert!(r.pending.is_none());
    assert!(r.limit.is_none());
    assert_eq!(r.usage.prompt_tokens, 30);
    assert_eq!(r.usage.completion_tokens, 8);
    assert_eq!(r.usage.total_tokens, 15 + 23);
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].name, "add");
    assert_eq!(r.tool_calls[0].args, json!({"a": 2, "b": 3}));
    assert_eq!(r.tool_calls[0].result.output, "5");
    assert!(!r.tool_calls[0].result.is_error);
    assert_eq!(r.messages.len(), 4);
    assert_eq!(r.messages[3], json!({"role": "assistant", "content": "It is 5."}));

    // The wire shape of the result, key order included.
    let v = r.to_value();
    assert_eq!(keys(&v), ["text", "messages", "toolCalls", "toolCallCount", "turns", "usage", "model", "status"]);
    assert_eq!(v["text"], "It is 5.");
    assert_eq!(v["toolCallCount"], 1);
    assert_eq!(v["turns"], 2);
    assert_eq!(v["model"], "m");
    assert_eq!(v["status"], "done");
    assert_eq!(keys(&v["usage"]), ["promptTokens", "completionTokens", "totalTokens"]);
    assert_eq!(v["usage"], json!({"promptTokens": 30, "completionTokens": 8, "totalTokens": 38}));
    assert_eq!(v["toolCalls"], json!([{"name": "add", "args": {"a": 2, "b": 3}, "output": "5", "isError": false}]));
    assert_eq!(keys(&v["toolCalls"][0]), ["name", "args", "output", "isError"]);
    assert_eq!(v["messages"], Value::Array(r.messages.clone()));
}

#[tokio::test]
async fn an_empty_toolkit_sends_no_tool_keys() {
    let server = MockLlm::script(vec![Reply::json(oa_text("hi"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = client.run("hello", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.text, "hi");
    assert_eq!(r.turns, 1);
    let seen = server.request(0);
    assert_eq!(seen.body_keys(), ["model", "messages"]);
    assert_eq!(seen.raw, r#"{"model":"m","messages":[{"role":"user","content":"hello"}]}"#);
    // No usage in any reply: all zero.
    assert_eq!(r.to_value()["usage"], json!({"promptTokens": 0, "completionTokens": 0, "totalTokens": 0}));
    assert!(r.tool_calls.is_empty());
    assert_eq!(r.to_value()["toolCallCount"], 0);
}

#[tokio::test]
async fn the_system_prompt_leads_only_a_fresh_transcript() {
    let server = MockLlm::script(vec![Reply::json(oa_text("one")), Reply::json(oa_text("two"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.system_prompt = Some("Be brief.".into());
    let client = Client::new(o).unwrap();

    // Fresh: system message first.
    let r = client.run("q1", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(
        server.request(0).messages(),
        vec![json!({"role": "system", "content": "Be brief."}), json!({"role": "user", "content": "q1"})]
    );
    assert_eq!(r.messages.len(), 3);

    // With history: the history is continued as given, no system message is added.
    let history = vec![json!({"role": "user", "content": "earlier"}), json!({"role": "assistant", "content": "ok"})];
    let r = client.run("q2", &tk, RunOptions { history: Some(history.clone()), ..Default::default() }).await.unwrap();
    let sent = server.request(1).messages();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[..2], history[..]);
    assert_eq!(sent[2], json!({"role": "user", "content": "q2"}));
    assert!(sent.iter().all(|m| m["role"] != "system"));
    assert_eq!(r.text, "two");
    assert_eq!(r.messages.len(), 4);
    assert_eq!(r.messages[..2], history[..]);
}

#[tokio::test]
async fn an_empty_history_counts_as_fresh() {
    let server = MockLlm::script(vec![Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.system_prompt = Some("S".into());
    let client = Client::new(o).unwrap();
    client.run("q", &tk, RunOptions { history: Some(vec![]), ..Default::default() }).await.unwrap();
    assert_eq!(server.request(0).messages()[0], json!({"role": "system", "content": "S"}));
}

#[tokio::test]
async fn a_trailing_slash_on_the_base_is_not_doubled() {
    let server = MockLlm::script(vec![Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&format!("{}/api/v1/", server.url()), Style::OpenAI)).unwrap();
    client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(server.request(0).path, "/api/v1/chat/completions");
}

#[tokio::test]
async fn caller_headers_add_to_and_override_the_clients_own() {
    let server = MockLlm::script(vec![Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.headers = vec![("X-Title".into(), "tests".into()), ("Authorization".into(), "Bearer other".into())];
    let client = Client::new(o).unwrap();
    client.run("q", &tk, RunOptions::default()).await.unwrap();
    let seen = server.request(0);
    assert_eq!(seen.header("authorization"), Some("Bearer other"));
    assert_eq!(seen.header("x-title"), Some("tests"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn an_unknown_tool_is_an_error_result_and_the_run_goes_on() {
    let server = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "nope", "{}")])),
        Reply::json(oa_text("sorry, no such tool")),
    ])
    .await;
    let tk = toolkit(vec![text_tool("real", "x")]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = client.run("go", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.turns, 2);
    assert_eq!(r.text, "sorry, no such tool");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].name, "nope");
    assert_eq!(r.tool_calls[0].result.output, "Unknown tool: nope");
    assert!(r.tool_calls[0].result.is_error);
    let msgs = server.request(1).messages();
    assert_eq!(msgs.last().unwrap(), &json!({"role": "tool", "tool_call_id": "c1", "content": "Unknown tool: nope"}));
}

#[tokio::test]
async fn malformed_or_empty_arguments_become_an_empty_object() {
    let server = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "echo", "{not json"), ("c2", "echo", "")])),
        Reply::json(oa_text("done")),
    ])
    .await;
    let tk = toolkit(vec![echo_tool("echo")]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = client.run("go", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.tool_calls.len(), 2);
    for rec in &r.tool_calls {
        assert_eq!(rec.args, json!({}));
        assert_eq!(rec.result.output, "{}");
        assert!(!rec.result.is_error);
    }
}

#[tokio::test]
async fn several_calls_in_one_turn_answer_in_call_order() {
    let server = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "first", "{}"), ("c2", "second", "{}"), ("c3", "first", "{}")])),
        Reply::json(oa_text("done")),
    ])
    .await;
    let tk = toolkit(vec![text_tool("first", "1"), text_tool("second", "2")]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = client.run("go", &tk, RunOptions::default()).await.unwrap();

    let names: Vec<_> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["first", "second", "first"]);
    let msgs = server.request(1).messages();
    assert_eq!(
        msgs[2..],
        [
            json!({"role": "tool", "tool_call_id": "c1", "content": "1"}),
            json!({"role": "tool", "tool_call_id": "c2", "content": "2"}),
            json!({"role": "tool", "tool_call_id": "c3", "content": "1"}),
        ]
    );
    assert_eq!(r.to_value()["toolCallCount"], 3);
}

#[tokio::test]
async fn the_turn_limit_without_text_is_incomplete() {
    let server = MockLlm::start(|_, i| Action::Reply(Reply::json(oa_calls(&[(&format!("c{i}"), "t", "{}")])))).await;
    let tk = toolkit(vec![text_tool("t", "again")]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.max_turns = 3;
    let client = Client::new(o).unwrap();

    let r = client.run("loop", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(server.count(), 3);
    assert_eq!(r.turns, 3);
    assert_eq!(r.status, RunStatus::Incomplete);
    assert_eq!(r.limit.as_deref(), Some("maxTurns"));
    assert_eq!(r.text, "");
    assert_eq!(r.tool_calls.len(), 3);
    let v = r.to_value();
    assert_eq!(
        keys(&v),
        ["text", "messages", "toolCalls", "toolCallCount", "turns", "usage", "model", "status", "limit"]
    );
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["limit"], "maxTurns");
}

#[tokio::test]
async fn the_turn_limit_with_text_alongside_calls_is_done() {
    // The last assistant message with string content supplies the text; a text means "done".
    let server = MockLlm::start(|_, _| {
        let mut reply = oa_calls(&[("c", "t", "{}")]);
        reply["choices"][0]["message"]["content"] = json!("still working");
        Action::Reply(Reply::json(reply))
    })
    .await;
    let tk = toolkit(vec![text_tool("t", "again")]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.max_turns = 2;
    let client = Client::new(o).unwrap();

    let r = client.run("loop", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.turns, 2);
    assert_eq!(r.text, "still working");
    assert_eq!(r.status, RunStatus::Done);
    assert!(r.limit.is_none());
    assert!(r.to_value().get("limit").is_none());
}

#[tokio::test]
async fn request_params_merge_into_the_body_except_forbidden_keys() {
    let server = MockLlm::script(vec![Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![text_tool("t", "x")]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.request_params = Some(map(json!({"temperature": 0, "messages": [], "tool_choice": "none"})));
    let client = Client::new(o).unwrap();
    client.run("q", &tk, RunOptions::default()).await.unwrap();
    let seen = server.request(0);
    assert_eq!(seen.body_keys(), ["model", "messages", "tools", "tool_choice", "temperature"]);
    assert_eq!(seen.body["tool_choice"], "none");
    assert_eq!(seen.messages().len(), 1);
}

#[tokio::test]
async fn body_transform_sees_the_merged_body_and_may_replace_it() {
    let server = MockLlm::script(vec![Reply::json(oa_text("one")), Reply::json(oa_text("two"))]).await;
    let tk = toolkit(vec![]).await;
    let seen: Log<Value> = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    o.request_params = Some(map(json!({"max_tokens": 7})));
    let s = seen.clone();
    o.body_transform = Some(toolnexus_core::client::callback(move |body: Value| {
        let s = s.clone();
        async move {
            s.push(body.clone());
            let mut b = body;
            b["transformed"] = json!(true);
            Ok(b)
        }
    }));
    let client = Client::new(o.clone()).unwrap();
    client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(seen.all()[0], json!({"model": "m", "messages": [{"role": "user", "content": "q"}], "max_tokens": 7}));
    let sent = server.request(0);
    assert_eq!(sent.body_keys(), ["model", "messages", "max_tokens", "transformed"]);

    // A null answer leaves the body as it was.
    o.body_transform = Some(toolnexus_core::client::callback(|_| async { Ok(Value::Null) }));
    let client = Client::new(o).unwrap();
    client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(server.request(1).body_keys(), ["model", "messages", "max_tokens"]);
}

#[tokio::test]
async fn client_options_are_validated_and_defaulted() {
    let o = toolnexus_core::client::ClientOptions::new("http://x", Style::OpenAI, "m");
    assert_eq!(o.max_turns, 10);
    assert_eq!(o.retries, 2);
    assert_eq!(o.retry_base_ms, 500.0);
    assert!(o.timeout_ms.is_none());
}

#[tokio::test]
async fn a_client_without_a_model_is_built_and_sends_no_model_key() {
    // As the reference: nothing is refused up front; an endpoint that needs no model answers.
    let server = MockLlm::script(vec![Reply::json(oa_text("hi"))]).await;
    let tk = toolkit(vec![]).await;
    let mut opts = options(&server.url(), Style::OpenAI);
    opts.model = String::new();
    let client = Client::new(opts).unwrap();
    let r = client.run("x", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.text, "hi");
    assert_eq!(server.request(0).body_keys(), ["messages"]);
}

#[tokio::test]
async fn a_client_without_a_base_url_fails_at_the_run_not_when_built() {
    let tk = toolkit(vec![]).await;
    let mut opts = options("", Style::OpenAI);
    opts.retries = 0;
    let client = Client::new(opts).unwrap();
    assert!(client.run("x", &tk, RunOptions::default()).await.is_err());
}
