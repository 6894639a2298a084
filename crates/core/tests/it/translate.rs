//! Single-turn translation (SPEC §11) over the scripted endpoint: the request each style
//! sends (body keys, lower-case headers), the OpenAI-shaped result, a toolkit that is
//! declared but never run, and hooks that fire exactly once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolnexus_core::client::one_call::{tool_calls_json, TranslateRequest, TranslateResult};
use toolnexus_core::client::{Client, ClientOptions, Style};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::ToolResult;

use crate::common::*;

/// A toolkit tool that records whether it ever ran.
fn guarded_tool(name: &str, ran: Arc<AtomicBool>) -> SharedTool {
    fn_tool(name, move |_, _| {
        let ran = ran.clone();
        async move {
            ran.store(true, Ordering::SeqCst);
            ToolResult::ok("must never run")
        }
    })
}

/// An OpenAI `tools` entry, as a caller passes it.
fn ext_tool(name: &str) -> Value {
    json!({"type": "function", "function": {"name": name, "description": "external", "parameters": {"type": "object", "properties": {"q": {"type": "number"}}}}})
}

pub(crate) fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// Options over a recording transport (headers as assembled) sending to the mock server.
fn recorded(base: &str, style: Style) -> (ClientOptions, Arc<RecordingTransport>) {
    let t = RecordingTransport::new();
    let mut o = options(base, style);
    o.transport = Some(t.clone());
    (o, t)
}

fn header_pairs(t: &RecordingTransport, i: usize) -> Vec<(String, String)> {
    t.requests()[i].headers.clone()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

// ---------------------------------------------------------------------------------------
// OpenAI style
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn openai_sends_everything_verbatim_with_toolkit_declarations_first() {
    let reply = json!({
        "id": "chatcmpl-t",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "secret", "arguments": "{\"a\":1}"}},
                {"id": "c2", "type": "function", "function": {"name": "ext", "arguments": {"q": 2}}}
            ]
        }}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    });
    let server = MockLlm::script(vec![Reply::json(reply.clone())]).await;
    let ran = Arc::new(AtomicBool::new(false));
    let tk = toolkit(vec![guarded_tool("secret", ran.clone())]).await;
    let (mut o, transport) = recorded(&server.url(), Style::OpenAI);
    o.system_prompt = Some("be brief".into());
    o.headers = vec![("X-Trace".into(), "t-1".into())];
    let client = Client::new(o).unwrap();

    let res = client
        .translate(
            TranslateRequest {
                messages: vec![user("hi")],
                tools: vec![ext_tool("ext")],
                tool_choice: Some(json!({"type": "function", "function": {"name": "ext"}})),
                max_tokens: Some(256.0),
                ..Default::default()
            },
            Some(&tk),
        )
        .await
        .unwrap();

    let seen = server.request(0);
    assert_eq!(seen.path, "/chat/completions");
    assert_eq!(seen.body_keys(), ["model", "messages", "tools", "tool_choice", "max_tokens"]);
    assert_eq!(seen.body["messages"], json!([{"role": "system", "content": "be brief"}, user("hi")]));
    let mut tools = tk.to_openai();
    tools.push(ext_tool("ext"));
    assert_eq!(seen.body["tools"], Value::Array(tools), "toolkit first, then the caller's");
    assert_eq!(seen.body["tool_choice"], json!({"type": "function", "function": {"name": "ext"}}));
    assert!(seen.raw.ends_with(r#","max_tokens":256}"#), "{}", seen.raw);
    assert_eq!(
        header_pairs(&transport, 0),
        pairs(&[("content-type", "application/json"), ("authorization", "Bearer k"), ("X-Trace", "t-1")])
    );

    assert_eq!(keys(&res.to_value()), ["text", "toolCalls", "finishReason", "usage", "model", "raw"]);
    assert_eq!(res.text, "");
    assert_eq!(res.finish_reason, "tool_calls");
    assert_eq!(
        Value::Array(res.tool_calls.iter().map(|c| c.to_value()).collect()).to_string(),
        r#"[{"id":"c1","name":"secret","arguments":"{\"a\":1}"},{"id":"c2","name":"ext","arguments":"{\"q\":2}"}]"#,
        "arguments are always a JSON string"
    );
    assert_eq!(res.to_value()["usage"], json!({"promptTokens": 12, "completionTokens": 5, "totalTokens": 17}));
    assert_eq!(res.model, "m");
    assert_eq!(res.raw, reply);
    assert!(!ran.load(Ordering::SeqCst), "a declared tool is never executed");
    assert_eq!(server.count(), 1, "exactly one provider call");

    let as_message: Vec<Value> = res.tool_calls.iter().map(|c| c.to_value()).collect();
    assert_eq!(
        tool_calls_json(&as_message)[0],
        json!({"id": "c1", "type": "function", "function": {"name": "secret", "arguments": "{\"a\":1}"}})
    );
}

#[tokio::test]
async fn openai_minimal_body_has_only_model_and_messages() {
    let server = MockLlm::script(vec![Reply::json(oa_text("plain"))]).await;
    let (o, transport) = recorded(&server.url(), Style::OpenAI);
    let client = Client::new(o).unwrap();

    let res = client
        .translate(TranslateRequest { messages: vec![user("hi")], max_tokens: Some(0.0), ..Default::default() }, None)
        .await
        .unwrap();

    let seen = server.request(0);
    assert_eq!(seen.body_keys(), ["model", "messages"], "0 tokens, no tools, no choice: keys left out");
    assert_eq!(seen.raw, r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#);
    assert_eq!(
        header_pairs(&transport, 0),
        pairs(&[("content-type", "application/json"), ("authorization", "Bearer k")])
    );
    assert_eq!(res.text, "plain");
    assert_eq!(res.finish_reason, "stop");
    assert!(res.tool_calls.is_empty());
    assert_eq!(res.to_value()["usage"], json!({"promptTokens": 0, "completionTokens": 0, "totalTokens": 0}));
}

#[tokio::test]
async fn openai_system_precedence() {
    let server = MockLlm::start(|_, _| Action::Reply(Reply::json(oa_text("x")))).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.system_prompt = Some("from options".into());
    let client = Client::new(o).unwrap();
    let call = |messages: Vec<Value>, system: Option<&str>| TranslateRequest {
        messages,
        system: system.map(str::to_string),
        ..Default::default()
    };

    client.translate(call(vec![user("a")], Some("explicit")), None).await.unwrap();
    client
        .translate(call(vec![json!({"role": "developer", "content": "own"}), user("b")], Some("explicit")), None)
        .await
        .unwrap();
    client.translate(call(vec![user("c")], None), None).await.unwrap();

    assert_eq!(server.request(0).messages()[0], json!({"role": "system", "content": "explicit"}));
    assert_eq!(
        server.request(1).messages(),
        vec![json!({"role": "developer", "content": "own"}), user("b")],
        "a caller's own system/developer message is kept and nothing is added"
    );
    assert_eq!(server.request(2).messages()[0], json!({"role": "system", "content": "from options"}));
}

/// The same question translated once a reply, in turn: the results, in order.
async fn translate_each(style: Style, replies: Vec<Value>) -> Vec<TranslateResult> {
    let count = replies.len();
    let server = MockLlm::script(replies.into_iter().map(Reply::json).collect()).await;
    let client = Client::new(options(&server.url(), style)).unwrap();
    let mut results = vec![];
    for _ in 0..count {
        let ask = TranslateRequest { messages: vec![user("q")], ..Default::default() };
        results.push(client.translate(ask, None).await.unwrap());
    }
    results
}

fn finish_reasons(results: &[TranslateResult]) -> Vec<&str> {
    results.iter().map(|r| r.finish_reason.as_str()).collect()
}

#[tokio::test]
async fn openai_finish_reason_is_the_providers_or_derived() {
    let got = translate_each(
        Style::OpenAI,
        vec![
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "cut"}, "finish_reason": "length"}]}),
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f"}},
                    {"id": "d", "type": "function", "function": {"name": "g", "arguments": ""}}
                ]}}]}),
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "no reason"}}]}),
        ],
    )
    .await;

    assert_eq!(finish_reasons(&got), ["length", "tool_calls", "stop"]);
    assert_eq!(got[0].text, "cut");
    assert_eq!(got[1].tool_calls[0].arguments, "{}", "missing arguments read as an empty object");
    assert_eq!(got[1].tool_calls[1].arguments, "", "a string is passed through as it is");
}

// ---------------------------------------------------------------------------------------
// Anthropic style
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn anthropic_converts_the_request_and_the_reply() {
    let reply = json!({
        "id": "msg_t", "type": "message", "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me "},
            {"type": "text", "text": "check."},
            {"type": "tool_use", "id": "tu_9", "name": "secret", "input": {"a": 1}},
            {"type": "tool_use", "id": "tu_10", "name": "ext", "input": {"q": 3}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 30, "output_tokens": 9}
    });
    let server = MockLlm::script(vec![Reply::json(reply.clone())]).await;
    let ran = Arc::new(AtomicBool::new(false));
    let tk = toolkit(vec![guarded_tool("secret", ran.clone())]).await;
    let (o, transport) = recorded(&server.url(), Style::Anthropic);
    let client = Client::new(o).unwrap();

    let res = client
        .translate(
            TranslateRequest {
                messages: vec![
                    json!({"role": "system", "content": "sys A"}),
                    user("hi"),
                    json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": "t1", "type": "function", "function": {"name": "ext", "arguments": "{\"q\":1}"}},
                        {"id": "t2", "type": "function", "function": {"name": "ext", "arguments": {"q": 2}}}
                    ]}),
                    json!({"role": "tool", "tool_call_id": "t1", "content": "r1"}),
                    json!({"role": "tool", "tool_call_id": "t2", "content": "r2"}),
                ],
                tools: vec![ext_tool("ext")],
                tool_choice: Some(json!("required")),
                ..Default::default()
            },
            Some(&tk),
        )
        .await
        .unwrap();

    let seen = server.request(0);
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.body_keys(), ["model", "max_tokens", "messages", "system", "tools", "tool_choice"]);
    assert_eq!(seen.body["max_tokens"], 4096);
    assert_eq!(seen.body["system"], "sys A", "system messages are hoisted");
    assert_eq!(
        seen.body["messages"],
        json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "ext", "input": {"q": 1}},
                {"type": "tool_use", "id": "t2", "name": "ext", "input": {"q": 2}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "r1"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "r2"}
            ]}
        ]),
        "consecutive tool results merge into one user turn"
    );
    let tools = seen.body["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0], tk.to_anthropic()[0], "toolkit declarations come first");
    assert_eq!(
        tools[1],
        json!({"name": "ext", "description": "external", "input_schema": {"type": "object", "properties": {"q": {"type": "number"}}}})
    );
    assert_eq!(seen.body["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        header_pairs(&transport, 0),
        pairs(&[("content-type", "application/json"), ("x-api-key", "k"), ("anthropic-version", "2023-06-01")])
    );

    assert_eq!(res.text, "Let me check.");
    assert_eq!(res.finish_reason, "tool_calls");
    assert_eq!(
        Value::Array(res.tool_calls.iter().map(|c| c.to_value()).collect()).to_string(),
        r#"[{"id":"tu_9","name":"secret","arguments":"{\"a\":1}"},{"id":"tu_10","name":"ext","arguments":"{\"q\":3}"}]"#
    );
    assert_eq!(res.to_value()["usage"], json!({"promptTokens": 30, "completionTokens": 9, "totalTokens": 39}));
    assert_eq!(res.raw, reply);
    assert!(!ran.load(Ordering::SeqCst), "a declared tool is never executed");
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn anthropic_minimal_body_and_explicit_values() {
    let server = MockLlm::start(|_, _| Action::Reply(Reply::json(an_reply(json!([an_text("ok")]))))).await;
    let mut o = options(&format!("{}/v1/", server.url()), Style::Anthropic);
    o.system_prompt = Some("opt system".into());
    let client = Client::new(o).unwrap();

    client
        .translate(
            TranslateRequest {
                messages: vec![user("a")],
                max_tokens: Some(0.0),
                tool_choice: Some(json!("auto")),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    client
        .translate(
            TranslateRequest {
                messages: vec![json!({"role": "system", "content": "hoisted"}), user("b")],
                system: Some("explicit".into()),
                max_tokens: Some(100.0),
                tool_choice: Some(json!({"type": "function", "function": {"name": "f"}})),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();

    let first = server.request(0);
    assert_eq!(first.path, "/v1/messages", "a base ending in /v1 is not doubled");
    assert_eq!(first.body_keys(), ["model", "max_tokens", "messages", "system"]);
    assert_eq!(first.body["max_tokens"], 4096, "0 means the default");
    assert_eq!(first.body["system"], "opt system");
    let second = server.request(1);
    assert_eq!(second.body_keys(), ["model", "max_tokens", "messages", "system", "tool_choice"]);
    assert_eq!(second.body["max_tokens"], 100);
    assert_eq!(second.body["system"], "explicit", "request.system wins over hoisted messages");
    assert_eq!(second.body["messages"], json!([user("b")]));
    assert_eq!(second.body["tool_choice"], json!({"type": "tool", "name": "f"}));
}

#[tokio::test]
async fn anthropic_stop_reasons_map_to_openai_finish_reasons() {
    let stop = |reason: &str| json!({"type": "message", "role": "assistant", "content": [an_text("t")], "stop_reason": reason});
    let got = translate_each(
        Style::Anthropic,
        vec![
            stop("end_turn"),
            stop("max_tokens"),
            stop("refusal"),
            stop("stop_sequence"),
            json!({"type": "message", "role": "assistant", "content": [an_use("u", "f", json!(null))], "stop_reason": "max_tokens"}),
        ],
    )
    .await;

    assert_eq!(finish_reasons(&got), ["stop", "length", "content_filter", "stop", "tool_calls"]);
    assert_eq!(got[4].tool_calls[0].arguments, "{}", "a missing input is an empty object");
    assert!(got[..4].iter().all(|r| r.tool_calls.is_empty()));
}

// ---------------------------------------------------------------------------------------
// Hooks, metrics, failures
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn llm_hooks_fire_once_with_turn_zero_and_tool_hooks_never() {
    for style in [Style::OpenAI, Style::Anthropic] {
        let reply = match style {
            Style::OpenAI => {
                with_usage(oa_calls(&[("c1", "secret", "{}")]), json!({"prompt_tokens": 3, "completion_tokens": 1}))
            }
            Style::Anthropic => with_usage(
                an_reply(json!([an_use("u1", "secret", json!({}))])),
                json!({"input_tokens": 3, "output_tokens": 1}),
            ),
        };
        let server = MockLlm::script(vec![Reply::json(reply.clone())]).await;
        let ran = Arc::new(AtomicBool::new(false));
        let tk = toolkit(vec![guarded_tool("secret", ran.clone())]).await;
        let (before, after, tool_hooks, metrics) = (Log::default(), Log::default(), Log::default(), Log::default());
        let mut o = options(&server.url(), style);
        o.hooks.before_llm = Some(recorder(before.clone()));
        o.hooks.after_llm = Some(recorder(after.clone()));
        o.hooks.before_tool = Some(recorder(tool_hooks.clone()));
        o.hooks.after_tool = Some(recorder(tool_hooks.clone()));
        o.on_metric = Some(recorder(metrics.clone()));
        let client = Client::new(o).unwrap();

        let res = client
            .translate(TranslateRequest { messages: vec![user("q")], ..Default::default() }, Some(&tk))
            .await
            .unwrap();

        assert_eq!(res.finish_reason, "tool_calls");
        assert_eq!(before.len(), 1);
        let b = &before.all()[0];
        assert_eq!(keys(b), ["messages", "tools", "model", "turn"]);
        assert_eq!(b["turn"], 0);
        assert_eq!(b["model"], "m");
        assert_eq!(b["messages"], json!([user("q")]));
        let declared = match style {
            Style::OpenAI => tk.to_openai(),
            Style::Anthropic => tk.to_anthropic(),
        };
        assert_eq!(b["tools"], Value::Array(declared));
        assert_eq!(after.len(), 1);
        assert_eq!(after.all()[0], json!({"response": reply, "model": "m", "turn": 0}));
        assert_eq!(tool_hooks.len(), 0, "no tool runs, so no tool hook fires");
        assert!(!ran.load(Ordering::SeqCst));
        assert_eq!(
            metrics.all().iter().map(|m| zero_ms(m.clone()).to_string()).collect::<Vec<_>>(),
            [r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":3,"completionTokens":1}"#],
            "one llm event, no tool or run event"
        );
    }
}

#[tokio::test]
async fn before_llm_may_replace_messages_and_tools() {
    let server = MockLlm::script(vec![Reply::json(oa_text("x"))]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.hooks.before_llm = Some(toolnexus_core::callback::callback(|_| async {
        Ok(json!({"messages": [{"role": "user", "content": "replaced"}], "tools": []}))
    }));
    let client = Client::new(o).unwrap();

    client
        .translate(
            TranslateRequest { messages: vec![user("original")], tools: vec![ext_tool("ext")], ..Default::default() },
            None,
        )
        .await
        .unwrap();

    let seen = server.request(0);
    assert_eq!(seen.body_keys(), ["model", "messages"], "an emptied tool list leaves the key out");
    assert_eq!(seen.messages(), vec![user("replaced")]);
}

#[tokio::test]
async fn a_failed_translate_is_the_http_error() {
    let server = MockLlm::script(vec![Reply::raw(401, "bad key")]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();

    let e =
        client.translate(TranslateRequest { messages: vec![user("q")], ..Default::default() }, None).await.unwrap_err();

    assert_eq!(e.to_string(), "LLM 401: bad key");
    assert_eq!(server.count(), 1);
}
