//! Model fallback (an addition): which failures go on to the next entry, what each entry
//! overrides, a style change mid-run, streams, metrics and `onError`, and every call starting
//! again at the primary.

use serde_json::{json, Value};
use toolnexus_core::callback::callback;
use toolnexus_core::client::{Client, ClientOptions, Fallback, RunOptions, Style};
use toolnexus_core::Error;

use crate::common::*;
use crate::metrics::{metered, usage};
use crate::stream::{stream_events, types};

fn entry(base: &str, model: &str) -> Fallback {
    Fallback { base_url: Some(base.into()), model: Some(model.into()), ..Default::default() }
}

/// An `onError` that records each failure and asks for the retry the policy allows.
fn retrying(log: Log<Value>) -> toolnexus_core::callback::SharedCallback {
    callback(move |info: Value| {
        let log = log.clone();
        async move {
            log.push(info);
            Ok(json!("retry"))
        }
    })
}

/// Options with no retries (each endpoint answers once per call) and the given entries.
fn with_fallback(base: &str, style: Style, entries: Vec<Fallback>) -> ClientOptions {
    let mut o = options(base, style);
    o.retries = 0;
    o.fallback = entries;
    o
}

#[tokio::test]
async fn a_failing_primary_hands_the_call_to_the_next_entry_and_the_next_call_starts_at_the_primary() {
    let primary = MockLlm::script(vec![Reply::raw(503, "busy"), Reply::json(oa_text("primary again"))]).await;
    let second = MockLlm::script(vec![Reply::raw(429, "slow down")]).await;
    let third = MockLlm::script(vec![Reply::json(oa_text("from the third"))]).await;
    let tk = toolkit(vec![]).await;
    let o = with_fallback(&primary.url(), Style::OpenAI, vec![entry(&second.url(), "m2"), entry(&third.url(), "m3")]);
    let client = Client::new(o).unwrap();

    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!((r.text.as_str(), r.model.as_str()), ("from the third", "m3"));
    assert_eq!((primary.count(), second.count(), third.count()), (1, 1, 1));
    // Each entry gets the same request under its own model.
    assert_eq!(second.request(0).body["model"], "m2");
    assert_eq!(third.request(0).body["model"], "m3");
    assert_eq!(third.request(0).body["messages"], primary.request(0).body["messages"]);

    let r = client.run("again", &tk, RunOptions::default()).await.unwrap();
    assert_eq!((r.text.as_str(), r.model.as_str()), ("primary again", "m"));
    assert_eq!(third.count(), 1, "the next call went to the primary first");
}

#[tokio::test]
async fn a_400_401_or_403_is_the_error_and_goes_nowhere_else() {
    for status in [400, 401, 403] {
        let primary = MockLlm::script(vec![Reply::raw(status, "no")]).await;
        let other = MockLlm::script(vec![Reply::json(oa_text("never"))]).await;
        let tk = toolkit(vec![]).await;
        let client =
            Client::new(with_fallback(&primary.url(), Style::OpenAI, vec![entry(&other.url(), "m2")])).unwrap();
        let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();
        assert_eq!(e.to_string(), format!("LLM {status}: no"));
        assert_eq!(other.count(), 0, "{status} does not fall back");
    }
}

#[tokio::test]
async fn a_model_not_found_and_a_refused_connection_fall_back() {
    let missing = MockLlm::script(vec![Reply::raw(404, "no such model")]).await;
    let other = MockLlm::script(vec![Reply::json(oa_text("found"))]).await;
    let tk = toolkit(vec![]).await;
    let refused = format!("http://127.0.0.1:{}/v1", refused_port().await);
    let o = with_fallback(&refused, Style::OpenAI, vec![entry(&missing.url(), "gone"), entry(&other.url(), "m3")]);
    let client = Client::new(o).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!((r.text.as_str(), r.model.as_str()), ("found", "m3"));
    assert_eq!((missing.count(), other.count()), (1, 1));
}

#[tokio::test]
async fn when_every_entry_fails_the_last_failure_is_the_error() {
    let primary = MockLlm::script(vec![Reply::raw(503, "busy")]).await;
    let other = MockLlm::script(vec![Reply::raw(502, "bad gateway")]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(with_fallback(&primary.url(), Style::OpenAI, vec![entry(&other.url(), "m2")])).unwrap();
    let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();
    assert!(matches!(e, Error::Http { status: 502, .. }), "{e}");
}

#[tokio::test]
async fn each_entry_retries_as_the_primary_does_before_the_next() {
    let primary = MockLlm::start(|_, _| Action::Reply(Reply::raw(503, "busy"))).await;
    let other = MockLlm::script(vec![Reply::raw(500, "oops"), Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = with_fallback(&primary.url(), Style::OpenAI, vec![entry(&other.url(), "m2")]);
    o.retries = 1;
    let client = Client::new(o).unwrap();
    assert_eq!(client.run("q", &tk, RunOptions::default()).await.unwrap().text, "ok");
    assert_eq!((primary.count(), other.count()), (2, 2));
}

#[tokio::test]
async fn an_entry_overrides_the_key_and_headers_and_keeps_the_rest() {
    let primary = MockLlm::script(vec![Reply::raw(503, "busy")]).await;
    let other = MockLlm::script(vec![Reply::json(oa_text("ok"))]).await;
    let tk = toolkit(vec![]).await;
    let mut o = with_fallback(&primary.url(), Style::OpenAI, vec![]);
    o.headers = vec![("x-team".into(), "a".into())];
    o.fallback = vec![Fallback {
        base_url: Some(other.url()),
        api_key: Some("k2".into()),
        headers: Some(vec![("x-route".into(), "b".into())]),
        ..Default::default()
    }];
    let client = Client::new(o).unwrap();
    let r = client.run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.model, "m", "the primary's model when the entry names none");
    let seen = other.request(0);
    assert_eq!(seen.header("authorization"), Some("Bearer k2"));
    assert_eq!((seen.header("x-route"), seen.header("x-team")), (Some("b"), None));
    assert_eq!(primary.request(0).header("authorization"), Some("Bearer k"));
}

#[tokio::test]
async fn an_openai_run_continues_on_an_anthropic_entry_mid_run() {
    // The primary asks for a tool, then fails; the Anthropic entry gets the transcript in its
    // own shapes and answers; the run's transcript stays OpenAI's.
    let primary = MockLlm::script(vec![
        Reply::json(oa_calls(&[("call_1", "weather", r#"{"city":"Paris"}"#)])),
        Reply::raw(500, "down"),
    ])
    .await;
    let anthropic = MockLlm::script(vec![Reply::json(an_reply(json!([an_text("Paris: 18C")])))]).await;
    let tk = toolkit(vec![text_tool("weather", "18C")]).await;
    let o = with_fallback(
        &primary.url(),
        Style::OpenAI,
        vec![Fallback {
            base_url: Some(anthropic.url()),
            style: Some(Style::Anthropic),
            model: Some("claude".into()),
            ..Default::default()
        }],
    );
    let client = Client::new(o).unwrap();
    let r = client.run("weather in Paris?", &tk, RunOptions::default()).await.unwrap();
    assert_eq!((r.text.as_str(), r.model.as_str()), ("Paris: 18C", "claude"));

    let seen = anthropic.request(0);
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.header("x-api-key"), Some("k"));
    assert_eq!(seen.body["tools"][0]["name"], "weather");
    assert!(seen.body["tools"][0].get("input_schema").is_some(), "{}", seen.body["tools"]);
    let messages = seen.body["messages"].as_array().unwrap();
    assert_eq!(
        messages[1]["content"][0],
        json!({ "type": "tool_use", "id": "call_1", "name": "weather", "input": { "city": "Paris" } })
    );
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "call_1");

    let last = r.messages.last().unwrap();
    assert_eq!(last, &json!({ "role": "assistant", "content": "Paris: 18C" }), "the transcript stays OpenAI's");
}

#[tokio::test]
async fn an_anthropic_run_continues_on_an_openai_entry_and_its_tool_calls_enter_as_anthropic_blocks() {
    let primary = MockLlm::start(|_, _| Action::Reply(Reply::raw(529, "overloaded"))).await;
    let openai = MockLlm::script(vec![
        Reply::json(oa_calls(&[("call_9", "weather", r#"{"city":"Oslo"}"#)])),
        Reply::json(oa_text("Oslo: 2C")),
    ])
    .await;
    let tk = toolkit(vec![text_tool("weather", "2C")]).await;
    let mut o = with_fallback(
        &primary.url(),
        Style::Anthropic,
        vec![Fallback {
            base_url: Some(openai.url()),
            style: Some(Style::OpenAI),
            model: Some("gpt".into()),
            ..Default::default()
        }],
    );
    o.system_prompt = Some("be brief".into());
    let client = Client::new(o).unwrap();
    let r = client.run("weather in Oslo?", &tk, RunOptions::default()).await.unwrap();
    assert_eq!((r.text.as_str(), r.model.as_str()), ("Oslo: 2C", "gpt"));
    assert_eq!(primary.count(), 2, "each call tried the primary first");

    let first = openai.request(0);
    assert_eq!(first.path, "/chat/completions");
    assert_eq!(first.body["tools"][0]["function"]["name"], "weather");
    let second = openai.request(1).body["messages"].as_array().unwrap().clone();
    assert_eq!(second[0]["role"], "system");
    assert_eq!(second[2]["tool_calls"][0]["id"], "call_9");
    assert_eq!(second[3], json!({ "role": "tool", "tool_call_id": "call_9", "content": "2C" }));
    // In the run's own transcript the call is an Anthropic tool_use block.
    assert_eq!(r.messages[1]["content"][0]["type"], "tool_use");
    assert_eq!(r.messages[1]["content"][0]["input"], json!({ "city": "Oslo" }));
}

#[tokio::test]
async fn a_stream_falls_back_before_it_has_said_anything() {
    let primary = MockLlm::script(vec![Reply::raw(503, "busy")]).await;
    let other = MockLlm::sequence(vec![Action::Stream(oa_text_stream(&["he", "llo"], 1, 1))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(with_fallback(&primary.url(), Style::OpenAI, vec![entry(&other.url(), "m2")])).unwrap();
    let (r, events) = stream_events(&client, "q", &tk).await;
    let r = r.unwrap();
    assert_eq!((r.text.as_str(), r.model.as_str()), ("hello", "m2"));
    assert_eq!(types(&events), ["text", "text", "usage", "done"]);
}

#[tokio::test]
async fn metric_events_and_on_error_say_which_entry_failed_and_which_answered() {
    let primary = MockLlm::script(vec![Reply::raw(503, "busy")]).await;
    let other = MockLlm::script(vec![Reply::json(with_usage(oa_text("ok"), usage(2, 1)))]).await;
    let (mut o, metrics) = metered(&primary.url(), Style::OpenAI);
    o.retries = 0;
    o.fallback = vec![entry(&other.url(), "m2")];
    let infos = Log::default();
    o.on_error = Some(retrying(infos.clone()));
    let tk = toolkit(vec![]).await;
    Client::new(o).unwrap().run("q", &tk, RunOptions::default()).await.unwrap();

    let llm: Vec<Value> = metrics.all().into_iter().filter(|e| e["event"] == "llm").collect();
    assert_eq!(llm.len(), 2);
    assert_eq!(
        (llm[0]["model"].clone(), llm[0]["status"].clone(), llm[0].get("fallback")),
        (json!("m"), json!("error"), None)
    );
    assert_eq!(
        (llm[1]["model"].clone(), llm[1]["status"].clone(), llm[1]["fallback"].clone()),
        (json!("m2"), json!("ok"), json!(0))
    );
    let run = metrics.all().into_iter().find(|e| e["event"] == "run").unwrap();
    assert_eq!(run["model"], "m");
    assert_eq!(infos.all(), vec![json!({ "status": 503, "attempt": 0, "retryable": true, "model": "m" })]);
}

#[tokio::test]
async fn without_fallback_on_error_and_metrics_are_as_before() {
    let server = MockLlm::script(vec![Reply::raw(503, "busy"), Reply::json(oa_text("ok"))]).await;
    let (mut o, metrics) = metered(&server.url(), Style::OpenAI);
    let infos = Log::default();
    o.on_error = Some(retrying(infos.clone()));
    let tk = toolkit(vec![]).await;
    Client::new(o).unwrap().run("q", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(infos.all(), vec![json!({ "status": 503, "attempt": 0, "retryable": true })]);
    assert!(metrics.all().iter().all(|e| e.get("fallback").is_none()));
}

#[tokio::test]
async fn create_client_reads_fallback_entries_and_ignores_what_is_not_one() {
    let o = ClientOptions::from_json(
        r#"{"baseUrl":"http://a","model":"m","fallback":[{"model":"m2","style":"anthropic","apiKey":"k2"},7]}"#,
    )
    .unwrap();
    assert_eq!(o.fallback.len(), 1);
    assert_eq!(o.fallback[0].model.as_deref(), Some("m2"));
    assert_eq!(o.fallback[0].style, Some(Style::Anthropic));
    assert!(ClientOptions::from_json(r#"{"fallback":"nope"}"#).unwrap().fallback.is_empty());
}

/// A port no one listens on and no client can take as its own source port (it stays bound).
async fn refused_port() -> u16 {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    // Kept bound for the test's life: leaked on purpose, a few bytes per test.
    std::mem::forget(socket);
    port
}
