//! The client's options: their defaults, and what is (not) refused when a client is built.

use toolnexus_core::client::{Client, RunOptions, Style};

use crate::common::*;

#[tokio::test]
async fn client_options_are_validated_and_defaulted() {
    let o = toolnexus_core::client::ClientOptions::new("http://x", Style::OpenAI, "m");
    assert_eq!(o.max_turns, 10);
    assert_eq!(o.retries, 2);
    assert_eq!(o.retry_base_ms, 500.0);
    assert!(o.timeout_ms.is_none());
}

#[tokio::test]
async fn a_client_without_a_model_is_built_and_sends_no_model_key() {
    // As the reference: nothing is refused up front; an endpoint that needs no model answers.
    let server = MockLlm::script(vec![Reply::json(oa_text("hi"))]).await;
    let tk = toolkit(vec![]).await;
    let mut opts = options(&server.url(), Style::OpenAI);
    opts.model = String::new();
    let client = Client::new(opts).unwrap();
    let r = client.run("x", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.text, "hi");
    assert_eq!(server.request(0).body_keys(), ["messages"]);
}

#[tokio::test]
async fn a_client_without_a_base_url_fails_at_the_run_not_when_built() {
    let tk = toolkit(vec![]).await;
    let mut opts = options("", Style::OpenAI);
    opts.retries = 0;
    let client = Client::new(opts).unwrap();
    assert!(client.run("x", &tk, RunOptions::default()).await.is_err());
}
