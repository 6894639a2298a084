//! Failure paths: HTTP errors and retries, bad bodies, unreachable endpoints,
//! cancellation and the run deadline.

use std::time::Duration;

use serde_json::json;
use toolnexus_core::client::{Abort, Client, RunOptions, RunStatus, Style, ABORTED};
use toolnexus_core::Error;

use crate::common::*;

const HANG_GUARD: Duration = Duration::from_secs(5);

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
async fn a_429_with_retry_after_zero_is_retried_at_once() {
    let server =
        MockLlm::script(vec![Reply::raw(429, "slow down").header("Retry-After", "0"), Reply::json(oa_text("ok now"))])
            .await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    // A backoff this long would trip the guard below: only an honoured `Retry-After: 0` passes.
    o.retry_base_ms = 600_000.0;
    let client = Client::new(o).unwrap();

    let r = tokio::time::timeout(HANG_GUARD, client.run("q", &tk, RunOptions::default()))
        .await
        .expect("Retry-After: 0 must mean retry now, not fall back to backoff")
        .unwrap();

    assert_eq!(r.text, "ok now");
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn an_invalid_json_body_is_an_invalid_response() {
    let server = MockLlm::script(vec![Reply::raw(200, "this is { not json")]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

    assert!(matches!(e, Error::NotJson(_)), "{e:?}");
    assert_eq!(e.js_class(), "SyntaxError");
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn a_json_body_without_a_message_is_an_invalid_response() {
    let server = MockLlm::script(vec![Reply::json(json!({"choices": []}))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();
    assert!(matches!(e, Error::BadShape(_)), "{e:?}");
    assert_eq!(e.js_class(), "TypeError");
}

#[tokio::test]
async fn an_unreachable_endpoint_fails_after_the_retries() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&format!("http://127.0.0.1:{port}"), Style::OpenAI)).unwrap();

    let e = tokio::time::timeout(HANG_GUARD, client.run("q", &tk, RunOptions::default()))
        .await
        .expect("a refused connection must not hang")
        .unwrap_err();

    let Error::Fetch(f) = &e else { panic!("{e:?}") };
    assert_eq!(e.to_string(), "fetch failed");
    assert_eq!(e.js_class(), "TypeError");
    assert_eq!(f.cause.as_ref().and_then(|c| c.code()), Some("ECONNREFUSED"));
}

#[tokio::test]
async fn a_dropped_connection_is_retried_then_fails() {
    let server = MockLlm::start(|_, _| Action::Close).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let e = tokio::time::timeout(HANG_GUARD, client.run("q", &tk, RunOptions::default()))
        .await
        .expect("a dropped connection must not hang")
        .unwrap_err();

    let Error::Fetch(f) = &e else { panic!("{e:?}") };
    assert_eq!(f.cause.as_ref().and_then(|c| c.code()), Some("UND_ERR_SOCKET"));
    assert_eq!(server.count(), 3, "a network failure is retried like a 5xx");
}

#[tokio::test]
async fn a_dropped_connection_then_a_reply_succeeds() {
    let server = MockLlm::start(|_, i| match i {
        0 => Action::Close,
        _ => Action::Reply(Reply::json(an_reply(json!([an_text("back")])))),
    })
    .await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.text, "back");
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn an_already_cancelled_run_is_aborted_before_any_request() {
    let server = MockLlm::hanging().await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let token = Abort::new();
    token.abort(None);

    let e =
        tokio::time::timeout(HANG_GUARD, client.run("q", &tk, RunOptions { abort: Some(token), ..Default::default() }))
            .await
            .expect("a cancelled run must not hang")
            .unwrap_err();

    assert!(matches!(&e, Error::Aborted(m) if m == ABORTED), "{e:?}");
    assert_eq!(e.to_string(), "This operation was aborted");
    assert_eq!(server.count(), 0);
}

#[tokio::test]
async fn a_cancel_during_the_request_aborts_with_the_reason() {
    let server = MockLlm::hanging().await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();
    let token = Abort::new();
    let ro = RunOptions { abort: Some(token.clone()), ..Default::default() };

    let run = client.run("q", &tk, ro);
    let cancel_once_asked = async {
        server.wait_for_requests(1).await;
        token.abort(Some("user hit stop".into()));
    };
    let (res, ()) = tokio::time::timeout(HANG_GUARD, async { tokio::join!(run, cancel_once_asked) })
        .await
        .expect("a cancelled run must return promptly while the endpoint is silent");

    let e = res.unwrap_err();
    assert!(matches!(&e, Error::Aborted(m) if m == "user hit stop"), "{e:?}");
    assert_eq!(e.to_string(), "user hit stop");
    assert_eq!(server.count(), 1, "an abort is not retried");
}

#[tokio::test]
async fn a_cancel_while_a_tool_runs_aborts_the_run() {
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "stuck", "{}")]))]).await;
    let token = Abort::new();
    let t = token.clone();
    let tk = toolkit(vec![fn_tool("stuck", move |_, _| {
        let t = t.clone();
        async move {
            t.abort(None);
            std::future::pending::<()>().await;
            toolnexus_core::native::RunOutput::Text("never".into())
        }
    })])
    .await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let e =
        tokio::time::timeout(HANG_GUARD, client.run("q", &tk, RunOptions { abort: Some(token), ..Default::default() }))
            .await
            .expect("cancel must not wait for a stuck tool")
            .unwrap_err();

    assert!(matches!(&e, Error::Aborted(m) if m == ABORTED), "{e:?}");
}

#[tokio::test]
async fn the_run_deadline_fails_a_silent_endpoint() {
    let server = MockLlm::hanging().await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.timeout_ms = Some(100);
    let client = Client::new(o).unwrap();

    let e = tokio::time::timeout(HANG_GUARD, client.run("q", &tk, RunOptions::default()))
        .await
        .expect("the run deadline must fire")
        .unwrap_err();

    assert!(matches!(e, Error::Timeout(100)), "{e:?}");
    assert_eq!(e.to_string(), "run timeout after 100ms");
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn a_deadline_that_is_not_reached_changes_nothing() {
    let server = MockLlm::script(vec![Reply::json(oa_text("quick"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.timeout_ms = Some(60_000);
    let client = Client::new(o).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(r.text, "quick");
}

#[tokio::test]
async fn one_transport_alternating_between_endpoints_reaches_each_in_turn() {
    use toolnexus_core::client::http::FetchTransport;
    use toolnexus_core::client::transport::{HttpRequest, Transport};
    let a = MockLlm::script(vec![Reply::json(oa_text("from a")), Reply::json(oa_text("a again"))]).await;
    let b = MockLlm::script(vec![Reply::json(oa_text("from b"))]).await;
    let t = FetchTransport::new(toolnexus_core::fetch::Fetcher::new(toolnexus_core::fetch::TokioConnect));
    let post = |url: String| HttpRequest { url, headers: vec![], body: "{}".into() };
    let mut seen = vec![];
    for url in [a.url(), b.url(), a.url()] {
        let res = t.post(post(format!("{url}/chat/completions"))).await.unwrap();
        seen.push(
            res.body.contains("from a") as u8
                + 2 * res.body.contains("from b") as u8
                + 4 * res.body.contains("a again") as u8,
        );
    }
    assert_eq!(seen, vec![1, 2, 4]);
    assert_eq!((a.count(), b.count()), (2, 1));
}

#[tokio::test]
async fn an_unparseable_endpoint_fails_as_a_fetch_failure() {
    use toolnexus_core::client::http::FetchTransport;
    use toolnexus_core::client::transport::{HttpRequest, Transport};
    let t = FetchTransport::shared();
    for _ in 0..2 {
        let e =
            t.post(HttpRequest { url: "not a url/chat".into(), headers: vec![], body: "{}".into() }).await.unwrap_err();
        assert!(matches!(e, Error::Fetch(_)), "{e:?}");
        assert_eq!(e.to_string(), "Failed to parse URL from not a url/chat");
    }
}
