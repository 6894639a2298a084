//! What the loop sends: each turn's request on the wire (path, headers, body and its key
//! order), the result's wire shape, and what the caller's options add to the request.

use serde_json::{json, Value};
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};
use toolnexus_core::types::ToolResult;

use crate::common::*;

fn add_tool() -> toolnexus_core::tool::SharedTool {
    fn_tool("add", |args: Value, _| async move {
        let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
        ToolResult::ok(sum.to_string())
    })
}

/// One tool turn, then a text turn: each request on the wire, what the second one carries,
/// and the result with its wire shape. Each style plays its own script — OpenAI: one `add`
/// call, with the usage total given once and left out once; Anthropic: a text block beside two
/// `tool_use` blocks, one for a tool that throws — and is held to its own expectations where
/// the styles differ.
async fn a_tool_turn_then_a_text_turn_on_the_wire(style: Style) {
    let (prompt, turn1, turn2, tools) = match style {
        Style::OpenAI => (
            "what is 2+3?",
            with_usage(
                oa_calls(&[("call_1", "add", r#"{"a":2,"b":3}"#)]),
                json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
            ),
            // No total_tokens: the total is prompt + completion.
            with_usage(oa_text("It is 5."), json!({"prompt_tokens": 20, "completion_tokens": 3})),
            vec![add_tool()],
        ),
        Style::Anthropic => (
            "find x",
            with_usage(
                an_reply(json!([
                    an_text("Let me look."),
                    an_use("tu_1", "lookup", json!({"q": "x"})),
                    an_use("tu_2", "broken", json!({})),
                ])),
                json!({"input_tokens": 11, "output_tokens": 7}),
            ),
            with_usage(
                an_reply(json!([an_text("Found "), an_text("it.")])),
                json!({"input_tokens": 13, "output_tokens": 2}),
            ),
            vec![
                fn_tool("lookup", |args: Value, _| async move { ToolResult::ok(format!("result for {}", args["q"])) }),
                fn_tool("broken", |_, _| async move { ToolResult::error("boom") }),
            ],
        ),
    };
    let server = MockLlm::script(vec![Reply::json(turn1.clone()), Reply::json(turn2)]).await;
    let tk = toolkit(tools).await;
    let client = Client::new(options(&server.url(), style)).unwrap();

    let r = client.run(prompt, &tk, RunOptions::default()).await.unwrap();

    assert_eq!(server.count(), 2);
    for seen in server.requests() {
        assert_eq!(seen.method, "POST");
        assert_eq!(seen.header("content-type"), Some("application/json"));
        match style {
            Style::OpenAI => {
                assert_eq!(seen.path, "/chat/completions");
                assert_eq!(seen.header("authorization"), Some("Bearer k"));
                assert_eq!(seen.body_keys(), ["model", "messages", "tools", "tool_choice"]);
                assert!(seen.raw.starts_with(r#"{"model":"m","messages":["#), "raw body: {}", seen.raw);
                assert_eq!(seen.body["model"], "m");
                assert_eq!(seen.body["tool_choice"], "auto");
                assert_eq!(seen.body["tools"], Value::Array(tk.to_openai()));
            }
            Style::Anthropic => {
                assert_eq!(seen.path, "/v1/messages");
                assert_eq!(seen.header("x-api-key"), Some("k"));
                assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(seen.header("authorization"), None);
                assert_eq!(seen.body_keys(), ["model", "max_tokens", "system", "messages", "tools"]);
                assert!(
                    seen.raw.starts_with(r#"{"model":"m","max_tokens":4096,"system":"","messages":["#),
                    "raw: {}",
                    seen.raw
                );
                assert_eq!(seen.body["tools"], Value::Array(tk.to_anthropic()));
            }
        }
    }

    // Turn 1: only the user prompt (no system prompt configured, no skills; the Anthropic
    // style's system prompt never enters `messages`).
    let user = json!({"role": "user", "content": prompt});
    assert_eq!(server.request(0).messages(), vec![user.clone()]);

    // Turn 2: the assistant turn exactly as the endpoint sent it, then the tool results: a
    // message a call in the OpenAI style, ONE user message with every tool_result in the
    // Anthropic style.
    let msgs = server.request(1).messages();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0], user);
    match style {
        Style::OpenAI => {
            // As the endpoint sent it, but for a null `content`, which goes out as "" (COMPAT).
            let mut sent_back = turn1["choices"][0]["message"].clone();
            if sent_back["content"].is_null() {
                sent_back["content"] = "".into();
            }
            assert_eq!(msgs[1], sent_back);
            assert_eq!(msgs[2], json!({"role": "tool", "tool_call_id": "call_1", "content": "5"}));
            assert_eq!(keys(&msgs[2]), ["role", "tool_call_id", "content"]);
        }
        Style::Anthropic => {
            assert_eq!(msgs[1], json!({"role": "assistant", "content": turn1["content"]}));
            assert_eq!(
                msgs[2],
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "tu_1", "content": "result for \"x\"", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "tu_2", "content": "boom", "is_error": true},
                ]})
            );
            assert_eq!(keys(&msgs[2]["content"][0]), ["type", "tool_use_id", "content", "is_error"]);
        }
    }

    // The result.
    let (text, usage, tool_calls, last) = match style {
        Style::OpenAI => (
            "It is 5.",
            (30, 8, 15 + 23),
            json!([{"name": "add", "args": {"a": 2, "b": 3}, "output": "5", "isError": false}]),
            json!({"role": "assistant", "content": "It is 5."}),
        ),
        Style::Anthropic => (
            "Found it.",
            (24, 9, 33),
            json!([
                {"name": "lookup", "args": {"q": "x"}, "output": "result for \"x\"", "isError": false},
                {"name": "broken", "args": {}, "output": "boom", "isError": true},
            ]),
            json!({"role": "assistant", "content": [an_text("Found "), an_text("it.")]}),
        ),
    };
    assert_eq!(r.text, text);
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.turns, 2);
    assert_eq!(r.model, "m");
    assert!(r.pending.is_none());
    assert!(r.limit.is_none());
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens), usage);
    match style {
        Style::OpenAI => {
            assert_eq!(r.tool_calls.len(), 1);
            assert_eq!(r.tool_calls[0].name, "add");
            assert_eq!(r.tool_calls[0].args, json!({"a": 2, "b": 3}));
            assert_eq!(r.tool_calls[0].result.output, "5");
            assert!(!r.tool_calls[0].result.is_error);
        }
        Style::Anthropic => {
            assert_eq!(r.tool_calls.len(), 2);
            assert_eq!(r.tool_calls[0].name, "lookup");
            assert_eq!(r.tool_calls[0].args, json!({"q": "x"}));
            assert_eq!(r.tool_calls[1].name, "broken");
            assert!(r.tool_calls[1].result.is_error);
        }
    }
    assert_eq!(r.messages.len(), 4);
    assert_eq!(r.messages[3], last);

    // The wire shape of the result, key order included.
    let v = r.to_value();
    assert_eq!(keys(&v), ["text", "messages", "toolCalls", "toolCallCount", "turns", "usage", "model", "status"]);
    assert_eq!(v["text"], text);
    assert_eq!(v["toolCallCount"], r.tool_calls.len());
    assert_eq!(v["turns"], 2);
    assert_eq!(v["model"], "m");
    assert_eq!(v["status"], "done");
    assert_eq!(keys(&v["usage"]), ["promptTokens", "completionTokens", "totalTokens"]);
    assert_eq!(v["usage"], json!({"promptTokens": usage.0, "completionTokens": usage.1, "totalTokens": usage.2}));
    assert_eq!(v["toolCalls"], tool_calls);
    assert_eq!(keys(&v["toolCalls"][0]), ["name", "args", "output", "isError"]);
    assert_eq!(v["messages"], Value::Array(r.messages.clone()));
}

crate::per_style!(a_tool_turn_then_a_text_turn_on_the_wire);

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

/// Each `(suffix, path)`: a client whose base URL is the endpoint's followed by `suffix`
/// posts to `path`.
async fn bases_reach(style: Style, cases: &[(&str, &str)]) {
    for (suffix, path) in cases {
        let server = MockLlm::script(vec![Reply::json(text_reply(style, "ok"))]).await;
        let tk = toolkit(vec![]).await;
        let client = Client::new(options(&format!("{}{suffix}", server.url()), style)).unwrap();
        client.run("q", &tk, RunOptions::default()).await.unwrap();
        assert_eq!(server.request(0).path, *path, "base suffix {suffix:?}");
    }
}

#[tokio::test]
async fn a_trailing_slash_on_the_base_is_not_doubled() {
    bases_reach(Style::OpenAI, &[("/api/v1/", "/api/v1/chat/completions")]).await;
}

#[tokio::test]
async fn a_v1_base_is_not_doubled() {
    bases_reach(
        Style::Anthropic,
        &[
            ("/v1", "/v1/messages"),
            ("/v1/", "/v1/messages"),
            // Without /v1 it is appended, after a trailing slash is dropped.
            ("/proxy/", "/proxy/v1/messages"),
        ],
    )
    .await;
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
    o.body_transform = Some(toolnexus_core::callback::callback(move |body: Value| {
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
    o.body_transform = Some(toolnexus_core::callback::callback(|_| async { Ok(Value::Null) }));
    let client = Client::new(o).unwrap();
    client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(server.request(1).body_keys(), ["model", "messages", "max_tokens"]);
}
