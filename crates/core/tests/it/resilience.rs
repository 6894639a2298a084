//! Resilience (SPEC §8): `Retry-After` in its delay-seconds form, and the `onError`
//! classifier — what it is told, and how its answer bounds the retries.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolnexus_core::client::{callback, Client, ClientOptions, RunOptions, Style};
use toolnexus_core::Error;

use crate::common::*;

const GUARD: Duration = Duration::from_secs(5);

/// A server answering from `replies` in order, logging when each request arrived.
async fn timed(replies: Vec<Reply>) -> (MockLlm, Log<Instant>) {
    let arrivals = Log::default();
    let a = arrivals.clone();
    let mut queue: std::collections::VecDeque<Reply> = replies.into();
    let server = MockLlm::start(move |_, _| {
        a.push(Instant::now());
        Action::Reply(queue.pop_front().unwrap_or_else(|| Reply::raw(418, "exhausted")))
    })
    .await;
    (server, arrivals)
}

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

// ---------------------------------------------------------------------------------------
// Retry-After
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn retry_after_one_second_is_waited_before_the_retry() {
    let (server, arrivals) =
        timed(vec![Reply::raw(429, "slow down").header("Retry-After", "1"), Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    // With a 1 ms backoff base, only an honoured Retry-After explains a one-second gap.
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default())).await.unwrap().unwrap();

    assert_eq!(r.text, "ok");
    let at = arrivals.all();
    assert_eq!(at.len(), 2);
    let gap = at[1] - at[0];
    assert!(gap >= Duration::from_millis(950), "the retry came after {gap:?}");
    assert!(gap < Duration::from_millis(3000), "the retry came after {gap:?}");
}

#[tokio::test]
async fn retry_after_zero_retries_at_once() {
    let (server, arrivals) =
        timed(vec![Reply::raw(503, "busy").header("retry-after", "0"), Reply::json(an_reply(json!([an_text("now")])))])
            .await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::Anthropic);
    // Backoff would wait ten minutes: only "0 means now" finishes in time.
    o.retry_base_ms = 600_000.0;
    let client = Client::new(o).unwrap();

    let r = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default()))
        .await
        .expect("Retry-After: 0 is an immediate retry")
        .unwrap();

    assert_eq!(r.text, "now");
    let at = arrivals.all();
    assert!(at[1] - at[0] < Duration::from_millis(500), "{:?}", at[1] - at[0]);
}

#[tokio::test]
async fn a_non_numeric_retry_after_falls_back_to_backoff() {
    let (server, arrivals) = timed(vec![
        Reply::raw(429, "later").header("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),
        Reply::raw(429, "later").header("Retry-After", "0.5"),
        Reply::json(oa_text("ok")),
    ])
    .await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let r = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default())).await.unwrap().unwrap();

    assert_eq!(r.text, "ok");
    let at = arrivals.all();
    // The 1 ms base plus up to 100 ms of jitter, well short of any honoured header.
    assert!(at[2] - at[0] < Duration::from_millis(900), "{:?}", at[2] - at[0]);
}

// ---------------------------------------------------------------------------------------
// onError
// ---------------------------------------------------------------------------------------

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
async fn without_on_error_a_400_is_not_retried_and_a_5xx_is() {
    let server = MockLlm::script(vec![Reply::raw(400, "no"), Reply::raw(504, "gw"), Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    assert_eq!(client.run("a", &tk, RunOptions::default()).await.unwrap_err().to_string(), "LLM 400: no");
    assert_eq!(client.run("b", &tk, RunOptions::default()).await.unwrap().text, "ok");
    assert_eq!(server.count(), 3);
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
        assert_eq!(Some(info["error"].clone()), e.js_shape(), "the info is the very error the run fails with");
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
