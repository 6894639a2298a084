//! The unified LLM client (SPEC §8) and its tool-calling loop with suspension (§10).

pub mod hooks;
pub mod transport;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use futures::future::try_join_all;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::json::{field, js_string, obj, truthy};
use crate::tool::ToolContext;
use crate::toolkit::Toolkit;
use crate::types::{pending_of, request_prompt, ToolResult};

pub use hooks::{callback, Callback, Hooks, SharedCallback};
pub use transport::{HttpRequest, HttpResponse, ReqwestTransport, Transport};
pub use wire::Style;

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
    /// `None` ⇒ the built-in reqwest transport.
    pub transport: Option<Arc<dyn Transport>>,
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
        }
    }
}

/// Token usage, summed across the run's LLM calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
}

impl Usage {
    pub fn to_value(&self) -> Value {
        obj([
            ("promptTokens", Value::from(self.prompt_tokens)),
            ("completionTokens", Value::from(self.completion_tokens)),
            ("totalTokens", Value::from(self.total_tokens)),
        ])
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Done,
    Pending,
    Incomplete,
}

impl RunStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            RunStatus::Done => "done",
            RunStatus::Pending => "pending",
            RunStatus::Incomplete => "incomplete",
        }
    }
}

/// One tool call the model made, with its result.
#[derive(Debug, Clone)]
pub struct ToolCallRecord {
    pub name: String,
    pub args: Value,
    pub result: ToolResult,
}

impl ToolCallRecord {
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(5);
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("args".into(), self.args.clone());
        m.insert("output".into(), Value::String(self.result.output.clone()));
        m.insert("isError".into(), Value::Bool(self.result.is_error));
        if let Some(meta) = &self.result.metadata {
            m.insert("metadata".into(), meta.clone());
        }
        Value::Object(m)
    }
}

/// The outcome of `run`.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub text: String,
    pub messages: Vec<Value>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub turns: u32,
    pub usage: Usage,
    pub model: String,
    pub status: RunStatus,
    pub pending: Option<Map<String, Value>>,
    pub limit: Option<String>,
}

impl RunResult {
    /// The wire shape with the reference's key order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(10);
        m.insert("text".into(), Value::String(self.text.clone()));
        m.insert("messages".into(), Value::Array(self.messages.clone()));
        m.insert(
            "toolCalls".into(),
            Value::Array(self.tool_calls.iter().map(ToolCallRecord::to_value).collect()),
        );
        m.insert("toolCallCount".into(), Value::from(self.tool_calls.len()));
        m.insert("turns".into(), Value::from(self.turns));
        m.insert("usage".into(), self.usage.to_value());
        m.insert("model".into(), Value::String(self.model.clone()));
        m.insert("status".into(), Value::String(self.status.as_str().into()));
        if let Some(p) = &self.pending {
            m.insert("pending".into(), Value::Object(p.clone()));
        }
        if let Some(l) = &self.limit {
            m.insert("limit".into(), Value::String(l.clone()));
        }
        Value::Object(m)
    }
}

/// Per-run inputs besides the prompt.
#[derive(Default)]
pub struct RunOptions {
    pub history: Option<Vec<Value>>,
    /// Fires when the caller aborts; the run rejects with `abort_reason`.
    pub cancel: Option<CancellationToken>,
    pub abort_reason: Option<String>,
}

/// The message a plain abort carries when the caller gave no reason of its own.
pub const ABORTED: &str = "This operation was aborted";

/// The client: options plus a transport, shared by every run.
pub struct Client {
    opts: ClientOptions,
    transport: Arc<dyn Transport>,
}

/// What one tool call settled to.
struct Settled {
    args: Value,
    result: ToolResult,
    halted: Option<Map<String, Value>>,
}

/// A tool call as the model asked for it.
struct Call {
    id: Option<Value>,
    name: String,
    args: Value,
}

impl Client {
    pub fn new(opts: ClientOptions) -> Result<Client> {
        if opts.base_url.is_empty() {
            return Err(Error::Invalid("createClient: `baseUrl` is required".into()));
        }
        if opts.model.is_empty() {
            return Err(Error::Invalid("createClient: `model` is required".into()));
        }
        let transport: Arc<dyn Transport> = match &opts.transport {
            Some(t) => t.clone(),
            None => Arc::new(ReqwestTransport::new()?),
        };
        Ok(Client { opts, transport })
    }

    pub fn options(&self) -> &ClientOptions {
        &self.opts
    }

    /// The API key: the option, else the environment (OpenRouter first, then the style's own).
    pub fn resolve_key(&self) -> Result<String> {
        if let Some(k) = self.opts.api_key.as_ref().filter(|k| !k.is_empty()) {
            return Ok(k.clone());
        }
        let env = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
        let own = match self.opts.style {
            Style::Anthropic => "ANTHROPIC_API_KEY",
            Style::OpenAI => "OPENAI_API_KEY",
        };
        env("OPENROUTER_API_KEY")
            .or_else(|| env(own))
            .or_else(|| env("OPENAI_API_KEY"))
            .or_else(|| env("ANTHROPIC_API_KEY"))
            .ok_or(Error::NoApiKey)
    }

    /// Run the tool-calling loop to a final answer, a suspension, or `maxTurns`.
    pub async fn run(&self, prompt: &str, toolkit: &Toolkit, ro: RunOptions) -> Result<RunResult> {
        let key = self.resolve_key()?;
        let cancel = ro.cancel.clone().unwrap_or_default();
        if cancel.is_cancelled() {
            return Err(Error::Aborted(ro.abort_reason.unwrap_or_else(|| ABORTED.into())));
        }
        let work = self.run_loop(key, prompt, toolkit, ro.history);
        let deadline = async {
            match self.opts.timeout_ms {
                Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(Error::Aborted(ro.abort_reason.unwrap_or_else(|| ABORTED.into()))),
            _ = deadline => Err(Error::Timeout(self.opts.timeout_ms.unwrap_or_default())),
            r = work => r,
        }
    }

    fn system(&self, toolkit: &Toolkit) -> String {
        let parts = [
            self.opts.system_prompt.clone().unwrap_or_default(),
            toolkit.skills_prompt(),
        ];
        parts
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    async fn run_loop(
        &self,
        key: String,
        prompt: &str,
        toolkit: &Toolkit,
        history: Option<Vec<Value>>,
    ) -> Result<RunResult> {
        let style = self.opts.style;
        let user = obj([("role", "user".into()), ("content", prompt.into())]);
        let history = history.unwrap_or_default();
        let system = self.system(toolkit);
        let mut messages = history;
        if style == Style::OpenAI && messages.is_empty() && !system.is_empty() {
            messages.push(obj([("role", "system".into()), ("content", system.clone().into())]));
        }
        messages.push(user);
        let mut tools = match style {
            Style::OpenAI => toolkit.to_openai(),
            Style::Anthropic => toolkit.to_anthropic(),
        };
        let mut records: Vec<ToolCallRecord> = Vec::new();
        let mut usage = Usage::default();
        let mut turns = 0u32;
        let model = self.opts.model.clone();

        for turn in 0..self.opts.max_turns {
            turns += 1;
            if let Some(h) = &self.opts.hooks.before_llm {
                let ev = obj([
                    ("messages", Value::Array(messages.clone())),
                    ("tools", Value::Array(tools.clone())),
                    ("model", model.clone().into()),
                    ("turn", turn.into()),
                ]);
                let ov = h.call(ev).await?;
                if let Some(m) = field(&ov, "messages") {
                    messages = expect_array(m, "beforeLLM: `messages` must be an array")?;
                }
                if let Some(t) = field(&ov, "tools") {
                    tools = expect_array(t, "beforeLLM: `tools` must be an array")?;
                }
            }
            let body = wire::body(style, &model, &system, &messages, &tools, false);
            let body = self.finalize_body(body).await?;
            let data = self.llm_call_json(&key, &body).await?;
            wire::add_usage(&mut usage, data.get("usage"), style);
            if let Some(h) = &self.opts.hooks.after_llm {
                h.call(obj([
                    ("response", data.clone()),
                    ("model", model.clone().into()),
                    ("turn", turn.into()),
                ]))
                .await?;
            }
            let (assistant, calls, text) = wire::read_reply(style, &data)?;
            messages.push(assistant);
            if calls.is_empty() {
                return Ok(self.finish(text, messages, records, turns, usage, false));
            }
            let settled = try_join_all(calls.iter().map(|c| self.run_call(toolkit, c, turn))).await?;
            let mut blocks = Vec::new();
            let mut halted = None;
            for (call, s) in calls.iter().zip(settled) {
                let output = s.result.output.clone();
                let is_error = s.result.is_error;
                records.push(ToolCallRecord {
                    name: call.name.clone(),
                    args: s.args,
                    result: s.result,
                });
                match style {
                    Style::OpenAI => messages.push(wire::openai_tool_message(call.id.as_ref(), &output)),
                    Style::Anthropic => blocks.push(wire::anthropic_tool_result(call.id.as_ref(), &output, is_error)),
                }
                if s.halted.is_some() {
                    halted = s.halted;
                    break;
                }
            }
            if style == Style::Anthropic {
                messages.push(obj([("role", "user".into()), ("content", Value::Array(blocks))]));
            }
            if let Some(request) = halted {
                return Ok(RunResult {
                    text: request_prompt(&request),
                    messages,
                    tool_calls: records,
                    turns,
                    usage,
                    model,
                    status: RunStatus::Pending,
                    pending: Some(request),
                    limit: None,
                });
            }
        }
        let text = match style {
            Style::OpenAI => last_text(&messages),
            Style::Anthropic => String::new(),
        };
        Ok(self.finish(text, messages, records, turns, usage, true))
    }

    fn finish(
        &self,
        text: String,
        messages: Vec<Value>,
        records: Vec<ToolCallRecord>,
        turns: u32,
        usage: Usage,
        exhausted: bool,
    ) -> RunResult {
        let incomplete = exhausted && text.is_empty();
        RunResult {
            text,
            messages,
            tool_calls: records,
            turns,
            usage,
            model: self.opts.model.clone(),
            status: if incomplete {
                RunStatus::Incomplete
            } else {
                RunStatus::Done
            },
            pending: None,
            limit: incomplete.then(|| "maxTurns".to_string()),
        }
    }

    /// One tool call through the hooks, then the §10 rule when it suspends.
    async fn run_call(&self, toolkit: &Toolkit, call: &Call, turn: u32) -> Result<Settled> {
        let (args, result) = self.run_tool(toolkit, call, turn).await?;
        let Some(request) = pending_of(&result).cloned() else {
            return Ok(Settled {
                args,
                result,
                halted: None,
            });
        };
        let prompt = request_prompt(&request);
        let Some(wait_for) = &self.opts.wait_for else {
            return Ok(Settled {
                args,
                result: ToolResult::error(prompt),
                halted: Some(request),
            });
        };
        let answer = wait_for.call(Value::Object(request)).await?;
        if field(&answer, "ok").is_none() {
            return Ok(Settled {
                args,
                result: ToolResult::error(format!("declined/expired: {prompt}")),
                halted: None,
            });
        }
        let ctx = ToolContext {
            answer: Some(answer),
            ..Default::default()
        };
        let mut result = toolkit.execute(&call.name, args.clone(), ctx).await?;
        if let Some(h) = &self.opts.hooks.after_tool {
            let ov = h.call(tool_event(call, &args, Some(&result), turn)).await?;
            if let Some(r) = field(&ov, "result") {
                result = ToolResult::from_value(r.clone());
            }
        }
        if pending_of(&result).is_some() {
            result = ToolResult::error(format!("unresolved: {prompt}"));
        }
        Ok(Settled {
            args,
            result,
            halted: None,
        })
    }

    /// beforeTool (may short-circuit or rewrite args) → execute → afterTool (skipped on a suspension).
    async fn run_tool(&self, toolkit: &Toolkit, call: &Call, turn: u32) -> Result<(Value, ToolResult)> {
        let mut args = call.args.clone();
        if let Some(h) = &self.opts.hooks.before_tool {
            let ov = h.call(tool_event(call, &args, None, turn)).await?;
            if let Some(r) = field(&ov, "result") {
                return Ok((args, ToolResult::from_value(r.clone())));
            }
            if let Some(a) = field(&ov, "args") {
                args = a.clone();
            }
        }
        let mut result = toolkit
            .execute(&call.name, args.clone(), ToolContext::default())
            .await?;
        if let Some(h) = &self.opts.hooks.after_tool {
            if pending_of(&result).is_none() {
                let ov = h.call(tool_event(call, &args, Some(&result), turn)).await?;
                if let Some(r) = field(&ov, "result") {
                    result = ToolResult::from_value(r.clone());
                }
            }
        }
        Ok((args, result))
    }

    /// requestParams merge (forbidden keys refused with a warning), then bodyTransform.
    async fn finalize_body(&self, mut body: Map<String, Value>) -> Result<Value> {
        if let Some(rp) = &self.opts.request_params {
            for (k, v) in rp {
                if k == "messages" || k == "tools" || k == "stream" {
                    eprintln!("[toolnexus] requestParams key \"{k}\" is not allowed — ignored (use bodyTransform)");
                    continue;
                }
                body.insert(k.clone(), v.clone());
            }
        }
        let body = Value::Object(body);
        if let Some(bt) = &self.opts.body_transform {
            let out = bt.call(body.clone()).await?;
            if truthy(&out) {
                return Ok(out);
            }
        }
        Ok(body)
    }

    fn endpoint(&self) -> String {
        let base = self.opts.base_url.strip_suffix('/').unwrap_or(&self.opts.base_url);
        match self.opts.style {
            Style::OpenAI => format!("{base}/chat/completions"),
            Style::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Style::Anthropic => format!("{base}/v1/messages"),
        }
    }

    fn headers(&self, key: &str) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = match self.opts.style {
            Style::OpenAI => vec![
                ("Authorization".into(), format!("Bearer {key}")),
                ("Content-Type".into(), "application/json".into()),
            ],
            Style::Anthropic => vec![
                ("x-api-key".into(), key.into()),
                ("anthropic-version".into(), "2023-06-01".into()),
                ("Content-Type".into(), "application/json".into()),
            ],
        };
        for (k, v) in &self.opts.headers {
            match h.iter_mut().find(|(hk, _)| hk == k) {
                Some(slot) => slot.1 = v.clone(),
                None => h.push((k.clone(), v.clone())),
            }
        }
        h
    }

    /// One non-streaming call: POST with retries, a non-2xx is `LLM <status>: <body>`.
    async fn llm_call_json(&self, key: &str, body: &Value) -> Result<Value> {
        let req = HttpRequest {
            url: self.endpoint(),
            headers: self.headers(key),
            body: body.to_string(),
        };
        let res = self.post_with_retries(req).await?;
        if !res.ok() {
            return Err(Error::Http {
                status: res.status,
                body: res.body,
            });
        }
        serde_json::from_str(&res.body).map_err(|e| {
            Error::InvalidResponse(format!("LLM response is not valid JSON ({e}): {}", snippet(&res.body)))
        })
    }

    /// Retry 429/5xx and network failures with exponential backoff (Retry-After honoured
    /// in its delay-seconds form); the last response or error is returned as it is.
    async fn post_with_retries(&self, req: HttpRequest) -> Result<HttpResponse> {
        let retries = self.opts.retries;
        let base = self.opts.retry_base_ms;
        let mut attempt = 0u32;
        loop {
            match self.transport.post(req.clone()).await {
                Ok(res) if res.ok() => return Ok(res),
                Ok(res) => {
                    let retryable = matches!(res.status, 429 | 500 | 502 | 503 | 504);
                    if !retryable || attempt >= retries {
                        return Ok(res);
                    }
                    let wait = retry_after_ms(res.header("retry-after")).unwrap_or_else(|| backoff_ms(base, attempt));
                    tokio::time::sleep(Duration::from_secs_f64(wait / 1000.0)).await;
                }
                Err(e) => {
                    if attempt >= retries {
                        return Err(e);
                    }
                    tokio::time::sleep(Duration::from_secs_f64(backoff_ms(base, attempt) / 1000.0)).await;
                }
            }
            attempt += 1;
        }
    }
}

fn backoff_ms(base: f64, attempt: u32) -> f64 {
    let jitter: f64 = rand::random::<f64>() * 100.0;
    (base * 2f64.powi(attempt as i32) + jitter).max(0.0)
}

/// `Retry-After` in its delay-seconds form only: ASCII digits, at most 2147483647.
pub fn retry_after_ms(raw: Option<&str>) -> Option<f64> {
    let s = raw?.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = s.parse().ok()?;
    (secs <= 2_147_483_647).then_some(secs as f64 * 1000.0)
}

fn tool_event(call: &Call, args: &Value, result: Option<&ToolResult>, turn: u32) -> Value {
    let mut m = Map::with_capacity(5);
    m.insert("name".into(), Value::String(call.name.clone()));
    m.insert("args".into(), args.clone());
    if let Some(r) = result {
        m.insert("result".into(), r.to_value());
    }
    if let Some(id) = &call.id {
        m.insert("id".into(), id.clone());
    }
    m.insert("turn".into(), turn.into());
    Value::Object(m)
}

fn expect_array(v: &Value, msg: &str) -> Result<Vec<Value>> {
    v.as_array().cloned().ok_or_else(|| Error::Invalid(msg.into()))
}

fn last_text(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match (m.get("role"), m.get("content")) {
            (Some(Value::String(r)), Some(Value::String(c))) if r == "assistant" => Some(c.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn snippet(body: &str) -> String {
    let mut s: String = body.chars().take(200).collect();
    if s.len() < body.len() {
        s.push('…');
    }
    s
}

pub(crate) fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(other) => js_string(other),
    }
}
