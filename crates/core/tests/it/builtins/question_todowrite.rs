//! `question` (a suspension, §10) and `todowrite`.

use serde_json::{json, Value};
use toolnexus_core::types::pending_of;
use toolnexus_core::{ToolContext, ToolResult};

use super::*;

#[tokio::test]
async fn question_suspends_with_a_rendered_prompt() {
    let questions = json!([
        {"question": "Which env?", "header": "Env", "options": ["dev", "prod"]},
        {"question": "Why?", "options": []},
        {"question": "Count?", "options": [1, null, true]}
    ]);
    let r = call("question", json!({"questions": questions})).await;
    assert!(r.is_error);
    assert_eq!(r.output, "Which env? (options: dev, prod)\nWhy?\nCount? (options: 1, , true)");
    let req = pending_of(&r).unwrap();
    assert_eq!(req.keys().collect::<Vec<_>>(), ["kind", "prompt", "data", "id"]);
    assert_eq!(req["kind"], "question");
    assert_eq!(req["prompt"], r.output.as_str());
    assert_eq!(req["data"], json!({"questions": questions}));
    assert!(req["id"].as_str().unwrap().starts_with("pnd-"));
    let r = call("question", json!({"questions": "not a list"})).await;
    assert_eq!(r.output, "");
    assert_eq!(pending_of(&r).unwrap()["data"], json!({"questions": []}));
}

#[tokio::test]
async fn question_returns_the_answers_data_on_the_retry() {
    let ask = |answer: Value| {
        call_ctx("question", json!({"questions": []}), ToolContext { answer: Some(answer), ..Default::default() })
    };
    let r = ask(json!({"id": "x", "ok": true, "data": {"answers": ["a.txt"], "n": 2.5, "2": 0, "1": 1}})).await;
    assert_eq!(r, ToolResult::ok(r#"{"1":1,"2":0,"answers":["a.txt"],"n":2.5}"#));
    assert_eq!(ask(json!({"id": "x", "ok": true})).await, ToolResult::ok("{}"));
    assert_eq!(ask(json!({"id": "x", "ok": true, "data": null})).await, ToolResult::ok("{}"));
    assert_eq!(ask(json!("yes")).await, ToolResult::ok("{}"));
    assert!(pending_of(&ask(json!("")).await).is_some(), "a falsy answer asks again");
}

#[tokio::test]
async fn todowrite_renders_the_list_it_is_given() {
    let todos = json!([{"id": "1", "text": "a", "completed": true}, {"id": "2", "text": "b", "completed": false}]);
    assert_eq!(call("todowrite", json!({"todos": todos})).await, ok("[x] a\n[ ] b", json!({"todos": todos})));
    let odd = json!([5, "s", {"text": null, "completed": 1}, {"text": [1, 2]}]);
    assert_eq!(call("todowrite", json!({"todos": odd})).await, ok("[ ] \n[ ] \n[x] \n[ ] 1,2", json!({"todos": odd})));
    assert_eq!(call("todowrite", json!({"todos": "x"})).await, ok("(no todos)", json!({"todos": []})));
    assert_eq!(
        call("todowrite", json!({"todos": [{"text": "a"}, null]})).await,
        ToolResult::error("todowrite: Cannot read properties of null (reading 'completed')")
    );
}
