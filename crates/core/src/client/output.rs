//! Structured output (an addition to the reference): a run given `output` (a JSON Schema, or a
//! host's Standard Schema with its JSON Schema and a `validate` function) ends with an answer
//! checked against it. The schema reaches the model as each wire does best (`response_format`
//! on OpenAI's, a final tool the model must call on Anthropic's and where `response_format` is
//! refused, a plain instruction on request or as the last resort), tools keep working in the same run, and an
//! answer that does not match goes back to the model with its issues named by path, a bounded
//! number of times, before the run rejects with the issues and the raw text.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::style::Style;
use crate::callback::SharedCallback;
use crate::error::{Error, Result};
use crate::fn_markers::{js_typeof, HostFn};
use crate::json::{js_stringify, obj};

const OWNER: &str = "output";

/// How the schema reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `response_format` on OpenAI's wire, the final tool on Anthropic's.
    Auto,
    /// The wire's own structured output: `response_format` (OpenAI) or `output_format` (Anthropic).
    Native,
    /// A final tool whose arguments are the answer.
    Tool,
    /// An instruction with the schema; the answer is read from the text.
    Prompt,
}

/// What one request carries for the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    ResponseFormat,
    OutputFormat,
    Tool,
    Prompt,
}

/// The beta header Anthropic's `output_format` is asked for with.
pub(crate) const ANTHROPIC_BETA: (&str, &str) = ("anthropic-beta", "structured-outputs-2025-11-13");

/// One failed check: where (`a.b[0]`, empty at the root) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub path: String,
    pub message: String,
}

impl Issue {
    pub(crate) fn to_value(&self) -> Value {
        obj([("path", self.path.as_str().into()), ("message", self.message.as_str().into())])
    }
}

/// The `output` option of a run.
pub struct Output {
    /// The JSON Schema the model is shown.
    pub schema: Value,
    /// The host's check (a Standard Schema's `validate`): `value → { issues? }`. Without it
    /// the answer is checked against `schema` here.
    validate: Option<SharedCallback>,
    validator: Option<jsonschema::Validator>,
    pub mode: Mode,
    /// How many times an answer that does not match goes back to the model.
    pub retries: u32,
    /// The final tool's name (and `response_format`'s).
    pub name: String,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output").field("schema", &self.schema).field("mode", &self.mode).finish_non_exhaustive()
    }
}

impl Output {
    /// The most answers that go back: a run that keeps failing ends, whatever `outputRetries` says.
    pub const MAX_RETRIES: u32 = 10;
    /// The deepest answer checked here.
    pub const MAX_DEPTH: usize = 256;

    /// The option as the host hands it over: `{ schema, validate?, mode?, retries?, name? }`
    /// (`validate` a marker of the host's function). A schema that is not an object, or not a
    /// JSON Schema when it is to be checked here, is refused with a `TypeError` naming it.
    /// `owner` names where it was given (`run`, `AgentRuntime: registry.writer`).
    pub fn from_value(owner: &str, v: &Value) -> Result<Output> {
        let schema = v.get("schema").cloned().unwrap_or(Value::Null);
        if !schema.is_object() {
            return Err(Error::Type(format!(
                "{owner}: `output` must be a Standard Schema or a JSON Schema object (got {})",
                js_typeof(&schema)
            )));
        }
        let validate = HostFn::from_value(v.get("validate").unwrap_or(&Value::Null)).named(OWNER, "validate");
        let validator = match validate {
            Some(_) => None,
            None => Some(jsonschema::validator_for(&schema).map_err(|e| {
                Error::Type(format!("{owner}: `output` is not a JSON Schema this package can check: {e}"))
            })?),
        };
        let mode = match v.get("mode").and_then(Value::as_str) {
            None | Some("auto") => Mode::Auto,
            Some("native") => Mode::Native,
            Some("tool") => Mode::Tool,
            Some("prompt") => Mode::Prompt,
            Some(other) => {
                crate::warn::warn(&format!(
                    "[toolnexus] {owner}: `outputMode` \"{other}\" is not one of auto, native, tool, prompt — auto is used"
                ));
                Mode::Auto
            }
        };
        let retries = match v.get("retries").and_then(Value::as_f64) {
            Some(n) if n.is_finite() && n >= 0.0 => (n.floor() as u32).min(Self::MAX_RETRIES),
            _ => 1,
        };
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| {
                !n.is_empty() && n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            })
            .unwrap_or("final_answer")
            .to_string();
        Ok(Output { schema, validate, validator, mode, retries, name })
    }

    /// A JSON Schema checked here (no host check), for the core's own callers.
    pub fn json_schema(schema: Value, mode: Mode, retries: u32) -> Result<Output> {
        let mut o = Output::from_value("run", &obj([("schema", schema)]))?;
        o.mode = mode;
        o.retries = retries.min(Self::MAX_RETRIES);
        Ok(o)
    }

    /// Check one answer: the issues (none when it matches) and, from a host's check, the
    /// value it made of the answer (`{ value }`: the schema's output, as JSON).
    pub(crate) async fn check(&self, value: &Value) -> Result<(Vec<Issue>, Option<Value>)> {
        if let Some(v) = &self.validator {
            // The validator recurses with the answer: a model's answer nested past any schema
            // a person writes is refused before it runs.
            if crate::json::depth(value) > Self::MAX_DEPTH {
                let message = format!("the answer is nested deeper than {} levels", Self::MAX_DEPTH);
                return Ok((vec![Issue { path: String::new(), message }], None));
            }
            let issues = crate::json::on_deep_stack(|| {
                v.iter_errors(value)
                    .map(|e| Issue { path: pointer_path(&e.instance_path().to_string()), message: e.to_string() })
                    .collect()
            });
            return Ok((issues, None));
        }
        let Some(cb) = &self.validate else { return Ok((Vec::new(), None)) };
        let mut out = cb.call(value.clone()).await?;
        let issues = out.get("issues").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let issues = issues
            .iter()
            .map(|i| Issue {
                path: i.get("path").and_then(Value::as_str).unwrap_or_default().to_string(),
                message: i.get("message").and_then(Value::as_str).unwrap_or("invalid value").to_string(),
            })
            .collect();
        Ok((issues, out.get_mut("value").map(Value::take)))
    }
}

/// A JSON pointer (`/a/0/b`) as the path issues name (`a[0].b`).
fn pointer_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(&seg);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// Issues as one line: `path: message; …`.
pub(crate) fn issues_text(issues: &[Issue]) -> String {
    let parts: Vec<String> = issues
        .iter()
        .map(|i| if i.path.is_empty() { i.message.clone() } else { format!("{}: {}", i.path, i.message) })
        .collect();
    parts.join("; ")
}

/// One run's use of its `output`: the option, the final tool's name in this run, how many
/// answers may still go back, and how far `auto` stepped down after refusals.
pub struct OutputRun {
    pub spec: Arc<Output>,
    pub tool: String,
    pub(crate) retries_left: u32,
    pub(crate) attempts: u32,
    /// 0: as the mode says; 1: the final tool (`response_format` was refused); 2: the
    /// instruction (`tool_choice` was refused too).
    fallen: AtomicU8,
}

impl OutputRun {
    /// For a run over tools named `taken`: the final tool gets a name none of them has.
    pub fn new(spec: Arc<Output>, taken: impl Fn(&str) -> bool) -> OutputRun {
        let mut tool = spec.name.clone();
        while taken(&tool) {
            tool.push('_');
        }
        let retries_left = spec.retries;
        OutputRun { spec, tool, retries_left, attempts: 0, fallen: AtomicU8::new(0) }
    }

    /// How a request to an endpoint of `style` carries the schema.
    pub(crate) fn via(&self, style: Style) -> Via {
        match self.fallen.load(Ordering::Relaxed) {
            0 => {}
            1 => return Via::Tool,
            _ => return Via::Prompt,
        }
        match (self.spec.mode, style) {
            (Mode::Auto | Mode::Native, Style::OpenAI) => Via::ResponseFormat,
            (Mode::Auto, Style::Anthropic) | (Mode::Tool, _) => Via::Tool,
            (Mode::Native, Style::Anthropic) => Via::OutputFormat,
            (Mode::Prompt, _) => Via::Prompt,
        }
    }

    /// In `auto` mode, after an endpoint refused what carried the schema (a 4xx or 5xx whose
    /// body names it: llama-cpp-python answers `json_schema` with a 500): `response_format`
    /// gives way to the final tool, a refused `tool_choice` to the instruction, for the rest of
    /// the run.
    /// Whether it stepped down (the call is then made again).
    pub(crate) fn refused(&self, style: Style, e: &Error) -> bool {
        let Error::Http { status: 400..=599, body } = e else { return false };
        if self.spec.mode != Mode::Auto {
            return false;
        }
        let to = match self.via(style) {
            Via::ResponseFormat if body.contains("response_format") => 1,
            Via::Tool if body.contains("tool_choice") => 2,
            _ => return false,
        };
        self.fallen.store(to, Ordering::Relaxed);
        true
    }

    /// The final tool's declaration in `style`'s shape.
    pub(crate) fn tool_decl(&self, style: Style) -> Value {
        let description = "Give your final answer by calling this tool once, with the answer as its arguments. Use the other tools first if you need them.";
        match style {
            Style::OpenAI => obj([
                ("type", "function".into()),
                (
                    "function",
                    obj([
                        ("name", self.tool.as_str().into()),
                        ("description", description.into()),
                        ("parameters", self.spec.schema.clone()),
                    ]),
                ),
            ]),
            Style::Anthropic => obj([
                ("name", self.tool.as_str().into()),
                ("description", description.into()),
                ("input_schema", self.spec.schema.clone()),
            ]),
        }
    }

    /// The tool choice that makes the model end with the final tool: any tool while there are
    /// others, that one when it is alone.
    pub(crate) fn tool_choice(&self, style: Style, others: bool) -> Value {
        match (style, others) {
            (Style::OpenAI, true) => "required".into(),
            (Style::OpenAI, false) => {
                obj([("type", "function".into()), ("function", obj([("name", self.tool.as_str().into())]))])
            }
            (Style::Anthropic, true) => obj([("type", "any".into())]),
            (Style::Anthropic, false) => obj([("type", "tool".into()), ("name", self.tool.as_str().into())]),
        }
    }

    /// OpenAI's `response_format`.
    pub(crate) fn response_format(&self) -> Value {
        obj([
            ("type", "json_schema".into()),
            ("json_schema", obj([("name", self.tool.as_str().into()), ("schema", self.spec.schema.clone())])),
        ])
    }

    /// Anthropic's `output_format`.
    pub(crate) fn output_format(&self) -> Value {
        obj([("type", "json_schema".into()), ("schema", self.spec.schema.clone())])
    }

    /// The instruction a request carries when the schema goes as text.
    pub(crate) fn instruction(&self) -> String {
        format!(
            "Reply with only a JSON value that matches this JSON Schema, and no other text:\n{}",
            js_stringify(&self.spec.schema)
        )
    }
}

/// The JSON of an answer given as text: the whole text, else inside a Markdown fence, else from
/// the first `{` or `[` to the last matching bracket. The error says what was wrong.
pub(crate) fn parse_answer(text: &str) -> std::result::Result<Value, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("the answer is empty; a JSON value was expected".into());
    }
    let first = match crate::json::parse_str::<Value>(t) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if let Some(inner) = fenced(t) {
        if let Ok(v) = crate::json::parse_str::<Value>(inner.trim()) {
            return Ok(v);
        }
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(a), Some(b)) = (t.find(open), t.rfind(close)) {
            if a < b {
                if let Ok(v) = crate::json::parse_str::<Value>(&t[a..=b]) {
                    return Ok(v);
                }
            }
        }
    }
    Err(format!("the answer is not JSON ({first})"))
}

/// The body of the first Markdown code fence in `t`.
fn fenced(t: &str) -> Option<&str> {
    let start = t.find("```")?;
    let after = &t[start + 3..];
    let body = &after[after.find('\n')? + 1..];
    Some(&body[..body.find("```")?])
}

/// The value a partial JSON text holds so far (an unfinished string, array or object is
/// closed where it stops), or `None` while it holds nothing.
pub(crate) fn partial(text: &str) -> Option<Value> {
    let t = text.trim_start();
    let t = t.strip_prefix("```json").or_else(|| t.strip_prefix("```")).unwrap_or(t).trim_start();
    if t.is_empty() {
        return None;
    }
    let v = jiter::JsonValue::parse_with_config(t.as_bytes(), false, jiter::PartialMode::TrailingStrings).ok()?;
    Some(from_jiter(&v))
}

fn from_jiter(v: &jiter::JsonValue<'_>) -> Value {
    use jiter::JsonValue as J;
    match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Int(i) => Value::from(*i),
        J::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        J::Str(s) => Value::String(s.to_string()),
        J::Array(items) => Value::Array(items.iter().map(from_jiter).collect()),
        J::Object(m) => {
            let mut out = Map::with_capacity(m.len());
            for (k, v) in m.iter() {
                out.insert(k.to_string(), from_jiter(v));
            }
            Value::Object(out)
        }
        #[allow(unreachable_patterns)] // big integers, when jiter is built with them
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_from_plain_fenced_and_wrapped_text() {
        assert_eq!(parse_answer(" {\"a\":1} "), Ok(json!({"a": 1})));
        assert_eq!(parse_answer("```json\n{\"a\":2}\n```"), Ok(json!({"a": 2})));
        assert_eq!(parse_answer("Here it is: {\"a\":3}. Done."), Ok(json!({"a": 3})));
        assert!(parse_answer("").unwrap_err().contains("empty"));
        assert!(parse_answer("no json here").unwrap_err().starts_with("the answer is not JSON"));
    }

    #[test]
    fn a_partial_text_closes_what_is_open() {
        assert_eq!(partial("{\"city\":\"Par"), Some(json!({"city": "Par"})));
        assert_eq!(partial("```json\n{\"a\":[1,2"), Some(json!({"a": [1, 2]})));
        assert_eq!(partial("  "), None);
    }

    #[test]
    fn pointer_paths_read_as_issue_paths() {
        assert_eq!(pointer_path(""), "");
        assert_eq!(pointer_path("/items/0/name"), "items[0].name");
        assert_eq!(pointer_path("/a~1b"), "a/b");
    }

    #[tokio::test]
    async fn a_json_schema_is_checked_here_with_every_issue_named() {
        let o = Output::json_schema(
            json!({"type": "object", "properties": {"n": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["n"]}),
            Mode::Auto,
            1,
        )
        .unwrap();
        assert!(o.check(&json!({"n": 1, "tags": ["x"]})).await.unwrap().0.is_empty());
        let (issues, _) = o.check(&json!({"tags": ["x", 2]})).await.unwrap();
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, vec!["", "tags[1]"]);
        assert!(issues_text(&issues).contains("tags[1]: 2 is not of type \"string\""), "{}", issues_text(&issues));
    }

    #[tokio::test]
    async fn an_answer_nested_past_the_limit_is_an_issue_not_a_deep_recursion() {
        let o = Output::json_schema(
            json!({"$ref": "#/$defs/n", "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}),
            Mode::Auto,
            1,
        )
        .unwrap();
        let mut deep = json!([]);
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        let (issues, _) = o.check(&deep).await.unwrap();
        assert_eq!(issues[0].message, "the answer is nested deeper than 256 levels");
        let mut fine = json!([]);
        for _ in 0..200 {
            fine = Value::Array(vec![fine]);
        }
        assert!(o.check(&fine).await.unwrap().0.is_empty());
        crate::json::release(deep);
    }

    #[test]
    fn the_option_is_read_leniently_but_a_schema_must_be_an_object() {
        let e = Output::from_value("run", &json!({"schema": "x"})).unwrap_err();
        assert_eq!(e.to_string(), "run: `output` must be a Standard Schema or a JSON Schema object (got string)");
        let o = Output::from_value("run", &json!({"schema": {}, "retries": 99, "mode": "tool", "name": "bad name"}))
            .unwrap();
        assert_eq!((o.retries, o.mode, o.name.as_str()), (Output::MAX_RETRIES, Mode::Tool, "final_answer"));
        let run = OutputRun::new(Arc::new(o), |n| n == "final_answer");
        assert_eq!(run.tool, "final_answer_");
    }
}
