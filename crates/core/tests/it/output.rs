//! Structured output (an addition): how the schema reaches each wire, the answer checked (by the
//! core's JSON Schema validator or the host's), a mismatch sent back with its issues, the error
//! when it still does not match, tools in the same run, streams' partial objects, and the
//! instruction an endpoint without `response_format` gets.

use std::sync::Arc;

use serde_json::{json, Value};
use toolnexus_core::client::output::{Mode, Output};
use toolnexus_core::client::{Client, Fallback, RunOptions, Style};
use toolnexus_core::Error;

use crate::common::*;
use crate::stream::types;

fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "city": { "type": "string" }, "temp": { "type": "number" } },
        "required": ["city", "temp"]
    })
}

fn with_output(mode: Mode, retries: u32) -> RunOptions {
    RunOptions {
        output: Some(Arc::new(Output::json_schema(weather_schema(), mode, retries).unwrap())),
        ..Default::default()
    }
}

fn no_retries(base: &str, style: Style) -> toolnexus_core::client::ClientOptions {
    let mut o = options(base, style);
    o.retries = 0;
    o
}

#[tokio::test]
async fn openai_gets_response_format_and_the_answer_is_checked_after_tools_ran() {
    let llm = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "lookup", "{\"q\":\"Paris\"}")])),
        Reply::json(oa_text("{\"city\":\"Paris\",\"temp\":18}")),
    ])
    .await;
    let tk = toolkit(vec![text_tool("lookup", "18 degrees")]).await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let r = client.run("weather?", &tk, with_output(Mode::Auto, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Paris", "temp": 18})));
    assert_eq!(r.text, "{\"city\":\"Paris\",\"temp\":18}");
    assert_eq!(r.tool_calls.len(), 1);
    let body = llm.request(0).body;
    assert_eq!(keys(&body), ["model", "messages", "tools", "tool_choice", "response_format"]);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "final_answer", "schema": weather_schema()}})
    );
    assert_eq!(r.to_value()["output"], json!({"city": "Paris", "temp": 18}));
}

#[tokio::test]
async fn a_mismatching_answer_goes_back_once_with_its_issues_by_path() {
    let llm = MockLlm::script(vec![
        Reply::json(oa_calls(&[("c1", "lookup", "{}")])),
        Reply::json(oa_text("{\"city\":\"Paris\",\"temp\":\"warm\"}")),
        Reply::json(oa_text("{\"city\":\"Paris\",\"temp\":21}")),
    ])
    .await;
    let tk = toolkit(vec![text_tool("lookup", "21")]).await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let r = client.run("weather?", &tk, with_output(Mode::Auto, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Paris", "temp": 21})));
    assert_eq!(r.turns, 3);
    let third = llm.request(2).body;
    let msgs = third["messages"].as_array().unwrap();
    let feedback = msgs.last().unwrap();
    assert_eq!(feedback["role"], "user");
    let text = feedback["content"].as_str().unwrap();
    assert!(text.starts_with("That answer does not match the required JSON Schema: temp: "), "{text}");
    assert_eq!(msgs[msgs.len() - 2], json!({"role": "assistant", "content": "{\"city\":\"Paris\",\"temp\":\"warm\"}"}));
}

#[tokio::test]
async fn an_answer_that_still_does_not_match_is_the_error_with_issues_and_raw_text() {
    let llm = MockLlm::script(vec![Reply::json(oa_text("not json")), Reply::json(oa_text("{\"city\":3}"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let e = client.run("weather?", &tk, with_output(Mode::Auto, 1)).await.unwrap_err();
    let Error::Output { message, issues, text } = &e else { panic!("{e:?}") };
    assert_eq!(text, "{\"city\":3}");
    assert!(message.starts_with("the answer does not match the output schema after 2 attempts: "), "{message}");
    let paths: Vec<&str> = issues.as_array().unwrap().iter().map(|i| i["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["", "city"], "{issues}");
    let shape = e.js_shape();
    assert_eq!(shape["fields"]["code"], "EOUTPUT");
    assert_eq!(shape["fields"]["text"], "{\"city\":3}");
    assert_eq!(llm.count(), 2, "one answer went back, then the run failed");
}

#[tokio::test]
async fn no_retries_means_the_first_mismatch_is_the_error() {
    let llm = MockLlm::script(vec![Reply::json(oa_text("{}"))]).await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let e = client.run("q", &tk, with_output(Mode::Auto, 0)).await.unwrap_err();
    assert!(matches!(e, Error::Output { .. }), "{e}");
    assert_eq!(llm.count(), 1);
}

#[tokio::test]
async fn anthropic_ends_with_a_final_tool_whose_arguments_are_the_answer() {
    let llm = MockLlm::script(vec![
        Reply::json(an_reply(json!([an_use("t1", "lookup", json!({}))]))),
        Reply::json(an_reply(json!([an_use("t2", "final_answer", json!({"city": "Oslo"}))]))),
        Reply::json(an_reply(json!([
            an_text("ok then"),
            an_use("t3", "final_answer", json!({"city": "Oslo", "temp": -2}))
        ]))),
    ])
    .await;
    let tk = toolkit(vec![text_tool("lookup", "-2")]).await;
    let client = Client::new(no_retries(&llm.url(), Style::Anthropic)).unwrap();
    let r = client.run("weather?", &tk, with_output(Mode::Auto, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Oslo", "temp": -2})));
    let first = llm.request(0).body;
    let names: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["lookup", "final_answer"]);
    assert_eq!(first["tools"][1]["input_schema"], weather_schema());
    assert_eq!(first["tool_choice"], json!({"type": "any"}));
    // The mismatch went back as the final tool's error result.
    let third = llm.request(2).body;
    let last = third["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "t2");
    assert_eq!(last["content"][0]["is_error"], true);
    assert!(last["content"][0]["content"].as_str().unwrap().contains("temp"), "{last}");
    // The transcript ends with the answer as text, so a conversation can go on from it.
    assert_eq!(
        r.messages.last().unwrap(),
        &json!({"role": "assistant", "content": [{"type": "text", "text": "{\"city\":\"Oslo\",\"temp\":-2}"}]})
    );
    assert_eq!(r.tool_calls.len(), 1, "the final tool is not a tool call of the run");
}

#[tokio::test]
async fn the_final_tool_alone_is_forced_and_a_name_taken_by_a_tool_is_not_reused() {
    let llm =
        MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "final_answer_", "{\"city\":\"Rome\",\"temp\":30}")]))])
            .await;
    let tk = toolkit(vec![text_tool("final_answer", "mine")]).await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let r = client.run("q", &tk, with_output(Mode::Tool, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Rome", "temp": 30})));
    let body = llm.request(0).body;
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["tools"][1]["function"]["name"], "final_answer_");
    assert!(body.get("response_format").is_none());

    let llm =
        MockLlm::script(vec![Reply::json(oa_calls(&[("c1", "final_answer", "{\"city\":\"Rome\",\"temp\":30}")]))])
            .await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    client.run("q", &toolkit(vec![]).await, with_output(Mode::Tool, 1)).await.unwrap();
    assert_eq!(llm.request(0).body["tool_choice"], json!({"type": "function", "function": {"name": "final_answer"}}));
}

#[tokio::test]
async fn prompt_mode_and_an_endpoint_that_refuses_response_format_then_tool_choice_get_the_tool_then_the_instruction() {
    // Asked for: the instruction joins the system message; no response_format.
    let llm = MockLlm::script(vec![Reply::json(oa_text("```json\n{\"city\":\"Lima\",\"temp\":19}\n```"))]).await;
    let mut o = no_retries(&llm.url(), Style::OpenAI);
    o.system_prompt = Some("Be brief.".into());
    let client = Client::new(o).unwrap();
    let r = client.run("q", &toolkit(vec![]).await, with_output(Mode::Prompt, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Lima", "temp": 19})));
    let body = llm.request(0).body;
    assert!(body.get("response_format").is_none());
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("Be brief.\n\nReply with only a JSON value that matches this JSON Schema"), "{system}");
    assert_eq!(r.messages[0]["content"], "Be brief.", "the instruction is not kept in the transcript");

    // Refused: a 400 naming response_format; the same call goes again with the final tool, and
    // when its tool_choice is refused too, with the instruction.
    let llm = MockLlm::script(vec![
        Reply::raw(400, "{\"error\":\"unknown field response_format\"}"),
        Reply::raw(400, "{\"error\":\"tool_choice required is not supported\"}"),
        Reply::json(oa_text("{\"city\":\"Lima\",\"temp\":19}")),
        Reply::json(oa_text("{\"city\":\"Quito\",\"temp\":14}")),
    ])
    .await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let r = client.run("q", &toolkit(vec![]).await, with_output(Mode::Auto, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Lima", "temp": 19})));
    let second = llm.request(1).body;
    assert!(second.get("response_format").is_none());
    assert_eq!(second["tools"][0]["function"]["name"], "final_answer");
    assert_eq!(second["tool_choice"], json!({"type": "function", "function": {"name": "final_answer"}}));
    let third = llm.request(2).body;
    assert_eq!(keys(&third), ["model", "messages"]);
    assert_eq!(third["messages"][0]["role"], "system");
    // Only that run: the next one asks with response_format again.
    client.run("q", &toolkit(vec![]).await, with_output(Mode::Auto, 1)).await.unwrap();
    assert!(llm.request(3).body.get("response_format").is_some());
}

#[tokio::test]
async fn llama_cpp_pythons_500_naming_response_format_also_gets_the_instruction() {
    // llama-cpp-python 0.3 answers a `json_schema` response_format with a 500 validation error.
    let refusal = "{\"error\":{\"message\":\"1 validation error: ('body', 'response_format', 'type') Input should be 'text' or 'json_object'\"}}";
    let llm =
        MockLlm::script(vec![Reply::raw(500, refusal), Reply::json(oa_text("{\"city\":\"Oslo\",\"temp\":1}"))]).await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let r = client.run("q", &toolkit(vec![]).await, with_output(Mode::Auto, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Oslo", "temp": 1})));
    assert!(llm.request(1).body.get("response_format").is_none());
    assert_eq!(llm.request(1).body["tools"][0]["function"]["name"], "final_answer");
    // A 500 that names nothing of it is the error it was.
    let llm = MockLlm::script(vec![Reply::raw(500, "overloaded")]).await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let e = client.run("q", &toolkit(vec![]).await, with_output(Mode::Auto, 1)).await.unwrap_err();
    assert_eq!(e.to_string(), "LLM 500: overloaded");
}

#[tokio::test]
async fn native_mode_on_anthropic_sends_output_format_with_its_beta_header() {
    let llm = MockLlm::script(vec![Reply::json(an_reply(json!([an_text("{\"city\":\"Nice\",\"temp\":20}")])))]).await;
    let client = Client::new(no_retries(&llm.url(), Style::Anthropic)).unwrap();
    let r = client.run("q", &toolkit(vec![]).await, with_output(Mode::Native, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Nice", "temp": 20})));
    let seen = llm.request(0);
    assert_eq!(seen.body["output_format"], json!({"type": "json_schema", "schema": weather_schema()}));
    assert!(seen.body.get("tool_choice").is_none());
    assert_eq!(seen.header("anthropic-beta"), Some("structured-outputs-2025-11-13"));
}

#[tokio::test]
async fn a_host_check_decides_and_its_issues_go_back() {
    let llm = MockLlm::script(vec![Reply::json(oa_text("{\"n\":1}")), Reply::json(oa_text("{\"n\":2}"))]).await;
    let seen = Log::default();
    let log = seen.clone();
    let validate = toolnexus_core::callback::callback(move |v: Value| {
        let log = log.clone();
        async move {
            log.push(v.clone());
            Ok(if v["n"] == 2 { json!({}) } else { json!({"issues": [{"path": "n", "message": "must be even"}]}) })
        }
    });
    let doc = json!({"schema": {"type": "object"}, "validate": {"\u{0}fn": 0}});
    struct One(std::sync::Mutex<Option<toolnexus_core::callback::SharedCallback>>);
    impl toolnexus_core::fn_markers::Table for One {
        fn callback(&self, _: usize) -> Option<toolnexus_core::callback::SharedCallback> {
            self.0.lock().unwrap().take()
        }
        fn object(&self, _: usize) -> Option<toolnexus_core::fn_markers::HostObject> {
            None
        }
    }
    let table = std::rc::Rc::new(One(std::sync::Mutex::new(Some(validate))));
    let output = toolnexus_core::fn_markers::read_with(table, || Output::from_value("run", &doc)).unwrap();
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let ro = RunOptions { output: Some(Arc::new(output)), ..Default::default() };
    let r = client.run("q", &toolkit(vec![]).await, ro).await.unwrap();
    assert_eq!(r.output, Some(json!({"n": 2})));
    assert_eq!(seen.all(), [json!({"n": 1}), json!({"n": 2})]);
    let feedback = llm.request(1).body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(
        feedback,
        "That answer does not match the required JSON Schema: n: must be even. Answer again with only the corrected JSON."
    );
}

#[tokio::test]
async fn a_stream_reports_the_partial_object_as_it_grows() {
    let llm =
        MockLlm::sequence(vec![Action::Stream(oa_text_stream(&["{\"city\":\"Pa", "ris\",\"te", "mp\":18}"], 1, 1))])
            .await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let log = Log::default();
    let sink = recorder(log.clone());
    let r = client.stream("q", &toolkit(vec![]).await, None, with_output(Mode::Auto, 1), sink.as_ref()).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Paris", "temp": 18})));
    let events = log.all();
    assert_eq!(types(&events), ["text", "output", "text", "output", "text", "output", "usage", "done"]);
    let partials: Vec<Value> = events.iter().filter(|e| e["type"] == "output").map(|e| e["partial"].clone()).collect();
    assert_eq!(partials, [json!({"city": "Pa"}), json!({"city": "Paris"}), json!({"city": "Paris", "temp": 18})]);
    assert_eq!(events.last().unwrap()["result"]["output"], json!({"city": "Paris", "temp": 18}));
}

#[tokio::test]
async fn an_anthropic_stream_reports_the_final_tools_arguments_as_the_partial_object() {
    let events = vec![
        an_message_start(3),
        an_block_start(0, json!({"type": "tool_use", "id": "t1", "name": "final_answer", "input": {}})),
        an_json_delta(0, "{\"city\": \"Ber"),
        an_json_delta(0, "lin\", \"temp\": 4}"),
        an_block_stop(0),
        an_message_delta("tool_use", 5),
        an_message_stop(),
    ];
    let llm = MockLlm::sequence(vec![Action::Stream(SseReply::anthropic(events))]).await;
    let client = Client::new(no_retries(&llm.url(), Style::Anthropic)).unwrap();
    let log = Log::default();
    let sink = recorder(log.clone());
    let r = client.stream("q", &toolkit(vec![]).await, None, with_output(Mode::Auto, 1), sink.as_ref()).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Berlin", "temp": 4})));
    let events = log.all();
    assert_eq!(types(&events), ["output", "output", "usage", "done"], "no tool_call event for the final tool");
    assert_eq!(events[0]["partial"], json!({"city": "Ber"}));
}

#[tokio::test]
async fn a_run_that_falls_back_to_the_other_style_keeps_its_output() {
    let primary = MockLlm::script(vec![Reply::raw(503, "busy")]).await;
    let other = MockLlm::script(vec![Reply::json(an_reply(json!([an_use(
        "t1",
        "final_answer",
        json!({"city": "Bern", "temp": 9})
    )])))])
    .await;
    let mut o = no_retries(&primary.url(), Style::OpenAI);
    o.fallback = vec![Fallback { base_url: Some(other.url()), style: Some(Style::Anthropic), ..Default::default() }];
    let client = Client::new(o).unwrap();
    let r = client.run("q", &toolkit(vec![]).await, with_output(Mode::Auto, 1)).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Bern", "temp": 9})));
    assert!(primary.request(0).body.get("response_format").is_some());
    let body = other.request(0).body;
    assert_eq!(body["tools"][0]["name"], "final_answer", "the Anthropic entry gets the final tool");
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "final_answer"}));
    assert_eq!(r.messages.last().unwrap(), &json!({"role": "assistant", "content": "{\"city\":\"Bern\",\"temp\":9}"}));
}

#[tokio::test]
async fn a_run_without_output_sends_and_returns_what_it_did_before() {
    let llm = MockLlm::script(vec![Reply::json(oa_text("{\"city\":\"x\"}"))]).await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let r = client.run("q", &toolkit(vec![]).await, RunOptions::default()).await.unwrap();
    assert_eq!(r.output, None);
    assert!(r.to_value().get("output").is_none());
    assert_eq!(keys(&llm.request(0).body), ["model", "messages"]);
}

#[tokio::test]
async fn a_stream_marks_an_answer_that_went_back_and_reports_the_corrected_attempts_partials() {
    let llm = MockLlm::sequence(vec![
        Action::Stream(oa_text_stream(&["{\"city\":\"Paris\",", "\"temp\":\"eighteen\"}"], 1, 1)),
        Action::Stream(oa_text_stream(&["{\"city\":\"Pa", "ris\",\"temp\":18}"], 1, 1)),
    ])
    .await;
    let client = Client::new(no_retries(&llm.url(), Style::OpenAI)).unwrap();
    let log = Log::default();
    let sink = recorder(log.clone());
    let r = client.stream("q", &toolkit(vec![]).await, None, with_output(Mode::Auto, 1), sink.as_ref()).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Paris", "temp": 18})));
    let events = log.all();
    assert_eq!(
        types(&events),
        ["text", "output", "text", "output", "output_retry", "text", "output", "text", "output", "usage", "done"]
    );
    let retry = &events[4];
    assert_eq!(retry["attempt"], 1);
    assert_eq!(retry["text"], "{\"city\":\"Paris\",\"temp\":\"eighteen\"}");
    assert_eq!(retry["issues"].as_array().map(Vec::len), Some(1));
    assert_eq!(retry["issues"][0]["path"], "temp");
    let partials: Vec<Value> = events.iter().filter(|e| e["type"] == "output").map(|e| e["partial"].clone()).collect();
    assert_eq!(
        partials,
        [
            json!({"city": "Paris"}),
            json!({"city": "Paris", "temp": "eighteen"}),
            json!({"city": "Pa"}),
            json!({"city": "Paris", "temp": 18})
        ]
    );
}

#[tokio::test]
async fn an_anthropic_stream_marks_a_final_tool_call_that_went_back() {
    let attempt = |id: &str, parts: [&str; 2]| {
        SseReply::anthropic(vec![
            an_message_start(3),
            an_block_start(0, json!({"type": "tool_use", "id": id, "name": "final_answer", "input": {}})),
            an_json_delta(0, parts[0]),
            an_json_delta(0, parts[1]),
            an_block_stop(0),
            an_message_delta("tool_use", 5),
            an_message_stop(),
        ])
    };
    let llm = MockLlm::sequence(vec![
        Action::Stream(attempt("t1", ["{\"city\": \"Ber", "lin\", \"temp\": \"cold\"}"])),
        Action::Stream(attempt("t2", ["{\"city\": \"Ber", "lin\", \"temp\": 4}"])),
    ])
    .await;
    let client = Client::new(no_retries(&llm.url(), Style::Anthropic)).unwrap();
    let log = Log::default();
    let sink = recorder(log.clone());
    let r = client.stream("q", &toolkit(vec![]).await, None, with_output(Mode::Auto, 1), sink.as_ref()).await.unwrap();
    assert_eq!(r.output, Some(json!({"city": "Berlin", "temp": 4})));
    let events = log.all();
    assert_eq!(types(&events), ["output", "output", "output_retry", "output", "output", "usage", "done"]);
    assert_eq!(events[2]["attempt"], 1);
    assert_eq!(events[2]["issues"][0]["path"], "temp");
    assert_eq!(events[3]["partial"], json!({"city": "Ber"}));
    assert_eq!(events[4]["partial"], json!({"city": "Berlin", "temp": 4}));
}
