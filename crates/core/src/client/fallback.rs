//! Model fallback (an addition to the reference): `createClient({ fallback: [...] })` names other
//! connections (`model`, `baseUrl`, `apiKey`, `style`, `headers`, each overriding the primary's)
//! that an LLM call goes to, in order, when the one before failed after its own retries with a
//! failure another endpoint may not have: 429, 5xx, 404 (model not found), 408, or no response
//! at all (refused, reset, timed out). A 400, 401 or 403 is the request's or the key's fault and
//! fails the call as before. Every call of a run starts again at the primary.
//!
//! The transcript stays in the primary's wire style. An entry of the other style gets the
//! transcript and the tools rewritten into its style for its request, and its reply is rewritten
//! back before it enters the transcript.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

use super::output::{OutputRun, Via};
use super::result::Usage;
use super::run::Client;
use super::streamed::Streamed;
use super::wire::{self, Call, Style};
use crate::callback::Callback;
use crate::error::{Error, Result};
use crate::json::{js_string, js_stringify, obj};

/// Where one LLM call goes: the primary's connection or a fallback entry's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route<'a> {
    pub base_url: &'a str,
    pub style: Style,
    pub model: &'a str,
    pub headers: &'a [(String, String)],
    /// The entry's own key; `None` ⇒ the primary's.
    pub api_key: Option<&'a str>,
    /// Which fallback entry (`None` for the primary).
    pub entry: Option<usize>,
    /// A header the request's body needs (Anthropic's `output_format` beta).
    pub beta: Option<(&'static str, &'static str)>,
    /// The final tool whose streamed arguments are reported (`output` in tool mode).
    pub watch: Option<&'a str>,
}

/// What one LLM call of the loop got: a whole reply (in the answering endpoint's style) or a
/// streamed one.
pub(crate) enum Got {
    Json(Value),
    Stream(Streamed),
}

/// Who answered a call: the wire style its reply is in, its model, and which entry.
pub(crate) struct Answered {
    pub style: Style,
    pub model: String,
    pub entry: Option<usize>,
}

/// A stream's sink that remembers whether any text went out: after that, a failure cannot be
/// handed to another endpoint (the caller has seen part of this one's answer).
struct Watched<'a> {
    inner: &'a dyn Callback,
    spoke: AtomicBool,
}

#[async_trait::async_trait]
impl Callback for Watched<'_> {
    async fn call(&self, ev: Value) -> Result<Value> {
        self.spoke.store(true, Ordering::Relaxed);
        self.inner.call(ev).await
    }
}

impl Client {
    /// One LLM call of the loop: to the primary with `body` (written from `parts`), then, while
    /// the failure is one to fall back on, to each fallback entry with the same request written
    /// for it. A stream goes on to the next entry only while nothing of it was delivered.
    pub(crate) async fn complete(
        &self,
        key: &str,
        parts: &wire::Parts<'_>,
        body: &str,
        sink: Option<&dyn Callback>,
        usage: &mut Usage,
    ) -> Result<(Got, Answered)> {
        let mut outcome = self.complete_routes(key, parts, body, sink, usage).await;
        // An endpoint that refused how the output schema went (`auto` mode): asked again the
        // next way down, at most twice (the final tool, then the instruction).
        for _ in 0..2 {
            match outcome {
                Err(e) if parts.output.is_some_and(|o| o.refused(parts.style, &e)) => {
                    let body = self.body_text(parts).await?;
                    outcome = self.complete_routes(key, parts, &body, sink, usage).await;
                }
                other => return other,
            }
        }
        outcome
    }

    async fn complete_routes(
        &self,
        key: &str,
        parts: &wire::Parts<'_>,
        body: &str,
        sink: Option<&dyn Callback>,
        usage: &mut Usage,
    ) -> Result<(Got, Answered)> {
        let primary = routed(self.primary(), parts.output, parts.via());
        let answered = |r: &Route| Answered { style: r.style, model: r.model.to_string(), entry: r.entry };
        if self.opts.fallback.is_empty() {
            let got = match sink {
                None => Got::Json(self.llm_json_at(&primary, key, body, false).await?),
                Some(sink) => Got::Stream(self.llm_stream_at(&primary, key, body, sink, usage).await?),
            };
            return Ok((got, answered(&primary)));
        }
        let watched = sink.map(|inner| Watched { inner, spoke: AtomicBool::new(false) });
        let mut route = primary;
        let mut body = std::borrow::Cow::Borrowed(body);
        let mut next = 0;
        loop {
            let outcome = match &watched {
                None => self.llm_json_at(&route, key, &body, false).await.map(Got::Json),
                Some(w) => self.llm_stream_at(&route, key, &body, w, usage).await.map(Got::Stream),
            };
            let e = match outcome {
                Ok(got) => return Ok((got, answered(&route))),
                Err(e) => e,
            };
            let spoke = watched.as_ref().is_some_and(|w| w.spoke.load(Ordering::Relaxed));
            let Some(to) = self.fallback_route(next).filter(|_| falls_back(&e) && !spoke) else {
                return Err(e);
            };
            next += 1;
            let (messages, tools, system) =
                restyle_request(parts.style, to.style, parts.messages, parts.tools, parts.system);
            let p = wire::Parts {
                style: to.style,
                model: to.model,
                system: &system,
                messages: &messages,
                tools: &tools,
                stream: parts.stream,
                output: parts.output,
            };
            route = routed(to, parts.output, p.via());
            body = std::borrow::Cow::Owned(self.body_text(&p).await?);
        }
    }
}

/// `route` with what the request's output schema asks of it: Anthropic's beta header for
/// `output_format`, the final tool to watch in a stream.
fn routed<'a>(mut route: Route<'a>, output: Option<&'a OutputRun>, via: Option<Via>) -> Route<'a> {
    match (output, via) {
        (Some(_), Some(Via::OutputFormat)) => route.beta = Some(super::output::ANTHROPIC_BETA),
        (Some(o), Some(Via::Tool)) => route.watch = Some(o.tool.as_str()),
        _ => {}
    }
    route
}

/// Whether a failed call (after its own retries) goes on to the next entry.
pub(crate) fn falls_back(e: &Error) -> bool {
    match e {
        Error::Http { status, .. } => matches!(status, 404 | 408 | 429 | 500..=599),
        Error::Transport(_) | Error::Fetch(_) => true,
        _ => false,
    }
}

/// The transcript and tools of a run (in `from`'s style, with `system` Anthropic's separate
/// system text) written for an endpoint of style `to`: (messages, tools, system).
pub(crate) fn restyle_request(
    from: Style,
    to: Style,
    messages: &[Value],
    tools: &[Value],
    system: &str,
) -> (Vec<Value>, Vec<Value>, String) {
    match (from, to) {
        (Style::OpenAI, Style::Anthropic) => {
            let (messages, system) = crate::translate::openai_messages_to_anthropic(&Value::Array(messages.to_vec()));
            let tools = crate::translate::openai_tools_to_anthropic(&Value::Array(tools.to_vec()));
            (messages, tools, system)
        }
        (Style::Anthropic, Style::OpenAI) => {
            (anthropic_messages_to_openai(messages, system), anthropic_tools_to_openai(tools), String::new())
        }
        _ => (messages.to_vec(), tools.to_vec(), system.to_string()),
    }
}

/// An Anthropic transcript as OpenAI messages: the system text first, `tool_use` blocks as
/// `tool_calls`, each `tool_result` block as a `tool` message (before the user's own text).
fn anthropic_messages_to_openai(messages: &[Value], system: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(obj([("role", "system".into()), ("content", system.into())]));
    }
    let kind = |b: &Value| b.get("type").and_then(Value::as_str).map(str::to_string);
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        let Some(blocks) = m.get("content").and_then(Value::as_array) else {
            out.push(m.clone());
            continue;
        };
        let text: String = blocks
            .iter()
            .filter(|b| kind(b).as_deref() == Some("text"))
            .map(|b| b.get("text").map(js_string).unwrap_or_default())
            .collect();
        if role == "assistant" {
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| kind(b).as_deref() == Some("tool_use"))
                .map(|b| {
                    let input = b.get("input").cloned().unwrap_or_else(|| Value::Object(Map::new()));
                    openai_call(b.get("id").cloned().unwrap_or(Value::Null), &text_or(b.get("name")), &input)
                })
                .collect();
            out.push(openai_assistant(&text, calls));
            continue;
        }
        for b in blocks.iter().filter(|b| kind(b).as_deref() == Some("tool_result")) {
            let content = match b.get("content") {
                Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text")).map(js_string).collect(),
                Some(Value::Null) | None => String::new(),
                Some(other) => js_string(other),
            };
            out.push(obj([
                ("role", "tool".into()),
                ("tool_call_id", b.get("tool_use_id").cloned().unwrap_or(Value::Null)),
                ("content", content.into()),
            ]));
        }
        if !text.is_empty() {
            out.push(obj([("role", role.into()), ("content", text.into())]));
        }
    }
    out
}

fn anthropic_tools_to_openai(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut f = Map::with_capacity(3);
            f.insert("name".into(), t.get("name").cloned().unwrap_or(Value::Null));
            if let Some(d) = t.get("description") {
                f.insert("description".into(), d.clone());
            }
            f.insert(
                "parameters".into(),
                t.get("input_schema").cloned().unwrap_or_else(|| obj([("type", "object".into())])),
            );
            obj([("type", "function".into()), ("function", Value::Object(f))])
        })
        .collect()
}

fn text_or(v: Option<&Value>) -> String {
    v.map(js_string).unwrap_or_default()
}

fn openai_call(id: Value, name: &str, args: &Value) -> Value {
    obj([
        ("id", id),
        ("type", "function".into()),
        ("function", obj([("name", name.into()), ("arguments", js_stringify(args).into())])),
    ])
}

/// OpenAI's assistant message: its text (null beside tool calls when there is none, as OpenAI
/// writes it) and its tool calls.
fn openai_assistant(text: &str, calls: Vec<Value>) -> Value {
    let mut m = Map::with_capacity(3);
    m.insert("role".into(), "assistant".into());
    let content = if text.is_empty() && !calls.is_empty() { Value::Null } else { text.into() };
    m.insert("content".into(), content);
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}

/// A reply read from an endpoint of another style, as the transcript's style records it.
pub(crate) fn assistant_in(style: Style, text: &str, calls: &[Call]) -> Value {
    match style {
        Style::OpenAI => openai_assistant(
            text,
            calls.iter().map(|c| openai_call(c.id.clone().unwrap_or(Value::Null), &c.name, &c.args)).collect(),
        ),
        Style::Anthropic => {
            let mut blocks = Vec::with_capacity(calls.len() + 1);
            if !text.is_empty() {
                blocks.push(obj([("type", "text".into()), ("text", text.into())]));
            }
            for c in calls {
                blocks.push(obj([
                    ("type", "tool_use".into()),
                    ("id", c.id.clone().unwrap_or(Value::Null)),
                    ("name", c.name.as_str().into()),
                    ("input", c.args.clone()),
                ]));
            }
            obj([("role", "assistant".into()), ("content", Value::Array(blocks))])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_failures_another_endpoint_may_not_have_fall_back() {
        for status in [404, 408, 429, 500, 502, 503, 504, 529] {
            assert!(falls_back(&Error::Http { status, body: String::new() }), "{status}");
        }
        for status in [400, 401, 403, 422] {
            assert!(!falls_back(&Error::Http { status, body: String::new() }), "{status}");
        }
        assert!(falls_back(&Error::Transport("refused".into())));
        assert!(!falls_back(&Error::Aborted("stop".into())));
        assert!(!falls_back(&Error::Timeout(5)));
    }

    #[test]
    fn an_anthropic_transcript_reads_as_openai_and_back() {
        let messages = vec![
            json!({ "role": "user", "content": "weather?" }),
            json!({ "role": "assistant", "content": [
                { "type": "text", "text": "checking" },
                { "type": "tool_use", "id": "toolu_1", "name": "w", "input": { "city": "Paris" } },
            ] }),
            json!({ "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "toolu_1", "content": "18C" }] }),
        ];
        let tools = vec![json!({ "name": "w", "description": "d", "input_schema": { "type": "object" } })];
        let (m, t, s) = restyle_request(Style::Anthropic, Style::OpenAI, &messages, &tools, "be brief");
        assert_eq!(s, "");
        assert_eq!(
            Value::Array(m),
            json!([
                { "role": "system", "content": "be brief" },
                { "role": "user", "content": "weather?" },
                { "role": "assistant", "content": "checking", "tool_calls": [
                    { "id": "toolu_1", "type": "function", "function": { "name": "w", "arguments": "{\"city\":\"Paris\"}" } },
                ] },
                { "role": "tool", "tool_call_id": "toolu_1", "content": "18C" },
            ])
        );
        assert_eq!(
            Value::Array(t),
            json!([{ "type": "function", "function": { "name": "w", "description": "d", "parameters": { "type": "object" } } }])
        );
        // And the way back, through the reference's own translation.
        let openai = vec![
            json!({ "role": "system", "content": "be brief" }),
            json!({ "role": "user", "content": "weather?" }),
            json!({ "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "w", "arguments": "{\"city\":\"Paris\"}" } },
            ] }),
            json!({ "role": "tool", "tool_call_id": "call_1", "content": "18C" }),
        ];
        let (m, _, s) = restyle_request(Style::OpenAI, Style::Anthropic, &openai, &[], "");
        assert_eq!(s, "be brief");
        assert_eq!(m[1]["content"][0]["type"], "tool_use");
        assert_eq!(m[2]["content"][0]["tool_use_id"], "call_1");
    }

    #[test]
    fn a_reply_enters_the_transcript_in_its_style() {
        let calls = vec![Call { id: Some(json!("c1")), name: "w".into(), args: json!({ "a": 1 }) }];
        assert_eq!(
            assistant_in(Style::OpenAI, "", &calls),
            json!({ "role": "assistant", "content": null, "tool_calls": [
                { "id": "c1", "type": "function", "function": { "name": "w", "arguments": "{\"a\":1}" } },
            ] })
        );
        assert_eq!(assistant_in(Style::OpenAI, "hi", &[]), json!({ "role": "assistant", "content": "hi" }));
        assert_eq!(
            assistant_in(Style::Anthropic, "ok", &calls),
            json!({ "role": "assistant", "content": [
                { "type": "text", "text": "ok" },
                { "type": "tool_use", "id": "c1", "name": "w", "input": { "a": 1 } },
            ] })
        );
    }
}
