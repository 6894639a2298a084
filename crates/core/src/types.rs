//! The shared contract types (SPEC §1, §10): results, suspensions and their helpers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::error::Result;
use crate::json::{js_string, truthy};

/// What a tool hands back: text for the model, an error flag, free-form metadata, and what an
/// MCP caller gets besides the text ([`Rich`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub output: String,
    pub is_error: bool,
    pub metadata: Option<Value>,
    /// Content blocks and structured content, when the tool gave them.
    pub rich: Option<Box<Rich>>,
}

/// What a result carries for an MCP caller besides its text: `content`, the MCP content blocks
/// (text, image, audio, resource links, embedded resources) sent in place of the one text
/// block, and `structuredContent`, the value a tool with an output schema returns. The model of
/// this library's own loop still sees `output`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rich {
    pub content: Option<Vec<Value>>,
    pub structured: Option<Value>,
}

impl ToolResult {
    pub fn ok(output: impl Into<String>) -> Self {
        ToolResult { output: output.into(), is_error: false, metadata: None, rich: None }
    }

    pub fn error(output: impl Into<String>) -> Self {
        ToolResult { output: output.into(), is_error: true, metadata: None, rich: None }
    }

    /// Read a ToolResult-shaped JSON value as leniently as JavaScript would: a missing or
    /// non-string `output` becomes its string form, `isError` is read by truthiness.
    pub fn from_value(v: Value) -> Self {
        match v {
            Value::Object(mut m) => {
                let output = match m.remove("output") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s,
                    Some(other) => js_string(&other),
                };
                let is_error = m.get("isError").is_some_and(truthy);
                let metadata = m.remove("metadata").filter(|x| !x.is_null());
                // `content` is read when it is an array, `structuredContent` when it is an object
                // (what MCP allows); anything else stays the tool's own business.
                let content = match m.remove("content") {
                    Some(Value::Array(items)) => Some(items),
                    _ => None,
                };
                let structured = m.remove("structuredContent").filter(Value::is_object);
                let rich = (content.is_some() || structured.is_some()).then(|| Box::new(Rich { content, structured }));
                ToolResult { output, is_error, metadata, rich }
            }
            Value::Null => ToolResult::ok(""),
            other => ToolResult::ok(js_string(&other)),
        }
    }

    /// The wire shape: `{ output, isError, metadata?, content?, structuredContent? }`, keys in
    /// that order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(3);
        m.insert("output".into(), Value::String(self.output.clone()));
        m.insert("isError".into(), Value::Bool(self.is_error));
        if let Some(meta) = &self.metadata {
            m.insert("metadata".into(), meta.clone());
        }
        if let Some(rich) = &self.rich {
            if let Some(content) = &rich.content {
                m.insert("content".into(), Value::Array(content.clone()));
            }
            if let Some(s) = &rich.structured {
                m.insert("structuredContent".into(), s.clone());
            }
        }
        Value::Object(m)
    }
}

static PENDING_SEQ: AtomicU64 = AtomicU64::new(0);

pub(crate) fn base36(mut n: u128) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// A fresh suspension id: `pnd-<milliseconds since the epoch in base 36>-<sequence>`.
pub fn new_pending_id() -> String {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let seq = PENDING_SEQ.fetch_add(1, Ordering::Relaxed) + 1;
    format!("pnd-{}-{}", base36(ms), seq)
}

/// Build a suspension (§10). `request` carries `kind`, `prompt` and optionally `id`, `url`,
/// `data`, `expiresAt` (and anything else, kept as given). Without an `id` one is generated
/// and appended, so the key order is the caller's own followed by `id`.
/// `pending(request)` for a request given as any JSON value: it must be an object.
pub fn pending_value(request: Value) -> Result<ToolResult> {
    match request {
        Value::Object(m) => pending(m),
        _ => Err(crate::error::Error::Invalid("pending: request must be an object".into())),
    }
}

pub fn pending(mut request: Map<String, Value>) -> Result<ToolResult> {
    // Nothing is refused, as in the reference: the output is the prompt as JavaScript turns it
    // into text (`"undefined"` when there is none).
    let prompt = request_prompt(&request);
    // A missing id is appended; an explicit null one is filled in where it stands.
    match request.get_mut("id") {
        Some(slot) if slot.is_null() => *slot = Value::String(new_pending_id()),
        Some(_) => {}
        None => {
            request.insert("id".into(), Value::String(new_pending_id()));
        }
    }
    let url = request.get("url").filter(|u| truthy(u)).map(js_string);
    let output = match url {
        Some(u) => format!("{prompt}\n{u}"),
        None => prompt,
    };
    let mut meta = Map::with_capacity(1);
    meta.insert("pending".into(), Value::Object(request));
    Ok(ToolResult { output, is_error: true, metadata: Some(Value::Object(meta)), rich: None })
}

/// The default prompt of [`auth_required`].
pub const AUTH_PROMPT: &str = "Authorization required to continue";

/// Sugar for the login case: `pending({ kind: "authorization", prompt, url })`.
pub fn auth_required(url: &str, prompt: Option<&str>) -> ToolResult {
    let mut m = Map::with_capacity(4);
    m.insert("kind".into(), Value::String("authorization".into()));
    m.insert("prompt".into(), Value::String(prompt.unwrap_or(AUTH_PROMPT).to_string()));
    m.insert("url".into(), Value::String(url.to_string()));
    // kind and prompt are strings, so this cannot fail; fall back to a plain error result anyway.
    pending(m).unwrap_or_else(|e| ToolResult::error(e.to_string()))
}

/// The Request riding on `metadata.pending`, when the result is a suspension.
pub fn pending_of(result: &ToolResult) -> Option<&Map<String, Value>> {
    result.metadata.as_ref()?.as_object()?.get("pending")?.as_object()
}

/// A request's prompt as text.
pub fn request_prompt(request: &Map<String, Value>) -> String {
    request.get("prompt").map(js_string).unwrap_or_else(|| "undefined".into())
}

/// Replace anything outside `[a-zA-Z0-9_-]` with `_`, one per UTF-16 code unit as JavaScript does.
pub fn sanitize(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_of_a_json_value_needs_an_object() {
        let r = pending_value(serde_json::json!({"kind": "approval", "prompt": "Go?"})).unwrap();
        assert!(pending_of(&r).is_some());
        let e = pending_value(serde_json::json!("approval")).unwrap_err();
        assert_eq!(e.to_string(), "pending: request must be an object");
    }
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn pending_appends_a_generated_id_after_the_callers_keys() {
        let r = pending(map(json!({"kind": "input", "prompt": "Which env?"}))).unwrap();
        assert!(r.is_error);
        assert_eq!(r.output, "Which env?");
        let req = pending_of(&r).unwrap();
        let keys: Vec<_> = req.keys().cloned().collect();
        assert_eq!(keys, ["kind", "prompt", "id"]);
        let id = req["id"].as_str().unwrap();
        let parts: Vec<_> = id.split('-').collect();
        assert_eq!(parts[0], "pnd");
        assert!(u128::from_str_radix(parts[1], 36).is_ok());
        assert!(parts[2].parse::<u64>().is_ok());
    }

    #[test]
    fn pending_ids_are_unique_and_a_given_id_is_kept_in_place() {
        let a = pending(map(json!({"kind": "k", "prompt": "p"}))).unwrap();
        let b = pending(map(json!({"kind": "k", "prompt": "p"}))).unwrap();
        assert_ne!(pending_of(&a).unwrap()["id"], pending_of(&b).unwrap()["id"]);
        let c = pending(map(json!({"id": "mine", "kind": "k", "prompt": "p"}))).unwrap();
        let keys: Vec<_> = pending_of(&c).unwrap().keys().cloned().collect();
        assert_eq!(keys, ["id", "kind", "prompt"]);
        assert_eq!(pending_of(&c).unwrap()["id"], "mine");
        let d = pending(map(json!({"id": null, "kind": "k", "prompt": "p"}))).unwrap();
        let req = pending_of(&d).unwrap();
        assert_eq!(req.keys().cloned().collect::<Vec<_>>(), ["id", "kind", "prompt"]);
        assert!(req["id"].as_str().unwrap().starts_with("pnd-"));
    }

    #[test]
    fn pending_output_adds_the_url_on_its_own_line() {
        let r = pending(map(json!({"kind": "authorization", "prompt": "Log in", "url": "https://x/l"}))).unwrap();
        assert_eq!(r.output, "Log in\nhttps://x/l");
        let wire = serde_json::to_string(&r.to_value()).unwrap();
        assert!(wire.starts_with(r#"{"output":"Log in\nhttps://x/l","isError":true,"metadata":{"pending":{"kind":"authorization","prompt":"Log in","url":"https://x/l","id":"pnd-"#));
    }

    #[test]
    fn pending_accepts_a_request_without_prompt_or_kind_as_the_reference_does() {
        let r = pending(map(json!({"kind": "input"}))).unwrap();
        assert_eq!(r.output, "undefined");
        let r = pending(map(json!({"prompt": 3}))).unwrap();
        assert_eq!(r.output, "3");
        assert_eq!(pending_of(&r).unwrap().get("kind"), None);
    }

    #[test]
    fn auth_required_defaults_its_prompt() {
        let r = auth_required("https://e/login", None);
        let req = pending_of(&r).unwrap();
        assert_eq!(req["kind"], "authorization");
        assert_eq!(req["prompt"], AUTH_PROMPT);
        assert_eq!(r.output, format!("{AUTH_PROMPT}\nhttps://e/login"));
        let custom = auth_required("https://e/login", Some("Log in please"));
        assert_eq!(pending_of(&custom).unwrap()["prompt"], "Log in please");
    }

    #[test]
    fn pending_of_ignores_ordinary_results() {
        assert!(pending_of(&ToolResult::ok("done")).is_none());
        let odd = ToolResult { metadata: Some(json!({"pending": true})), ..ToolResult::error("") };
        assert!(pending_of(&odd).is_none());
    }

    #[test]
    fn sanitize_replaces_each_code_unit() {
        assert_eq!(sanitize("get user"), "get_user");
        assert_eq!(sanitize("a.b/c-d_e"), "a_b_c-d_e");
        assert_eq!(sanitize("é"), "_");
        assert_eq!(sanitize("😀"), "__");
    }

    #[test]
    fn tool_results_read_leniently() {
        let r = ToolResult::from_value(json!({"output": 42, "isError": 1, "metadata": {"a": 1}}));
        assert_eq!(r, ToolResult { metadata: Some(json!({"a": 1})), ..ToolResult::error("42") });
        let r = ToolResult::from_value(json!({"output": "", "isError": false,
            "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}], "structuredContent": {"n": 1}}));
        let rich = r.rich.as_deref().unwrap();
        assert_eq!(rich.content.as_ref().unwrap()[0]["type"], "image");
        assert_eq!(rich.structured, Some(json!({"n": 1})));
        assert_eq!(r.to_value()["structuredContent"], json!({"n": 1}));
        // What MCP would not take is left out: content that is no array, structure that is no object.
        assert_eq!(
            ToolResult::from_value(json!({"output": "x", "content": "no", "structuredContent": [1]})).rich,
            None
        );
        assert_eq!(ToolResult::from_value(json!("plain")), ToolResult::ok("plain"));
        assert_eq!(ToolResult::from_value(Value::Null), ToolResult::ok(""));
    }
}
