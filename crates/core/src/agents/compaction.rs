//! Context compaction (SPEC §7F): a `beforeLLM` rewrite that replaces the older part of a
//! transcript with a summary once an estimate of its size passes a budget.
//!
//! The rewrite keeps a leading `system` message as it is, keeps a recent tail that starts at a
//! plain `user` turn (so an assistant's tool calls are never separated from their results, in
//! either dialect), and summarizes what lies between through the host's `summarize`. Below the
//! budget it answers nothing, so the run is the same as one without it.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::callback::{Callback, SharedCallback};
use crate::client::Style;
use crate::error::{Error, Result};
use crate::json::{field, js_string, js_stringify, obj};
use crate::jsstr::utf16_len;

/// The reminder placed before the tail when `flushToMemory` is set.
pub const FLUSH_TO_MEMORY_REMINDER: &str = "Before continuing: if anything from earlier is worth keeping, save it with the memory tool now — the earlier transcript is about to be summarized.";

/// What the summary message's content starts with.
pub const SUMMARY_PREFIX: &str = "[Summary of earlier conversation]\n";

/// The default estimate: for each message, the length of its `JSON.stringify` text in UTF-16
/// units, divided by four and rounded up; summed.
pub fn estimate_tokens(messages: &[Value]) -> f64 {
    messages.iter().fold(0.0, |n, m| n + message_estimate(m))
}

fn message_estimate(m: &Value) -> f64 {
    (utf16_len(&js_stringify(m)) as f64 / 4.0).ceil()
}

/// The options of a compactor, as the host writes them (one document: its functions as
/// `fn_markers` markers). Numbers are JavaScript's: a missing `maxTokens` compares as `NaN` does.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactorOptions {
    #[serde(default, deserialize_with = "crate::options::number")]
    pub max_tokens: Option<f64>,
    #[serde(default, deserialize_with = "crate::options::number")]
    pub keep_tail: Option<f64>,
    #[serde(default, deserialize_with = "truthy")]
    pub flush_to_memory: bool,
    /// The host's summarizer (read by [`Compactor::from_json`]).
    #[serde(default)]
    pub summarize: crate::fn_markers::HostFn,
    /// The host's token count (read by [`Compactor::from_json`]).
    #[serde(default)]
    pub count_tokens: crate::fn_markers::HostFn,
}

impl CompactorOptions {
    /// The options in JSON text; any value but an object reads as no options.
    pub fn from_json(text: &str) -> Result<Self> {
        Ok(crate::options::parse_object(text, "compactor")?.unwrap_or_default())
    }
}

impl Compactor {
    /// The option names `compactor` reads (its `CompactorOptions` in index.d.ts names them).
    pub fn option_names() -> &'static [&'static str] {
        crate::options::fields_of::<CompactorOptions>()
    }

    /// A compactor from its options document: any value but an object reads as no options;
    /// `summarize` is always called (a missing one fails then, naming it); `countTokens` is
    /// unset when falsy, the default estimate then.
    pub fn from_json(text: &str) -> Result<Compactor> {
        const OWNER: &str = "compactor";
        let mut o: CompactorOptions = crate::options::parse_object(text, OWNER)?.unwrap_or_default();
        let summarize = std::mem::take(&mut o.summarize).required(OWNER, "summarize");
        let count_tokens = std::mem::take(&mut o.count_tokens).named(OWNER, "countTokens");
        Ok(Compactor::new(o, summarize, count_tokens))
    }
}

fn truthy<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<bool, D::Error> {
    Ok(crate::json::truthy(&Value::deserialize(d)?))
}

/// A compactor: its options and the host's `summarize` (and, optionally, `countTokens`).
pub struct Compactor {
    max_tokens: f64,
    keep_tail: f64,
    flush_to_memory: bool,
    summarize: SharedCallback,
    count_tokens: Option<SharedCallback>,
}

impl Compactor {
    pub fn new(opts: CompactorOptions, summarize: SharedCallback, count_tokens: Option<SharedCallback>) -> Self {
        let max_tokens = opts.max_tokens.unwrap_or(f64::NAN);
        Compactor {
            max_tokens,
            keep_tail: opts.keep_tail.unwrap_or((max_tokens / 2.0).floor()),
            flush_to_memory: opts.flush_to_memory,
            summarize,
            count_tokens,
        }
    }

    /// The estimate of `messages`: the host's `countTokens` when given, the default otherwise.
    async fn count(&self, messages: &[Value]) -> Result<f64> {
        match &self.count_tokens {
            None => Ok(estimate_tokens(messages)),
            Some(f) => Ok(number(&f.call(Value::Array(messages.to_vec())).await?)),
        }
    }

    /// The rewritten transcript, or `None` when nothing changes. `style` is the dialect of the
    /// client the transcript goes to; `None` reads it off the transcript (Anthropic when it
    /// holds a `tool_use` or `tool_result` block).
    pub async fn compact(&self, msgs: &[Value], style: Option<Style>) -> Result<Option<Vec<Value>>> {
        // "Not over", not "at or under": a NaN budget compacts, as the reference's comparison does.
        let over = self.count(msgs).await? > self.max_tokens;
        if !over {
            return Ok(None);
        }
        let head_end = usize::from(msgs.first().is_some_and(|m| role(m) == Some("system")));
        let split = self.tail_start(msgs, head_end).await?;
        if split <= head_end {
            return Ok(None);
        }
        let older = &msgs[head_end..split];
        let summary = self.summarize.call(Value::Array(older.to_vec())).await?;
        let summary = if summary.is_null() { "undefined".to_string() } else { js_string(&summary) };
        let style = style.unwrap_or_else(|| infer_style(msgs));
        // The Messages API takes `system` only as a top-level field, so under Anthropic the
        // notes travel as user turns (consecutive user turns are merged by that API).
        let note_role = match style {
            Style::OpenAI => "system",
            Style::Anthropic => "user",
        };
        let mut out = Vec::with_capacity(head_end + 2 + msgs.len() - split);
        out.extend_from_slice(&msgs[..head_end]);
        out.push(obj([("role", note_role.into()), ("content", format!("{SUMMARY_PREFIX}{summary}").into())]));
        if self.flush_to_memory {
            out.push(obj([("role", note_role.into()), ("content", FLUSH_TO_MEMORY_REMINDER.into())]));
        }
        out.extend_from_slice(&msgs[split..]);
        Ok(Some(out))
    }

    /// Where the kept tail begins: the earliest boundary whose tail still fits `keepTail`;
    /// failing that, the latest boundary; failing that, the end (an empty tail).
    async fn tail_start(&self, msgs: &[Value], head_end: usize) -> Result<usize> {
        let mut split = msgs.len();
        if self.count_tokens.is_none() {
            let mut size = 0.0;
            for i in (head_end + 1..msgs.len()).rev() {
                size += message_estimate(&msgs[i]);
                if size > self.keep_tail {
                    break;
                }
                if is_boundary(&msgs[i]) {
                    split = i;
                }
            }
        } else {
            for i in (head_end + 1..msgs.len()).rev() {
                if self.count(&msgs[i..]).await? > self.keep_tail {
                    break;
                }
                if is_boundary(&msgs[i]) {
                    split = i;
                }
            }
        }
        if split != msgs.len() {
            return Ok(split);
        }
        Ok((head_end + 1..msgs.len()).rev().find(|&i| is_boundary(&msgs[i])).unwrap_or(msgs.len()))
    }

    /// This compactor as a `beforeLLM` hook for a client of the given dialect (`None`: read
    /// it off each transcript).
    pub fn hook(self: &Arc<Self>, style: Option<Style>) -> SharedCallback {
        Arc::new(Hook { compactor: self.clone(), style })
    }

    /// Answer one `beforeLLM` event: `{ messages }`, or `null` for no change.
    pub async fn on_event(&self, ev: &Value, style: Option<Style>) -> Result<Value> {
        let messages = match field(ev, "messages") {
            Some(Value::Array(m)) => m.as_slice(),
            _ => return Err(Error::Invalid("compactor: the event's `messages` must be an array".into())),
        };
        Ok(match self.compact(messages, style).await? {
            None => Value::Null,
            Some(m) => {
                let mut out = Map::with_capacity(1);
                out.insert("messages".into(), Value::Array(m));
                Value::Object(out)
            }
        })
    }
}

struct Hook {
    compactor: Arc<Compactor>,
    style: Option<Style>,
}

#[async_trait]
impl Callback for Hook {
    async fn call(&self, ev: Value) -> Result<Value> {
        self.compactor.on_event(&ev, self.style).await
    }
}

/// A host's answer read as JavaScript reads a number in a comparison (non-numbers as NaN,
/// except the few JSON values `Number()` converts).
fn number(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Null => 0.0,
        Value::String(s) => {
            let t = s.trim();
            if t.is_empty() {
                0.0
            } else {
                t.parse().unwrap_or(f64::NAN)
            }
        }
        _ => f64::NAN,
    }
}

fn role(m: &Value) -> Option<&str> {
    m.get("role").and_then(Value::as_str)
}

fn blocks_of<'a>(m: &'a Value, kinds: &'a [&str]) -> impl Iterator<Item = &'a Value> + 'a {
    m.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str).is_some_and(|t| kinds.contains(&t)))
}

/// A message carrying a tool result in Anthropic's shape (`tool_result` blocks in its content).
fn carries_tool_result(m: &Value) -> bool {
    blocks_of(m, &["tool_result"]).next().is_some()
}

/// Where a kept tail may begin: a `user` turn that is not part of a tool group.
fn is_boundary(m: &Value) -> bool {
    role(m) == Some("user") && !carries_tool_result(m)
}

fn infer_style(msgs: &[Value]) -> Style {
    if msgs.iter().any(|m| blocks_of(m, &["tool_use", "tool_result"]).next().is_some()) {
        Style::Anthropic
    } else {
        Style::OpenAI
    }
}

/// A compactor handed to a client as its `beforeLLM` hook is told the client's dialect.
impl crate::client::DialectHook for Arc<Compactor> {
    fn for_style(&self, style: Style) -> SharedCallback {
        self.hook(Some(style))
    }
}
