//! Single-turn translation (SPEC §11): OpenAI shapes in, exactly one provider call, OpenAI
//! shapes out. No loop, no tool execution, no conversation state.

use serde_json::{Map, Value};

use super::result::Usage;
use super::run::Client;
use super::wire::{self, expect_array, Style};
use crate::cancel::Abort;
use crate::error::Result;
use crate::json::{field, js_string, obj};
use crate::options::{self, parse_object};
use crate::toolkit::Toolkit;
use crate::translate::{
    args_string, finish_reason_for, has_system_message, openai_messages_to_anthropic, openai_tool_choice_to_anthropic,
    openai_tools_to_anthropic, TranslatedToolCall,
};
use serde::Deserialize;

/// What `translate` is asked: the caller's OpenAI request, verbatim.
#[derive(Default)]
pub struct TranslateRequest {
    pub messages: Vec<Value>,
    /// OpenAI `tools`, declared only.
    pub tools: Vec<Value>,
    /// OpenAI `tool_choice`; `None` leaves the key out.
    pub tool_choice: Option<Value>,
    /// Overrides the system prompt.
    pub system: Option<String>,
    pub max_tokens: Option<f64>,
    pub abort: Option<Abort>,
}

/// One provider turn, in OpenAI shape.
#[derive(Debug, Clone)]
pub struct TranslateResult {
    pub text: String,
    pub tool_calls: Vec<TranslatedToolCall>,
    pub finish_reason: String,
    pub usage: Usage,
    pub model: String,
    pub raw: Value,
}

impl TranslateResult {
    pub fn to_value(&self) -> Value {
        obj([
            ("text", self.text.as_str().into()),
            ("toolCalls", Value::Array(self.tool_calls.iter().map(TranslatedToolCall::to_value).collect())),
            ("finishReason", self.finish_reason.as_str().into()),
            ("usage", self.usage.to_value()),
            ("model", self.model.as_str().into()),
            ("raw", self.raw.clone()),
        ])
    }
}

/// A result's tool calls as an OpenAI `tool_calls` array, ready for an assistant message.
pub fn tool_calls_json(calls: &[Value]) -> Vec<Value> {
    calls
        .iter()
        .map(|tc| {
            let get = |k: &str| tc.get(k).cloned().unwrap_or(Value::Null);
            obj([
                ("id", get("id")),
                ("type", "function".into()),
                ("function", obj([("name", get("name")), ("arguments", get("arguments"))])),
            ])
        })
        .collect()
}

fn string_or_empty(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(v) => js_string(v),
    }
}

impl Client {
    /// One provider call. A `toolkit`'s tools are declared (first), never executed; the
    /// `beforeLLM`/`afterLLM` hooks fire once, with turn 0.
    pub async fn translate(&self, req: TranslateRequest, toolkit: Option<&Toolkit>) -> Result<TranslateResult> {
        let key = self.resolve_key()?;
        let abort = req.abort.clone();
        self.bounded(abort, self.translate_once(&key, req, toolkit)).await
    }

    async fn translate_once(
        &self,
        key: &str,
        req: TranslateRequest,
        toolkit: Option<&Toolkit>,
    ) -> Result<TranslateResult> {
        let style = self.opts.style;
        let model = self.opts.model.clone();
        let (mut messages, mut tools, system) = match style {
            Style::OpenAI => {
                let mut messages = req.messages;
                let sys = req.system.clone().or_else(|| self.opts.system_prompt.clone()).unwrap_or_default();
                if !sys.is_empty() && !has_system_message(&Value::Array(messages.clone())) {
                    messages.insert(0, obj([("role", "system".into()), ("content", sys.into())]));
                }
                let mut tools = toolkit.map(Toolkit::to_openai).unwrap_or_default();
                tools.extend(req.tools);
                (messages, tools, String::new())
            }
            Style::Anthropic => {
                let (messages, converted_system) = openai_messages_to_anthropic(&Value::Array(req.messages));
                let system = req.system.clone().or_else(|| self.opts.system_prompt.clone()).unwrap_or(converted_system);
                let mut tools = toolkit.map(Toolkit::to_anthropic).unwrap_or_default();
                tools.extend(openai_tools_to_anthropic(&Value::Array(req.tools)));
                (messages, tools, system)
            }
        };
        if let Some(h) = &self.opts.hooks.before_llm {
            let ev = obj([
                ("messages", Value::Array(messages.clone())),
                ("tools", Value::Array(tools.clone())),
                ("model", model.clone().into()),
                ("turn", 0.into()),
            ]);
            let ov = h.call(ev).await?;
            if let Some(m) = field(&ov, "messages") {
                messages = expect_array(m, "beforeLLM: `messages` must be an array")?;
            }
            if let Some(t) = field(&ov, "tools") {
                tools = expect_array(t, "beforeLLM: `tools` must be an array")?;
            }
        }
        let mut body = Map::with_capacity(6);
        body.insert("model".into(), model.clone().into());
        match style {
            Style::OpenAI => {
                body.insert("messages".into(), Value::Array(messages));
                if !tools.is_empty() {
                    body.insert("tools".into(), Value::Array(tools));
                }
                if let Some(tc) = req.tool_choice {
                    body.insert("tool_choice".into(), tc);
                }
                if let Some(n) = req.max_tokens.filter(|n| *n != 0.0 && !n.is_nan()) {
                    body.insert("max_tokens".into(), number(n));
                }
            }
            Style::Anthropic => {
                let max = req.max_tokens.filter(|n| *n > 0.0).map_or(Value::from(4096), number);
                body.insert("max_tokens".into(), max);
                body.insert("messages".into(), Value::Array(messages));
                if !system.is_empty() {
                    body.insert("system".into(), system.into());
                }
                if !tools.is_empty() {
                    body.insert("tools".into(), Value::Array(tools));
                }
                if let Some(tc) = req.tool_choice.as_ref().and_then(openai_tool_choice_to_anthropic) {
                    body.insert("tool_choice".into(), tc);
                }
            }
        }
        let body = crate::json::to_string(&self.finalize_body(body).await?);
        let data = self.llm_json_with(key, &body, true).await?;
        self.after_llm(&data, 0).await?;
        let mut usage = Usage::default();
        wire::add_usage(&mut usage, data.get("usage"), style);
        let (text, tool_calls, finish_reason) = match style {
            Style::OpenAI => {
                let choice = data.get("choices").and_then(|c| c.get(0));
                let message = choice.and_then(|c| c.get("message"));
                let calls: Vec<TranslatedToolCall> = message
                    .and_then(|m| m.get("tool_calls"))
                    .and_then(Value::as_array)
                    .map(|list| {
                        list.iter()
                            .map(|tc| {
                                let f = tc.get("function");
                                TranslatedToolCall {
                                    id: string_or_empty(tc.get("id")),
                                    name: string_or_empty(f.and_then(|f| f.get("name"))),
                                    arguments: args_string(f.and_then(|f| f.get("arguments")).unwrap_or(&Value::Null)),
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let text = string_or_empty(message.and_then(|m| m.get("content")));
                let finish = match choice.and_then(|c| c.get("finish_reason")) {
                    Some(v) if !v.is_null() => js_string(v),
                    _ => finish_reason_for(!calls.is_empty(), None).to_string(),
                };
                (text, calls, finish)
            }
            Style::Anthropic => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for b in data.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => text.push_str(&string_or_empty(b.get("text"))),
                        Some("tool_use") => calls.push(TranslatedToolCall {
                            id: string_or_empty(b.get("id")),
                            name: string_or_empty(b.get("name")),
                            arguments: match b.get("input") {
                                None | Some(Value::Null) => "{}".into(),
                                Some(i) => i.to_string(),
                            },
                        }),
                        _ => {}
                    }
                }
                let stop = data.get("stop_reason").and_then(Value::as_str);
                let finish = finish_reason_for(!calls.is_empty(), stop).to_string();
                (text, calls, finish)
            }
        };
        Ok(TranslateResult { text, tool_calls, finish_reason, usage, model, raw: data })
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// The JSON-borne part of a `translate` request (everything but `toolkit` and `signal`).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct TranslateJson {
    #[serde(default)]
    messages: Option<Value>,
    #[serde(default)]
    tools: Option<Value>,
    /// Passed on as given, `null` included.
    #[serde(default, deserialize_with = "options::present")]
    tool_choice: Option<Value>,
    #[serde(default)]
    system: Option<Value>,
    #[serde(default, deserialize_with = "options::number_only")]
    max_tokens: Option<f64>,
}

impl TranslateRequest {
    /// A `translate` request from its JSON: `messages` and `tools` must be arrays and `system`
    /// a string when given (absent or `null` is none). The abort handle is the host's to attach.
    pub fn from_json(text: &str) -> Result<TranslateRequest> {
        let r: TranslateJson = parse_object(text, "translate")?.unwrap_or_default();
        let list = |v, k: &str| options::array(v, || format!("translate: `{k}` must be an array"));
        Ok(TranslateRequest {
            messages: list(r.messages, "messages")?,
            tools: list(r.tools, "tools")?,
            tool_choice: r.tool_choice,
            system: options::string_or_null(r.system, || "translate: `system` must be a string".into())?,
            max_tokens: r.max_tokens,
            abort: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(r: Result<impl Sized>) -> String {
        r.err().expect("fails").to_string()
    }

    fn translate(v: Value) -> Result<TranslateRequest> {
        TranslateRequest::from_json(&v.to_string())
    }

    #[test]
    fn translate_requests() {
        let r = translate(json!({})).unwrap();
        assert!(r.messages.is_empty() && r.tools.is_empty() && r.abort.is_none());
        assert_eq!((r.tool_choice, r.system, r.max_tokens), (None, None, None));
        let r = translate(json!({"messages": [{"role": "user"}], "tools": null, "toolChoice": null,
            "system": "s", "maxTokens": 64, "model": "ignored"}))
        .unwrap();
        assert_eq!((r.messages.len(), r.tools.len()), (1, 0));
        assert_eq!((r.tool_choice, r.system.as_deref(), r.max_tokens), (Some(Value::Null), Some("s"), Some(64.0)));
        let r = translate(json!({"toolChoice": "auto", "system": null, "maxTokens": "64"})).unwrap();
        assert_eq!((r.tool_choice, r.system, r.max_tokens), (Some(json!("auto")), None, None));
        // Anything but an object is a request with nothing in it.
        assert!(TranslateRequest::from_json("[1]").unwrap().messages.is_empty());
    }

    #[test]
    fn translate_fields_must_have_their_shape_checked_in_a_fixed_order() {
        assert_eq!(err(translate(json!({"messages": {}}))), "translate: `messages` must be an array");
        assert_eq!(err(translate(json!({"tools": "t"}))), "translate: `tools` must be an array");
        assert_eq!(err(translate(json!({"system": 1}))), "translate: `system` must be a string");
        let e = err(translate(json!({"system": 1, "tools": 2, "messages": 3})));
        assert_eq!(e, "translate: `messages` must be an array");
        assert!(err(TranslateRequest::from_json("{")).starts_with("translate: invalid JSON ("));
    }
}
