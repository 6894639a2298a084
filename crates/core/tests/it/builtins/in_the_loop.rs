//! The built-in tools inside the agent loop: a default toolkit declares all ten, the model
//! can call them, and `question` suspends through §10 like any other request.

use serde_json::{json, Value};
use toolnexus_core::callback::callback;
use toolnexus_core::client::{Client, RunOptions, RunStatus, Style};
use toolnexus_core::{Toolkit, ToolkitOptions};

use crate::common::*;

async fn default_toolkit() -> Toolkit {
    Toolkit::create(ToolkitOptions::default()).await.unwrap()
}

#[tokio::test]
async fn a_default_toolkit_declares_the_ten_builtins_to_the_model() {
    let server = MockLlm::script(vec![Reply::json(oa_text("hi"))]).await;
    let tk = default_toolkit().await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    client.run("hello", &tk, RunOptions::default()).await.unwrap();
    let tools = server.request(0).body["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<_> = tools.iter().map(|t| t["function"]["name"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(
        names,
        ["bash", "read", "write", "edit", "grep", "glob", "webfetch", "question", "apply_patch", "todowrite"]
    );
}

#[tokio::test]
async fn the_model_runs_a_builtin_and_reads_its_output() {
    let server = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "bash", r#"{"command":"printf from-the-shell"}"#)])),
        Reply::json(oa_text("done")),
    ])
    .await;
    let tk = default_toolkit().await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let r = client.run("run it", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.text, "done");
    assert_eq!(
        server.request(1).messages()[2],
        json!({"role": "tool", "tool_call_id": "c1", "content": "from-the-shell"})
    );
}

#[tokio::test]
async fn question_halts_the_run_without_a_wait_for() {
    let args = r#"{"questions":[{"question":"Which env?","options":["dev","prod"]}]}"#;
    let server = MockLlm::script(vec![Reply::json(oa_calls(&[("q1", "question", args)]))]).await;
    let tk = default_toolkit().await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();
    let r = client.run("deploy", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.status, RunStatus::Pending);
    let req = r.pending.clone().unwrap();
    assert_eq!(req["kind"], "question");
    assert_eq!(req["prompt"], "Which env? (options: dev, prod)");
    assert_eq!(req["data"], json!({"questions": [{"question": "Which env?", "options": ["dev", "prod"]}]}));
    assert_eq!(r.text, "Which env? (options: dev, prod)");
}

#[tokio::test]
async fn question_returns_the_hosts_answer_to_the_model() {
    let args = r#"{"questions":[{"question":"Which env?"}]}"#;
    let server =
        MockLlm::script(vec![Reply::json(oa_calls(&[("q1", "question", args)])), Reply::json(oa_text("deploying"))])
            .await;
    let tk = default_toolkit().await;
    let mut o = options(&server.url(), Style::OpenAI);
    o.wait_for =
        Some(callback(
            |req: Value| async move { Ok(json!({"id": req["id"], "ok": true, "data": {"answers": ["prod"]}})) },
        ));
    let client = Client::new(o).unwrap();
    let r = client.run("deploy", &tk, RunOptions::default()).await.unwrap();
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(
        server.request(1).messages()[2],
        json!({"role": "tool", "tool_call_id": "q1", "content": r#"{"answers":["prod"]}"#})
    );
}
