//! A streamed reply: each wire style's server-sent deltas, assembled into one turn.

use serde_json::{Map, Value};

use super::result::Usage;
use super::wire::{text_of, Call, Style};
use crate::json::obj;

/// What one streamed turn added up to.
pub struct Streamed {
    /// The assistant message to record.
    pub assistant: Value,
    pub calls: Vec<Call>,
    pub text: String,
    /// The turn ends the run (no tool calls, or Anthropic stopped for another reason).
    pub finished: bool,
}

/// Accumulates one turn's SSE payloads for a wire style.
pub struct Assembler {
    style: Style,
    text: String,
    /// OpenAI: tool calls by delta index, in order of first appearance.
    slots: Vec<(Value, String, String, String)>,
    /// Anthropic: content blocks by index, in order of first appearance.
    blocks: Vec<(Value, Block)>,
    stop_reason: String,
}

pub struct Block {
    kind: String,
    id: Option<Value>,
    name: Option<Value>,
    text: String,
    json: String,
}

/// `JSON.parse(s || "{}")`, `{}` when it fails.
fn safe_json(s: &str) -> Value {
    let s = if s.is_empty() { "{}" } else { s };
    crate::json::parse_str(s).unwrap_or_else(|_| Value::Object(Map::new()))
}

impl Assembler {
    pub fn new(style: Style) -> Self {
        Assembler { style, text: String::new(), slots: vec![], blocks: vec![], stop_reason: String::new() }
    }

    /// The arguments streamed so far of the tool call named `name`, if the turn has one.
    pub fn args_of(&self, name: &str) -> Option<&str> {
        match self.style {
            Style::OpenAI => self.slots.iter().find(|s| s.2 == name).map(|s| s.3.as_str()),
            Style::Anthropic => self
                .blocks
                .iter()
                .find(|(_, b)| b.kind == "tool_use" && b.name.as_ref().and_then(Value::as_str) == Some(name))
                .map(|(_, b)| b.json.as_str()),
        }
    }

    /// Feed one `data:` payload. Returns a text delta to surface, if any, and whether the
    /// stream said it is over (`[DONE]`).
    pub fn feed(&mut self, payload: &str, usage: &mut Usage) -> (Option<String>, bool) {
        if self.style == Style::OpenAI && payload == "[DONE]" {
            return (None, true);
        }
        let Ok(j) = crate::json::parse_str::<Value>(payload) else {
            return (None, false);
        };
        match self.style {
            Style::OpenAI => (self.feed_openai(&j, usage), false),
            Style::Anthropic => (self.feed_anthropic(&j, usage), false),
        }
    }

    fn feed_openai(&mut self, j: &Value, usage: &mut Usage) -> Option<String> {
        if let Some(u) = j.get("usage").filter(|u| crate::json::truthy(u)) {
            super::wire::add_usage(usage, Some(u), Style::OpenAI);
        }
        let delta = j.get("choices").and_then(|c| c.get(0)).and_then(|c| c.get("delta"))?;
        if let Some(list) = delta.get("tool_calls").and_then(Value::as_array) {
            for tc in list {
                let index = tc.get("index").cloned().unwrap_or(Value::Null);
                let pos = match self.slots.iter().position(|s| s.0 == index) {
                    Some(p) => p,
                    None => {
                        self.slots.push((index, String::new(), String::new(), String::new()));
                        self.slots.len() - 1
                    }
                };
                let slot = &mut self.slots[pos];
                if let Some(id) = tc.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    slot.1 = id.to_string();
                }
                if let Some(f) = tc.get("function") {
                    if let Some(n) = f.get("name").and_then(Value::as_str) {
                        slot.2.push_str(n);
                    }
                    if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                        slot.3.push_str(a);
                    }
                }
            }
        }
        match delta.get("content").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => {
                self.text.push_str(t);
                Some(t.to_string())
            }
            _ => None,
        }
    }

    fn feed_anthropic(&mut self, j: &Value, usage: &mut Usage) -> Option<String> {
        let index = j.get("index").cloned().unwrap_or(Value::Null);
        match j.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                super::wire::add_usage(usage, j.get("message").and_then(|m| m.get("usage")), Style::Anthropic);
                None
            }
            Some("content_block_start") => {
                let cb = j.get("content_block");
                let field = |k: &str| cb.and_then(|c| c.get(k)).cloned();
                let block = Block {
                    kind: cb.and_then(|c| c.get("type")).and_then(Value::as_str).unwrap_or_default().to_string(),
                    id: field("id"),
                    name: field("name"),
                    text: String::new(),
                    json: String::new(),
                };
                match self.blocks.iter().position(|b| b.0 == index) {
                    Some(p) => self.blocks[p].1 = block,
                    None => self.blocks.push((index, block)),
                }
                None
            }
            Some("content_block_delta") => {
                let delta = j.get("delta")?;
                let block = &mut self.blocks.iter_mut().find(|b| b.0 == index)?.1;
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let t = delta.get("text").and_then(Value::as_str).unwrap_or_default();
                        block.text.push_str(t);
                        Some(t.to_string())
                    }
                    Some("input_json_delta") => {
                        block.json.push_str(delta.get("partial_json").and_then(Value::as_str).unwrap_or_default());
                        None
                    }
                    _ => None,
                }
            }
            Some("message_delta") => {
                if let Some(r) = j.get("delta").and_then(|d| d.get("stop_reason")).and_then(Value::as_str) {
                    self.stop_reason = r.to_string();
                }
                super::wire::add_usage(usage, j.get("usage"), Style::Anthropic);
                None
            }
            _ => None,
        }
    }

    /// The turn as the loop records it.
    pub fn finish(self) -> Streamed {
        match self.style {
            Style::OpenAI => {
                let calls: Vec<Call> = self
                    .slots
                    .iter()
                    .map(|(_, id, name, args)| Call {
                        id: Some(id.as_str().into()),
                        name: name.clone(),
                        args: safe_json(args),
                    })
                    .collect();
                if calls.is_empty() {
                    let assistant = obj([("role", "assistant".into()), ("content", self.text.as_str().into())]);
                    return Streamed { assistant, calls, text: self.text, finished: true };
                }
                let content = if self.text.is_empty() { Value::Null } else { Value::String(self.text.clone()) };
                let tool_calls = self
                    .slots
                    .iter()
                    .map(|(_, id, name, args)| {
                        obj([
                            ("id", id.as_str().into()),
                            ("type", "function".into()),
                            ("function", obj([("name", name.as_str().into()), ("arguments", args.as_str().into())])),
                        ])
                    })
                    .collect();
                let assistant =
                    obj([("role", "assistant".into()), ("content", content), ("tool_calls", Value::Array(tool_calls))]);
                Streamed { assistant, calls, text: self.text, finished: false }
            }
            Style::Anthropic => {
                let mut content = Vec::with_capacity(self.blocks.len());
                let mut calls = Vec::new();
                let mut text = String::new();
                for (_, b) in self.blocks {
                    if b.kind == "tool_use" {
                        let input = safe_json(&b.json);
                        let mut m = Map::with_capacity(4);
                        m.insert("type".into(), "tool_use".into());
                        if let Some(id) = &b.id {
                            m.insert("id".into(), id.clone());
                        }
                        if let Some(n) = &b.name {
                            m.insert("name".into(), n.clone());
                        }
                        m.insert("input".into(), input.clone());
                        content.push(Value::Object(m));
                        let name = b.name.as_ref().map(|n| text_of(Some(n))).unwrap_or_else(|| "undefined".into());
                        let args = if input.is_null() { Value::Object(Map::new()) } else { input };
                        calls.push(Call { id: b.id, name, args });
                    } else {
                        text.push_str(&b.text);
                        content.push(obj([("type", "text".into()), ("text", b.text.into())]));
                    }
                }
                let finished = self.stop_reason != "tool_use" || calls.is_empty();
                let assistant = obj([("role", "assistant".into()), ("content", Value::Array(content))]);
                Streamed { assistant, calls, text, finished }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{ByteStream, Lines};
    use serde_json::json;

    fn body(chunks: Vec<&'static [u8]>) -> ByteStream {
        Box::pin(futures::stream::iter(chunks.into_iter().map(|c| Ok(c.to_vec()))))
    }

    #[tokio::test]
    async fn lines_split_across_chunks_and_keep_utf8_whole() {
        let mut l = Lines::new(body(vec![b"data: a\r", b"\ndata: \xc3", b"\xa9\n", b"tail"]));
        assert_eq!(l.next_line().await.unwrap().unwrap(), "data: a");
        assert_eq!(l.next_line().await.unwrap().unwrap(), "data: é");
        assert_eq!(l.next_line().await.unwrap().unwrap(), "tail");
        assert!(l.next_line().await.unwrap().is_none());
    }

    #[test]
    fn openai_tool_calls_assemble_by_index_in_first_seen_order() {
        let mut a = Assembler::new(Style::OpenAI);
        let mut u = Usage::default();
        let feed = |a: &mut Assembler, u: &mut Usage, v: Value| a.feed(&v.to_string(), u);
        feed(
            &mut a,
            &mut u,
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "second", "arguments": "{\"x\""}}]}}]}),
        );
        feed(
            &mut a,
            &mut u,
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "fir", "arguments": ""}}]}}]}),
        );
        feed(
            &mut a,
            &mut u,
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "st", "arguments": "{}"}}, {"index": 1, "function": {"arguments": ":1}"}}]}}]}),
        );
        feed(
            &mut a,
            &mut u,
            json!({"choices": [{"delta": {}}], "usage": {"prompt_tokens": 2, "completion_tokens": 1}}),
        );
        assert_eq!(a.feed("[DONE]", &mut u), (None, true));
        let s = a.finish();
        assert!(!s.finished);
        assert_eq!(s.calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["second", "first"]);
        assert_eq!(s.calls[0].args, json!({"x": 1}));
        assert_eq!(s.assistant["content"], Value::Null);
        assert_eq!(s.assistant["tool_calls"][1]["function"]["arguments"], "{}");
        assert_eq!(u.total_tokens, 3);
    }

    #[test]
    fn anthropic_blocks_and_stop_reason() {
        let mut a = Assembler::new(Style::Anthropic);
        let mut u = Usage::default();
        for v in [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 0}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "w"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"c\":"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"P\"}"}}),
            json!({"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "orphan"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 4}}),
        ] {
            a.feed(&v.to_string(), &mut u);
        }
        let s = a.finish();
        assert!(!s.finished);
        assert_eq!(s.text, "Hi");
        assert_eq!(s.calls[0].args, json!({"c": "P"}));
        assert_eq!(
            s.assistant.to_string(),
            r#"{"role":"assistant","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t1","name":"w","input":{"c":"P"}}]}"#
        );
        assert_eq!((u.prompt_tokens, u.completion_tokens, u.total_tokens), (5, 4, 9));
    }

    #[test]
    fn anthropic_without_tool_use_stop_is_finished() {
        let mut a = Assembler::new(Style::Anthropic);
        let mut u = Usage::default();
        a.feed(&json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "w"}}).to_string(), &mut u);
        a.feed(&json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}).to_string(), &mut u);
        assert!(a.finish().finished);
    }
}
