//! The model's tool calls: unknown tools and unreadable arguments answer as results and the
//! run goes on; several calls of one turn answer in call order.

use serde_json::json;
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};

use crate::common::*;

/// A call of a tool the toolkit does not have answers as an error result, and the run goes
/// on to the model's next turn. OpenAI: a toolkit with another tool; Anthropic: an empty one,
/// which still sends no `tools` on any turn.
async fn an_unknown_tool_is_an_error_result_and_the_run_goes_on(style: Style) {
    let (calls, tools, name, answer) = match style {
        Style::OpenAI => {
            (oa_calls(&[("c1", "nope", "{}")]), vec![text_tool("real", "x")], "nope", "sorry, no such tool")
        }
        Style::Anthropic => (an_reply(json!([an_use("tu_1", "ghost", json!({}))])), vec![], "ghost", "fine"),
    };
    let server = MockLlm::script(vec![Reply::json(calls), Reply::json(text_reply(style, answer))]).await;
    let tk = toolkit(tools).await;
    let client = Client::new(options(&server.url(), style)).unwrap();

    let r = client.run("go", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.turns, 2);
    assert_eq!(r.text, answer);
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].name, name);
    assert_eq!(r.tool_calls[0].result.output, format!("Unknown tool: {name}"));
    assert!(r.tool_calls[0].result.is_error);
    let msgs = server.request(1).messages();
    assert_eq!(msgs.len(), 3);
    match style {
        Style::OpenAI => {
            assert_eq!(msgs[2], json!({"role": "tool", "tool_call_id": "c1", "content": "Unknown tool: nope"}));
        }
        Style::Anthropic => {
            assert_eq!(
                msgs[2],
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "tu_1", "content": "Unknown tool: ghost", "is_error": true}
                ]})
            );
            // The empty toolkit still omits `tools` on every turn.
            assert!(server.requests().iter().all(|s| s.body.get("tools").is_none()));
        }
    }
}

crate::per_style!(an_unknown_tool_is_an_error_result_and_the_run_goes_on);

/// Arguments that are not a JSON object run the tool with `{}`: OpenAI's malformed or empty
/// `arguments` text, Anthropic's missing `input`. No reply carries usage: it is all zero.
async fn unreadable_arguments_become_an_empty_object(style: Style) {
    let (calls, answer, count) = match style {
        Style::OpenAI => (oa_calls(&[("c1", "echo", "{not json"), ("c2", "echo", "")]), "done", 2),
        Style::Anthropic => (an_reply(json!([{"type": "tool_use", "id": "tu_1", "name": "echo"}])), "ok", 1),
    };
    let server = MockLlm::script(vec![Reply::json(calls), Reply::json(text_reply(style, answer))]).await;
    let tk = toolkit(vec![echo_tool("echo")]).await;
    let client = Client::new(options(&server.url(), style)).unwrap();

    let r = client.run("go", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.tool_calls.len(), count);
    for rec in &r.tool_calls {
        assert_eq!(rec.args, json!({}));
        assert_eq!(rec.result.output, "{}");
        assert!(!rec.result.is_error);
    }
    assert_eq!(r.usage.total_tokens, 0);
    assert_eq!(r.text, answer);
}

crate::per_style!(unreadable_arguments_become_an_empty_object);

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
