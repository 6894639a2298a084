//! A run's answer under its `output` schema (see `output`): the reply read for one, checked,
//! and either the run's end, a second chance for the model, or the run's error; and a stream's
//! partial object as the answer grows.

use std::sync::Mutex;

use serde_json::Value;

use super::output::{issues_text, parse_answer, partial, Issue, OutputRun};
use super::streamed::Streamed;
use super::wire::{self, Call, Style};
use crate::callback::Callback;
use crate::error::{Error, Result};
use crate::json::{js_stringify, obj};

/// What an answer came to.
pub(crate) enum Outcome {
    /// Not an answer (the model called tools): the loop runs them.
    Pass(Streamed),
    /// The answer matched: its text and value; the transcript ends with it.
    Done { text: String, value: Value },
    /// It did not match and went back to the model: the attempt's number (from 1), what did not
    /// match and the answer as the model gave it (a stream reports them before the next attempt).
    Again { attempt: u32, issues: Vec<Issue>, text: String },
}

impl OutputRun {
    /// Read a reply: an answer (the final tool's call, or text when the model called nothing)
    /// is checked; a match ends the run, a mismatch goes back while retries last (the feedback
    /// is added to `messages`), and is the run's error after that. Anything else passes.
    pub(crate) async fn read(
        &mut self,
        style: Style,
        messages: &mut Vec<Value>,
        reply: Streamed,
        turns_left: bool,
    ) -> Result<Outcome> {
        let Streamed { assistant, calls, text, finished } = reply;
        let called = calls.iter().position(|c| c.name == self.tool);
        let (raw, parsed, call) = match called {
            Some(i) => {
                let call =
                    calls.into_iter().nth(i).unwrap_or(Call { id: None, name: String::new(), args: Value::Null });
                let raw = js_stringify(&call.args);
                (raw, Ok(call.args.clone()), Some(call))
            }
            None if finished => {
                let parsed = parse_answer(&text);
                (text.clone(), parsed, None)
            }
            None => return Ok(Outcome::Pass(Streamed { assistant, calls, text, finished })),
        };
        self.attempts += 1;
        let (issues, made) = match &parsed {
            Ok(value) => self.spec.check(value).await?,
            Err(why) => (vec![Issue { path: String::new(), message: why.clone() }], None),
        };
        if issues.is_empty() {
            let value = made.or(parsed.ok()).unwrap_or(Value::Null);
            // The transcript ends with the answer as the assistant's text, whichever way it came.
            messages.push(match call {
                Some(_) => answer_message(style, &raw),
                None => assistant,
            });
            return Ok(Outcome::Done { text: raw, value });
        }
        if self.retries_left == 0 || !turns_left {
            return Err(Error::Output {
                message: format!(
                    "the answer does not match the output schema after {} attempt{}: {}",
                    self.attempts,
                    if self.attempts == 1 { "" } else { "s" },
                    issues_text(&issues)
                ),
                issues: Value::Array(issues.iter().map(Issue::to_value).collect()),
                text: raw,
            });
        }
        self.retries_left -= 1;
        let feedback = format!(
            "That answer does not match the required JSON Schema: {}. Answer again with only the corrected JSON.",
            issues_text(&issues)
        );
        match call {
            Some(call) => {
                // The call stays (alone: the turn's other calls are dropped) with an error result.
                messages.push(super::fallback::assistant_in(style, &text, std::slice::from_ref(&call)));
                messages.push(match style {
                    Style::OpenAI => wire::openai_tool_message(call.id.as_ref(), &feedback),
                    Style::Anthropic => obj([
                        ("role", "user".into()),
                        ("content", Value::Array(vec![wire::anthropic_tool_result(call.id.as_ref(), &feedback, true)])),
                    ]),
                });
            }
            None => {
                messages.push(assistant);
                messages.push(obj([("role", "user".into()), ("content", feedback.into())]));
            }
        }
        Ok(Outcome::Again { attempt: self.attempts, issues, text: raw })
    }
}

/// A stream's mark of an answer that went back: `{ type: "output_retry", attempt, issues, text }`
/// (the issues as `OutputError` carries them). Passing through `Partials`, it also ends the
/// rejected attempt's partial object.
pub(crate) fn retry_event(attempt: u32, issues: &[Issue], text: String) -> Value {
    obj([
        ("type", "output_retry".into()),
        ("attempt", attempt.into()),
        ("issues", Value::Array(issues.iter().map(Issue::to_value).collect())),
        ("text", text.into()),
    ])
}

/// The assistant's answer as text in `style`'s shape.
fn answer_message(style: Style, text: &str) -> Value {
    match style {
        Style::OpenAI => obj([("role", "assistant".into()), ("content", text.into())]),
        Style::Anthropic => obj([
            ("role", "assistant".into()),
            ("content", Value::Array(vec![obj([("type", "text".into()), ("text", text.into())])])),
        ]),
    }
}

/// A stream's sink for a run with `output`: every event goes on; the answer's text (or the
/// final tool's arguments, which the LLM call reports as `output_args`) adds up to the partial
/// object, sent as `{ type: "output", partial }` each time it changes.
pub(crate) struct Partials<'a> {
    inner: &'a dyn Callback,
    text: Mutex<String>,
    last: Mutex<Option<Value>>,
}

impl<'a> Partials<'a> {
    pub(crate) fn new(inner: &'a dyn Callback) -> Self {
        Partials { inner, text: Mutex::new(String::new()), last: Mutex::new(None) }
    }

    async fn grown(&self, text: Option<&str>, append: bool) -> Result<()> {
        let now = {
            let mut buf = self.text.lock().unwrap_or_else(|p| p.into_inner());
            match (text, append) {
                (Some(t), true) => buf.push_str(t),
                (Some(t), false) => t.clone_into(&mut buf),
                (None, _) => {}
            }
            partial(&buf)
        };
        let Some(now) = now else { return Ok(()) };
        let changed = {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            let changed = last.as_ref() != Some(&now);
            if changed {
                *last = Some(now.clone());
            }
            changed
        };
        if changed {
            self.inner.call(obj([("type", "output".into()), ("partial", now)])).await?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Callback for Partials<'_> {
    async fn call(&self, ev: Value) -> Result<Value> {
        match ev.get("type").and_then(Value::as_str) {
            Some("output_args") => {
                let json = ev.get("json").and_then(Value::as_str).unwrap_or_default().to_string();
                self.grown(Some(&json), false).await?;
                Ok(Value::Null)
            }
            Some("text") => {
                let delta = ev.get("delta").and_then(Value::as_str).map(str::to_string);
                let out = self.inner.call(ev).await?;
                self.grown(delta.as_deref(), true).await?;
                Ok(out)
            }
            _ => {
                // A turn's text that led to tool calls is no answer: the next one starts afresh.
                self.text.lock().unwrap_or_else(|p| p.into_inner()).clear();
                *self.last.lock().unwrap_or_else(|p| p.into_inner()) = None;
                self.inner.call(ev).await
            }
        }
    }
}
