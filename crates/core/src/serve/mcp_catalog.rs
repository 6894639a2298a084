//! What a served MCP profile offers besides tools: prompts, resources and resource templates,
//! each defined by the host (`mcp: { prompts, resources, resourceTemplates }`) with a function
//! that makes its content, and the completion of their arguments.
//!
//! A prompt's `get(args)` answers a text, a list of messages, or `{ description?, messages }`;
//! a message is a text or `{ role, content }` whose content is a text or an MCP content block.
//! A resource's `read({ uri, params })` answers a text, a `Buffer` (binary), `{ text }` or
//! `{ blob }` (base64), a list of those, or `{ contents }`; a template's `params` are the values
//! its `{name}` expressions matched. A completer (`complete: { <argument>: (value) => [...] }`)
//! answers the candidate values, or `{ values, total?, hasMore? }`.

use std::collections::HashMap;

use base64::Engine as _;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, ErrorData, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Reference,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::callback::SharedCallback;
use crate::fn_markers::HostFn;
use crate::skills::SkillOffer;

/// A prompt argument as the host declares it.
#[derive(Deserialize, Default, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgDef {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub required: Option<bool>,
}

/// A served prompt.
#[derive(Deserialize, Default, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PromptDef {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub arguments: Vec<PromptArgDef>,
    #[serde(default)]
    pub get: HostFn,
    /// Completers by argument name.
    #[serde(default)]
    pub complete: HashMap<String, HostFn>,
}

/// A served resource with a fixed URI.
#[derive(Deserialize, Default, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDef {
    pub uri: String,
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub read: HostFn,
}

/// Served resources whose URIs follow a template (RFC 6570 `{name}` and `{+name}` expressions).
#[derive(Deserialize, Default, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TemplateDef {
    pub uri_template: String,
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub read: HostFn,
    /// Completers by variable name.
    #[serde(default)]
    pub complete: HashMap<String, HostFn>,
}

/// Everything of a profile besides its tools.
#[derive(Default, Clone, Debug)]
pub struct Catalog {
    pub prompts: Vec<PromptDef>,
    pub resources: Vec<ResourceDef>,
    pub templates: Vec<TemplateDef>,
    /// A served toolkit's skills: prompts after the profile's own, their files resources.
    pub skills: Vec<SkillOffer>,
}

/// The largest skill file served as a resource; a bigger one is refused when read.
pub const MAX_SKILL_FILE: u64 = 8 * 1024 * 1024;

/// What is escaped in a skill resource's URI: anything but unreserved characters (and `/`
/// between the path's segments).
const URI_PART: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
const URI_PATH: &AsciiSet = &URI_PART.remove(b'/');

/// The URI of a skill's file: `skill://<skill>/<path in its folder>`.
pub fn skill_uri(skill: &str, rel: &str) -> String {
    format!("skill://{}/{}", utf8_percent_encode(skill, URI_PART), utf8_percent_encode(rel, URI_PATH))
}

/// A file's MIME type by its extension (text ones as text; anything unknown is bytes).
fn mime_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "text" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "sh" => "text/x-shellscript",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// The error for an MCP request the catalog cannot answer.
fn invalid(message: String) -> ErrorData {
    ErrorData::invalid_params(message, None)
}

/// A host function's failure, as the request's error.
fn failed(what: &str, e: crate::error::Error) -> ErrorData {
    ErrorData::internal_error(format!("{what}: {e}"), None)
}

/// A function that must be there: `owner.name` set to a function.
fn callable(f: &HostFn, owner: &str, name: &str) -> Result<SharedCallback, ErrorData> {
    f.clone()
        .named(owner, name)
        .ok_or_else(|| ErrorData::internal_error(format!("{owner} has no `{name}` function"), None))
}

/// Drop the members whose value is `null` (what `skip_serializing_if` does for the listings).
fn compact(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.retain(|_, x| !x.is_null());
    }
    v
}

impl Catalog {
    /// Whether there is nothing but tools.
    pub fn is_empty(&self) -> bool {
        !self.offers_prompts() && !self.offers_resources()
    }

    /// Whether prompts are offered (the profile's or skills').
    pub fn offers_prompts(&self) -> bool {
        !self.prompts.is_empty() || !self.skills.is_empty()
    }

    /// Whether resources are offered (the profile's, its templates, or skills' files).
    pub fn offers_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty() || self.skills.iter().any(|s| !s.files.is_empty())
    }

    /// Whether anything can be completed.
    pub fn completes(&self) -> bool {
        self.offers_prompts() || !self.templates.is_empty()
    }

    /// The skill file at `uri`, if it is one: where it is on disk and its MIME type.
    fn skill_file(&self, uri: &str) -> Option<(&str, &'static str)> {
        self.skills.iter().find_map(|s| {
            s.files
                .iter()
                .find(|(rel, _)| skill_uri(&s.name, rel) == uri)
                .map(|(rel, path)| (path.as_str(), mime_of(rel)))
        })
    }

    pub fn list_prompts(&self) -> Result<ListPromptsResult, ErrorData> {
        let prompts: Vec<Value> = self
            .prompts
            .iter()
            .map(|p| {
                let args: Vec<Value> = p
                    .arguments
                    .iter()
                    .map(|a| {
                        compact(json!({ "name": a.name, "title": a.title, "description": a.description, "required": a.required }))
                    })
                    .collect();
                compact(json!({
                    "name": p.name, "title": p.title, "description": p.description,
                    "arguments": if args.is_empty() { Value::Null } else { Value::Array(args) },
                }))
            })
            .chain(self.skills.iter().filter(|s| !self.prompts.iter().any(|p| p.name == s.name)).map(|s| {
                let args: Vec<Value> = s.arguments.iter().map(|a| json!({ "name": a, "required": false })).collect();
                compact(json!({
                    "name": s.name, "description": s.description,
                    "arguments": if args.is_empty() { Value::Null } else { Value::Array(args) },
                }))
            }))
            .collect();
        serde_json::from_value(json!({ "prompts": prompts }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    pub async fn get_prompt(&self, name: &str, args: Option<Map<String, Value>>) -> Result<GetPromptResult, ErrorData> {
        let Some(p) = self.prompts.iter().find(|p| p.name == name) else {
            return match self.skills.iter().find(|s| s.name == name) {
                Some(skill) => skill_prompt(skill, args.unwrap_or_default()),
                None => Err(invalid(format!("Prompt {name} not found"))),
            };
        };
        let args = args.unwrap_or_default();
        if let Some(missing) = p.arguments.iter().find(|a| a.required == Some(true) && !args.contains_key(&a.name)) {
            return Err(invalid(format!("Prompt {name}: missing required argument {}", missing.name)));
        }
        let get = callable(&p.get, &format!("prompt {name}"), "get")?;
        let out = get.call(Value::Object(args)).await.map_err(|e| failed(&format!("prompt {name}"), e))?;
        prompt_result(out).map_err(|why| ErrorData::internal_error(format!("prompt {name}: {why}"), None))
    }

    pub fn list_resources(&self) -> Result<ListResourcesResult, ErrorData> {
        let resources: Vec<Value> = self
            .resources
            .iter()
            .map(|r| {
                compact(json!({
                    "uri": r.uri, "name": r.name, "title": r.title, "description": r.description,
                    "mimeType": r.mime_type, "size": r.size,
                }))
            })
            .chain(self.skills.iter().flat_map(|s| {
                s.files.iter().map(|(rel, _)| {
                    json!({
                        "uri": skill_uri(&s.name, rel), "name": format!("{}/{rel}", s.name),
                        "description": format!("A file of the skill {}", s.name), "mimeType": mime_of(rel),
                    })
                })
            }))
            .collect();
        serde_json::from_value(json!({ "resources": resources }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    pub fn list_templates(&self) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates: Vec<Value> = self
            .templates
            .iter()
            .map(|t| {
                compact(json!({
                    "uriTemplate": t.uri_template, "name": t.name, "title": t.title,
                    "description": t.description, "mimeType": t.mime_type,
                }))
            })
            .collect();
        serde_json::from_value(json!({ "resourceTemplates": templates }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    /// Whether `uri` is one of the served resources (fixed or from a template).
    pub fn has_resource(&self, uri: &str) -> bool {
        self.resources.iter().any(|r| r.uri == uri)
            || self.templates.iter().any(|t| match_template(&t.uri_template, uri).is_some())
    }

    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let (read, params, mime, owner) = if let Some(r) = self.resources.iter().find(|r| r.uri == uri) {
            (&r.read, Map::new(), r.mime_type.as_deref(), format!("resource {}", r.uri))
        } else if let Some((t, params)) =
            self.templates.iter().find_map(|t| match_template(&t.uri_template, uri).map(|p| (t, p)))
        {
            (&t.read, params, t.mime_type.as_deref(), format!("resource template {}", t.uri_template))
        } else if let Some((path, mime)) = self.skill_file(uri) {
            return read_skill_file(uri, path, mime).await;
        } else {
            return Err(ErrorData::new(ErrorCode(-32002), "Resource not found", Some(json!({ "uri": uri }))));
        };
        let read = callable(read, &owner, "read")?;
        let out = read.call(json!({ "uri": uri, "params": params })).await.map_err(|e| failed(&owner, e))?;
        let contents = resource_contents(out, uri, mime)
            .map_err(|why| ErrorData::internal_error(format!("{owner}: {why}"), None))?;
        serde_json::from_value(json!({ "contents": contents }))
            .map_err(|e| ErrorData::internal_error(format!("{owner}: {e}"), None))
    }

    pub async fn complete(&self, request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
        let completer = match &request.r#ref {
            Reference::Prompt(p) => {
                self.prompts.iter().find(|d| d.name == p.name).and_then(|d| d.complete.get(&request.argument.name))
            }
            Reference::Resource(r) => self
                .templates
                .iter()
                .find(|t| t.uri_template == r.uri)
                .and_then(|t| t.complete.get(&request.argument.name)),
            _ => None,
        };
        let values = match completer.and_then(|f| f.clone().named("complete", &request.argument.name)) {
            None => json!([]),
            Some(f) => {
                f.call(Value::String(request.argument.value.clone())).await.map_err(|e| failed("complete", e))?
            }
        };
        let completion = match values {
            Value::Array(items) => {
                let all: Vec<Value> = items.into_iter().filter(Value::is_string).collect();
                let total = all.len();
                let values: Vec<Value> = all.into_iter().take(100).collect();
                json!({ "values": values, "total": total, "hasMore": total > 100 })
            }
            Value::Object(m) => Value::Object(m),
            _ => json!({ "values": [] }),
        };
        serde_json::from_value(json!({ "completion": completion }))
            .map_err(|e| ErrorData::internal_error(format!("complete: {e}"), None))
    }
}

/// A skill as a prompt: its instructions as the user's message, followed by the arguments given.
fn skill_prompt(skill: &SkillOffer, args: Map<String, Value>) -> Result<GetPromptResult, ErrorData> {
    let mut text = skill.content.trim().to_string();
    let given: Vec<String> = skill
        .arguments
        .iter()
        .filter_map(|a| args.get(a).map(|v| format!("- {a}: {}", crate::json::js_string(v))))
        .collect();
    if !given.is_empty() {
        text.push_str("\n\nArguments:\n");
        text.push_str(&given.join("\n"));
    }
    let doc =
        json!({ "description": skill.description, "messages": [{ "role": "user", "content": text_block(&text) }] });
    serde_json::from_value(compact(doc)).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// A skill's file as a resource's contents: text when it is UTF-8, else base64 bytes; one over
/// [`MAX_SKILL_FILE`] is refused.
async fn read_skill_file(uri: &str, path: &str, mime: &str) -> Result<ReadResourceResult, ErrorData> {
    let failed = |why: String| ErrorData::internal_error(format!("skill file {uri}: {why}"), None);
    let size = tokio::fs::metadata(path).await.map_err(|e| failed(e.to_string()))?.len();
    if size > MAX_SKILL_FILE {
        return Err(failed(format!("{size} bytes is more than the {MAX_SKILL_FILE} served")));
    }
    let bytes = tokio::fs::read(path).await.map_err(|e| failed(e.to_string()))?;
    let contents = match String::from_utf8(bytes) {
        Ok(text) => json!({ "uri": uri, "mimeType": mime, "text": text }),
        Err(e) => {
            json!({ "uri": uri, "mimeType": mime, "blob": base64::engine::general_purpose::STANDARD.encode(e.into_bytes()) })
        }
    };
    serde_json::from_value(json!({ "contents": [contents] })).map_err(|e| failed(e.to_string()))
}

/// A text as a user message's content block.
fn text_block(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

/// A prompt's messages from what `get` answered.
fn prompt_result(out: Value) -> Result<GetPromptResult, String> {
    let message = |m: Value| -> Value {
        match m {
            Value::String(s) => json!({ "role": "user", "content": text_block(&s) }),
            Value::Object(mut o) => {
                if let Some(Value::String(s)) = o.get("content") {
                    let block = text_block(s);
                    o.insert("content".into(), block);
                }
                o.entry("role").or_insert_with(|| json!("user"));
                Value::Object(o)
            }
            other => other,
        }
    };
    let doc = match out {
        Value::String(s) => json!({ "messages": [message(Value::String(s))] }),
        Value::Array(items) => json!({ "messages": items.into_iter().map(message).collect::<Vec<_>>() }),
        Value::Object(mut o) => {
            let messages = match o.remove("messages") {
                Some(Value::Array(items)) => items.into_iter().map(message).collect::<Vec<_>>(),
                _ => return Err("get answered an object without a `messages` list".into()),
            };
            o.insert("messages".into(), Value::Array(messages));
            Value::Object(o)
        }
        other => {
            return Err(format!(
                "get answered {} (a text, a list of messages or {{ messages }} expected)",
                crate::fn_markers::js_typeof(&other)
            ))
        }
    };
    serde_json::from_value(doc).map_err(|e| format!("its messages are not MCP prompt messages ({e})"))
}

/// A resource's contents from what `read` answered, each with the URI and MIME type filled in.
fn resource_contents(out: Value, uri: &str, mime: Option<&str>) -> Result<Vec<Value>, String> {
    let one = |v: Value| -> Result<Value, String> {
        let mut m = match v {
            Value::String(text) => {
                let mut m = Map::new();
                m.insert("text".into(), Value::String(text));
                m
            }
            Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("Buffer") => {
                let bytes: Vec<u8> = m
                    .get("data")
                    .and_then(Value::as_array)
                    .map(|d| d.iter().filter_map(Value::as_u64).map(|b| b as u8).collect())
                    .unwrap_or_default();
                let mut out = Map::new();
                out.insert("blob".into(), Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)));
                out
            }
            // A Uint8Array, as JSON.stringify spells it: its bytes by index.
            Value::Object(m)
                if !m.is_empty() && m.iter().all(|(k, v)| k.bytes().all(|b| b.is_ascii_digit()) && v.is_u64()) =>
            {
                let mut bytes = vec![0u8; m.len()];
                for (k, v) in &m {
                    match (k.parse::<usize>(), v.as_u64()) {
                        (Ok(i), Some(b)) if i < bytes.len() => bytes[i] = b as u8,
                        _ => return Err("read answered an object that is neither bytes nor contents".into()),
                    }
                }
                let mut out = Map::new();
                out.insert("blob".into(), Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)));
                out
            }
            Value::Object(m) if m.contains_key("text") || m.contains_key("blob") => m,
            other => {
                return Err(format!(
                    "read answered {} (a text, a Buffer, {{ text }} or {{ blob }} expected)",
                    crate::fn_markers::js_typeof(&other)
                ))
            }
        };
        m.entry("uri").or_insert_with(|| Value::String(uri.to_string()));
        if let Some(mime) = mime {
            m.entry("mimeType").or_insert_with(|| Value::String(mime.to_string()));
        }
        Ok(Value::Object(m))
    };
    match out {
        Value::Array(items) => items.into_iter().map(one).collect(),
        Value::Object(mut m) if m.contains_key("contents") => match m.remove("contents") {
            Some(Value::Array(items)) => items.into_iter().map(one).collect(),
            _ => Err("read answered `contents` that is not a list".into()),
        },
        other => Ok(vec![one(other)?]),
    }
}

/// The values a URI gives a template's expressions, when it matches: `{name}` matches a
/// non-empty run without `/`, `?`, `#` or `&`; `{+name}` any non-empty run. Matching is from the
/// left, each expression as short as the literal after it allows.
pub fn match_template(template: &str, uri: &str) -> Option<Map<String, Value>> {
    // The template as literal parts and expressions, in order.
    enum Part<'a> {
        Lit(&'a str),
        Var(&'a str, bool),
    }
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}')? + open;
        if open > 0 {
            parts.push(Part::Lit(&rest[..open]));
        }
        let expr = &rest[open + 1..close];
        let (name, reserved) = match expr.strip_prefix('+') {
            Some(n) => (n, true),
            None => (expr, false),
        };
        parts.push(Part::Var(name, reserved));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest));
    }
    let mut out = Map::new();
    let mut at = uri;
    let mut i = 0;
    while i < parts.len() {
        match parts[i] {
            Part::Lit(l) => at = at.strip_prefix(l)?,
            Part::Var(name, reserved) => {
                let next = match parts.get(i + 1) {
                    Some(Part::Lit(l)) => Some(*l),
                    _ => None,
                };
                let end = match next {
                    Some(l) => at.find(l)?,
                    None => at.len(),
                };
                let value = &at[..end];
                if value.is_empty() || (!reserved && value.contains(['/', '?', '#', '&'])) {
                    return None;
                }
                let decoded = percent_encoding::percent_decode_str(value).decode_utf8_lossy().into_owned();
                out.insert(name.to_string(), Value::String(decoded));
                at = &at[end..];
            }
        }
        i += 1;
    }
    at.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_their_uris() {
        let m = match_template("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(m["id"], "123");
        assert!(match_template("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(match_template("test://template/{id}/data", "test://template//data").is_none());
        let m = match_template("file:///{+path}", "file:///a/b%20c.txt").unwrap();
        assert_eq!(m["path"], "a/b c.txt");
        let m = match_template("u://{a}-{b}", "u://x-y").unwrap();
        assert_eq!((m["a"].as_str(), m["b"].as_str()), (Some("x"), Some("y")));
        assert!(match_template("u://{a}", "v://x").is_none());
    }

    #[test]
    fn skill_files_have_uris_and_types() {
        assert_eq!(skill_uri("notes", "templates/a b.md"), "skill://notes/templates/a%20b.md");
        assert_eq!(skill_uri("a/b", "x"), "skill://a%2Fb/x");
        assert_eq!(
            (mime_of("SKILL.md"), mime_of("x.PNG"), mime_of("noext")),
            ("text/markdown", "image/png", "application/octet-stream")
        );
        let skill = SkillOffer {
            name: "s".into(),
            description: None,
            content: "  Do it.\n".into(),
            arguments: vec!["who".into(), "when".into()],
            files: vec![("SKILL.md".into(), "/x/SKILL.md".into())],
        };
        let c = Catalog { skills: vec![skill.clone()], ..Catalog::default() };
        assert!(c.offers_prompts() && c.offers_resources() && c.completes());
        assert_eq!(c.skill_file("skill://s/SKILL.md"), Some(("/x/SKILL.md", "text/markdown")));
        assert_eq!(c.skill_file("skill://s/../SKILL.md"), None);
        let mut args = Map::new();
        args.insert("when".into(), json!("now"));
        let p = serde_json::to_value(skill_prompt(&skill, args).unwrap()).unwrap();
        assert_eq!(p["messages"][0]["content"]["text"], "Do it.\n\nArguments:\n- when: now");
    }

    #[test]
    fn prompt_answers_become_messages() {
        let r = prompt_result(json!("hello")).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap()["messages"],
            json!([{"role": "user", "content": {"type": "text", "text": "hello"}}])
        );
        let r = prompt_result(json!({"description": "d", "messages": [
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}}]}))
        .unwrap();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["description"], "d");
        assert_eq!(v["messages"][0]["role"], "assistant");
        assert_eq!(v["messages"][1]["content"]["type"], "image");
        assert!(prompt_result(json!(5)).unwrap_err().contains("number"));
        assert!(prompt_result(json!({"x": 1})).unwrap_err().contains("messages"));
    }

    #[test]
    fn read_answers_become_contents() {
        let c = resource_contents(json!("t"), "a://b", Some("text/plain")).unwrap();
        assert_eq!(c, vec![json!({"text": "t", "uri": "a://b", "mimeType": "text/plain"})]);
        let c = resource_contents(json!({"type": "Buffer", "data": [1, 2, 3]}), "a://b", None).unwrap();
        assert_eq!(c, vec![json!({"blob": "AQID", "uri": "a://b"})]);
        let c = resource_contents(json!({"1": 2, "0": 1, "2": 3}), "a://b", None).unwrap();
        assert_eq!(c, vec![json!({"blob": "AQID", "uri": "a://b"})]);
        let c = resource_contents(json!({"contents": [{"uri": "a://c", "text": "x"}]}), "a://b", None).unwrap();
        assert_eq!(c[0]["uri"], "a://c");
        assert!(resource_contents(json!(1), "a://b", None).is_err());
    }
}
