//! Observability (SPEC §8): the `onMetric` event sequence (also interleaved with a stream's
//! events), the Prometheus text of `metrics()`, run error events, and a failing `onMetric`.

use std::time::Duration;

use serde_json::{json, Value};
use toolnexus_core::callback::callback;
use toolnexus_core::cancel::Abort;
use toolnexus_core::client::{Client, ClientOptions, RunOptions, Style};
use toolnexus_core::types::ToolResult;
use toolnexus_core::{pending, Error};

use crate::common::*;

/// Options whose `on_metric` records into the returned log.
pub(crate) fn metered(base: &str, style: Style) -> (ClientOptions, Log<Value>) {
    let log = Log::default();
    let mut o = options(base, style);
    o.on_metric = Some(recorder(log.clone()));
    (o, log)
}

/// The recorded events as compact JSON text with `ms` zeroed (key order is checked too).
pub(crate) fn texts(log: &Log<Value>) -> Vec<String> {
    log.all().into_iter().map(|v| zero_ms(v).to_string()).collect()
}

pub(crate) fn usage(p: i64, c: i64) -> Value {
    json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})
}

#[tokio::test]
async fn a_tool_run_emits_llm_tool_llm_run_in_order() {
    let server = MockLlm::script(vec![
        Reply::json(with_usage(oa_calls(&[("c1", "t", "{}")]), usage(5, 3))),
        Reply::json(with_usage(oa_text("done"), usage(7, 2))),
    ])
    .await;
    let tk = toolkit(vec![text_tool("t", "out")]).await;
    let (o, log) = metered(&server.url(), Style::OpenAI);
    let client = Client::new(o).unwrap();

    client.run("go", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(
        texts(&log),
        [
            r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":5,"completionTokens":3}"#,
            r#"{"event":"tool","tool":"t","source":"native","isError":false,"ms":0}"#,
            r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":7,"completionTokens":2}"#,
            r#"{"event":"run","model":"m","turns":2,"toolCalls":1,"totalTokens":17,"ms":0}"#,
        ]
    );
}

#[tokio::test]
async fn anthropic_tokens_map_and_error_and_unknown_tools_are_classified() {
    let server = MockLlm::script(vec![
        Reply::json(with_usage(
            an_reply(json!([an_use("u1", "boom", json!({})), an_use("u2", "ghost", json!({}))])),
            json!({"input_tokens": 11, "output_tokens": 4}),
        )),
        Reply::json(with_usage(an_reply(json!([an_text("ok")])), json!({"input_tokens": 20, "output_tokens": 1}))),
    ])
    .await;
    let tk = toolkit(vec![fn_tool("boom", |_, _| async { ToolResult::error("bang") })]).await;
    let (o, log) = metered(&server.url(), Style::Anthropic);
    let client = Client::new(o).unwrap();

    client.run("go", &tk, RunOptions::default()).await.unwrap();

    let mut got = texts(&log);
    // The two tools run together: their events may arrive in either order.
    got[1..3].sort();
    assert_eq!(
        got,
        [
            r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":11,"completionTokens":4}"#,
            r#"{"event":"tool","tool":"boom","source":"native","isError":true,"ms":0}"#,
            r#"{"event":"tool","tool":"ghost","source":"custom","isError":true,"ms":0}"#,
            r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":20,"completionTokens":1}"#,
            r#"{"event":"run","model":"m","turns":2,"toolCalls":2,"totalTokens":36,"ms":0}"#,
        ]
    );
}

#[tokio::test]
async fn a_suspension_is_a_pending_tool_event_never_an_error() {
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "login", "{}")]))]).await;
    let tk = toolkit(vec![fn_tool("login", |_, _| async {
        pending(map(json!({"kind": "approval", "prompt": "ok?", "id": "r1"}))).unwrap()
    })])
    .await;
    let (o, log) = metered(&server.url(), Style::OpenAI);
    let client = Client::new(o).unwrap();

    client.run("go", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(
        texts(&log)[1],
        r#"{"event":"tool","tool":"login","source":"native","isError":false,"ms":0,"pending":true}"#
    );
    assert_eq!(
        texts(&log)[2],
        r#"{"event":"run","model":"m","turns":1,"toolCalls":1,"totalTokens":0,"ms":0}"#,
        "a halted run is not an error run"
    );
    assert!(client.metrics().contains(
        "toolnexus_tool_calls_total{tool=\"login\",source=\"native\",is_error=\"false\",pending=\"true\"} 1\n"
    ));
}

#[tokio::test]
async fn metrics_interleave_with_events_and_the_run_metric_precedes_done() {
    let server = MockLlm::sequence(vec![
        Action::Stream(SseReply::openai(vec![
            oa_delta(json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]})),
            oa_finish("tool_calls"),
            oa_usage_chunk(4, 2),
        ])),
        Action::Stream(oa_text_stream(&["a", "b"], 6, 2)),
    ])
    .await;
    let tk = toolkit(vec![text_tool("t", "out")]).await;
    let trail = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    o.on_metric = Some(tagged(trail.clone(), "metric"));
    let client = Client::new(o).unwrap();
    let sink = tagged(trail.clone(), "event");

    let r = client.stream("go", &tk, None, RunOptions::default(), sink.as_ref()).await.unwrap();

    let steps: Vec<String> = trail
        .all()
        .iter()
        .map(|s| match (s.get("event"), s.get("metric")) {
            (Some(e), _) => e["type"].as_str().unwrap().to_string(),
            (_, Some(m)) => format!("metric:{}", m["event"].as_str().unwrap()),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        steps,
        [
            "metric:llm",
            "tool_call",
            "metric:tool",
            "tool_result",
            "text",
            "text",
            "metric:llm",
            "usage",
            "metric:run",
            "done"
        ]
    );
    let all = trail.all();
    assert_eq!(
        zero_ms(all[0]["metric"].clone()).to_string(),
        r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":4,"completionTokens":2}"#
    );
    assert_eq!(
        zero_ms(all[6]["metric"].clone()).to_string(),
        r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":6,"completionTokens":2}"#
    );
    assert_eq!(
        zero_ms(all[8]["metric"].clone()).to_string(),
        r#"{"event":"run","model":"m","turns":2,"toolCalls":1,"totalTokens":14,"ms":0}"#
    );
    assert_eq!(r.usage.total_tokens, 14);
}

// ---------------------------------------------------------------------------------------
// The Prometheus text
// ---------------------------------------------------------------------------------------

/// Compare line by line; an expected line ending in `*` only has to be a prefix.
fn assert_lines(text: &str, expected: &[&str]) {
    assert!(text.ends_with('\n'), "the text ends with a newline");
    let got: Vec<&str> = text.lines().collect();
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        match e.strip_suffix('*') {
            Some(prefix) => assert!(g.starts_with(prefix), "line {i}: {g:?} does not start with {prefix:?}\n{text}"),
            None => assert_eq!(g, e, "line {i}\n{text}"),
        }
    }
    assert_eq!(got.len(), expected.len(), "line count\n{text}");
}

/// The value of the series line that starts with `prefix` followed by a space.
fn sample(text: &str, series: &str) -> f64 {
    let line =
        text.lines().find(|l| l.starts_with(&format!("{series} "))).unwrap_or_else(|| panic!("no {series}\n{text}"));
    line[series.len() + 1..].parse().unwrap()
}

#[tokio::test]
async fn an_idle_client_renders_only_help_and_type_lines() {
    let client = Client::new(options("http://127.0.0.1:9", Style::OpenAI)).unwrap();
    let text = client.metrics();
    assert_eq!(text.lines().count(), 12);
    assert!(text.lines().all(|l| l.starts_with("# HELP ") || l.starts_with("# TYPE ")));
}

#[tokio::test]
async fn the_registry_text_for_a_tool_run_and_a_failed_run() {
    let server = MockLlm::script(vec![
        Reply::json(with_usage(oa_calls(&[("c1", "slow", "{}"), ("c2", "nope", "{}")]), usage(5, 3))),
        Reply::json(with_usage(oa_text("done"), usage(7, 2))),
        Reply::raw(500, "oops"),
    ])
    .await;
    let tk = toolkit(vec![fn_tool("slow", |_, _| async {
        tokio::time::sleep(Duration::from_millis(120)).await;
        ToolResult::ok("zzz")
    })])
    .await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.retries = 0;
    let client = Client::new(o).unwrap();

    client.run("go", &tk, RunOptions::default()).await.unwrap();
    let e = client.run("again", &tk, RunOptions::default()).await.unwrap_err();
    assert_eq!(e.to_string(), "LLM 500: oops");

    let text = client.metrics();
    let llm_buckets = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60"]
        .map(|le| format!("toolnexus_llm_request_duration_seconds_bucket{{model=\"m\",le=\"{le}\"}} *"));
    let nope_buckets = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60"]
        .map(|le| format!("toolnexus_tool_duration_seconds_bucket{{tool=\"nope\",le=\"{le}\"}} *"));
    let mut expected: Vec<String> = vec![
        "# HELP toolnexus_llm_requests_total Total LLM requests.".into(),
        "# TYPE toolnexus_llm_requests_total counter".into(),
        "toolnexus_llm_requests_total{model=\"m\",status=\"error\"} 1".into(),
        "toolnexus_llm_requests_total{model=\"m\",status=\"ok\"} 2".into(),
        "# HELP toolnexus_llm_tokens_total Total tokens, by type.".into(),
        "# TYPE toolnexus_llm_tokens_total counter".into(),
        "toolnexus_llm_tokens_total{type=\"completion\"} 5".into(),
        "toolnexus_llm_tokens_total{type=\"prompt\"} 12".into(),
        "# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.".into(),
        "# TYPE toolnexus_llm_request_duration_seconds histogram".into(),
    ];
    expected.extend(llm_buckets);
    expected.extend([
        "toolnexus_llm_request_duration_seconds_bucket{model=\"m\",le=\"+Inf\"} 3".into(),
        "toolnexus_llm_request_duration_seconds_sum{model=\"m\"} *".into(),
        "toolnexus_llm_request_duration_seconds_count{model=\"m\"} 3".into(),
        "# HELP toolnexus_tool_calls_total Total tool calls.".into(),
        "# TYPE toolnexus_tool_calls_total counter".into(),
        "toolnexus_tool_calls_total{tool=\"nope\",source=\"custom\",is_error=\"true\",pending=\"false\"} 1".into(),
        "toolnexus_tool_calls_total{tool=\"slow\",source=\"native\",is_error=\"false\",pending=\"false\"} 1".into(),
        "# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.".into(),
        "# TYPE toolnexus_tool_duration_seconds histogram".into(),
    ]);
    expected.extend(nope_buckets);
    expected.extend([
        "toolnexus_tool_duration_seconds_bucket{tool=\"nope\",le=\"+Inf\"} 1".into(),
        "toolnexus_tool_duration_seconds_sum{tool=\"nope\"} *".into(),
        "toolnexus_tool_duration_seconds_count{tool=\"nope\"} 1".into(),
        // `slow` sleeps 120 ms: never in the two smallest buckets, always in +Inf.
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"0.05\"} 0".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"0.1\"} 0".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"0.25\"} *".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"0.5\"} *".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"1\"} *".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"2.5\"} *".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"5\"} *".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"10\"} *".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"30\"} *".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"60\"} *".into(),
        "toolnexus_tool_duration_seconds_bucket{tool=\"slow\",le=\"+Inf\"} 1".into(),
        "toolnexus_tool_duration_seconds_sum{tool=\"slow\"} 0.*".into(),
        "toolnexus_tool_duration_seconds_count{tool=\"slow\"} 1".into(),
        "# HELP toolnexus_run_errors_total Total run errors.".into(),
        "# TYPE toolnexus_run_errors_total counter".into(),
        "toolnexus_run_errors_total{model=\"m\"} 1".into(),
    ]);
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    assert_lines(&text, &expected);

    assert!(sample(&text, "toolnexus_tool_duration_seconds_sum{tool=\"slow\"}") >= 0.12);
    assert!(sample(&text, "toolnexus_llm_request_duration_seconds_sum{model=\"m\"}") >= 0.0);
    // Buckets are cumulative.
    let mut last = 0.0;
    for le in ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf"] {
        let v = sample(&text, &format!("toolnexus_llm_request_duration_seconds_bucket{{model=\"m\",le=\"{le}\"}}"));
        assert!(v >= last, "bucket {le} is cumulative");
        last = v;
    }
}

#[tokio::test]
async fn metrics_accumulate_across_runs_and_streams() {
    let server = MockLlm::sequence(vec![
        Action::Reply(Reply::json(with_usage(oa_text("a"), usage(2, 1)))),
        Action::Stream(oa_text_stream(&["b"], 3, 4)),
    ])
    .await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let sink = recorder(Log::default());

    client.run("1", &tk, RunOptions::default()).await.unwrap();
    client.stream("2", &tk, None, RunOptions::default(), sink.as_ref()).await.unwrap();

    let text = client.metrics();
    assert_eq!(sample(&text, "toolnexus_llm_requests_total{model=\"m\",status=\"ok\"}"), 2.0);
    assert_eq!(sample(&text, "toolnexus_llm_tokens_total{type=\"prompt\"}"), 5.0);
    assert_eq!(sample(&text, "toolnexus_llm_tokens_total{type=\"completion\"}"), 5.0);
    assert_eq!(sample(&text, "toolnexus_llm_request_duration_seconds_count{model=\"m\"}"), 2.0);
    assert!(!text.contains("toolnexus_run_errors_total{"));
}

// ---------------------------------------------------------------------------------------
// Run error events
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn an_http_failure_emits_an_llm_error_then_a_run_error() {
    let server = MockLlm::script(vec![Reply::raw(500, "oops")]).await;
    let tk = toolkit(vec![]).await;
    let (mut o, log) = metered(&server.url(), Style::Anthropic);
    o.retries = 0;
    let client = Client::new(o).unwrap();

    client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(
        texts(&log),
        [
            r#"{"event":"llm","model":"m","status":"error","ms":0,"promptTokens":0,"completionTokens":0}"#,
            r#"{"event":"run","model":"m","turns":1,"toolCalls":0,"totalTokens":0,"ms":0,"error":"LLM 500: oops"}"#,
        ]
    );
}

#[tokio::test]
async fn a_failure_after_a_tool_turn_reports_how_far_the_run_got() {
    let server = MockLlm::script(vec![
        Reply::json(with_usage(oa_calls(&[("c1", "t", "{}")]), usage(4, 2))),
        Reply::raw(500, "late"),
    ])
    .await;
    let tk = toolkit(vec![text_tool("t", "o")]).await;
    let (mut o, log) = metered(&server.url(), Style::OpenAI);
    o.retries = 0;
    let client = Client::new(o).unwrap();

    client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(
        texts(&log).last().unwrap(),
        r#"{"event":"run","model":"m","turns":2,"toolCalls":1,"totalTokens":6,"ms":0,"error":"LLM 500: late"}"#
    );
}

#[tokio::test]
async fn a_failed_stream_emits_a_run_error_and_no_done() {
    let server = MockLlm::script(vec![Reply::raw(400, "bad")]).await;
    let tk = toolkit(vec![]).await;
    let (o, log) = metered(&server.url(), Style::OpenAI);
    let client = Client::new(o).unwrap();
    let events = Log::default();

    client.stream("q", &tk, None, RunOptions::default(), recorder(events.clone()).as_ref()).await.unwrap_err();

    assert_eq!(
        texts(&log),
        [
            r#"{"event":"llm","model":"m","status":"error","ms":0,"promptTokens":0,"completionTokens":0}"#,
            r#"{"event":"run","model":"m","turns":1,"toolCalls":0,"totalTokens":0,"ms":0,"error":"LLM 400: bad"}"#,
        ]
    );
    assert_eq!(events.len(), 0);
}

/// An abort or the run deadline, while the endpoint is silent, ends the run with an error run
/// event carrying the reason, counted in `toolnexus_run_errors_total`. Per the reference, it
/// rejects the in-flight fetch inside the LLM call, whose error path emits `{event:"llm",
/// status:"error"}` before the run's error event — so the interrupted request is counted in
/// `toolnexus_llm_requests_total{status="error"}`.
async fn an_interrupted_run_emits_an_llm_error_then_a_run_error(timeout: bool) {
    for style in [Style::OpenAI, Style::Anthropic] {
        let server = MockLlm::hanging().await;
        let tk = toolkit(vec![]).await;
        let (mut o, log) = metered(&server.url(), style);
        if timeout {
            o.timeout_ms = Some(100);
        }
        let client = Client::new(o).unwrap();
        let abort = Abort::new();
        let ro = RunOptions { abort: Some(abort.clone()), ..Default::default() };
        let run = client.run("q", &tk, ro);
        let stop = async {
            server.wait_for_requests(1).await;
            if !timeout {
                abort.abort(Some("stop now".into()));
            }
        };
        let (res, ()) = tokio::time::timeout(GUARD, async { tokio::join!(run, stop) }).await.unwrap();
        let reason = res.unwrap_err().to_string();

        assert_eq!(reason, if timeout { "run timeout after 100ms" } else { "stop now" }, "{style:?}");
        assert_eq!(
            texts(&log),
            [
                r#"{"event":"llm","model":"m","status":"error","ms":0,"promptTokens":0,"completionTokens":0}"#
                    .to_string(),
                format!(
                    r#"{{"event":"run","model":"m","turns":1,"toolCalls":0,"totalTokens":0,"ms":0,"error":"{reason}"}}"#
                ),
            ]
        );
        let text = client.metrics();
        assert!(text.contains("toolnexus_llm_requests_total{model=\"m\",status=\"error\"} 1\n"), "{text}");
        assert!(text.contains("toolnexus_run_errors_total{model=\"m\"} 1\n"), "{text}");
    }
}

#[tokio::test]
async fn an_abort_emits_an_llm_error_then_a_run_error_with_the_reason() {
    an_interrupted_run_emits_an_llm_error_then_a_run_error(false).await;
}

#[tokio::test]
async fn a_timeout_emits_an_llm_error_then_a_run_error() {
    an_interrupted_run_emits_an_llm_error_then_a_run_error(true).await;
}

// ---------------------------------------------------------------------------------------
// A failing onMetric
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn an_on_metric_error_fails_the_run_with_that_error() {
    let server =
        MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "t", "{}")])), Reply::json(oa_text("never asked"))]).await;
    let tk = toolkit(vec![text_tool("t", "o")]).await;
    let log = Log::default();
    let mut o = options(&server.url(), Style::OpenAI);
    let l = log.clone();
    o.on_metric = Some(callback(move |ev: Value| {
        let l = l.clone();
        async move {
            l.push(ev.clone());
            if ev["event"] == "tool" {
                return Err(Error::host_message("metrics sink down"));
            }
            Ok(Value::Null)
        }
    }));
    let client = Client::new(o).unwrap();

    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert!(matches!(e, Error::Host(_)), "{e:?}");
    assert_eq!(e.to_string(), "metrics sink down");
    assert_eq!(server.count(), 1, "the run stops where the sink failed");
    let events: Vec<String> = log.all().into_iter().map(|v| zero_ms(v).to_string()).collect();
    assert_eq!(
        events.last().unwrap(),
        r#"{"event":"run","model":"m","turns":1,"toolCalls":0,"totalTokens":0,"ms":0,"error":"metrics sink down"}"#
    );
}

#[tokio::test]
async fn an_on_metric_error_on_the_run_event_fails_a_finished_run() {
    let server = MockLlm::script(vec![Reply::json(oa_text("fine"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.on_metric = Some(callback(|ev: Value| async move {
        if ev["event"] == "run" {
            return Err(Error::host_message("run sink down"));
        }
        Ok(Value::Null)
    }));
    let client = Client::new(o).unwrap();

    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(e.to_string(), "run sink down");
}
