//! Ending a run early: a cancelled abort signal (before the run, during a request, while a
//! tool runs) and the run deadline (`timeoutMs`), for a silent endpoint or a stalled stream.

use std::sync::Arc;

use tokio::sync::Notify;
use toolnexus_core::cancel::{Abort, ABORTED};
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};
use toolnexus_core::types::ToolResult;
use toolnexus_core::Error;

use crate::common::*;
use crate::stream::{stream_events, types};

#[tokio::test]
async fn an_already_cancelled_run_is_aborted_before_any_request() {
    let server = MockLlm::hanging().await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let token = Abort::new();
    token.abort(None);

    let e = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions { abort: Some(token), ..Default::default() }))
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
    let (res, ()) = tokio::time::timeout(GUARD, async { tokio::join!(run, cancel_once_asked) })
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
            ToolResult::ok("never")
        }
    })])
    .await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let e = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions { abort: Some(token), ..Default::default() }))
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

    let e = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default()))
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
async fn a_stalled_stream_is_cut_by_the_run_deadline() {
    // The first delta, then silence: the gate is never opened.
    let reply = oa_text_stream(&["partial", "never"], 1, 1).gate(2, Arc::new(Notify::new()));
    let server = MockLlm::sequence(vec![Action::Stream(reply)]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.timeout_ms = Some(300);
    let metrics = Log::default();
    o.on_metric = Some(recorder(metrics.clone()));
    let client = Client::new(o).unwrap();

    let (res, events) = stream_events(&client, "q", &tk).await;

    assert_eq!(res.unwrap_err().to_string(), "run timeout after 300ms");
    assert!(!types(&events).contains(&"done".to_string()));
    let last = metrics.all().last().cloned().expect("a run event");
    assert_eq!(last["event"], "run");
    assert_eq!(last["error"], "run timeout after 300ms");
}
