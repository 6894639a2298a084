//! Retries by HTTP status: a 5xx is tried again, up to `retries` times and with the same body,
//! a 4xx is not; when the retries run out the last reply is the error. Streams and
//! translations retry alike, and a retried call reports its attempts in its metric.

use serde_json::json;
use toolnexus_core::client::one_call::TranslateRequest;
use toolnexus_core::client::{Client, RunOptions, Style};
use toolnexus_core::Error;

use crate::common::*;
use crate::metrics::{metered, texts, usage};
use crate::stream::{stream_events, types};
use crate::translate::user;

#[tokio::test]
async fn a_400_fails_at_once_with_the_body() {
    let server = MockLlm::script(vec![Reply::raw(400, r#"{"error":"bad model"}"#), Reply::json(oa_text("no"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(e.to_string(), r#"LLM 400: {"error":"bad model"}"#);
    assert!(matches!(e, Error::Http { status: 400, .. }));
    assert_eq!(server.count(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn without_on_error_a_400_is_not_retried_and_a_5xx_is() {
    let server = MockLlm::script(vec![Reply::raw(400, "no"), Reply::raw(504, "gw"), Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    assert_eq!(client.run("a", &tk, RunOptions::default()).await.unwrap_err().to_string(), "LLM 400: no");
    assert_eq!(client.run("b", &tk, RunOptions::default()).await.unwrap().text, "ok");
    assert_eq!(server.count(), 3);
}

#[tokio::test]
async fn a_500_is_retried_then_succeeds() {
    let server = MockLlm::script(vec![Reply::raw(500, "oops"), Reply::json(oa_text("recovered"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.text, "recovered");
    assert_eq!(r.turns, 1);
    assert_eq!(server.count(), 2);
    assert_eq!(server.request(0).body, server.request(1).body, "the retry resends the same body");
}

#[tokio::test]
async fn retries_run_out_on_the_last_response() {
    let server = MockLlm::start(|_, i| Action::Reply(Reply::raw(503, &format!("busy {i}")))).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();

    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(server.count(), 3, "one try plus the default two retries");
    assert_eq!(e.to_string(), "LLM 503: busy 2");
}

#[tokio::test]
async fn zero_retries_means_one_attempt() {
    let server = MockLlm::start(|_, _| Action::Reply(Reply::raw(502, "gw"))).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.retries = 0;
    let client = Client::new(o).unwrap();
    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();
    assert_eq!(server.count(), 1);
    assert_eq!(e.to_string(), "LLM 502: gw");
}

#[tokio::test]
async fn a_5xx_stream_reply_is_retried_then_streams() {
    let server =
        MockLlm::sequence(vec![Action::Reply(Reply::raw(503, "busy")), Action::Stream(oa_text_stream(&["ok"], 1, 1))])
            .await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let (res, events) = stream_events(&client, "q", &tk).await;

    assert_eq!(res.unwrap().text, "ok");
    assert_eq!(types(&events), ["text", "usage", "done"]);
    assert_eq!(server.count(), 2);
    assert_eq!(server.request(0).raw, server.request(1).raw);
}

#[tokio::test]
async fn retries_exhausted_on_a_stream_report_the_last_reply() {
    let server = MockLlm::start(|_, i| Action::Reply(Reply::raw(502, &format!("gw {i}")))).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();

    let (res, events) = stream_events(&client, "q", &tk).await;

    assert_eq!(res.unwrap_err().to_string(), "LLM 502: gw 2");
    assert!(events.is_empty());
    assert_eq!(server.count(), 3);
}

#[tokio::test]
async fn translate_shares_retries_and_request_params() {
    let server = MockLlm::script(vec![Reply::raw(503, "busy"), Reply::json(oa_text("ok"))]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.request_params = Some(map(json!({"temperature": 0, "messages": "ignored"})));
    let metrics = Log::default();
    o.on_metric = Some(recorder(metrics.clone()));
    let client = Client::new(o).unwrap();

    let r = client.translate(TranslateRequest { messages: vec![user("q")], ..Default::default() }, None).await.unwrap();

    assert_eq!(r.text, "ok");
    assert_eq!(server.count(), 2);
    assert_eq!(server.request(1).body_keys(), ["model", "messages", "temperature"]);
    assert_eq!(server.request(1).messages(), vec![user("q")]);
    assert_eq!(metrics.all()[0]["attempts"], 2);
}

#[tokio::test]
async fn attempts_appear_only_on_a_retried_call() {
    let server = MockLlm::script(vec![
        Reply::json(oa_text("first")),
        Reply::raw(500, "oops"),
        Reply::raw(503, "busy"),
        Reply::json(with_usage(oa_text("second"), usage(1, 1))),
        Reply::raw(500, "a"),
        Reply::raw(500, "b"),
        Reply::raw(500, "c"),
    ])
    .await;
    let tk = toolkit(vec![]).await;
    let (o, log) = metered(&server.url(), Style::OpenAI);
    let client = Client::new(o).unwrap();

    client.run("q1", &tk, RunOptions::default()).await.unwrap();
    client.run("q2", &tk, RunOptions::default()).await.unwrap();
    client.run("q3", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(
        texts(&log),
        [
            r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":0,"completionTokens":0}"#,
            r#"{"event":"run","model":"m","turns":1,"toolCalls":0,"totalTokens":0,"ms":0}"#,
            r#"{"event":"llm","model":"m","status":"ok","ms":0,"promptTokens":1,"completionTokens":1,"attempts":3}"#,
            r#"{"event":"run","model":"m","turns":1,"toolCalls":0,"totalTokens":2,"ms":0}"#,
            r#"{"event":"llm","model":"m","status":"error","ms":0,"promptTokens":0,"completionTokens":0,"attempts":3}"#,
            r#"{"event":"run","model":"m","turns":1,"toolCalls":0,"totalTokens":0,"ms":0,"error":"LLM 500: c"}"#,
        ]
    );
    // A retried call is still one request in the registry.
    assert!(client.metrics().contains("toolnexus_llm_requests_total{model=\"m\",status=\"ok\"} 2\n"));
}
