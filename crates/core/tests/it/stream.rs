//! Streaming (SPEC §8) over the real transport against a chunked SSE endpoint: the events and
//! their order, tool-call assembly from deltas, suspension events, the request body, failures,
//! and that deltas reach the sink while the body is still open.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::Notify;
use toolnexus_core::callback::callback;
use toolnexus_core::client::{
    Client, ClientOptions, HttpRequest, HttpResponse, RunOptions, RunResult, RunStatus, StreamResponse, Style,
    Transport,
};
use toolnexus_core::pending;
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::ToolResult;
use toolnexus_core::{Error, Toolkit};

use crate::common::*;

/// Stream with a sink recording every event; guarded so a hang fails instead of stalling.
pub(crate) async fn stream_events(
    client: &Client,
    prompt: &str,
    tk: &Toolkit,
) -> (Result<RunResult, Error>, Vec<Value>) {
    let log = Log::default();
    let sink = recorder(log.clone());
    let res = tokio::time::timeout(GUARD, client.stream(prompt, tk, None, RunOptions::default(), sink.as_ref()))
        .await
        .expect("the stream must finish");
    (res, log.all())
}

pub(crate) fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["type"].as_str().unwrap_or("?").to_string()).collect()
}

fn text_deltas(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["delta"].as_str().expect("a text delta is a string").to_string())
        .collect()
}

fn login_request() -> Value {
    json!({"kind": "authorization", "prompt": "Log in", "url": "https://x.test/login", "id": "req-1"})
}

/// Suspends until it is run with an answer.
fn login_tool() -> SharedTool {
    fn_tool("login", |_, ctx| async move {
        match ctx.answer {
            Some(_) => ToolResult::ok("signed in"),
            None => pending(map(login_request())).unwrap(),
        }
    })
}

// ---------------------------------------------------------------------------------------
// Text, usage and done
// ---------------------------------------------------------------------------------------

/// A text answer streams as one `text` event a delta (an empty role chunk is none), then
/// `usage`, then `done` carrying the very result the call returns.
async fn text_streams_as_deltas_then_usage_then_done(style: Style) {
    let (prompt, parts, reply, usage, path, assistant) = match style {
        Style::OpenAI => (
            "hi",
            vec!["Hel", "lo", " world"],
            oa_text_stream(&["Hel", "lo", " world"], 9, 3),
            (9, 3, 12),
            "/chat/completions",
            r#"{"role":"assistant","content":"Hello world"}"#,
        ),
        Style::Anthropic => (
            "salut",
            vec!["Bon", "jour"],
            an_text_stream(&["Bon", "jour"], 20, 6),
            // message_start's placeholder output count (1) and message_delta's (6) are both added.
            (20, 7, 27),
            "/v1/messages",
            r#"{"role":"assistant","content":[{"type":"text","text":"Bonjour"}]}"#,
        ),
    };
    let server = MockLlm::sequence(vec![Action::Stream(reply.pause_ms(5))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), style)).unwrap();

    let (res, events) = stream_events(&client, prompt, &tk).await;
    let r = res.unwrap();

    let n = parts.len();
    let mut expected = vec!["text"; n];
    expected.extend(["usage", "done"]);
    assert_eq!(types(&events), expected);
    assert_eq!(text_deltas(&events), parts, "the empty role chunk is no text event");
    let (p, c, t) = usage;
    assert_eq!(
        events[n].to_string(),
        format!(r#"{{"type":"usage","usage":{{"promptTokens":{p},"completionTokens":{c},"totalTokens":{t}}}}}"#)
    );
    assert_eq!(events[n + 1]["result"], r.to_value(), "done carries the returned result");
    assert_eq!(keys(&events[n + 1]), ["type", "result"]);

    assert_eq!(r.text, parts.concat());
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.turns, 1);
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens), usage);
    assert_eq!(r.messages.len(), 2);
    assert_eq!(r.messages[0], json!({"role": "user", "content": prompt}));
    assert_eq!(r.messages[1].to_string(), assistant);
    assert_eq!(server.request(0).path, path);
}

crate::per_style!(text_streams_as_deltas_then_usage_then_done);

// ---------------------------------------------------------------------------------------
// Tool calls assembled from deltas
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn openai_tool_calls_assemble_from_interleaved_deltas() {
    let tc = |v: Value| oa_delta(json!({"tool_calls": [v]}));
    let turn1 = SseReply::openai(vec![
        oa_delta(json!({"role": "assistant", "content": null})),
        tc(json!({"index": 0, "id": "call_a", "type": "function", "function": {"name": "lo", "arguments": ""}})),
        tc(json!({"index": 1, "id": "call_b", "type": "function", "function": {"name": "ec", "arguments": "{\"x\""}})),
        tc(json!({"index": 0, "function": {"name": "okup", "arguments": "{\"q\":"}})),
        // Two slots in one chunk.
        oa_delta(json!({"tool_calls": [
            {"index": 1, "function": {"name": "ho", "arguments": ":1"}},
            {"index": 0, "function": {"arguments": "\"z\""}}
        ]})),
        tc(json!({"index": 1, "function": {"arguments": "}"}})),
        tc(json!({"index": 0, "function": {"arguments": "}"}})),
        oa_finish("tool_calls"),
        oa_usage_chunk(10, 5),
    ])
    .pause_ms(2);
    let server = MockLlm::sequence(vec![Action::Stream(turn1), Action::Stream(oa_text_stream(&["done"], 20, 1))]).await;
    let args_seen = Log::default();
    let seen = args_seen.clone();
    let tk = toolkit(vec![
        fn_tool("lookup", move |args: Value, _| {
            let seen = seen.clone();
            async move {
                seen.push(args.clone());
                ToolResult::ok(format!("found {}", args["q"].as_str().unwrap_or("?")))
            }
        }),
        echo_tool("echo"),
    ])
    .await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let (res, events) = stream_events(&client, "go", &tk).await;
    let r = res.unwrap();

    assert_eq!(types(&events), ["tool_call", "tool_call", "tool_result", "tool_result", "text", "usage", "done"]);
    assert_eq!(events[0].to_string(), r#"{"type":"tool_call","id":"call_a","name":"lookup","args":{"q":"z"}}"#);
    assert_eq!(events[1].to_string(), r#"{"type":"tool_call","id":"call_b","name":"echo","args":{"x":1}}"#);
    assert_eq!(
        events[2].to_string(),
        r#"{"type":"tool_result","id":"call_a","name":"lookup","output":"found z","isError":false}"#
    );
    assert_eq!(
        events[3].to_string(),
        r#"{"type":"tool_result","id":"call_b","name":"echo","output":"{\"x\":1}","isError":false}"#
    );
    assert_eq!(args_seen.all(), vec![json!({"q": "z"})]);

    // The assembled assistant turn and the tool messages are what the second request carries
    // (a turn of tool calls goes out with "" for the transcript's null content: see COMPAT).
    let sent = server.request(1).messages();
    assert_eq!(sent.len(), 4);
    assert_eq!(r.messages[1]["content"], Value::Null);
    assert_eq!(
        sent[1].to_string(),
        concat!(
            r#"{"role":"assistant","content":"","tool_calls":["#,
            r#"{"id":"call_a","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"z\"}"}},"#,
            r#"{"id":"call_b","type":"function","function":{"name":"echo","arguments":"{\"x\":1}"}}]}"#
        )
    );
    assert_eq!(sent[2], json!({"role": "tool", "tool_call_id": "call_a", "content": "found z"}));
    assert_eq!(sent[3], json!({"role": "tool", "tool_call_id": "call_b", "content": "{\"x\":1}"}));

    assert_eq!(r.turns, 2);
    assert_eq!(r.text, "done");
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.usage.total_tokens, 36);
    assert_eq!(events[6]["result"], r.to_value());
}

#[tokio::test]
async fn anthropic_tool_input_assembles_from_json_deltas() {
    let turn1 = SseReply::anthropic(vec![
        an_message_start(12),
        an_block_start(0, json!({"type": "text", "text": ""})),
        an_text_delta(0, "Checking"),
        an_block_stop(0),
        an_block_start(1, json!({"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {}})),
        an_json_delta(1, ""),
        an_json_delta(1, "{\"q\""),
        an_json_delta(1, ": \"z\", \"n\": [1,"),
        an_json_delta(1, " 2]}"),
        an_block_stop(1),
        an_message_delta("tool_use", 8),
        an_message_stop(),
    ])
    .pause_ms(2);
    let server =
        MockLlm::sequence(vec![Action::Stream(turn1), Action::Stream(an_text_stream(&["It is z."], 30, 4))]).await;
    let tk = toolkit(vec![echo_tool("lookup")]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();

    let (res, events) = stream_events(&client, "find", &tk).await;
    let r = res.unwrap();

    assert_eq!(types(&events), ["text", "tool_call", "tool_result", "text", "usage", "done"]);
    assert_eq!(events[1].to_string(), r#"{"type":"tool_call","id":"tu_1","name":"lookup","args":{"q":"z","n":[1,2]}}"#);
    assert_eq!(
        events[2].to_string(),
        r#"{"type":"tool_result","id":"tu_1","name":"lookup","output":"{\"q\":\"z\",\"n\":[1,2]}","isError":false}"#
    );

    let sent = server.request(1).messages();
    assert_eq!(
        sent[1].to_string(),
        concat!(
            r#"{"role":"assistant","content":[{"type":"text","text":"Checking"},"#,
            r#"{"type":"tool_use","id":"tu_1","name":"lookup","input":{"q":"z","n":[1,2]}}]}"#
        )
    );
    assert_eq!(
        sent[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu_1", "content": "{\"q\":\"z\",\"n\":[1,2]}", "is_error": false}
        ]})
    );
    assert_eq!(r.text, "It is z.", "the final text is the last turn's");
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (42, 14));
    assert_eq!(events[5]["result"], r.to_value());
}

// ---------------------------------------------------------------------------------------
// Suspension
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn the_pending_event_comes_before_wait_for_is_asked() {
    let server = MockLlm::sequence(vec![
        Action::Stream(SseReply::openai(vec![
            oa_delta(json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "login", "arguments": "{}"}}]})),
            oa_finish("tool_calls"),
        ])),
        Action::Stream(oa_text_stream(&["welcome"], 1, 1)),
    ])
    .await;
    let tk = toolkit(vec![login_tool()]).await;
    let trail = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    let t = trail.clone();
    o.wait_for = Some(callback(move |req: Value| {
        let t = t.clone();
        async move {
            t.push(json!({"wait_for": req}));
            Ok(json!({"ok": true, "data": {"token": "tk"}}))
        }
    }));
    let client = Client::new(o).unwrap();
    let sink = tagged(trail.clone(), "event");

    let r = tokio::time::timeout(GUARD, client.stream("go", &tk, None, RunOptions::default(), sink.as_ref()))
        .await
        .unwrap()
        .unwrap();

    let steps: Vec<String> = trail
        .all()
        .iter()
        .map(|s| match s.get("event") {
            Some(e) => e["type"].as_str().unwrap().to_string(),
            None => "WAIT_FOR".to_string(),
        })
        .collect();
    assert_eq!(steps, ["tool_call", "pending", "WAIT_FOR", "tool_result", "text", "usage", "done"]);
    let all = trail.all();
    assert_eq!(all[1]["event"], json!({"type": "pending", "request": login_request()}));
    assert_eq!(all[2]["wait_for"], login_request());
    assert_eq!(all[3]["event"]["output"], "signed in");
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.text, "welcome");
}

#[tokio::test]
async fn without_wait_for_a_suspension_halts_the_stream_with_a_pending_done() {
    let server = MockLlm::sequence(vec![Action::Stream(SseReply::anthropic(vec![
        an_message_start(3),
        an_block_start(0, json!({"type": "tool_use", "id": "tu_login", "name": "login", "input": {}})),
        an_json_delta(0, "{}"),
        an_block_stop(0),
        an_message_delta("tool_use", 2),
        an_message_stop(),
    ]))])
    .await;
    let tk = toolkit(vec![login_tool()]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();

    let (res, events) = stream_events(&client, "go", &tk).await;
    let r = res.unwrap();

    assert_eq!(types(&events), ["tool_call", "pending", "done"], "no tool_result, no usage");
    assert_eq!(events[1]["request"], login_request());
    assert_eq!(server.count(), 1, "a halted stream asks the model nothing more");
    assert_eq!(r.status, RunStatus::Pending);
    assert_eq!(r.pending, Some(map(login_request())));
    assert_eq!(r.text, "Log in");
    assert_eq!(events[2]["result"], r.to_value());
    assert_eq!(events[2]["result"]["status"], "pending");
    // The halted call's tool_result block (the request's prompt, as an error) closes the transcript.
    assert_eq!(
        r.messages.last().unwrap(),
        &json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu_login", "content": "Log in", "is_error": true}
        ]})
    );
}

// ---------------------------------------------------------------------------------------
// Liveness: deltas reach the sink while the response is still open
// ---------------------------------------------------------------------------------------

/// The endpoint sends the first delta and then waits until the sink has seen it; an
/// implementation that buffers the body before parsing never gets there.
async fn deltas_reach_the_sink_before_the_body_ends(style: Style) {
    let gate = Arc::new(Notify::new());
    let reply = match style {
        Style::OpenAI => oa_text_stream(&["first", " second"], 1, 1).gate(2, gate.clone()),
        // message_start, block start, first delta, then hold.
        Style::Anthropic => an_text_stream(&["first", " second"], 1, 1).gate(3, gate.clone()),
    };
    let server = MockLlm::sequence(vec![Action::Stream(reply)]).await;
    live_stream_with(options(&server.url(), style), gate, "first second").await;
}

crate::per_style!(deltas_reach_the_sink_before_the_body_ends);

/// A positive control for the harness: a transport whose `post_stream` hands reqwest's
/// body through chunk by chunk passes the very same check.
#[tokio::test]
async fn the_liveness_check_passes_with_a_transport_that_streams() {
    let gate = Arc::new(Notify::new());
    let reply = oa_text_stream(&["first", " second"], 1, 1).gate(2, gate.clone());
    let server = MockLlm::sequence(vec![Action::Stream(reply)]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.transport = Some(Arc::new(PassThrough(toolnexus_core::net::client_builder().build().expect("client"))));
    live_stream_with(o, gate, "first second").await;
}

struct PassThrough(reqwest::Client);

#[async_trait::async_trait]
impl Transport for PassThrough {
    async fn post(&self, _: HttpRequest) -> Result<HttpResponse, Error> {
        unreachable!("this control only streams")
    }

    async fn post_stream(&self, req: HttpRequest) -> Result<StreamResponse, Error> {
        let mut rb = self.0.post(&req.url);
        for (k, v) in &req.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let res = rb.body(req.body).send().await.map_err(|e| Error::Transport(e.to_string()))?;
        let status = res.status().as_u16();
        let body = res.bytes_stream().map(|c| c.map(|b| b.to_vec()).map_err(|e| Error::Transport(e.to_string())));
        Ok(StreamResponse { status, headers: vec![], body: Box::pin(body) })
    }
}

/// Stream with `o`, releasing the endpoint's `gate` once the sink has seen the first delta.
async fn live_stream_with(o: ClientOptions, gate: Arc<Notify>, want: &str) {
    let tk = toolkit(vec![]).await;
    let client = Client::new(o).unwrap();
    let log = Log::default();
    let (l, g) = (log.clone(), gate.clone());
    let sink = callback(move |ev: Value| {
        let (l, g) = (l.clone(), g.clone());
        async move {
            if ev["type"] == "text" && !l.all().iter().any(|e: &Value| e["type"] == "text") {
                // Releases the rest of the body; a permit is stored if the server is not yet waiting.
                g.notify_one();
            }
            l.push(ev);
            Ok(Value::Null)
        }
    });

    let r = tokio::time::timeout(GUARD, client.stream("q", &tk, None, RunOptions::default(), sink.as_ref()))
        .await
        .expect("deadlock: the first text delta was not delivered while the response body was still open (the stream is buffered)")
        .unwrap();

    assert_eq!(r.text, want);
    assert_eq!(text_deltas(&log.all()), ["first", " second"]);
}

// ---------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_non_2xx_stream_reply_fails_with_status_and_body() {
    for style in [Style::OpenAI, Style::Anthropic] {
        let server = MockLlm::script(vec![Reply::raw(400, r#"{"error":{"message":"bad stream"}}"#)]).await;
        let tk = toolkit(vec![]).await;
        let client = Client::new(options(&server.url(), style)).unwrap();

        let (res, events) = stream_events(&client, "q", &tk).await;
        let e = res.unwrap_err();

        assert_eq!(e.to_string(), r#"LLM 400: {"error":{"message":"bad stream"}}"#);
        assert!(matches!(e, Error::Http { status: 400, .. }), "{e:?}");
        assert!(events.is_empty(), "no event (and no done) on a failed stream: {events:?}");
        assert_eq!(server.count(), 1);
    }
}

// ---------------------------------------------------------------------------------------
// The request body
// ---------------------------------------------------------------------------------------

/// The stream keys come after everything else: OpenAI's `stream` and `stream_options` (asking
/// for usage) after the tool keys, Anthropic's `stream` last.
async fn the_stream_keys_come_last(style: Style) {
    let reply = match style {
        Style::OpenAI => oa_text_stream(&["x"], 1, 1),
        Style::Anthropic => an_text_stream(&["x"], 1, 1),
    };
    let server = MockLlm::sequence(vec![Action::Stream(reply)]).await;
    let tk = toolkit(vec![text_tool("t", "o")]).await;
    let client = Client::new(options(&server.url(), style)).unwrap();

    stream_events(&client, "q", &tk).await.0.unwrap();

    let seen = server.request(0);
    assert_eq!(seen.body["stream"], json!(true));
    match style {
        Style::OpenAI => {
            assert_eq!(seen.path, "/chat/completions");
            assert_eq!(seen.header("authorization"), Some("Bearer k"));
            assert_eq!(seen.body_keys(), ["model", "messages", "tools", "tool_choice", "stream", "stream_options"]);
            assert_eq!(seen.body["stream_options"], json!({"include_usage": true}));
            assert_eq!(seen.body["tool_choice"], "auto");
            assert!(
                seen.raw.ends_with(r#""tool_choice":"auto","stream":true,"stream_options":{"include_usage":true}}"#),
                "{}",
                seen.raw
            );
        }
        Style::Anthropic => {
            assert_eq!(seen.body_keys(), ["model", "max_tokens", "system", "messages", "tools", "stream"]);
            assert!(seen.body.get("stream_options").is_none());
            assert!(seen.raw.ends_with(r#","stream":true}"#), "{}", seen.raw);
        }
    }
}

crate::per_style!(the_stream_keys_come_last);

#[tokio::test]
async fn openai_stream_body_without_tools_still_streams() {
    let server = MockLlm::sequence(vec![Action::Stream(oa_text_stream(&["x"], 1, 1))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    stream_events(&client, "q", &tk).await.0.unwrap();

    assert_eq!(server.request(0).body_keys(), ["model", "messages", "stream", "stream_options"]);
}
