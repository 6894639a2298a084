//! The transcript a run starts from: the system prompt (a leading message in the OpenAI
//! style, a body key in the Anthropic style) and a caller's history.

use serde_json::json;
use toolnexus_core::client::{Client, RunOptions, Style};

use crate::common::*;

#[tokio::test]
async fn the_system_prompt_leads_only_a_fresh_transcript() {
    let server = MockLlm::script(vec![Reply::json(oa_text("one")), Reply::json(oa_text("two"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.system_prompt = Some("Be brief.".into());
    let client = Client::new(o).unwrap();

    // Fresh: system message first.
    let r = client.run("q1", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(
        server.request(0).messages(),
        vec![json!({"role": "system", "content": "Be brief."}), json!({"role": "user", "content": "q1"})]
    );
    assert_eq!(r.messages.len(), 3);

    // With history: the history is continued as given, no system message is added.
    let history = vec![json!({"role": "user", "content": "earlier"}), json!({"role": "assistant", "content": "ok"})];
    let r = client.run("q2", &tk, RunOptions { history: Some(history.clone()), ..Default::default() }).await.unwrap();
    let sent = server.request(1).messages();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[..2], history[..]);
    assert_eq!(sent[2], json!({"role": "user", "content": "q2"}));
    assert!(sent.iter().all(|m| m["role"] != "system"));
    assert_eq!(r.text, "two");
    assert_eq!(r.messages.len(), 4);
    assert_eq!(r.messages[..2], history[..]);
}

#[tokio::test]
async fn an_empty_history_counts_as_fresh() {
    let server = MockLlm::script(vec![Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.system_prompt = Some("S".into());
    let client = Client::new(o).unwrap();
    client.run("q", &tk, RunOptions { history: Some(vec![]), ..Default::default() }).await.unwrap();
    assert_eq!(server.request(0).messages()[0], json!({"role": "system", "content": "S"}));
}

#[tokio::test]
async fn the_system_prompt_rides_the_body_and_tools_are_omitted_when_empty() {
    let server = MockLlm::script(vec![Reply::json(an_reply(json!([an_text("hi")])))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = options(&server.url(), Style::Anthropic);
    o.system_prompt = Some("Be brief.".into());
    let client = Client::new(o).unwrap();

    let history = vec![json!({"role": "user", "content": "before"}), json!({"role": "assistant", "content": "ok"})];
    let r =
        client.run("hello", &tk, RunOptions { history: Some(history.clone()), ..Default::default() }).await.unwrap();

    let seen = server.request(0);
    assert_eq!(seen.body_keys(), ["model", "max_tokens", "system", "messages"]);
    assert_eq!(seen.body["system"], "Be brief.");
    assert_eq!(seen.body["max_tokens"], 4096);
    let msgs = seen.messages();
    assert_eq!(msgs[..2], history[..]);
    assert_eq!(msgs[2], json!({"role": "user", "content": "hello"}));
    assert_eq!(msgs.len(), 3);
    assert_eq!(r.text, "hi");
    assert_eq!(r.turns, 1);
}
