//! HTTP / REST tools (SPEC §7): one endpoint declared as a tool. Arguments fill `{placeholders}`
//! in the URL, then the querystring (named ones, or all of them for GET), then the body.

use std::any::Any;
use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fn_tool::empty_schema;
use crate::json::{js_normalize, js_string, js_stringify};
use crate::jsstr;
use crate::options;
use crate::tool::{SharedTool, Tool, ToolContext, ToolDecl};
use crate::types::ToolResult;

/// The request budget when neither the call nor the declaration gives one, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: f64 = 30_000.0;

/// The output of a request cut short by its timeout or its caller's cancellation.
pub const ABORTED: &str = "This operation was aborted";

/// How leftover arguments of a request with a body are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyMode {
    /// `JSON.stringify(args)`, `Content-Type: application/json` unless set.
    #[default]
    Json,
    /// `a=1&b=2`, `Content-Type: application/x-www-form-urlencoded` unless set.
    Form,
    /// The `body` argument's text as is.
    Raw,
}

impl BodyMode {
    /// `"json"` and `"form"` name theirs; any other name means raw.
    pub fn parse(name: &str) -> BodyMode {
        match name {
            "json" => BodyMode::Json,
            "form" => BodyMode::Form,
            _ => BodyMode::Raw,
        }
    }
}

/// What a successful call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultMode {
    /// The body text.
    #[default]
    Text,
    /// The body parsed and written again as compact JSON (a JSON string of the text when it
    /// does not parse).
    Json,
    /// `<status>\n<body>`.
    StatusText,
}

impl ResultMode {
    /// `"json"` and `"status+text"` name theirs; anything else is text.
    pub fn parse(name: &str) -> ResultMode {
        match name {
            "json" => ResultMode::Json,
            "status+text" => ResultMode::StatusText,
            _ => ResultMode::Text,
        }
    }
}

/// The declaration of one endpoint.
#[derive(Debug, Clone, Default)]
pub struct HttpToolOptions {
    pub name: String,
    pub description: String,
    /// Any verb; upper-cased.
    pub method: String,
    /// May hold `{name}` placeholders, filled from (and consuming) the arguments.
    pub url: String,
    /// Values expand `${ENV_VAR}` from the environment at call time.
    pub headers: Vec<(String, String)>,
    /// Argument names sent in the querystring instead of the body.
    pub query: Vec<String>,
    pub body: BodyMode,
    /// `None` ⇒ the empty object schema.
    pub input_schema: Option<Value>,
    /// Milliseconds; a call's own `ctx.timeout` wins.
    pub timeout: Option<f64>,
    pub result_mode: ResultMode,
}

impl HttpToolOptions {
    /// The option names `httpTool` reads (see `options::fields_of`).
    pub fn option_names() -> &'static [&'static str] {
        options::fields_of::<HttpToolJson>()
    }

    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        method: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        HttpToolOptions {
            name: name.into(),
            description: description.into(),
            method: method.into(),
            url: url.into(),
            ..Default::default()
        }
    }

    /// The options from the JSON of `httpTool(opts)`: an object with string `method` and
    /// `url`, and `headers` an object of strings when given.
    pub fn from_json(text: &str) -> Result<Self> {
        let o: HttpToolJson = options::parse_object(text, "httpTool options")?
            .ok_or_else(|| Error::Type("httpTool: options must be an object".into()))?;
        let string = |v: Option<Value>, k: &str| match v {
            Some(Value::String(s)) => Ok(s),
            _ => Err(Error::Invalid(format!("httpTool: `{k}` must be a string"))),
        };
        let method = string(o.method, "method")?;
        let url = string(o.url, "url")?;
        let headers = match o.headers {
            None => Vec::new(),
            Some(Value::Object(h)) => h
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k, s)),
                    _ => Err(Error::Invalid(format!("httpTool: header `{k}` must be a string"))),
                })
                .collect::<Result<_>>()?,
            Some(_) => return Err(Error::Invalid("httpTool: `headers` must be an object of strings".into())),
        };
        let body = match o.body {
            None => BodyMode::Json,
            Some(Value::String(s)) => BodyMode::parse(&s),
            Some(_) => BodyMode::Raw,
        };
        Ok(HttpToolOptions {
            name: o.name,
            description: o.description,
            method,
            url,
            headers,
            query: o.query,
            body,
            input_schema: o.input_schema,
            timeout: o.timeout,
            result_mode: o.result_mode.as_deref().map(ResultMode::parse).unwrap_or_default(),
        })
    }
}

/// The JSON of `httpTool(opts)`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct HttpToolJson {
    #[serde(default, deserialize_with = "options::text_or_empty")]
    name: String,
    #[serde(default, deserialize_with = "options::text_or_empty")]
    description: String,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    url: Option<Value>,
    #[serde(default)]
    headers: Option<Value>,
    #[serde(default, deserialize_with = "options::strings")]
    query: Vec<String>,
    /// "json" or "form" name theirs; any other string, or any other value, means raw.
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    input_schema: Option<Value>,
    #[serde(default, deserialize_with = "options::number_only")]
    timeout: Option<f64>,
    #[serde(default, deserialize_with = "options::string")]
    result_mode: Option<String>,
}

/// Wrap an HTTP endpoint as a tool (`source: "http"`).
pub fn http_tool(opts: HttpToolOptions) -> SharedTool {
    let method = opts.method.to_uppercase();
    let query: HashSet<String> = opts.query.iter().cloned().collect();
    let schema = opts.input_schema.clone().unwrap_or_else(empty_schema);
    let decl = ToolDecl::new(opts.name.clone(), opts.description.clone(), schema, "http");
    std::sync::Arc::new(HttpTool { opts, method, query, decl })
}

pub struct HttpTool {
    opts: HttpToolOptions,
    method: String,
    query: HashSet<String>,
    decl: ToolDecl,
}

/// One client for every HTTP tool: pooled connections, no proxy from the environment, up to
/// 20 redirects, as `fetch` does.
fn client() -> std::result::Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<std::result::Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            crate::net::fetch_like_builder().build().map_err(|e| format!("could not build the HTTP client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The request a call makes, before it is sent.
struct Prepared {
    url: String,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

impl HttpTool {
    fn prepare(&self, args: Value) -> Prepared {
        let mut a = match js_normalize(args) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let mut url = fill_placeholders(&self.opts.url, &mut a);
        let keys: Vec<String> = a.keys().cloned().collect();
        let mut params = Vec::new();
        for key in keys {
            if self.query.contains(&key) || self.method == "GET" {
                if let Some(v) = a.shift_remove(&key) {
                    params.push((key, js_string(&v)));
                }
            }
        }
        let qs = form_encode(params.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if !qs.is_empty() {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&qs);
        }
        let mut headers: Vec<(String, String)> =
            self.opts.headers.iter().map(|(k, v)| (k.clone(), expand_env(v))).collect();
        let mut body = None;
        if self.method != "GET" && self.method != "HEAD" && !a.is_empty() {
            let mut content_type = |ct: &str| {
                if !headers.iter().any(|(k, _)| k == "Content-Type") {
                    headers.push(("Content-Type".into(), ct.into()));
                }
            };
            body = Some(match self.opts.body {
                BodyMode::Json => {
                    content_type("application/json");
                    js_stringify(&Value::Object(a))
                }
                BodyMode::Form => {
                    content_type("application/x-www-form-urlencoded");
                    let pairs: Vec<(String, String)> = a.iter().map(|(k, v)| (k.clone(), js_string(v))).collect();
                    form_encode(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                }
                BodyMode::Raw => a.get("body").filter(|b| !b.is_null()).map(js_string).unwrap_or_default(),
            });
        }
        crate::trace::inject(&mut headers);
        Prepared { url, headers, body }
    }

    fn request(&self, p: Prepared) -> std::result::Result<reqwest::Request, String> {
        let client = client()?;
        let url = reqwest::Url::parse(&p.url).map_err(|_| format!("Failed to parse URL from {}", p.url))?;
        let method = reqwest::Method::from_bytes(self.method.as_bytes())
            .map_err(|_| format!("'{}' is not a valid HTTP method.", self.method))?;
        // As `Headers` does: names are case-insensitive, a repeated one joins its values with ", ".
        let mut merged: Vec<(HeaderName, Vec<u8>)> = Vec::with_capacity(p.headers.len() + 1);
        for (k, v) in &p.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("Headers.append: \"{k}\" is an invalid header name."))?;
            let value = header_value(k, v)?;
            match merged.iter_mut().find(|(n, _)| *n == name) {
                Some((_, joined)) => {
                    joined.extend_from_slice(b", ");
                    joined.extend_from_slice(value.as_bytes());
                }
                None => merged.push((name, value.as_bytes().to_vec())),
            }
        }
        if let Some(body) = &p.body {
            // A text body without a declared type goes out as `fetch` sends a string.
            if !merged.iter().any(|(n, _)| *n == CONTENT_TYPE) {
                merged.push((CONTENT_TYPE, b"text/plain;charset=UTF-8".to_vec()));
            }
            if body.is_empty() {
                merged.push((CONTENT_LENGTH, b"0".to_vec()));
            }
        }
        let mut rb = client.request(method, url);
        for (name, value) in merged {
            let value = HeaderValue::from_bytes(&value)
                .map_err(|_| format!("Headers.append: the value of \"{name}\" is an invalid header value."))?;
            rb = rb.header(name, value);
        }
        if let Some(body) = p.body {
            rb = rb.body(body);
        }
        rb.build().map_err(|e| fetch_failed(&e))
    }

    fn finish(&self, status: u16, text: String) -> ToolResult {
        let meta = Some(status_meta(status));
        let (output, is_error) = if !(200..300).contains(&status) {
            // An error page may echo the request; the tool's header values never reach the model.
            let mut secrets = crate::redact::Secrets::new();
            let expanded: Vec<(String, String)> =
                self.opts.headers.iter().map(|(k, v)| (k.clone(), expand_env(v))).collect();
            secrets.add_headers(expanded.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            (secrets.scrub(&format!("HTTP {status}: {text}")).into_owned(), true)
        } else {
            let output = match self.opts.result_mode {
                ResultMode::StatusText => format!("{status}\n{text}"),
                ResultMode::Json => match crate::json::parse_str::<Value>(&text) {
                    Ok(v) => js_stringify(&js_normalize(v)),
                    Err(_) => js_stringify(&Value::String(text)),
                },
                ResultMode::Text => text,
            };
            (output, false)
        };
        // Building a longer string throws V8's RangeError, which the reference returns as is.
        if !jsstr::fits(&output) {
            return ToolResult::error(jsstr::INVALID_LENGTH);
        }
        ToolResult { output, is_error, metadata: meta, rich: None }
    }
}

fn status_meta(status: u16) -> Value {
    let mut m = Map::with_capacity(1);
    m.insert("status".into(), Value::from(status));
    Value::Object(m)
}

/// The transport failure text, as the reference reports `fetch`'s rejection: its message,
/// `fetch failed` (the cause is not part of it, and the URL, which may carry argument
/// values, never is).
fn fetch_failed(_e: &reqwest::Error) -> String {
    "fetch failed".into()
}

/// A header value as `fetch` takes it: HTTP whitespace trimmed, each character one byte
/// (Latin-1), control characters refused. The message never quotes the value.
fn header_value(name: &str, value: &str) -> std::result::Result<HeaderValue, String> {
    if let Some((i, c)) = value.encode_utf16().enumerate().find(|(_, c)| *c > 0xFF) {
        return Err(format!(
            "Cannot convert argument to a ByteString because the character at index {i} has a value of {c} which is greater than 255."
        ));
    }
    let trimmed = value.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    let bytes: Vec<u8> = trimmed.chars().map(|c| c as u32 as u8).collect();
    HeaderValue::from_bytes(&bytes)
        .map_err(|_| format!("Headers.append: the value of \"{name}\" is an invalid header value."))
}

/// `setTimeout`'s delay: anything below 1 ms, above 2^31-1 ms or not a number is 1 ms.
fn delay(ms: f64) -> Duration {
    let ms = if (1.0..=2_147_483_647.0).contains(&ms) { ms } else { 1.0 };
    Duration::from_secs_f64(ms / 1000.0)
}

/// A response body as `Response.text()` reads it: UTF-8, a leading BOM dropped, bad bytes
/// replaced. A body of more bytes than one string may be built from fails with Node's message
/// as soon as it passes that size, so an endless body never grows without bound.
pub(crate) async fn body_text(mut res: reqwest::Response) -> std::result::Result<String, String> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    // Room for a leading BOM on top of the longest string.
    let mut body = jsstr::Gather::new(jsstr::MAX_LENGTH + BOM.len(), None).map_err(refused)?;
    while let Some(chunk) = res.chunk().await.map_err(|_| "terminated".to_string())? {
        body.push(&chunk).map_err(refused)?;
        if body.len() > jsstr::MAX_LENGTH && !body.as_slice().starts_with(BOM) {
            return Err(jsstr::TOO_LONG.into());
        }
    }
    Ok(decode(body.into_vec()))
}

/// Node's message for a body that cannot become one string, or cannot be held at all.
fn refused(why: jsstr::Refused) -> String {
    match why {
        jsstr::Refused::Limit => jsstr::TOO_LONG.into(),
        jsstr::Refused::NoMemory => jsstr::NO_MEMORY.into(),
    }
}

/// Body bytes as `Response.text()` decodes them: a leading BOM dropped, bad bytes replaced.
fn decode(mut body: Vec<u8>) -> String {
    if body.starts_with(b"\xEF\xBB\xBF") {
        body.drain(..3);
    }
    String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[async_trait]
impl Tool for HttpTool {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        crate::trace::ready().await;
        let req = match self.request(self.prepare(args)) {
            Ok(r) => r,
            Err(msg) => return Ok(ToolResult::error(msg)),
        };
        let client = match client() {
            Ok(c) => c,
            Err(msg) => return Ok(ToolResult::error(msg)),
        };
        let budget = delay(ctx.timeout.or(self.opts.timeout).unwrap_or(DEFAULT_TIMEOUT_MS));
        let exchange = async {
            let res = client.execute(req).await.map_err(|e| fetch_failed(&e))?;
            let status = res.status().as_u16();
            Ok::<_, String>((status, body_text(res).await?))
        };
        let cancelled = async {
            match &ctx.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            r = exchange => r,
            _ = tokio::time::sleep(budget) => Err(ABORTED.to_string()),
            _ = cancelled => Err(ABORTED.to_string()),
        };
        Ok(match outcome {
            Ok((status, text)) => self.finish(status, text),
            Err(msg) => ToolResult::error(msg),
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Replace each `{word}` (ASCII letters, digits, `_`) with its argument, URI-component encoded,
/// and remove that argument; a missing or null one is empty.
fn fill_placeholders(template: &str, args: &mut Map<String, Value>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let word_len = after.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        if word_len > 0 && after.as_bytes().get(word_len) == Some(&b'}') {
            let key = &after[..word_len];
            let value = match args.shift_remove(key) {
                None | Some(Value::Null) => String::new(),
                Some(v) => js_string(&v),
            };
            out.push_str(&encode_uri_component(&value));
            rest = &after[word_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `encodeURIComponent`.
pub fn encode_uri_component(s: &str) -> String {
    percent_encode(s, |b| b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b), false)
}

/// `URLSearchParams.toString()` over pairs.
pub fn form_encode<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let enc = |s: &str| percent_encode(s, |b| b.is_ascii_alphanumeric() || b"*-._".contains(&b), true);
    pairs.map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}

fn percent_encode(s: &str, keep: impl Fn(u8) -> bool, space_as_plus: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if keep(b) {
            out.push(b as char);
        } else if b == b' ' && space_as_plus {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Expand `${NAME}` (letters of either case, digits, `_`) from the environment; unset is empty.
/// The values are never logged.
fn expand_env(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(open) = rest.find("${") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let len = after.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        if len > 0 && after.as_bytes().get(len) == Some(&b'}') {
            if let Some(v) = std::env::var_os(&after[..len]) {
                out.push_str(&v.to_string_lossy());
            }
            rest = &after[len + 1..];
        } else {
            out.push('$');
            rest = &rest[open + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodings_match_javascript() {
        assert_eq!(encode_uri_component("a b/&?=é!~*()'-_."), "a%20b%2F%26%3F%3D%C3%A9!~*()'-_.");
        assert_eq!(form_encode([("a", "a b*-._~!'()é+&=/")].into_iter()), "a=a+b*-._%7E%21%27%28%29%C3%A9%2B%26%3D%2F");
        assert_eq!(form_encode(std::iter::empty()), "");
    }

    #[test]
    fn placeholders_are_filled_and_consumed() {
        let mut a = json!({"id": "a/b", "n": 3, "keep": 1}).as_object().cloned().unwrap();
        let url = fill_placeholders("http://h/{id}/{n}/{id}/{missing}/{not-a-word}/{}", &mut a);
        assert_eq!(url, "http://h/a%2Fb/3///{not-a-word}/{}");
        assert_eq!(a.keys().collect::<Vec<_>>(), ["keep"]);
        let mut a = json!({"x": null}).as_object().cloned().unwrap();
        assert_eq!(fill_placeholders("{x}{{x}}", &mut a), "{}");
    }

    #[test]
    fn env_references_expand_and_unset_is_empty() {
        std::env::set_var("TOOLNEXUS_HTTP_TEST_TOKEN", "s3cret");
        assert_eq!(expand_env("Bearer ${TOOLNEXUS_HTTP_TEST_TOKEN}"), "Bearer s3cret");
        assert_eq!(expand_env("${toolnexus_http_test_unset_var}x"), "x");
        assert_eq!(expand_env("$${TOOLNEXUS_HTTP_TEST_TOKEN}} ${} ${a-b} $"), "$s3cret} ${} ${a-b} $");
    }

    #[test]
    fn arguments_go_to_path_then_query_then_body() {
        let mut o = HttpToolOptions::new("t", "d", "post", "http://h/i/{issue}?x=1");
        o.query = vec!["notify".into()];
        let t = HttpTool {
            method: "POST".into(),
            query: o.query.iter().cloned().collect(),
            decl: ToolDecl::new("t", "d", empty_schema(), "http"),
            opts: o.clone(),
        };
        let p = t.prepare(json!({"issue": 42, "notify": true, "text": "hi", "n": 1.0}));
        assert_eq!(p.url, "http://h/i/42?x=1&notify=true");
        assert_eq!(p.body.as_deref(), Some(r#"{"text":"hi","n":1}"#));
        assert_eq!(p.headers, [("Content-Type".to_string(), "application/json".to_string())]);
        // Nothing left over: no body and no content type.
        let p = t.prepare(json!({"issue": 1}));
        assert_eq!((p.body, p.headers.len()), (None, 0));
        // Form and raw bodies; an explicit Content-Type is kept.
        let mut f = t.opts.clone();
        f.body = BodyMode::Form;
        f.headers = vec![("Content-Type".into(), "text/x".into())];
        let tf = HttpTool { opts: f, ..t.clone_for_test() };
        let p = tf.prepare(json!({"a": "x y", "b": [1, 2]}));
        assert_eq!(p.body.as_deref(), Some("a=x+y&b=1%2C2"));
        assert_eq!(p.headers, [("Content-Type".to_string(), "text/x".to_string())]);
        let mut r = t.opts.clone();
        r.body = BodyMode::Raw;
        let tr = HttpTool { opts: r, ..t.clone_for_test() };
        let p = tr.prepare(json!({"body": "<xml/>", "other": 1}));
        assert_eq!((p.body.as_deref(), p.headers.len()), (Some("<xml/>"), 0));
        assert_eq!(tr.prepare(json!({"other": 1})).body.as_deref(), Some(""));
    }

    #[test]
    fn get_sends_every_leftover_argument_in_the_query_in_javascript_key_order() {
        let t = HttpTool {
            method: "GET".into(),
            query: HashSet::new(),
            decl: ToolDecl::new("t", "d", empty_schema(), "http"),
            opts: HttpToolOptions::new("t", "d", "GET", "http://h/s"),
        };
        let p = t.prepare(json!({"q": "a b", "2": "two", "o": {"x": 1}, "z": null}));
        assert_eq!(p.url, "http://h/s?2=two&q=a+b&o=%5Bobject+Object%5D&z=null");
        assert_eq!(p.body, None);
    }

    fn from(v: Value) -> Result<HttpToolOptions> {
        HttpToolOptions::from_json(&v.to_string())
    }

    fn err(v: Value) -> String {
        from(v).unwrap_err().to_string()
    }

    #[test]
    fn options_read_from_json() {
        let o = from(json!({
            "name": "n", "description": "d", "method": "get", "url": "http://h",
            "headers": {"A": "1"}, "query": ["q", 3], "body": "xml", "timeout": 5, "resultMode": "status+text"
        }))
        .unwrap();
        assert_eq!((o.body, o.result_mode, o.timeout), (BodyMode::Raw, ResultMode::StatusText, Some(5.0)));
        assert_eq!((o.name.as_str(), o.description.as_str(), o.method.as_str()), ("n", "d", "get"));
        assert_eq!((o.query, o.headers), (vec!["q".to_string()], vec![("A".to_string(), "1".to_string())]));
        let t = http_tool(from(json!({"method": "get", "url": "u"})).unwrap());
        assert_eq!((t.name(), t.source(), t.input_schema()), ("", "http", &empty_schema()));
    }

    #[test]
    fn options_defaults_and_leniency() {
        let o = from(json!({"method": "GET", "url": "u", "name": 5, "description": null, "headers": null,
            "query": "q", "body": null, "inputSchema": null, "timeout": "5", "resultMode": ["json"]}))
        .unwrap();
        assert_eq!((o.name.as_str(), o.description.as_str()), ("5", ""));
        assert!(o.headers.is_empty() && o.query.is_empty() && o.input_schema.is_none());
        assert_eq!((o.body, o.timeout, o.result_mode), (BodyMode::Json, None, ResultMode::Text));
        let o =
            from(json!({"method": "GET", "url": "u", "body": "form", "resultMode": "json", "inputSchema": 3})).unwrap();
        assert_eq!((o.body, o.result_mode, o.input_schema), (BodyMode::Form, ResultMode::Json, Some(json!(3))));
        assert_eq!(from(json!({"method": "GET", "url": "u", "body": 1})).unwrap().body, BodyMode::Raw);
    }

    #[test]
    fn options_name_what_is_wrong() {
        for text in ["null", "[]", "\"GET\""] {
            let e = HttpToolOptions::from_json(text).unwrap_err();
            assert_eq!((e.js_class(), e.to_string().as_str()), ("TypeError", "httpTool: options must be an object"));
        }
        assert!(HttpToolOptions::from_json("{")
            .unwrap_err()
            .to_string()
            .starts_with("httpTool options: invalid JSON ("));
        assert_eq!(err(json!({"url": "http://h"})), "httpTool: `method` must be a string");
        assert_eq!(err(json!({"method": null, "url": "http://h"})), "httpTool: `method` must be a string");
        assert_eq!(err(json!({"method": 1, "url": "http://h"})), "httpTool: `method` must be a string");
        assert_eq!(err(json!({"method": "GET"})), "httpTool: `url` must be a string");
        assert_eq!(
            err(json!({"method": "GET", "url": "u", "headers": {"A": 1}})),
            "httpTool: header `A` must be a string"
        );
        let e = err(json!({"method": "GET", "url": "u", "headers": ["A"]}));
        assert_eq!(e, "httpTool: `headers` must be an object of strings");
        // Checked in that order, whatever the order of the keys.
        assert_eq!(err(json!({"headers": 1, "url": 1, "method": 1})), "httpTool: `method` must be a string");
        assert_eq!(err(json!({"headers": 1, "url": 1, "method": "GET"})), "httpTool: `url` must be a string");
    }

    #[test]
    fn timeouts_clamp_like_set_timeout() {
        assert_eq!(delay(0.0), Duration::from_millis(1));
        assert_eq!(delay(f64::NAN), Duration::from_millis(1));
        assert_eq!(delay(3e9), Duration::from_millis(1));
        assert_eq!(delay(250.0), Duration::from_millis(250));
    }

    #[test]
    fn header_values_are_latin1_and_trimmed() {
        assert_eq!(header_value("A", " x\t").unwrap(), HeaderValue::from_static("x"));
        assert_eq!(header_value("A", "é").unwrap().as_bytes(), [0xE9]);
        let e = header_value("A", "ab\u{100}").unwrap_err();
        assert!(e.contains("index 2 has a value of 256"), "{e}");
        let e = header_value("A", "a\nb").unwrap_err();
        assert!(e.contains("\"A\"") && !e.contains("a\nb"), "{e}");
    }

    #[test]
    fn bodies_decode_like_response_text() {
        assert_eq!(decode(b"\xEF\xBB\xBFhi".to_vec()), "hi");
        assert_eq!(decode(b"a\xFFb".to_vec()), "a\u{FFFD}b");
        assert_eq!(decode(b"\xEF\xBB".to_vec()), "\u{FFFD}");
    }

    impl HttpTool {
        fn clone_for_test(&self) -> HttpTool {
            HttpTool {
                opts: self.opts.clone(),
                method: self.method.clone(),
                query: self.query.clone(),
                decl: self.decl.clone(),
            }
        }
    }
}
