//! In-process models (SPEC §8): a `generate` function answers instead of an endpoint.

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::transport::{HttpRequest, HttpResponse, Transport};
use crate::callback::SharedCallback;
use crate::error::{Error, Result};
use crate::json::{count, obj};

/// The base URL an in-process client carries; never dialled (`.invalid` cannot resolve).
pub const IN_PROCESS_BASE_URL: &str = "http://in-process.invalid/v1";

/// Why an in-process client refuses to stream.
pub const NO_STREAMING: &str = "toolnexus: createInProcessClient does not support streaming — `generate` returns a complete answer. Use the non-streaming run, or supply a `fetch`/transport that streams.";

/// Answers each request by calling `generate({ messages, tools, model, body })` and wrapping
/// its one assistant message in an OpenAI chat-completions envelope.
pub struct InProcessTransport {
    pub generate: SharedCallback,
}

#[async_trait]
impl Transport for InProcessTransport {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse> {
        let body: Value = crate::json::parse_str(&req.body).unwrap_or_else(|_| Value::Object(Map::new()));
        if body.get("stream").is_some_and(crate::json::truthy) {
            return Err(Error::Invalid(NO_STREAMING.into()));
        }
        let mut request = Map::with_capacity(4);
        request.insert("messages".into(), body.get("messages").cloned().unwrap_or(Value::Array(vec![])));
        if let Some(tools) = body.get("tools") {
            request.insert("tools".into(), tools.clone());
        }
        request.insert("model".into(), body.get("model").cloned().unwrap_or(Value::Null));
        request.insert("body".into(), body);
        let answer = self.generate.call(Value::Object(request)).await?;
        Ok(HttpResponse { status: 200, headers: vec![], body: envelope(&answer).to_string() })
    }
}

/// `{ choices: [{ index, message, finish_reason }], usage }` around one generated answer.
pub fn envelope(answer: &Value) -> Value {
    let mut message = Map::with_capacity(3);
    message.insert("role".into(), "assistant".into());
    let calls = answer.get("toolCalls").and_then(Value::as_array).filter(|c| !c.is_empty());
    match calls {
        Some(calls) => {
            let list = calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let id = match c.get("id") {
                        None | Some(Value::Null) => Value::String(format!("call_{i}")),
                        Some(v) => v.clone(),
                    };
                    let arguments = match c.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        None | Some(Value::Null) => "{}".into(),
                        Some(other) => other.to_string(),
                    };
                    obj([
                        ("id", id),
                        ("type", "function".into()),
                        (
                            "function",
                            obj([
                                ("name", c.get("name").cloned().unwrap_or(Value::Null)),
                                ("arguments", arguments.into()),
                            ]),
                        ),
                    ])
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(list));
        }
        None => {
            let content = match answer.get("content") {
                None | Some(Value::Null) => Value::String(String::new()),
                Some(v) => v.clone(),
            };
            message.insert("content".into(), content);
        }
    }
    let u = answer.get("usage");
    let prompt = count(u.and_then(|u| u.get("promptTokens")));
    let completion = count(u.and_then(|u| u.get("completionTokens")));
    let total = match u.and_then(|u| u.get("totalTokens")) {
        None | Some(Value::Null) => prompt + completion,
        t => count(t),
    };
    let finish = if message.contains_key("tool_calls") { "tool_calls" } else { "stop" };
    obj([
        (
            "choices",
            Value::Array(vec![obj([
                ("index", 0.into()),
                ("message", Value::Object(message)),
                ("finish_reason", finish.into()),
            ])]),
        ),
        (
            "usage",
            obj([
                ("prompt_tokens", prompt.into()),
                ("completion_tokens", completion.into()),
                ("total_tokens", total.into()),
            ]),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_are_wrapped_and_encoded() {
        let e = envelope(
            &json!({"toolCalls": [{"name": "add", "arguments": {"a": 1}}, {"id": "x", "name": "b", "arguments": "{}"}]}),
        );
        assert_eq!(
            e.to_string(),
            r#"{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"call_0","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}},{"id":"x","type":"function","function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}"#
        );
    }

    #[test]
    fn content_and_usage() {
        let e = envelope(&json!({"content": "hi", "usage": {"promptTokens": 3, "completionTokens": 2}}));
        assert_eq!(e["choices"][0]["message"], json!({"role": "assistant", "content": "hi"}));
        assert_eq!(e["choices"][0]["finish_reason"], "stop");
        assert_eq!(e["usage"]["total_tokens"], 5);
    }
}
