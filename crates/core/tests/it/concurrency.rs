//! Tool calls of one turn run concurrently, and are still recorded in call order.
//!
//! Proof without clocks: both tools wait on one two-party barrier, so a loop that ran them
//! one after the other would never get past the first. A 5s timeout turns that hang into a
//! failure.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Barrier;
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::ToolResult;

use crate::common::*;

/// Two tools that can only finish together. `slow` also finishes after `fast`, so the
/// completion order is the reverse of the call order.
fn barrier_tools(done: Log<&'static str>) -> Vec<SharedTool> {
    let barrier = Arc::new(Barrier::new(2));
    let (b1, b2) = (barrier.clone(), barrier);
    let (d1, d2) = (done.clone(), done);
    vec![
        fn_tool("slow", move |_, _| {
            let (b, d) = (b1.clone(), d1.clone());
            async move {
                b.wait().await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                d.push("slow");
                ToolResult::ok("slow done")
            }
        }),
        fn_tool("fast", move |_, _| {
            let (b, d) = (b2.clone(), d2.clone());
            async move {
                b.wait().await;
                d.push("fast");
                ToolResult::ok("fast done")
            }
        }),
    ]
}

/// `slow` then `fast` in one turn: both run at once (or the barrier deadlocks), and the
/// records and the tool results the next request carries follow the call order.
async fn tool_calls_of_one_turn_run_together(style: Style) {
    let calls = match style {
        Style::OpenAI => oa_calls(&[("c_slow", "slow", "{}"), ("c_fast", "fast", "{}")]),
        Style::Anthropic => {
            an_reply(json!([an_use("tu_slow", "slow", json!({})), an_use("tu_fast", "fast", json!({}))]))
        }
    };
    let server = MockLlm::script(vec![Reply::json(calls), Reply::json(text_reply(style, "both done"))]).await;
    let done = Log::default();
    let tk = toolkit(barrier_tools(done.clone())).await;
    let client = Client::new(options(&server.url(), style)).unwrap();

    let r = tokio::time::timeout(Duration::from_secs(5), client.run("go", &tk, RunOptions::default()))
        .await
        .expect("the tool calls of one turn must run concurrently (sequential execution deadlocks on the barrier)")
        .unwrap();

    assert_eq!(done.all(), ["fast", "slow"], "completion order");
    assert_eq!(r.status, RunStatus::Done);
    let names: Vec<_> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["slow", "fast"], "records follow the call order, not the completion order");
    let msgs = server.request(1).messages();
    match style {
        Style::OpenAI => assert_eq!(
            msgs[2..],
            [
                json!({"role": "tool", "tool_call_id": "c_slow", "content": "slow done"}),
                json!({"role": "tool", "tool_call_id": "c_fast", "content": "fast done"}),
            ]
        ),
        Style::Anthropic => assert_eq!(
            msgs[2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "tu_slow", "content": "slow done", "is_error": false},
                {"type": "tool_result", "tool_use_id": "tu_fast", "content": "fast done", "is_error": false},
            ]})
        ),
    }
}

crate::per_style!(tool_calls_of_one_turn_run_together);

#[tokio::test]
async fn concurrent_suspensions_each_resolve_through_wait_for() {
    // Both calls suspend; the resolver only answers once BOTH requests are waiting, so a
    // loop that resolved them one at a time would hang.
    let barrier = Arc::new(Barrier::new(2));
    let asked: Log<String> = Log::default();
    let server = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "gate", r#"{"n":1}"#), ("c2", "gate", r#"{"n":2}"#)])),
        Reply::json(oa_text("through")),
    ])
    .await;
    let mut o = options(&server.url(), Style::OpenAI);
    let (b, a) = (barrier.clone(), asked.clone());
    o.wait_for = Some(toolnexus_core::callback::callback(move |req| {
        let (b, a) = (b.clone(), a.clone());
        async move {
            a.push(req["prompt"].as_str().unwrap_or_default().to_string());
            b.wait().await;
            Ok(json!({"id": req["id"], "ok": true, "data": {"who": req["prompt"]}}))
        }
    }));
    let tk = toolkit(vec![fn_tool("gate", |args, ctx| async move {
        match ctx.answer {
            Some(ans) => ToolResult::ok(format!("opened {}", ans["data"]["who"].as_str().unwrap_or("?"))),
            None => toolnexus_core::pending(map(json!({"kind": "approval", "prompt": format!("gate {}", args["n"])})))
                .unwrap(),
        }
    })])
    .await;
    let client = Client::new(o).unwrap();

    let r = tokio::time::timeout(Duration::from_secs(5), client.run("go", &tk, RunOptions::default()))
        .await
        .expect("concurrent suspensions must resolve independently")
        .unwrap();

    assert_eq!(r.status, RunStatus::Done);
    let mut prompts = asked.all();
    prompts.sort();
    assert_eq!(prompts, ["gate 1", "gate 2"]);
    let outputs: Vec<_> = r.tool_calls.iter().map(|c| c.result.output.as_str()).collect();
    assert_eq!(outputs, ["opened gate 1", "opened gate 2"]);
    assert!(r.tool_calls.iter().all(|c| !c.result.is_error));
}

/// A run's future is what a host moves (into its task, through its wrappers) before the first
/// poll, a copy of the whole thing each time. The loop inside it is boxed, so what is moved stays
/// a few KB however much the loop's own state grows; unboxed, the run's future was 9,584 bytes.
#[tokio::test]
async fn a_runs_future_stays_small_enough_to_move() {
    let client = Client::new(options("http://127.0.0.1:9/v1", Style::OpenAI)).unwrap();
    let tk = toolkit(vec![]).await;
    let run = client.run("hi", &tk, RunOptions::default());
    let asked = client.ask("hi", &tk, Some("t"), None, RunOptions::default());
    let (run_size, ask_size) = (std::mem::size_of_val(&run), std::mem::size_of_val(&asked));
    assert!(run_size <= 4096, "Client::run's future is {run_size} bytes");
    assert!(ask_size <= 6144, "Client::ask's future is {ask_size} bytes");
}
