//! `Retry-After` in its delay-seconds form: waited before the retry, `0` meaning at once;
//! any other form falls back to the backoff.

use std::time::{Duration, Instant};

use toolnexus_core::client::{Client, RunOptions, Style};

use crate::common::*;

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

/// `Retry-After: 0` (a 429 in the OpenAI style, a 503 in the Anthropic style, the header's
/// name in any case) is a retry at once: a backoff would wait ten minutes.
#[tokio::test]
async fn retry_after_zero_retries_at_once() {
    for (style, refusal, answer) in [
        (Style::OpenAI, Reply::raw(429, "slow down").header("Retry-After", "0"), "ok now"),
        (Style::Anthropic, Reply::raw(503, "busy").header("retry-after", "0"), "now"),
    ] {
        let (server, arrivals) = timed(vec![refusal, Reply::json(text_reply(style, answer))]).await;
        let tk = toolkit(vec![]).await;
        let mut o = options(&server.url(), style);
        // A backoff this long would trip the guard below: only an honoured `Retry-After: 0` passes.
        o.retry_base_ms = 600_000.0;
        let client = Client::new(o).unwrap();

        let r = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default()))
            .await
            .expect("Retry-After: 0 must mean retry now, not fall back to backoff")
            .unwrap();

        assert_eq!(r.text, answer);
        assert_eq!(server.count(), 2);
        let at = arrivals.all();
        assert_eq!(at.len(), 2);
        assert!(at[1] - at[0] < Duration::from_millis(500), "{style:?}: {:?}", at[1] - at[0]);
    }
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
