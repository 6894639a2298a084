//! The single-turn translation helpers (SPEC §11) over JSON text. Each argument is the JSON
//! encoding of the JavaScript value (`"null"` for `undefined`); each result is JSON text,
//! except `translateArgsString`, which returns the arguments string itself.

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::translate;

use crate::with_json;
use toolnexus_core::json;

fn failed(e: toolnexus_core::Error) -> Error {
    crate::core_err(e)
}

#[napi(js_name = "translateFinishReasonFor")]
pub fn translate_finish_reason_for(has_tool_calls: bool, provider_stop: Option<String>) -> String {
    translate::finish_reason_for(has_tool_calls, provider_stop.as_deref()).to_string()
}

#[napi(js_name = "translateContentText")]
pub fn translate_content_text(content: String) -> Result<String> {
    with_json(&content, "contentText", |v| Ok(translate::content_text(&v)))
}

#[napi(js_name = "translateArgsObject")]
pub fn translate_args_object(args: String) -> Result<String> {
    with_json(&args, "argsObject", |v| Ok(json::to_string(&translate::args_object(&v))))
}

#[napi(js_name = "translateArgsString")]
pub fn translate_args_string(args: String) -> Result<String> {
    with_json(&args, "argsString", |v| Ok(translate::args_string(&v)))
}

#[napi(js_name = "translateToolCallsOf")]
pub fn translate_tool_calls_of(message: String) -> Result<String> {
    with_json(&message, "toolCallsOf", |v| {
        let calls = translate::tool_calls_of(&v);
        Ok(json::to_string(&Value::Array(calls.iter().map(|c| c.to_value()).collect())))
    })
}

#[napi(js_name = "translateMessagesToAnthropic")]
pub fn translate_messages_to_anthropic(messages: String) -> Result<String> {
    with_json(&messages, "openAIMessagesToAnthropic", |v| {
        let (messages, system) = translate::try_openai_messages_to_anthropic(&v).map_err(failed)?;
        let out = json::obj([("messages", Value::Array(messages)), ("system", Value::String(system))]);
        Ok(json::to_string(&out))
    })
}

#[napi(js_name = "translateToolsToAnthropic")]
pub fn translate_tools_to_anthropic(tools: String) -> Result<String> {
    with_json(&tools, "openAIToolsToAnthropic", |v| {
        let out = translate::try_openai_tools_to_anthropic(&v).map_err(failed)?;
        Ok(json::to_string(&Value::Array(out)))
    })
}

#[napi(js_name = "translateToolChoiceToAnthropic")]
pub fn translate_tool_choice_to_anthropic(choice: String) -> Result<String> {
    with_json(&choice, "openAIToolChoiceToAnthropic", |v| {
        Ok(json::to_string(&translate::openai_tool_choice_to_anthropic(&v).unwrap_or(Value::Null)))
    })
}

#[napi(js_name = "translateHasSystemMessage")]
pub fn translate_has_system_message(messages: String) -> Result<bool> {
    with_json(&messages, "hasSystemMessage", |v| translate::try_has_system_message(&v).map_err(failed))
}
