//! The model's tool calls: unknown tools and unreadable arguments answer as results and the
//! run goes on; several calls of one turn answer in call order.

use serde_json::json;
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};

use crate::common::*;

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
