//! The two wire styles (SPEC §8): request bodies, replies and tool-result shapes.

use serde_json::{Map, Value};

use super::output::{OutputRun, Via};
use super::result::{RunResult, ToolCallRecord, Usage};
pub use super::style::Style;
use crate::error::{Error, Result};
use crate::json::{count, js_string, obj};

/// What a loop's request body is made of, borrowed from the run: [`Parts::to_map`] builds
/// the body as a value (for `requestParams` and `bodyTransform` to reshape), [`Parts::to_text`]
/// writes the same body's JSON text straight from the parts, copying nothing of the transcript.
pub struct Parts<'a> {
    pub style: Style,
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Value],
    pub tools: &'a [Value],
    pub stream: bool,
    /// The run's structured output, when it has one (see `output`).
    pub output: Option<&'a OutputRun>,
}

impl Parts<'_> {
    /// The request body before request shaping. Empty tool lists leave their keys out.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut b = Map::with_capacity(8);
        // A client made without a model sends none (the reference's `model: undefined`).
        if !self.model.is_empty() {
            b.insert("model".into(), self.model.into());
        }
        let via = self.via();
        let final_tool = self.output.filter(|_| via == Some(Via::Tool));
        let tools = || {
            let mut all = self.tools.to_vec();
            all.extend(final_tool.map(|o| o.tool_decl(self.style)));
            Value::Array(all)
        };
        let has_tools = !self.tools.is_empty() || final_tool.is_some();
        match self.style {
            Style::OpenAI => {
                b.insert("messages".into(), Value::Array(self.messages_with_instruction()));
                if has_tools {
                    b.insert("tools".into(), tools());
                    let choice = match final_tool {
                        Some(o) => o.tool_choice(self.style, !self.tools.is_empty()),
                        None => "auto".into(),
                    };
                    b.insert("tool_choice".into(), choice);
                }
                if let (Some(o), Some(Via::ResponseFormat)) = (self.output, via) {
                    b.insert("response_format".into(), o.response_format());
                }
                if self.stream {
                    b.insert("stream".into(), true.into());
                    b.insert("stream_options".into(), obj([("include_usage", true.into())]));
                }
            }
            Style::Anthropic => {
                b.insert("max_tokens".into(), 4096.into());
                b.insert("system".into(), self.system_with_instruction().into());
                b.insert("messages".into(), Value::Array(self.messages.to_vec()));
                if has_tools {
                    b.insert("tools".into(), tools());
                }
                if let Some(o) = final_tool {
                    b.insert("tool_choice".into(), o.tool_choice(self.style, !self.tools.is_empty()));
                }
                if let (Some(o), Some(Via::OutputFormat)) = (self.output, via) {
                    b.insert("output_format".into(), o.output_format());
                }
                if self.stream {
                    b.insert("stream".into(), true.into());
                }
            }
        }
        b
    }

    /// How this request carries the run's output schema, if it has one.
    pub(crate) fn via(&self) -> Option<Via> {
        self.output.map(|o| o.via(self.style))
    }

    /// The instruction this request adds, when the schema goes as text.
    fn instruction(&self) -> Option<String> {
        self.output.filter(|_| self.via() == Some(Via::Prompt)).map(OutputRun::instruction)
    }

    /// Anthropic's system text, with the instruction after it when there is one.
    fn system_with_instruction(&self) -> std::borrow::Cow<'_, str> {
        match self.instruction() {
            None => self.system.into(),
            Some(i) if self.system.is_empty() => i.into(),
            Some(i) => format!("{}\n\n{i}", self.system).into(),
        }
    }

    /// OpenAI's messages as they go out: each as [`WireMessages`] writes it, the instruction
    /// added to the leading system message (or as one).
    fn messages_with_instruction(&self) -> Vec<Value> {
        let Some(i) = self.instruction() else { return self.messages.iter().map(wire_message).collect() };
        let mut out = Vec::with_capacity(self.messages.len() + 1);
        match self.messages.first() {
            Some(m)
                if m.get("role").and_then(Value::as_str) == Some("system")
                    && m.get("content").is_some_and(Value::is_string) =>
            {
                let text = m.get("content").and_then(Value::as_str).unwrap_or_default();
                let mut first = m.clone();
                first["content"] = format!("{text}\n\n{i}").into();
                out.push(first);
                out.extend(self.messages[1..].iter().map(wire_message));
            }
            _ => {
                out.push(obj([("role", "system".into()), ("content", i.into())]));
                out.extend(self.messages.iter().map(wire_message));
            }
        }
        out
    }

    /// The JSON text of [`to_map`](Parts::to_map)'s body, byte for byte, without building it.
    pub fn to_text(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::Invalid(format!("request body: {e}")))
    }
}

/// Keys in `to_map`'s order, so the text is the same bytes as the map's.
impl serde::Serialize for Parts<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.output.is_some() {
            // A run with an output schema: the few extra keys are written from the map.
            return self.to_map().serialize(s);
        }
        let mut m = s.serialize_map(None)?;
        if !self.model.is_empty() {
            m.serialize_entry("model", self.model)?;
        }
        match self.style {
            Style::OpenAI => {
                m.serialize_entry("messages", &WireMessages(self.messages))?;
                if !self.tools.is_empty() {
                    m.serialize_entry("tools", self.tools)?;
                    m.serialize_entry("tool_choice", "auto")?;
                }
                if self.stream {
                    m.serialize_entry("stream", &true)?;
                    m.serialize_entry("stream_options", &IncludeUsage)?;
                }
            }
            Style::Anthropic => {
                m.serialize_entry("max_tokens", &4096)?;
                m.serialize_entry("system", self.system)?;
                m.serialize_entry("messages", self.messages)?;
                if !self.tools.is_empty() {
                    m.serialize_entry("tools", self.tools)?;
                }
                if self.stream {
                    m.serialize_entry("stream", &true)?;
                }
            }
        }
        m.end()
    }
}

/// An OpenAI transcript as it goes out: an assistant message that asked for tools with a null
/// `content` is written with `""`. The transcript keeps the provider's `null` (as the reference
/// does); on the wire, OpenAI's API takes either, and llama-cpp-python's server refuses `null`
/// (HTTP 500 on every tool run's second request).
struct WireMessages<'a>(&'a [Value]);

/// Whether `m` is such a message.
fn null_with_calls(m: &Value) -> bool {
    m.get("content").is_some_and(Value::is_null)
        && m.get("role").and_then(Value::as_str) == Some("assistant")
        && m.get("tool_calls").and_then(Value::as_array).is_some_and(|c| !c.is_empty())
}

/// One message as [`WireMessages`] writes it, as a value.
fn wire_message(m: &Value) -> Value {
    let mut out = m.clone();
    if null_with_calls(m) {
        out["content"] = "".into();
    }
    out
}

impl serde::Serialize for WireMessages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for m in self.0 {
            match m {
                Value::Object(fields) if null_with_calls(m) => {
                    struct Texted<'b>(&'b Map<String, Value>);
                    impl serde::Serialize for Texted<'_> {
                        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                            let mut map = s.serialize_map(Some(self.0.len()))?;
                            for (k, v) in self.0 {
                                match k.as_str() {
                                    "content" => map.serialize_entry(k, "")?,
                                    _ => map.serialize_entry(k, v)?,
                                }
                            }
                            map.end()
                        }
                    }
                    seq.serialize_element(&Texted(fields))?;
                }
                other => seq.serialize_element(other)?,
            }
        }
        seq.end()
    }
}

/// `{"include_usage":true}`
struct IncludeUsage;

impl serde::Serialize for IncludeUsage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("include_usage", &true)?;
        m.end()
    }
}

/// Add one reply's usage to the run's totals.
pub fn add_usage(acc: &mut Usage, raw: Option<&Value>, style: Style) {
    let Some(raw) = raw.filter(|r| !r.is_null()) else {
        return;
    };
    match style {
        Style::Anthropic => {
            let (i, o) = (count(raw.get("input_tokens")), count(raw.get("output_tokens")));
            acc.prompt_tokens += i;
            acc.completion_tokens += o;
            acc.total_tokens += i + o;
        }
        Style::OpenAI => {
            let (p, c) = (count(raw.get("prompt_tokens")), count(raw.get("completion_tokens")));
            acc.prompt_tokens += p;
            acc.completion_tokens += c;
            acc.total_tokens += match raw.get("total_tokens") {
                Some(t) if !t.is_null() => count(Some(t)),
                _ => p + c,
            };
        }
    }
}

/// `JSON.parse(s || "{}")`, `{}` when it does not parse.
fn parse_args(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) if !s.is_empty() => {
            crate::json::parse_str(s).unwrap_or_else(|_| Value::Object(Map::new()))
        }
        _ => Value::Object(Map::new()),
    }
}

fn name_of(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        other => text_of(other),
    }
}

/// The assistant message to record, the tool calls it asks for, and its text. The reply is
/// used up: its message moves into the transcript rather than being copied there.
pub(super) fn read_reply(style: Style, mut data: Value) -> Result<(Value, Vec<Call>, String)> {
    match style {
        Style::OpenAI => {
            let Some(msg) = data
                .get_mut("choices")
                .and_then(|c| c.get_mut(0))
                .and_then(|c| c.get_mut("message"))
                .filter(|m| m.is_object())
                .map(Value::take)
            else {
                return Err(Error::BadShape(format!("LLM response has no choices[0].message: {}", short(&data))));
            };
            let calls = calls_of(Style::OpenAI, &msg);
            let text = text_of(msg.get("content"));
            Ok((msg, calls, text))
        }
        Style::Anthropic => {
            let content = data.get_mut("content").map(Value::take);
            let blocks = content.as_ref().and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
            let is = |b: &Value, t: &str| b.get("type").and_then(Value::as_str) == Some(t);
            let calls = anthropic_calls(blocks);
            let text = blocks.iter().filter(|b| is(b, "text")).map(|b| text_of(b.get("text"))).collect::<String>();
            let mut assistant = Map::with_capacity(2);
            assistant.insert("role".into(), "assistant".into());
            if let Some(c) = content {
                assistant.insert("content".into(), c);
            }
            Ok((Value::Object(assistant), calls, text))
        }
    }
}

/// The tool calls an assistant message (as the transcript keeps it) asks for, in order.
pub(crate) fn calls_of(style: Style, assistant: &Value) -> Vec<Call> {
    match style {
        Style::OpenAI => assistant
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|c| {
                        let f = c.get("function");
                        Call {
                            id: c.get("id").cloned(),
                            name: name_of(f.and_then(|f| f.get("name"))),
                            args: parse_args(f.and_then(|f| f.get("arguments"))),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Style::Anthropic => {
            anthropic_calls(assistant.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]))
        }
    }
}

/// What a call left unanswered in a transcript reads, once a new turn starts after it.
pub const NOT_RUN: &str = "not run: the turn stopped (parked on another call's request) before this call ran";

/// A transcript whose last assistant turn asked for calls some of which have no result (a run
/// parked on one of several calls, then left for a new prompt): the missing results are added,
/// as errors saying the call did not run, so the provider gets one result per call. Returns
/// how many were added.
pub(crate) fn answer_the_unanswered(style: Style, messages: &mut Vec<Value>) -> usize {
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_string);
    match style {
        Style::OpenAI => {
            let k = messages.iter().rev().take_while(|m| role(m).as_deref() == Some("tool")).count();
            let Some(at) = messages.len().checked_sub(k + 1) else { return 0 };
            let assistant = &messages[at];
            if !matches!(role(assistant).as_deref(), Some("assistant") | None) {
                return 0;
            }
            let calls = calls_of(style, assistant);
            let answered: Vec<Option<&Value>> = messages[at + 1..].iter().map(|m| m.get("tool_call_id")).collect();
            let missing: Vec<Option<Value>> = calls
                .iter()
                .enumerate()
                .filter(|(i, c)| match &c.id {
                    Some(id) => !answered.contains(&Some(id)),
                    None => *i >= answered.len(),
                })
                .map(|(_, c)| c.id.clone())
                .collect();
            let n = missing.len();
            messages.extend(missing.iter().map(|id| openai_tool_message(id.as_ref(), NOT_RUN)));
            n
        }
        Style::Anthropic => {
            let n = messages.len();
            let (assistant_at, results) = match messages.last().map(|m| (role(m), m.get("content"))) {
                Some((Some(r), _)) if r == "assistant" => (n - 1, None),
                Some((Some(r), Some(Value::Array(blocks))))
                    if r == "user"
                        && n >= 2
                        && !blocks.is_empty()
                        && blocks.iter().all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")) =>
                {
                    (n - 2, Some(n - 1))
                }
                _ => return 0,
            };
            if role(&messages[assistant_at]).as_deref() != Some("assistant") {
                return 0;
            }
            let calls = calls_of(style, &messages[assistant_at]);
            if calls.is_empty() {
                return 0;
            }
            let answered: Vec<Value> = results
                .and_then(|r| messages[r].get("content").and_then(Value::as_array))
                .map(|b| b.iter().filter_map(|x| x.get("tool_use_id").cloned()).collect())
                .unwrap_or_default();
            let added: Vec<Value> = calls
                .iter()
                .filter(|c| c.id.as_ref().is_none_or(|id| !answered.contains(id)))
                .map(|c| anthropic_tool_result(c.id.as_ref(), NOT_RUN, true))
                .collect();
            let count = added.len();
            match results {
                Some(r) => {
                    if let Some(Value::Array(blocks)) = messages[r].get_mut("content") {
                        blocks.extend(added);
                    }
                }
                None if count > 0 => messages.push(obj([("role", "user".into()), ("content", Value::Array(added))])),
                None => {}
            }
            count
        }
    }
}

fn anthropic_calls(blocks: &[Value]) -> Vec<Call> {
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|b| Call {
            id: b.get("id").cloned(),
            name: name_of(b.get("name")),
            args: b.get("input").filter(|i| !i.is_null()).cloned().unwrap_or_else(|| Value::Object(Map::new())),
        })
        .collect()
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

/// `{ role: "tool", tool_call_id, content }`
pub fn openai_tool_message(id: Option<&Value>, output: &str) -> Value {
    let mut m = Map::with_capacity(3);
    m.insert("role".into(), "tool".into());
    if let Some(id) = id {
        m.insert("tool_call_id".into(), id.clone());
    }
    m.insert("content".into(), output.into());
    Value::Object(m)
}

/// `{ type: "tool_result", tool_use_id, content, is_error }`
pub fn anthropic_tool_result(id: Option<&Value>, output: &str, is_error: bool) -> Value {
    let mut m = Map::with_capacity(4);
    m.insert("type".into(), "tool_result".into());
    if let Some(id) = id {
        m.insert("tool_use_id".into(), id.clone());
    }
    m.insert("content".into(), output.into());
    m.insert("is_error".into(), is_error.into());
    Value::Object(m)
}

impl RunResult {
    /// [`to_value`](RunResult::to_value) without copying anything: the transcript, the
    /// records and the text move into the value.
    pub fn into_value(self) -> Value {
        let mut m = Map::with_capacity(10);
        let count = self.tool_calls.len();
        m.insert("text".into(), Value::String(self.text));
        m.insert("messages".into(), Value::Array(self.messages));
        m.insert("toolCalls".into(), Value::Array(self.tool_calls.into_iter().map(record_value).collect()));
        m.insert("toolCallCount".into(), Value::from(count));
        m.insert("turns".into(), Value::from(self.turns));
        m.insert("usage".into(), self.usage.to_value());
        m.insert("model".into(), Value::String(self.model));
        m.insert("status".into(), Value::String(self.status.as_str().into()));
        if let Some(p) = self.pending {
            m.insert("pending".into(), Value::Object(p));
        }
        if let Some(o) = self.output {
            m.insert("output".into(), o);
        }
        if let Some(l) = self.limit {
            m.insert("limit".into(), Value::String(l));
        }
        Value::Object(m)
    }
}

/// `ToolCallRecord::to_value`, moving instead of copying.
fn record_value(r: ToolCallRecord) -> Value {
    let mut m = Map::with_capacity(5);
    m.insert("name".into(), Value::String(r.name));
    m.insert("args".into(), r.args);
    m.insert("output".into(), Value::String(r.result.output));
    m.insert("isError".into(), Value::Bool(r.result.is_error));
    if let Some(meta) = r.result.metadata {
        m.insert("metadata".into(), meta);
    }
    Value::Object(m)
}

/// A tool call as the model asked for it.
pub(crate) struct Call {
    pub id: Option<Value>,
    pub name: String,
    pub args: Value,
}

pub(crate) fn expect_array(v: &Value, msg: &str) -> Result<Vec<Value>> {
    v.as_array().cloned().ok_or_else(|| Error::Invalid(msg.into()))
}

pub(crate) fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(other) => js_string(other),
    }
}

#[cfg(test)]
mod tests {
    use super::{answer_the_unanswered, Parts, Style, NOT_RUN};
    use serde_json::{json, Value};

    #[test]
    fn an_assistant_turn_of_tool_calls_goes_out_with_empty_text_not_null() {
        let call = json!({"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}});
        let messages = vec![
            json!({"role": "user", "content": "q"}),
            json!({"role": "assistant", "content": null, "tool_calls": [call]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}),
            json!({"role": "assistant", "content": null}),
        ];
        let parts = Parts {
            style: Style::OpenAI,
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            stream: false,
            output: None,
        };
        let text: Value = serde_json::from_str(&parts.to_text().unwrap()).unwrap();
        assert_eq!(text["messages"][1], json!({"role": "assistant", "content": "", "tool_calls": [call]}));
        assert_eq!(text["messages"][3]["content"], Value::Null, "only a turn that called tools");
        assert_eq!(Value::Object(parts.to_map()), text, "the body is the same both ways");
        assert_eq!(messages[1]["content"], Value::Null, "the transcript keeps the provider's null");
        let anthropic = Parts { style: Style::Anthropic, ..parts };
        assert_eq!(
            serde_json::from_str::<Value>(&anthropic.to_text().unwrap()).unwrap()["messages"][1]["content"],
            Value::Null
        );
    }

    #[test]
    fn a_turn_left_with_unanswered_calls_gets_a_result_for_each() {
        let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "t", "arguments": "{}"}});
        let mut m = vec![
            json!({"role": "user", "content": "go"}),
            json!({"content": null, "tool_calls": [call("a"), call("b"), call("c")]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "approve a"}),
        ];
        assert_eq!(answer_the_unanswered(Style::OpenAI, &mut m), 2);
        assert_eq!(m[3], json!({"role": "tool", "tool_call_id": "b", "content": NOT_RUN}));
        assert_eq!(m[4]["tool_call_id"], "c");
        assert_eq!(answer_the_unanswered(Style::OpenAI, &mut m), 0, "balanced: nothing more");
        let mut done = vec![json!({"role": "user", "content": "go"}), json!({"role": "assistant", "content": "hi"})];
        assert_eq!(answer_the_unanswered(Style::OpenAI, &mut done), 0);

        let use_ = |id: &str| json!({"type": "tool_use", "id": id, "name": "t", "input": {}});
        let mut a = vec![
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "x"}, use_("a"), use_("b")]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "approve a", "is_error": true}]}),
        ];
        assert_eq!(answer_the_unanswered(Style::Anthropic, &mut a), 1);
        assert_eq!(a.len(), 3);
        assert_eq!(
            a[2]["content"][1],
            json!({"type": "tool_result", "tool_use_id": "b", "content": NOT_RUN, "is_error": true})
        );
        let mut bare =
            vec![json!({"role": "user", "content": "go"}), json!({"role": "assistant", "content": [use_("a")]})];
        assert_eq!(answer_the_unanswered(Style::Anthropic, &mut bare), 1);
        assert_eq!(bare[2]["role"], "user");
    }

    #[test]
    fn the_body_text_is_the_bytes_of_the_built_body_in_every_shape() {
        let messages = vec![
            json!({"role": "user", "content": "naïve \"quote\" \u{1F600} \n tab\t </script>"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "add", "arguments": "{\"a\":2,\"b\":2.5}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "4.5", "n": 1e300, "f": 0.1, "i": -7}),
        ];
        let tools = [json!({"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}})];
        for style in [Style::OpenAI, Style::Anthropic] {
            for model in ["", "m-1"] {
                for system in ["", "be brief"] {
                    for tools in [&[][..], &tools[..]] {
                        for stream in [false, true] {
                            let parts =
                                Parts { style, model, system, messages: &messages, tools, stream, output: None };
                            let built = Value::Object(parts.to_map());
                            let text = parts.to_text().unwrap();
                            assert_eq!(text, built.to_string(), "{style:?} {model:?} {system:?} {stream}");
                            assert_eq!(crate::json::to_string(&built), text);
                        }
                    }
                }
            }
        }
    }
}
