//! Retries after a network failure: a refused or dropped connection is tried again like a 5xx.

use serde_json::json;
use toolnexus_core::client::{Client, RunOptions, Style};
use toolnexus_core::Error;

use crate::common::*;

#[tokio::test]
async fn an_unreachable_endpoint_fails_after_the_retries() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&format!("http://127.0.0.1:{port}"), Style::OpenAI)).unwrap();

    let e = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default()))
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

    let e = tokio::time::timeout(GUARD, client.run("q", &tk, RunOptions::default()))
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
