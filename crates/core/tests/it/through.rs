//! A host may send one run's LLM requests through another transport (the user's own seam)
//! without touching the client: only the requests made inside that run go there.

use std::sync::Arc;

use serde_json::json;
use toolnexus_core::client::{through, Client, RunOptions, Style};

use crate::common::{oa_text, options, toolkit, MockLlm, RecordingTransport, Reply};

#[tokio::test]
async fn a_run_under_through_uses_that_transport_and_the_next_run_its_own() {
    let server = MockLlm::script(vec![Reply::json(oa_text("hi")), Reply::json(oa_text("hi"))]).await;
    let own = RecordingTransport::new();
    let seam = RecordingTransport::new();
    let mut o = options(&server.url(), Style::OpenAI);
    o.transport = Some(own.clone());
    let client = Client::new(o).unwrap();
    let tk = toolkit(vec![]).await;

    let r = through(seam.clone(), client.run("one", &tk, RunOptions::default())).await.unwrap();
    assert_eq!(r.text, "hi");
    assert_eq!((seam.requests().len(), own.requests().len()), (1, 0));

    let r = client.run("two", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.text, "hi");
    assert_eq!((seam.requests().len(), own.requests().len()), (1, 1));
    let body: serde_json::Value = serde_json::from_str(&seam.requests()[0].body).unwrap();
    assert_eq!(body["messages"][0], json!({"role": "user", "content": "one"}));
}

#[tokio::test]
async fn streaming_and_translate_go_through_it_too() {
    let server = MockLlm::script(vec![Reply::json(oa_text("hi"))]).await;
    let own = RecordingTransport::new();
    let seam = RecordingTransport::new();
    let mut o = options(&server.url(), Style::OpenAI);
    o.transport = Some(own.clone());
    let client = Arc::new(Client::new(o).unwrap());
    let req = toolnexus_core::client::one_call::TranslateRequest::from_json(
        &json!({"messages": [{"role": "user", "content": "x"}]}).to_string(),
    )
    .unwrap();
    let res = through(seam.clone(), client.translate(req, None)).await.unwrap();
    assert_eq!(res.to_value()["text"], "hi");
    assert_eq!((seam.requests().len(), own.requests().len()), (1, 0));
}
