//! The single-turn translation helpers (SPEC §11) over JSON text. Each argument is the JSON
//! encoding of the JavaScript value (`"null"` for `undefined`); each result is JSON text,
//! except `translateArgsString`, which returns the arguments string itself.

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::translate;

use crate::parse_json;

fn failed(e: toolnexus_core::Error) -> Error {
    Error::from_reason(e.to_string())
}

#[napi(js_name = "translateFinishReasonFor")]
pub fn translate_finish_reason_for(has_tool_calls: bool, provider_stop: Option<String>) -> String {
    translate::finish_reason_for(has_tool_calls, provider_stop.as_deref()).to_string()
}

#[napi(js_name = "translateContentText")]
pub fn translate_content_text(content: String) -> Result<String> {
    Ok(translate::content_text(&parse_json(&content, "contentText")?))
}

#[napi(js_name = "translateArgsObject")]
pub fn translate_args_object(args: String) -> Result<String> {
    Ok(translate::args_object(&parse_json(&args, "argsObject")?).to_string())
}

#[napi(js_name = "translateArgsString")]
pub fn translate_args_string(args: String) -> Result<String> {
    Ok(translate::args_string(&parse_json(&args, "argsString")?))
}

#[napi(js_name = "translateToolCallsOf")]
pub fn translate_tool_calls_of(message: String) -> Result<String> {
    let calls = translate::tool_calls_of(&parse_json(&message, "toolCallsOf")?);
    Ok(Value::Array(calls.iter().map(|c| c.to_value()).collect()).to_string())
}

#[napi(js_name = "translateMessagesToAnthropic")]
pub fn translate_messages_to_anthropic(messages: String) -> Result<String> {
    let (messages, system) =
        translate::try_openai_messages_to_anthropic(&parse_json(&messages, "openAIMessagesToAnthropic")?)
            .map_err(failed)?;
    let out = toolnexus_core::json::obj([("messages", Value::Array(messages)), ("system", Value::String(system))]);
    Ok(out.to_string())
}

#[napi(js_name = "translateToolsToAnthropic")]
pub fn translate_tools_to_anthropic(tools: String) -> Result<String> {
    let out =
        translate::try_openai_tools_to_anthropic(&parse_json(&tools, "openAIToolsToAnthropic")?).map_err(failed)?;
    Ok(Value::Array(out).to_string())
}

#[napi(js_name = "translateToolChoiceToAnthropic")]
pub fn translate_tool_choice_to_anthropic(choice: String) -> Result<String> {
    let out = translate::openai_tool_choice_to_anthropic(&parse_json(&choice, "openAIToolChoiceToAnthropic")?);
    Ok(out.unwrap_or(Value::Null).to_string())
}

#[napi(js_name = "translateHasSystemMessage")]
pub fn translate_has_system_message(messages: String) -> Result<bool> {
    translate::try_has_system_message(&parse_json(&messages, "hasSystemMessage")?).map_err(failed)
}
