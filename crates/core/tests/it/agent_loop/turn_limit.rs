//! `maxTurns`: a run that reaches it without a final text is `incomplete`, with `limit`; a
//! text alongside the last calls (OpenAI style) makes it `done`.

use serde_json::json;
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};

use crate::common::*;

/// Every turn asks for another tool call until `maxTurns` (3) stops the run: `incomplete`, with
/// `limit`, no text, every call recorded, every turn's usage summed. In the OpenAI style the
/// turns carry no text; in the Anthropic style they carry some, and the run is incomplete even
/// so (a final text is only ever taken from a turn without tool calls).
#[tokio::test]
async fn the_turn_limit_ends_the_run_incomplete() {
    for style in [Style::OpenAI, Style::Anthropic] {
        let server = MockLlm::start(move |_, i| {
            Action::Reply(Reply::json(match style {
                Style::OpenAI => with_usage(
                    oa_calls(&[(&format!("c{i}"), "t", "{}")]),
                    json!({"prompt_tokens": 1, "completion_tokens": 1}),
                ),
                Style::Anthropic => with_usage(
                    an_reply(json!([an_text("thinking"), an_use(&format!("tu_{i}"), "t", json!({"n": i}))])),
                    json!({"input_tokens": 1, "output_tokens": 1}),
                ),
            }))
        })
        .await;
        let tk = toolkit(vec![text_tool("t", "more")]).await;
        let mut o = options(&server.url(), style);
        o.max_turns = 3;
        let client = Client::new(o).unwrap();

        let r = client.run("loop", &tk, RunOptions::default()).await.unwrap();

        assert_eq!(server.count(), 3, "{style:?}");
        assert_eq!(r.turns, 3);
        assert_eq!(r.text, "");
        assert_eq!(r.status, RunStatus::Incomplete);
        assert_eq!(r.limit.as_deref(), Some("maxTurns"));
        assert_eq!(r.tool_calls.len(), 3);
        assert_eq!(r.usage.total_tokens, 6);
        // The prompt, then per turn the assistant message and the tool results (one tool
        // message, or one user message with the tool_result block).
        assert_eq!(r.messages.len(), 1 + 2 * 3);
        let v = r.to_value();
        assert_eq!(
            keys(&v),
            ["text", "messages", "toolCalls", "toolCallCount", "turns", "usage", "model", "status", "limit"]
        );
        assert_eq!(v["status"], "incomplete");
        assert_eq!(v["limit"], "maxTurns");
    }
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
