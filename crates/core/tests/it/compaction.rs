//! Context compaction (SPEC §7F): the rewrite itself, and the compactor as a client's
//! `beforeLLM` hook against a scripted model.

use std::sync::Arc;

use serde_json::{json, Value};
use toolnexus_core::agents::compaction::{FLUSH_TO_MEMORY_REMINDER, SUMMARY_PREFIX};
use toolnexus_core::agents::{estimate_tokens, Compactor, CompactorOptions};
use toolnexus_core::callback::{callback, SharedCallback};
use toolnexus_core::client::{Client, RunOptions, Style};

use crate::common::*;

/// A summarize that logs what it was given and answers "S(<count>)".
fn summarizer(log: Log<Value>) -> SharedCallback {
    callback(move |older: Value| {
        let log = log.clone();
        async move {
            let n = older.as_array().map_or(0, Vec::len);
            log.push(older);
            Ok(Value::String(format!("S({n})")))
        }
    })
}

fn compactor(max: f64, keep: Option<f64>, flush: bool, log: Log<Value>) -> Compactor {
    let opts =
        CompactorOptions { max_tokens: Some(max), keep_tail: keep, flush_to_memory: flush, ..Default::default() };
    Compactor::new(opts, summarizer(log), None)
}

fn said(role: &str, text: &str) -> Value {
    json!({ "role": role, "content": text })
}

#[test]
fn the_estimate_is_a_quarter_of_each_messages_json_rounded_up() {
    // {"role":"user","content":"hi"} is 30 characters: 8. An emoji counts two UTF-16 units,
    // so "hi😀!" makes 33 units (31 characters): 9.
    assert_eq!(estimate_tokens(&[said("user", "hi")]), 8.0);
    assert_eq!(estimate_tokens(&[said("user", "hi"), said("user", "hi")]), 16.0);
    assert_eq!(estimate_tokens(&[said("user", "hi😀!")]), 9.0);
    assert_eq!(estimate_tokens(&[]), 0.0);
}

#[tokio::test]
async fn at_or_below_the_budget_nothing_changes_and_summarize_is_not_called() {
    let msgs = vec![said("system", "sys"), said("user", "hi"), said("assistant", "hello")];
    let exact = estimate_tokens(&msgs);
    let log = Log::default();
    let c = compactor(exact, None, true, log.clone());
    assert_eq!(c.compact(&msgs, None).await.unwrap(), None);
    assert_eq!(c.on_event(&json!({ "messages": msgs }), None).await.unwrap(), Value::Null);
    assert!(log.all().is_empty());
}

#[tokio::test]
async fn over_the_budget_the_head_is_summarized_and_a_user_started_tail_kept() {
    let msgs = vec![
        said("system", "You are terse."),
        said("user", &"first question ".repeat(10)),
        said("assistant", &"first answer ".repeat(10)),
        said("user", "second"),
        said("assistant", "ok"),
    ];
    let tail = estimate_tokens(&msgs[3..]);
    let log = Log::default();
    let c = compactor(50.0, Some(tail), false, log.clone());
    let out = c.compact(&msgs, Some(Style::OpenAI)).await.unwrap().unwrap();
    assert_eq!(out[0], msgs[0], "the system prompt is kept verbatim");
    assert_eq!(out[1], json!({ "role": "system", "content": format!("{SUMMARY_PREFIX}S(2)") }));
    assert_eq!(&out[2..], &msgs[3..]);
    assert_eq!(log.all(), vec![json!([msgs[1], msgs[2]])]);
}

#[tokio::test]
async fn keep_tail_keeps_the_largest_tail_that_fits() {
    let msgs: Vec<Value> =
        (0..8).map(|i| said(if i % 2 == 0 { "user" } else { "assistant" }, &format!("m{i}"))).collect();
    // Room for the last four messages exactly: the tail starts at m4.
    let keep = estimate_tokens(&msgs[4..]);
    let c = compactor(1.0, Some(keep), false, Log::default());
    let out = c.compact(&msgs, None).await.unwrap().unwrap();
    assert_eq!(&out[1..], &msgs[4..]);
    // One token less: m6 is the first boundary that fits.
    let c = compactor(1.0, Some(keep - 1.0), false, Log::default());
    let out = c.compact(&msgs, None).await.unwrap().unwrap();
    assert_eq!(&out[1..], &msgs[6..]);
    // No room at all: the latest boundary anyway.
    let c = compactor(1.0, Some(0.0), false, Log::default());
    let out = c.compact(&msgs, None).await.unwrap().unwrap();
    assert_eq!(&out[1..], &msgs[6..]);
}

#[tokio::test]
async fn openai_tool_results_stay_with_their_call() {
    let call = json!({ "role": "assistant", "content": null, "tool_calls": [{ "id": "c1", "type": "function", "function": { "name": "t", "arguments": "{}" } }] });
    let result = json!({ "role": "tool", "tool_call_id": "c1", "content": "out" });
    let msgs = vec![
        said("user", &"old ".repeat(40)),
        said("assistant", "a"),
        said("user", "go"),
        call,
        result,
        said("assistant", "done"),
    ];
    // A tail budget that would fit the tool result alone: the split still lands on "go".
    let keep = estimate_tokens(&msgs[4..]);
    let out = compactor(1.0, Some(keep), false, Log::default()).compact(&msgs, None).await.unwrap().unwrap();
    assert_eq!(out[0]["role"], "system");
    assert_eq!(&out[1..], &msgs[2..]);
}

#[tokio::test]
async fn anthropic_tool_results_are_not_boundaries_and_notes_travel_as_user_turns() {
    let use_ =
        json!({ "role": "assistant", "content": [{ "type": "tool_use", "id": "u1", "name": "t", "input": {} }] });
    let result =
        json!({ "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "u1", "content": "out" }] });
    let msgs = vec![
        said("user", &"old ".repeat(40)),
        said("assistant", "a"),
        said("user", "go"),
        use_,
        result.clone(),
        said("assistant", "done"),
    ];
    let keep = estimate_tokens(&msgs[4..]);
    for style in [None, Some(Style::Anthropic)] {
        let out = compactor(1.0, Some(keep), true, Log::default()).compact(&msgs, style).await.unwrap().unwrap();
        assert_eq!(out[0], json!({ "role": "user", "content": format!("{SUMMARY_PREFIX}S(2)") }));
        assert_eq!(out[1], json!({ "role": "user", "content": FLUSH_TO_MEMORY_REMINDER }));
        assert_eq!(&out[2..], &msgs[2..], "the tail starts at the plain user turn, not the tool result");
        assert!(out.iter().all(|m| m["role"] != "system"));
    }
    // Only tool results after the head: no boundary, everything is summarized.
    let only = vec![
        said("user", &"x".repeat(200)),
        json!({ "role": "assistant", "content": [{ "type": "tool_use", "id": "u1", "name": "t", "input": {} }] }),
        result,
    ];
    let out = compactor(1.0, None, false, Log::default()).compact(&only, None).await.unwrap().unwrap();
    assert_eq!(out, vec![json!({ "role": "user", "content": format!("{SUMMARY_PREFIX}S(3)") })]);
}

#[tokio::test]
async fn the_flush_reminder_follows_the_summary() {
    let msgs = vec![said("system", "soul"), said("user", &"a".repeat(100)), said("assistant", "b"), said("user", "c")];
    let out = compactor(1.0, None, true, Log::default()).compact(&msgs, Some(Style::OpenAI)).await.unwrap().unwrap();
    assert_eq!(out.len(), 4);
    assert_eq!(out[2], json!({ "role": "system", "content": FLUSH_TO_MEMORY_REMINDER }));
    assert_eq!(out[3], said("user", "c"));
}

#[tokio::test]
async fn a_host_count_replaces_the_estimate() {
    let counted = Log::default();
    let seen = counted.clone();
    let count = callback(move |m: Value| {
        let seen = seen.clone();
        async move {
            let n = m.as_array().map_or(0, Vec::len);
            seen.push(json!(n));
            Ok(json!(n * 10))
        }
    });
    let msgs: Vec<Value> = (0..4).map(|i| said(if i % 2 == 0 { "user" } else { "assistant" }, "x")).collect();
    let opts = CompactorOptions {
        max_tokens: Some(39.0),
        keep_tail: Some(20.0),
        flush_to_memory: false,
        ..Default::default()
    };
    let c = Compactor::new(opts, summarizer(Log::default()), Some(count));
    let out = c.compact(&msgs, None).await.unwrap().unwrap();
    assert_eq!(&out[1..], &msgs[2..]);
    assert_eq!(counted.all()[0], json!(4));
}

#[tokio::test]
async fn a_client_run_sends_the_compacted_transcript_and_keeps_it() {
    for style in [Style::OpenAI, Style::Anthropic] {
        let reply = match style {
            Style::OpenAI => oa_text("fine"),
            Style::Anthropic => an_reply(json!([an_text("fine")])),
        };
        let server = MockLlm::script(vec![Reply::json(reply)]).await;
        let tk = toolkit(vec![]).await;
        // Under OpenAI a history carries its own system prompt; under Anthropic it is the body's.
        let mut history = if style == Style::OpenAI { vec![said("system", "the soul")] } else { Vec::new() };
        for i in 0..6 {
            history.push(said("user", &format!("q{i} {}", "word ".repeat(20))));
            history.push(said("assistant", &format!("a{i} {}", "word ".repeat(20))));
        }
        let c = Arc::new(compactor(100.0, None, true, Log::default()));
        let mut o = options(&server.url(), style);
        o.system_prompt = Some("the soul".into());
        o.hooks.before_llm = Some(c.hook(Some(style)));
        let client = Client::new(o).unwrap();
        let r = client.run("next?", &tk, RunOptions { history: Some(history), ..Default::default() }).await.unwrap();
        assert_eq!(r.text, "fine");
        let body = server.request(0).body;
        let sent = body["messages"].as_array().unwrap().clone();
        let note_role = match style {
            Style::OpenAI => {
                assert_eq!(sent[0], said("system", "the soul"));
                "system"
            }
            Style::Anthropic => {
                assert_eq!(body["system"], "the soul");
                "user"
            }
        };
        let at = usize::from(style == Style::OpenAI);
        assert_eq!(sent[at]["role"], note_role);
        assert!(sent[at]["content"].as_str().unwrap().starts_with(SUMMARY_PREFIX));
        assert_eq!(sent[at + 1], json!({ "role": note_role, "content": FLUSH_TO_MEMORY_REMINDER }));
        assert_eq!(sent.last().unwrap(), &said("user", "next?"));
        assert!(sent.iter().all(|m| style == Style::OpenAI || m["role"] != "system"));
        // The result carries the compacted transcript too.
        assert_eq!(&r.messages[..sent.len()], &sent[..]);
    }
}

#[tokio::test]
async fn below_the_budget_the_wire_body_is_byte_identical() {
    let mut bodies = Vec::new();
    for with in [false, true] {
        let server = MockLlm::script(vec![Reply::json(oa_text("fine"))]).await;
        let tk = toolkit(vec![]).await;
        let mut o = options(&server.url(), Style::OpenAI);
        o.system_prompt = Some("s".into());
        if with {
            let c = Arc::new(compactor(100_000.0, None, true, Log::default()));
            o.hooks.before_llm = Some(c.hook(Some(Style::OpenAI)));
        }
        Client::new(o).unwrap().run("hi", &tk, RunOptions::default()).await.unwrap();
        bodies.push(server.request(0).raw);
    }
    assert_eq!(bodies[0], bodies[1]);
}
