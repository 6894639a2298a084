//! What `createClient`, `run` and `translate` accept: the options themselves, and their JSON
//! shapes read with the reference's leniency (see [`crate::options`]), callbacks and stores
//! included (host functions and objects as `fn_markers` markers).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::fallback_entry::Fallback;
use super::hooks::{Hooks, HooksJson};
use super::inprocess::{InProcessTransport, IN_PROCESS_BASE_URL};
use super::result::RunOptions;
use super::seams::{HostTransport, StoreOption};
use super::store::ConversationStore;
use super::style::Style;
use super::transport::Transport;
use crate::callback::SharedCallback;
use crate::error::{Error, Result};
use crate::fn_markers::HostFn;
use crate::json;
use crate::options::{self, parse_object};

/// Everything `createClient` accepts that the core acts on.
#[derive(Clone)]
pub struct ClientOptions {
    pub base_url: String,
    pub style: Style,
    pub model: String,
    pub api_key: Option<String>,
    /// Extra headers, in the caller's order; they override the client's own on the same name.
    pub headers: Vec<(String, String)>,
    pub system_prompt: Option<String>,
    pub max_turns: u32,
    pub retries: u32,
    pub retry_base_ms: f64,
    pub timeout_ms: Option<u64>,
    pub hooks: Hooks,
    pub wait_for: Option<SharedCallback>,
    /// Shallow-merged into every request body (`messages`, `tools`, `stream` are refused).
    pub request_params: Option<Map<String, Value>>,
    /// Receives the assembled body last and may return a replacement.
    pub body_transform: Option<SharedCallback>,
    /// `None` ⇒ the built-in HTTP/1.1 transport over tokio's sockets.
    pub transport: Option<Arc<dyn Transport>>,
    /// Receives every metric event (awaited, in order).
    pub on_metric: Option<SharedCallback>,
    /// Classifies a failed LLM attempt: `{ status?, error?, attempt, retryable }` → "retry" | "fail".
    pub on_error: Option<SharedCallback>,
    /// Where `ask` keeps conversations; `None` ⇒ a fresh in-memory store.
    pub store: Option<Arc<dyn ConversationStore>>,
    /// Where the warnings of this client's runs go; `None` ⇒ wherever the caller's go.
    pub logger: Option<crate::warn::Sink>,
    /// Records the spans of this client's runs (the `telemetry` option; see `trace`).
    pub telemetry: Option<crate::trace::Tracing>,
    /// Where an LLM call goes, in order, when the primary fails it (see `fallback`).
    pub fallback: Vec<Fallback>,
    /// The secret a parked Request's seal is made with (`resumeKey`, else the
    /// `TOOLNEXUS_RESUME_KEY` environment variable): see `park`.
    pub resume_key: Option<Vec<u8>>,
    /// How long a park record is kept after it parked, was answered or expired (`parkRetentionMs`).
    pub park_retention_ms: i64,
}

impl ClientOptions {
    pub fn new(base_url: impl Into<String>, style: Style, model: impl Into<String>) -> Self {
        ClientOptions {
            base_url: base_url.into(),
            style,
            model: model.into(),
            api_key: None,
            headers: vec![],
            system_prompt: None,
            max_turns: 10,
            retries: 2,
            retry_base_ms: 500.0,
            timeout_ms: None,
            hooks: Hooks::default(),
            wait_for: None,
            request_params: None,
            body_transform: None,
            transport: None,
            on_metric: None,
            telemetry: None,
            on_error: None,
            store: None,
            logger: None,
            fallback: Vec::new(),
            resume_key: None,
            park_retention_ms: super::park::RETENTION_MS,
        }
    }

    /// Whether requests go through the built-in HTTP (no `fetch`, no in-process model): a
    /// host may then send a run through its own seam instead (see `transport::through`).
    pub fn builtin_transport(&self) -> bool {
        self.transport.is_none()
    }
}

impl ClientOptions {
    /// The option names `createClient` reads (its `ClientOptions` in index.d.ts must name them).
    pub fn option_names() -> &'static [&'static str] {
        options::fields_of::<ClientJson>()
    }
}

/// `createClient`'s options as the host hands them over: JSON, with its functions and its own
/// objects as `fn_markers` markers.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ClientJson {
    #[serde(default, deserialize_with = "options::text")]
    base_url: Option<String>,
    /// Only the string "anthropic" selects the Anthropic wire.
    #[serde(default, deserialize_with = "options::string")]
    style: Option<String>,
    #[serde(default, deserialize_with = "options::text")]
    model: Option<String>,
    #[serde(default, deserialize_with = "options::text")]
    api_key: Option<String>,
    #[serde(default, deserialize_with = "options::text_pairs")]
    headers: Vec<(String, String)>,
    #[serde(default, deserialize_with = "options::text")]
    system_prompt: Option<String>,
    #[serde(default, deserialize_with = "options::count")]
    max_turns: Option<u32>,
    #[serde(default, deserialize_with = "options::count")]
    retries: Option<u32>,
    #[serde(default, deserialize_with = "options::non_negative")]
    retry_base_ms: Option<f64>,
    #[serde(default, deserialize_with = "options::positive_ms")]
    timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "options::object")]
    request_params: Option<Map<String, Value>>,
    #[serde(default)]
    hooks: HooksJson,
    #[serde(default)]
    wait_for: HostFn,
    #[serde(default)]
    body_transform: HostFn,
    #[serde(default)]
    on_metric: HostFn,
    /// The host's span recorder, when `telemetry` is on.
    #[serde(default)]
    telemetry: HostFn,
    #[serde(default)]
    on_error: HostFn,
    /// The host's `fetch`, speaking [`HostTransport`]'s protocol.
    #[serde(default)]
    fetch: HostFn,
    #[serde(default)]
    store: StoreOption,
    /// An in-process client's model (read only by `in_process_from_json`).
    #[serde(default)]
    generate: HostFn,
    /// The host's logger: a function told each warning's text (the host adapts its `{ warn }`
    /// object into one).
    #[serde(default)]
    logger: HostFn,
    /// Other connections to fall back to (an addition; the reference ignores the key).
    #[serde(default)]
    fallback: Value,
    /// The secret parked Requests are sealed with (an addition).
    #[serde(default)]
    resume_key: Value,
    /// How long park records are kept (an addition).
    #[serde(default)]
    park_retention_ms: Value,
}

impl ClientOptions {
    /// `createClient`'s options. Nothing is refused but a value that is not an object, as in
    /// the reference: a missing `baseUrl` fails the first request (its URL reads
    /// "undefined/..."), a missing `model` is left out of the body, any `style` but
    /// "anthropic" speaks the OpenAI wire, and a callback option set to something that is not
    /// a function fails when it is called. (An empty `apiKey` is kept: the client reads it as
    /// none when it resolves the key.)
    pub fn from_json(text: &str) -> Result<ClientOptions> {
        let o = ClientJson::read(text)?;
        o.check_additions()?;
        let style = Style::of_option(o.style.as_deref());
        let base_url = o.base_url.clone().unwrap_or_else(|| "undefined".into());
        let api_key = o.api_key.clone();
        let fetch = o.fetch.clone().named("createClient", "fetch");
        let mut opts = o.finish(base_url, style, api_key, 2);
        opts.transport = fetch.map(|f| Arc::new(HostTransport::new(f)) as Arc<dyn Transport>);
        Ok(opts)
    }

    /// An in-process client's options (`createInProcessClient`): the same JSON, but no wire:
    /// `generate` answers every request; the in-process base URL, the OpenAI shapes, the key
    /// "in-process" (`baseUrl`, `style`, `apiKey` and `fetch` are not read), and no retries
    /// unless asked for (no transient failure to ride out).
    pub fn in_process_from_json(text: &str) -> Result<ClientOptions> {
        let o = ClientJson::read(text)?;
        o.check_additions()?;
        let HostFn::Fn(generate) = o.generate.clone() else {
            return Err(Error::Invalid("toolnexus: createInProcessClient requires a `generate` function".into()));
        };
        let mut opts = o.finish(IN_PROCESS_BASE_URL.into(), Style::OpenAI, Some("in-process".into()), 0);
        opts.transport = Some(Arc::new(InProcessTransport { generate }));
        Ok(opts)
    }
}

impl ClientJson {
    fn read(text: &str) -> Result<ClientJson> {
        parse_object(text, "createClient options")?
            .ok_or_else(|| Error::Type("createClient: options must be an object".into()))
    }

    /// The options the reference does not have are refused when they cannot work (they guard
    /// resumes, so a mistake there fails at once rather than at the first park).
    fn check_additions(&self) -> Result<()> {
        match &self.resume_key {
            Value::Null => {}
            Value::String(k) if k.chars().count() >= MIN_KEY_CHARS => {}
            other => {
                return Err(Error::Type(format!(
                    "createClient: resumeKey must be a secret string of at least {MIN_KEY_CHARS} characters, shared by the processes that park and resume runs; got {}",
                    describe(other)
                )))
            }
        }
        match &self.park_retention_ms {
            Value::Null => Ok(()),
            Value::Number(n) if n.as_f64().is_some_and(|ms| ms >= 1.0) => Ok(()),
            other => Err(Error::Type(format!(
                "createClient: parkRetentionMs must be a number of milliseconds of at least 1; got {}",
                describe(other)
            ))),
        }
    }

    fn finish(self, base_url: String, style: Style, api_key: Option<String>, retries: u32) -> ClientOptions {
        const OWNER: &str = "createClient";
        let mut opts = ClientOptions::new(base_url, style, self.model.unwrap_or_default());
        opts.api_key = api_key;
        opts.headers = self.headers;
        opts.system_prompt = self.system_prompt;
        opts.max_turns = self.max_turns.unwrap_or(opts.max_turns);
        opts.retries = self.retries.unwrap_or(retries);
        opts.retry_base_ms = self.retry_base_ms.unwrap_or(opts.retry_base_ms);
        opts.timeout_ms = self.timeout_ms;
        opts.request_params = self.request_params;
        opts.hooks = self.hooks.finish(OWNER, style);
        opts.wait_for = self.wait_for.named(OWNER, "waitFor");
        opts.body_transform = self.body_transform.named(OWNER, "bodyTransform");
        opts.on_metric = self.on_metric.named(OWNER, "onMetric");
        opts.telemetry = self.telemetry.named(OWNER, "telemetry").map(crate::trace::Tracing::new);
        opts.on_error = self.on_error.named(OWNER, "onError");
        opts.store = self.store.0;
        opts.logger = self.logger.named(OWNER, "logger").map(crate::warn::callback_sink);
        opts.fallback = Fallback::list_of(&self.fallback);
        opts.resume_key = match &self.resume_key {
            Value::String(k) => Some(k.as_bytes().to_vec()),
            _ => match std::env::var("TOOLNEXUS_RESUME_KEY") {
                Ok(k) if k.chars().count() >= MIN_KEY_CHARS => Some(k.into_bytes()),
                Ok(k) if !k.is_empty() => {
                    crate::warn::warn(&format!(
                        "[toolnexus] TOOLNEXUS_RESUME_KEY is {} characters long, shorter than the {MIN_KEY_CHARS} a resume key needs: parked Requests are not sealed",
                        k.chars().count()
                    ));
                    None
                }
                _ => None,
            },
        };
        if let Some(ms) = self.park_retention_ms.as_f64() {
            opts.park_retention_ms = ms.min(i64::MAX as f64) as i64;
        }
        opts
    }
}

/// The shortest `resumeKey` accepted.
const MIN_KEY_CHARS: usize = 16;

/// A value in an error message: a string's length, never its text (it may be a secret).
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Number(n) => format!("the number {}", json::js_number_text(n)),
        Value::Bool(b) => format!("{b}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        Value::Null => "null".into(),
    }
}

impl RunOptions {
    /// A run's options with the JSON of its `history`: an array of messages, or `null` for
    /// none. The abort handle, if any, is the host's to attach.
    pub fn from_history_json(text: &str) -> Result<RunOptions> {
        let v: Value = json::parse_str(text).map_err(|e| Error::Invalid(format!("history: invalid JSON ({e})")))?;
        let history = match v {
            Value::Null => None,
            Value::Array(items) => Some(items),
            other => {
                json::release(other);
                return Err(Error::Invalid("run: `history` must be an array of messages".into()));
            }
        };
        Ok(RunOptions { history, ..RunOptions::default() })
    }
}

/// What a run verb (`run`, `ask`, `stream`, `runWithAnswer`, `askWithAnswer`) is given besides
/// its prompt or transcript, its toolkit and its signal, as one document (`fn_markers` markers):
/// `{ output?, onText? }` (`onText` is `ask`'s).
#[derive(Default)]
pub struct CallOptions {
    /// The answer's schema (see [`super::output::Output::from_value`]).
    pub output: Option<Arc<super::output::Output>>,
    /// `ask`'s text callback: unset when falsy, a `TypeError` when called if it is set to
    /// something that is not a function.
    pub on_text: Option<SharedCallback>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CallJson {
    #[serde(default)]
    output: Value,
    #[serde(default)]
    on_text: HostFn,
}

impl CallOptions {
    /// The document's options; `owner` names the verb in its errors.
    pub fn from_json(owner: &str, text: &str) -> Result<CallOptions> {
        let o: CallJson = parse_object(text, owner)?.unwrap_or_default();
        let output = match o.output {
            Value::Null => None,
            v => Some(Arc::new(super::output::Output::from_value(owner, &v)?)),
        };
        Ok(CallOptions { output, on_text: o.on_text.named(owner, "on_text") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn client(v: Value) -> ClientOptions {
        ClientOptions::from_json(&v.to_string()).unwrap()
    }

    fn err(r: Result<impl Sized>) -> String {
        r.err().expect("fails").to_string()
    }

    #[test]
    fn defaults() {
        let o = client(json!({}));
        assert_eq!((o.base_url.as_str(), o.style, o.model.as_str()), ("undefined", Style::OpenAI, ""));
        assert_eq!((o.api_key, o.system_prompt), (None, None));
        assert_eq!((o.max_turns, o.retries, o.retry_base_ms, o.timeout_ms), (10, 2, 500.0, None));
        assert!(o.headers.is_empty() && o.request_params.is_none() && o.transport.is_none());
    }

    #[test]
    fn only_an_object_is_options() {
        for text in ["null", "[]", "1", "\"x\""] {
            assert_eq!(err(ClientOptions::from_json(text)), "createClient: options must be an object");
            assert_eq!(err(ClientOptions::in_process_from_json(text)), "createClient: options must be an object");
        }
        assert!(err(ClientOptions::from_json("{")).starts_with("createClient options: invalid JSON ("));
    }

    #[test]
    fn texts_are_template_strings_of_any_value_but_null() {
        let o = client(json!({"baseUrl": 5, "model": ["a", "b"], "apiKey": 12, "systemPrompt": false}));
        assert_eq!((o.base_url.as_str(), o.model.as_str()), ("5", "a,b"));
        assert_eq!((o.api_key.as_deref(), o.system_prompt.as_deref()), (Some("12"), Some("false")));
        let o = client(json!({"baseUrl": null, "model": null, "apiKey": null, "systemPrompt": null, "extra": 1}));
        assert_eq!((o.base_url.as_str(), o.model.as_str()), ("undefined", ""));
        assert_eq!((o.api_key, o.system_prompt), (None, None));
        // An empty key is kept as given; resolving the key reads it as none.
        let o = client(json!({"apiKey": ""}));
        assert_eq!(o.api_key.as_deref(), Some(""));
        let resolved = crate::client::Client::new(o).unwrap().resolve_key();
        assert!(resolved.map_or(true, |k| !k.is_empty()));
    }

    #[test]
    fn only_the_string_anthropic_selects_its_wire() {
        assert_eq!(client(json!({"style": "anthropic"})).style, Style::Anthropic);
        for other in [json!("Anthropic"), json!(["anthropic"]), json!("openai"), json!(null), json!(1)] {
            assert_eq!(client(json!({ "style": other })).style, Style::OpenAI);
        }
    }

    #[test]
    fn numbers_are_read_leniently() {
        let o = client(json!({"maxTurns": "3", "retries": 2.2, "retryBaseMs": -5, "timeoutMs": "150"}));
        assert_eq!((o.max_turns, o.retries, o.retry_base_ms, o.timeout_ms), (3, 3, 0.0, Some(150)));
        let o = client(json!({"maxTurns": -1, "retries": "x", "retryBaseMs": "12.5", "timeoutMs": 0}));
        assert_eq!((o.max_turns, o.retries, o.retry_base_ms, o.timeout_ms), (0, 2, 12.5, None));
        let o = client(json!({"maxTurns": true, "retries": null, "retryBaseMs": [], "timeoutMs": -3}));
        assert_eq!((o.max_turns, o.retries, o.retry_base_ms, o.timeout_ms), (10, 2, 500.0, None));
    }

    #[test]
    fn headers_skip_null_and_stringify_values_in_order() {
        let o = client(json!({"headers": {"X-B": "1", "X-A": 2, "X-N": null, "X-T": true}}));
        let h: Vec<(&str, &str)> = o.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(h, [("X-B", "1"), ("X-A", "2"), ("X-T", "true")]);
        assert!(client(json!({"headers": ["a"]})).headers.is_empty());
        assert!(client(json!({"headers": "a: b"})).headers.is_empty());
    }

    #[test]
    fn request_params_must_be_an_object() {
        assert_eq!(client(json!({"requestParams": {"temperature": 0}})).request_params.unwrap()["temperature"], 0);
        assert!(client(json!({"requestParams": [1]})).request_params.is_none());
        assert!(client(json!({"requestParams": null})).request_params.is_none());
    }

    /// A host table whose every function answers its own place, and whose object 0 is an
    /// in-memory store.
    struct Host(Arc<crate::client::InMemoryStore>);

    impl crate::fn_markers::Table for Host {
        fn callback(&self, n: usize) -> Option<SharedCallback> {
            Some(crate::callback::callback(move |_| async move { Ok(json!(n)) }))
        }
        fn object(&self, n: usize) -> Option<crate::fn_markers::HostObject> {
            (n == 0).then(|| self.0.clone() as crate::fn_markers::HostObject)
        }
    }

    fn hosted(v: Value, read: fn(&str) -> Result<ClientOptions>) -> Result<ClientOptions> {
        let host = std::rc::Rc::new(Host(Arc::default()));
        crate::fn_markers::read_with(host, || read(&v.to_string()))
    }

    const F: &str = crate::fn_markers::FN;

    #[tokio::test]
    async fn a_call_document_carries_the_output_and_on_text() {
        let call = |v: Value| {
            let host = std::rc::Rc::new(Host(Arc::default()));
            crate::fn_markers::read_with(host, || CallOptions::from_json("ask", &v.to_string()))
        };
        let none = call(json!({})).unwrap();
        assert!(none.output.is_none() && none.on_text.is_none());
        let o = call(json!({"output": {"schema": {"type": "object"}}, "onText": {F: 0}})).unwrap();
        assert!(o.output.is_some());
        assert_eq!(o.on_text.expect("onText").call(json!("d")).await.unwrap(), json!(0));
        let o = call(json!({"onText": 3})).unwrap();
        let e = o.on_text.expect("a failing callback").call(json!("d")).await.unwrap_err();
        assert_eq!(e.to_string(), "ask: `on_text` is not a function (got number)");
        assert!(call(json!({"onText": false})).unwrap().on_text.is_none());
        let e = call(json!({"output": {"schema": 1}})).err().expect("refused");
        assert_eq!(e.to_string(), "ask: `output` must be a Standard Schema or a JSON Schema object (got number)");
    }

    #[test]
    fn in_process_clients_have_no_wire() {
        let text =
            json!({"baseUrl": "http://x", "style": "anthropic", "apiKey": "k", "model": "local", "generate": {F: 0}});
        let o = hosted(text, ClientOptions::in_process_from_json).unwrap();
        assert_eq!((o.base_url.as_str(), o.style, o.model.as_str()), (IN_PROCESS_BASE_URL, Style::OpenAI, "local"));
        assert_eq!((o.api_key.as_deref(), o.retries, o.max_turns), (Some("in-process"), 0, 10));
        assert!(o.transport.is_some() && !o.builtin_transport());
        let o = hosted(
            json!({"retries": "3", "maxTurns": 4, "systemPrompt": "s", "generate": {F: 1}}),
            ClientOptions::in_process_from_json,
        )
        .unwrap();
        assert_eq!((o.retries, o.max_turns, o.system_prompt.as_deref()), (3, 4, Some("s")));
        // Without a `generate` function there is no in-process client.
        for generate in [json!(null), json!("g"), json!(1)] {
            let e =
                hosted(json!({ "generate": generate }), ClientOptions::in_process_from_json).err().expect("refused");
            assert_eq!(e.to_string(), "toolnexus: createInProcessClient requires a `generate` function");
        }
        // createClient reads no `generate`: its wire is the endpoint's.
        assert!(hosted(json!({"generate": {F: 0}}), ClientOptions::from_json).unwrap().builtin_transport());
    }

    #[tokio::test]
    async fn callbacks_hooks_fetch_and_store_are_options_like_any_other() {
        let o = hosted(
            json!({"waitFor": {F: 0}, "bodyTransform": {F: 1}, "onMetric": {F: 2}, "onError": {F: 3}, "fetch": {F: 4},
                   "hooks": {"beforeLLM": {F: 5}, "afterLLM": null, "beforeTool": 0, "afterTool": {F: 6}},
                   "store": {"\u{0}obj": 0}, "requestParams": {"t": 1, "f": {F: 7}}}),
            ClientOptions::from_json,
        )
        .unwrap();
        for (cb, n) in [(&o.wait_for, 0), (&o.body_transform, 1), (&o.on_metric, 2), (&o.on_error, 3)] {
            assert_eq!(cb.as_ref().unwrap().call(Value::Null).await.unwrap(), json!(n));
        }
        assert_eq!(o.hooks.before_llm.as_ref().unwrap().call(Value::Null).await.unwrap(), json!(5));
        assert!(o.hooks.after_llm.is_none() && o.hooks.before_tool.is_none());
        assert_eq!(o.hooks.after_tool.as_ref().unwrap().call(Value::Null).await.unwrap(), json!(6));
        assert!(!o.builtin_transport(), "a fetch is the transport");
        assert!(o.store.is_some());
        // A function inside plain data is left out, as JSON.stringify leaves it out.
        assert_eq!(Value::Object(o.request_params.unwrap()), json!({"t": 1}));
    }

    #[tokio::test]
    async fn a_callback_option_that_is_no_function_fails_when_called_with_a_type_error() {
        let o = hosted(json!({"onMetric": "x", "hooks": {"afterTool": [1]}, "hooks2": 1}), ClientOptions::from_json)
            .unwrap();
        let e = o.on_metric.unwrap().call(Value::Null).await.unwrap_err();
        assert_eq!(e.to_string(), "createClient: `onMetric` is not a function (got string)");
        assert_eq!(e.js_class(), "TypeError");
        let e = o.hooks.after_tool.unwrap().call(Value::Null).await.unwrap_err();
        assert_eq!(e.to_string(), "createClient: `hooks.afterTool` is not a function (got object)");
        // Hooks that are not an object are no hooks.
        assert!(hosted(json!({"hooks": "x"}), ClientOptions::from_json).unwrap().hooks.before_llm.is_none());
    }

    #[tokio::test]
    async fn a_store_without_its_methods_fails_when_it_is_used() {
        for store in [json!({}), json!("memory"), json!({"get": "nope", "save": {F: 0}})] {
            let o = hosted(json!({ "store": store }), ClientOptions::from_json).unwrap();
            let e = o.store.unwrap().get("c1").await.unwrap_err();
            assert_eq!((e.js_class(), e.to_string().as_str()), ("TypeError", "store.get is not a function"));
        }
        assert!(hosted(json!({"store": null}), ClientOptions::from_json).unwrap().store.is_none());
    }

    #[test]
    fn history_is_an_array_or_null() {
        assert_eq!(RunOptions::from_history_json("null").unwrap().history, None);
        assert_eq!(RunOptions::from_history_json(r#"[{"role":"user"}]"#).unwrap().history.unwrap().len(), 1);
        for bad in ["{}", "\"x\"", "1", "true"] {
            assert_eq!(err(RunOptions::from_history_json(bad)), "run: `history` must be an array of messages");
        }
        assert!(err(RunOptions::from_history_json("[")).starts_with("history: invalid JSON ("));
    }

    #[test]
    fn deep_history_is_read() {
        let deep = format!("[{{\"role\":\"user\",\"content\":{}1{}}}]", "[".repeat(30_000), "]".repeat(30_000));
        let ro = RunOptions::from_history_json(&deep).unwrap();
        assert!(json::deepest() >= 30_000);
        json::on_deep_stack(move || drop(ro));
    }
}
