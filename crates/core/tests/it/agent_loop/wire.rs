//! What the loop sends: each turn's request on the wire (path, headers, body and its key
//! order), the result's wire shape, and what the caller's options add to the request.

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
async fn a_tool_turn_then_a_text_turn_on_the_wire_openai() {
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
async fn a_tool_turn_then_a_text_turn_on_the_wire_anthropic() {
    let turn1 = an_reply(json!([
        an_text("Let me look."),
        an_use("tu_1", "lookup", json!({"q": "x"})),
        an_use("tu_2", "broken", json!({})),
    ]));
    let server = MockLlm::script(vec![
        Reply::json(with_usage(turn1.clone(), json!({"input_tokens": 11, "output_tokens": 7}))),
        Reply::json(with_usage(
            an_reply(json!([an_text("Found "), an_text("it.")])),
            json!({"input_tokens": 13, "output_tokens": 2}),
        )),
    ])
    .await;
    let tk = toolkit(vec![
        fn_tool("lookup", |args: Value, _| async move { RunOutput::Text(format!("result for {}", args["q"])) }),
        fn_tool("broken", |_, _| async move { RunOutput::Thrown("boom".into()) }),
    ])
    .await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();

    let r = client.run("find x", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(server.count(), 2);
    for seen in server.requests() {
        assert_eq!(seen.method, "POST");
        assert_eq!(seen.path, "/v1/messages");
        assert_eq!(seen.header("x-api-key"), Some("k"));
        assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(seen.header("content-type"), Some("application/json"));
        assert_eq!(seen.header("authorization"), None);
        assert_eq!(seen.body_keys(), ["model", "max_tokens", "system", "messages", "tools"]);
        assert!(
            seen.raw.starts_with(r#"{"model":"m","max_tokens":4096,"system":"","messages":["#),
            "raw: {}",
            seen.raw
        );
        assert_eq!(seen.body["tools"], Value::Array(tk.to_anthropic()));
    }

    // The prompt is the only message at first; the system prompt never enters `messages`.
    assert_eq!(server.request(0).messages(), vec![json!({"role": "user", "content": "find x"})]);

    // Turn 2: the assistant content as sent, then ONE user message with every tool_result.
    let msgs = server.request(1).messages();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1], json!({"role": "assistant", "content": turn1["content"]}));
    assert_eq!(
        msgs[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu_1", "content": "result for \"x\"", "is_error": false},
            {"type": "tool_result", "tool_use_id": "tu_2", "content": "boom", "is_error": true},
        ]})
    );
    assert_eq!(keys(&msgs[2]["content"][0]), ["type", "tool_use_id", "content", "is_error"]);

    assert_eq!(r.text, "Found it.");
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.turns, 2);
    assert_eq!(r.usage.prompt_tokens, 24);
    assert_eq!(r.usage.completion_tokens, 9);
    assert_eq!(r.usage.total_tokens, 33);
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[0].name, "lookup");
    assert_eq!(r.tool_calls[0].args, json!({"q": "x"}));
    assert_eq!(r.tool_calls[1].name, "broken");
    assert!(r.tool_calls[1].result.is_error);
    assert_eq!(r.messages.len(), 4);
    assert_eq!(r.messages[3], json!({"role": "assistant", "content": [an_text("Found "), an_text("it.")]}));
    let v = r.to_value();
    assert_eq!(keys(&v), ["text", "messages", "toolCalls", "toolCallCount", "turns", "usage", "model", "status"]);
    assert_eq!(v["usage"], json!({"promptTokens": 24, "completionTokens": 9, "totalTokens": 33}));
    assert_eq!(v["toolCallCount"], 2);
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
async fn a_trailing_slash_on_the_base_is_not_doubled() {
    let server = MockLlm::script(vec![Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&format!("{}/api/v1/", server.url()), Style::OpenAI)).unwrap();
    client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(server.request(0).path, "/api/v1/chat/completions");
}

#[tokio::test]
async fn a_v1_base_is_not_doubled() {
    for suffix in ["/v1", "/v1/"] {
        let server = MockLlm::script(vec![Reply::json(an_reply(json!([an_text("ok")])))]).await;
        let tk = toolkit(vec![]).await;
        let client = Client::new(options(&format!("{}{suffix}", server.url()), Style::Anthropic)).unwrap();
        client.run("q", &tk, RunOptions::default()).await.unwrap();
        assert_eq!(server.request(0).path, "/v1/messages", "base suffix {suffix:?}");
    }
    // Without /v1 it is appended, after a trailing slash is dropped.
    let server = MockLlm::script(vec![Reply::json(an_reply(json!([an_text("ok")])))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&format!("{}/proxy/", server.url()), Style::Anthropic)).unwrap();
    client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(server.request(0).path, "/proxy/v1/messages");
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
