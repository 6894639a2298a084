//! The `onError` classifier: what it is told, and how its answer bounds the retries.

use serde_json::{json, Value};
use toolnexus_core::callback::callback;
use toolnexus_core::client::{Client, ClientOptions, RunOptions, Style};
use toolnexus_core::Error;

use crate::common::*;

/// An `on_error` that logs each info and answers `tier`.
fn classifier(o: &mut ClientOptions, tier: &'static str) -> Log<Value> {
    let log = Log::default();
    let l = log.clone();
    o.on_error = Some(callback(move |info: Value| {
        let l = l.clone();
        async move {
            l.push(info);
            Ok(json!(tier))
        }
    }));
    log
}

fn texts(log: &Log<Value>) -> Vec<String> {
    log.all().iter().map(Value::to_string).collect()
}

#[tokio::test]
async fn on_error_fail_stops_at_the_first_failure() {
    let server = MockLlm::start(|_, i| Action::Reply(Reply::raw(503, &format!("busy {i}")))).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.retries = 5;
    let infos = classifier(&mut o, "fail");
    let client = Client::new(o).unwrap();

    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(e.to_string(), "LLM 503: busy 0");
    assert_eq!(server.count(), 1, "no retry after a fail");
    assert_eq!(texts(&infos), [r#"{"status":503,"attempt":0,"retryable":true}"#]);
}

#[tokio::test]
async fn on_error_retry_on_a_400_is_bounded_by_retries() {
    let server = MockLlm::start(|_, i| Action::Reply(Reply::raw(400, &format!("bad {i}")))).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::Anthropic);
    o.retries = 2;
    let infos = classifier(&mut o, "retry");
    let client = Client::new(o).unwrap();

    let e = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default()))
        .await
        .expect("a retry classifier cannot loop forever")
        .unwrap_err();

    assert_eq!(server.count(), 3, "one try plus `retries` retries, no more");
    assert_eq!(e.to_string(), "LLM 400: bad 2");
    assert!(matches!(e, Error::Http { status: 400, .. }));
    assert_eq!(
        texts(&infos),
        [
            r#"{"status":400,"attempt":0,"retryable":false}"#,
            r#"{"status":400,"attempt":1,"retryable":false}"#,
            r#"{"status":400,"attempt":2,"retryable":false}"#,
        ]
    );
}

#[tokio::test]
async fn on_error_retry_then_success() {
    let server = MockLlm::script(vec![Reply::raw(409, "conflict"), Reply::json(oa_text("fine"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    let infos = classifier(&mut o, "retry");
    let client = Client::new(o).unwrap();

    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();

    assert_eq!(r.text, "fine");
    assert_eq!(texts(&infos), [r#"{"status":409,"attempt":0,"retryable":false}"#]);
}

#[tokio::test]
async fn on_error_sees_a_refused_connection_as_a_retryable_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let tk = toolkit(vec![]).await;
    let mut o = options(&format!("http://127.0.0.1:{port}"), Style::OpenAI);
    o.retries = 1;
    let infos = classifier(&mut o, "retry");
    let client = Client::new(o).unwrap();

    let e = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default())).await.unwrap().unwrap_err();

    assert!(matches!(e, Error::Fetch(_)), "{e:?}");
    let all = infos.all();
    assert_eq!(all.len(), 2, "{all:?}");
    for (i, info) in all.iter().enumerate() {
        assert_eq!(keys(info), ["error", "attempt", "retryable"]);
        assert_eq!(info["attempt"], i);
        assert_eq!(info["retryable"], true);
        // The error's shape, for the host to rebuild as Node's `TypeError: fetch failed`.
        assert_eq!(info["error"]["name"], "TypeError");
        assert_eq!(info["error"]["message"], "fetch failed");
        assert_eq!(info["error"]["cause"]["fields"]["code"], "ECONNREFUSED");
        assert_eq!(info["error"], e.js_shape(), "the info is the very error the run fails with");
    }
}

#[tokio::test]
async fn on_error_fail_on_a_network_error_fails_at_once() {
    let server = MockLlm::start(|_, _| Action::Close).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::Anthropic);
    let infos = classifier(&mut o, "fail");
    let client = Client::new(o).unwrap();

    let e = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default())).await.unwrap().unwrap_err();

    assert!(matches!(e, Error::Fetch(_)), "{e:?}");
    assert_eq!(server.count(), 1);
    assert_eq!(infos.len(), 1);
    assert_eq!(infos.all()[0]["retryable"], true);
    assert_eq!(infos.all()[0]["attempt"], 0);
}

#[tokio::test]
async fn a_failing_on_error_fails_the_run_with_its_error() {
    let server = MockLlm::start(|_, _| Action::Reply(Reply::raw(500, "x"))).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.on_error = Some(callback(|_| async { Err(Error::host_message("classifier broke")) }));
    let client = Client::new(o).unwrap();

    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert_eq!(e.to_string(), "classifier broke");
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn on_error_also_classifies_streaming_calls() {
    let server =
        MockLlm::sequence(vec![Action::Reply(Reply::raw(500, "flaky")), Action::Stream(oa_text_stream(&["ok"], 1, 1))])
            .await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    let infos = classifier(&mut o, "retry");
    let client = Client::new(o).unwrap();

    let r = client.stream("q", &tk, None, RunOptions::default(), recorder(Log::default()).as_ref()).await.unwrap();

    assert_eq!(r.text, "ok");
    assert_eq!(texts(&infos), [r#"{"status":500,"attempt":0,"retryable":true}"#]);
}
