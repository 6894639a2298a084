//! In-process models (SPEC §8): `InProcessTransport` answers from a `generate` callback —
//! what `generate` is handed, how its answer becomes a chat completion, and the refusal
//! to stream.

use std::sync::Arc;

use serde_json::{json, Value};
use toolnexus_core::callback::callback;
use toolnexus_core::client::inprocess::{InProcessTransport, IN_PROCESS_BASE_URL, NO_STREAMING};
use toolnexus_core::client::{Client, ClientOptions, RunOptions, RunStatus, Style};
use toolnexus_core::types::ToolResult;
use toolnexus_core::Error;

use crate::common::*;

/// Client options as the in-process constructor builds them: the sentinel URL, the
/// OpenAI style, a placeholder key and no retries, with `answers` played in order by a
/// `generate` that logs every request it is handed.
fn in_process(answers: Vec<Value>) -> (ClientOptions, Log<Value>) {
    let requests = Log::default();
    let r = requests.clone();
    let answers = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(answers)));
    let generate = callback(move |req: Value| {
        let (r, answers) = (r.clone(), answers.clone());
        async move {
            r.push(req);
            Ok(answers.lock().unwrap().pop_front().unwrap_or_else(|| json!({"content": "(no more)"})))
        }
    });
    let mut o = ClientOptions::new(IN_PROCESS_BASE_URL, Style::OpenAI, "local-model");
    o.api_key = Some("in-process".into());
    o.retries = 0;
    o.transport = Some(Arc::new(InProcessTransport { generate }));
    (o, requests)
}

#[tokio::test]
async fn content_is_the_answer_and_usage_defaults_to_zero() {
    let (o, requests) = in_process(vec![json!({"content": "hello from here"})]);
    let tk = toolkit(vec![]).await;
    let client = Client::new(o).unwrap();

    let r = client.run("hi", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.text, "hello from here");
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens), (0, 0, 0));
    assert_eq!(r.model, "local-model");
    assert_eq!(r.messages[1].to_string(), r#"{"role":"assistant","content":"hello from here"}"#);

    let req = &requests.all()[0];
    assert_eq!(keys(req), ["messages", "model", "body"], "no tools key without tools");
    assert_eq!(req["messages"], json!([{"role": "user", "content": "hi"}]));
    assert_eq!(req["model"], "local-model");
    assert_eq!(req["body"], json!({"model": "local-model", "messages": [{"role": "user", "content": "hi"}]}));
}

#[tokio::test]
async fn usage_is_taken_when_given_and_totals_default_to_the_sum() {
    let (o, _) = in_process(vec![
        json!({"toolCalls": [{"name": "t"}], "usage": {"promptTokens": 3, "completionTokens": 2}}),
        json!({"content": "done", "usage": {"promptTokens": 4, "completionTokens": 1, "totalTokens": 10}}),
    ]);
    let tk = toolkit(vec![text_tool("t", "o")]).await;
    let client = Client::new(o).unwrap();

    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();

    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens), (7, 3, 15));
}

#[tokio::test]
async fn content_missing_is_an_empty_answer() {
    let (o, _) = in_process(vec![json!({})]);
    let tk = toolkit(vec![]).await;
    let client = Client::new(o).unwrap();

    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.text, "");
    assert_eq!(r.messages[1], json!({"role": "assistant", "content": ""}));
}

#[tokio::test]
async fn tool_calls_get_default_ids_and_encoded_arguments() {
    let (o, requests) = in_process(vec![
        json!({"toolCalls": [
            {"name": "add", "arguments": {"a": 1, "b": 2}},
            {"id": "mine", "name": "echo", "arguments": "{\"raw\":true}"},
            {"name": "echo"}
        ]}),
        json!({"content": "all done"}),
    ]);
    let args_seen = Log::default();
    let seen = args_seen.clone();
    let tk = toolkit(vec![
        fn_tool("add", move |args: Value, _| {
            let seen = seen.clone();
            async move {
                seen.push(args.clone());
                let sum = args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap();
                ToolResult::ok(sum.to_string())
            }
        }),
        echo_tool("echo"),
    ])
    .await;
    let client = Client::new(o).unwrap();

    let r = client.run("add them", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.text, "all done");
    assert_eq!(r.turns, 2);
    assert_eq!(args_seen.all(), vec![json!({"a": 1, "b": 2})]);
    assert_eq!(
        r.messages[1].to_string(),
        concat!(
            r#"{"role":"assistant","tool_calls":["#,
            r#"{"id":"call_0","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}},"#,
            r#"{"id":"mine","type":"function","function":{"name":"echo","arguments":"{\"raw\":true}"}},"#,
            r#"{"id":"call_2","type":"function","function":{"name":"echo","arguments":"{}"}}]}"#
        ),
        "the wrapped message has no content key at all"
    );
    let outputs: Vec<&str> = r.tool_calls.iter().map(|c| c.result.output.as_str()).collect();
    assert_eq!(outputs, ["3", "{\"raw\":true}", "{}"]);

    // The second generate sees the tool results keyed by those ids, and the declared tools.
    let second = &requests.all()[1];
    assert_eq!(keys(second), ["messages", "tools", "model", "body"]);
    assert_eq!(second["tools"], Value::Array(tk.to_openai()));
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs[2], json!({"role": "tool", "tool_call_id": "call_0", "content": "3"}));
    assert_eq!(msgs[3]["tool_call_id"], "mine");
    assert_eq!(msgs[4]["tool_call_id"], "call_2");
    assert_eq!(second["body"]["tool_choice"], "auto");
}

#[tokio::test]
async fn hooks_and_metrics_work_as_over_a_wire() {
    let (mut o, _) = in_process(vec![json!({"content": "ok", "usage": {"promptTokens": 2, "completionTokens": 1}})]);
    let metrics = Log::default();
    o.on_metric = Some(recorder(metrics.clone()));
    let after = Log::default();
    o.hooks.after_llm = Some(recorder(after.clone()));
    let tk = toolkit(vec![]).await;
    let client = Client::new(o).unwrap();

    client.run("q", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(
        zero_ms(metrics.all()[0].clone()).to_string(),
        r#"{"event":"llm","model":"local-model","status":"ok","ms":0,"promptTokens":2,"completionTokens":1}"#
    );
    assert_eq!(
        after.all()[0]["response"],
        json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}
        })
    );
}

#[tokio::test]
async fn a_failing_generate_fails_the_run_once() {
    let calls = Counter::default();
    let c = calls.clone();
    let generate = callback(move |_| {
        let c = c.clone();
        async move {
            c.bump();
            Err(Error::host_message("model OOM"))
        }
    });
    let mut o = ClientOptions::new(IN_PROCESS_BASE_URL, Style::OpenAI, "local-model");
    o.api_key = Some("in-process".into());
    o.retries = 0;
    o.transport = Some(Arc::new(InProcessTransport { generate }));
    let tk = toolkit(vec![]).await;
    let client = Client::new(o).unwrap();

    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(e.to_string(), "model OOM");
    assert_eq!(calls.get(), 1);
}

#[tokio::test]
async fn streaming_is_refused_and_generate_is_never_called() {
    let (o, requests) = in_process(vec![json!({"content": "never"})]);
    let tk = toolkit(vec![]).await;
    let client = Client::new(o).unwrap();
    let events = Log::default();

    let e = client.stream("q", &tk, None, RunOptions::default(), recorder(events.clone()).as_ref()).await.unwrap_err();

    assert_eq!(e.to_string(), NO_STREAMING);
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    assert_eq!(requests.len(), 0);
    assert_eq!(events.len(), 0);

    // `ask` with on_text takes the streaming path too.
    let on_text = recorder(Log::default());
    let e = client.ask("q", &tk, None, Some(on_text.as_ref()), RunOptions::default()).await.unwrap_err();
    assert_eq!(e.to_string(), NO_STREAMING);
    assert_eq!(requests.len(), 0);
}
