//! The Anthropic-style loop against a scripted endpoint: endpoint, headers, body shape,
//! tool_result blocks, usage mapping and the turn limit.

use serde_json::{json, Value};
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};
use toolnexus_core::native::RunOutput;

use crate::common::*;

#[tokio::test]
async fn a_tool_turn_then_a_text_turn_on_the_wire() {
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
async fn the_system_prompt_rides_the_body_and_tools_are_omitted_when_empty() {
    let server = MockLlm::script(vec![Reply::json(an_reply(json!([an_text("hi")])))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::Anthropic);
    o.system_prompt = Some("Be brief.".into());
    let client = Client::new(o).unwrap();

    let history = vec![json!({"role": "user", "content": "before"}), json!({"role": "assistant", "content": "ok"})];
    let r =
        client.run("hello", &tk, RunOptions { history: Some(history.clone()), ..Default::default() }).await.unwrap();

    let seen = server.request(0);
    assert_eq!(seen.body_keys(), ["model", "max_tokens", "system", "messages"]);
    assert_eq!(seen.body["system"], "Be brief.");
    assert_eq!(seen.body["max_tokens"], 4096);
    let msgs = seen.messages();
    assert_eq!(msgs[..2], history[..]);
    assert_eq!(msgs[2], json!({"role": "user", "content": "hello"}));
    assert_eq!(msgs.len(), 3);
    assert_eq!(r.text, "hi");
    assert_eq!(r.turns, 1);
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
async fn the_turn_limit_is_incomplete_even_with_text() {
    let server = MockLlm::start(|_, i| {
        Action::Reply(Reply::json(with_usage(
            an_reply(json!([an_text("thinking"), an_use(&format!("tu_{i}"), "t", json!({"n": i}))])),
            json!({"input_tokens": 1, "output_tokens": 1}),
        )))
    })
    .await;
    let tk = toolkit(vec![text_tool("t", "more")]).await;
    let mut o = options(&server.url(), Style::Anthropic);
    o.max_turns = 3;
    let client = Client::new(o).unwrap();

    let r = client.run("loop", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(server.count(), 3);
    assert_eq!(r.turns, 3);
    assert_eq!(r.text, "");
    assert_eq!(r.status, RunStatus::Incomplete);
    assert_eq!(r.limit.as_deref(), Some("maxTurns"));
    assert_eq!(r.tool_calls.len(), 3);
    assert_eq!(r.usage.total_tokens, 6);
    // prompt, then (assistant, user tool_result) per turn.
    assert_eq!(r.messages.len(), 1 + 2 * 3);
    let v = r.to_value();
    assert_eq!(
        keys(&v),
        ["text", "messages", "toolCalls", "toolCallCount", "turns", "usage", "model", "status", "limit"]
    );
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["limit"], "maxTurns");
}

#[tokio::test]
async fn missing_input_is_an_empty_object_and_usage_may_be_absent() {
    let server = MockLlm::script(vec![
        Reply::json(an_reply(json!([{"type": "tool_use", "id": "tu_1", "name": "echo"}]))),
        Reply::json(an_reply(json!([an_text("ok")]))),
    ])
    .await;
    let tk = toolkit(vec![echo_tool("echo")]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.tool_calls[0].args, json!({}));
    assert_eq!(r.tool_calls[0].result.output, "{}");
    assert_eq!(r.usage.total_tokens, 0);
    assert_eq!(r.text, "ok");
}

#[tokio::test]
async fn an_unknown_tool_is_an_error_block() {
    let server = MockLlm::script(vec![
        Reply::json(an_reply(json!([an_use("tu_1", "ghost", json!({}))]))),
        Reply::json(an_reply(json!([an_text("fine")]))),
    ])
    .await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.status, RunStatus::Done);
    let msgs = server.request(1).messages();
    assert_eq!(
        msgs[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu_1", "content": "Unknown tool: ghost", "is_error": true}
        ]})
    );
    // The empty toolkit still omits `tools` on every turn.
    assert!(server.requests().iter().all(|s| s.body.get("tools").is_none()));
}
