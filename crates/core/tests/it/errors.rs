//! Failure paths that are not retried: no API key, a reply that is not JSON or has no
//! message, an endpoint URL that does not parse.

use serde_json::json;
use toolnexus_core::client::{Client, RunOptions, Style};
use toolnexus_core::Error;

use crate::common::*;

#[tokio::test]
async fn no_key_anywhere_is_a_clear_error_and_nothing_is_sent() {
    const KEYS: [&str; 3] = ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"];
    // The keys are read from the process environment: run in a process without them.
    crate::alone!(no_key_anywhere_is_a_clear_error_and_nothing_is_sent, |cmd| {
        for var in KEYS {
            cmd.env_remove(var);
        }
    });
    assert!(KEYS.iter().all(|var| std::env::var_os(var).is_none()));
    let server = MockLlm::script(vec![Reply::json(oa_text("unreachable"))]).await;
    let tk = toolkit(vec![]).await;
    for (style, key) in [(Style::OpenAI, None), (Style::Anthropic, None), (Style::OpenAI, Some(String::new()))] {
        let mut o = options(&server.url(), style);
        o.api_key = key.clone();
        let client = Client::new(o).unwrap();

        let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

        assert!(matches!(e, Error::NoApiKey), "{style:?} {key:?}: {e:?}");
        assert_eq!(e.to_string(), "No API key: set apiKey or OPENROUTER_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY");
    }
    assert_eq!(server.count(), 0);
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

#[tokio::test]
async fn every_error_has_a_shape_and_an_http_error_carries_its_status() {
    let server = MockLlm::script(vec![Reply::raw(503, "busy")]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.retries = 0;
    let client = Client::new(o).unwrap();
    let e = client.run("q", &toolkit(vec![]).await, RunOptions::default()).await.unwrap_err();
    assert_eq!(e.js_shape(), json!({"name": "Error", "message": "LLM 503: busy", "fields": {"status": 503}}));
    // Anything without a class of its own is a plain Error with its message.
    assert_eq!(Error::NoApiKey.js_shape()["name"], "Error");
    assert_eq!(Error::NotJson("x".into()).js_shape(), json!({"name": "SyntaxError", "message": "x"}));
}
