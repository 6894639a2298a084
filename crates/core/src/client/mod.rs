//! The unified LLM client (SPEC §8) and its tool-calling loop with suspension (§10).

pub mod hooks;
pub mod http;
pub mod inprocess;
pub mod metrics;
mod options;
pub mod single;
mod sse;
pub mod store;
pub mod transport;
mod wire;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::try_join_all;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::json::{field, js_string, obj, truthy};
use crate::tool::ToolContext;
use crate::toolkit::Toolkit;
use crate::types::{pending_of, request_prompt, ToolResult};

pub use hooks::{callback, Callback, Hooks, SharedCallback};
pub use metrics::{MetricEvent, Registry};
pub use options::ClientOptions;
pub use store::{ConversationStore, InMemoryStore};
pub use transport::{HttpRequest, HttpResponse, Reply, StreamResponse, Transport};
pub use wire::Style;

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
        m.insert("toolCalls".into(), Value::Array(self.tool_calls.iter().map(ToolCallRecord::to_value).collect()));
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
#[derive(Default, Clone)]
pub struct RunOptions {
    pub history: Option<Vec<Value>>,
    pub abort: Option<Abort>,
}

/// The message a plain abort carries when the caller gave no reason of its own.
pub const ABORTED: &str = "This operation was aborted";

/// A cancellation handle with the reason it fired for.
#[derive(Clone, Default)]
pub struct Abort {
    token: CancellationToken,
    reason: Arc<Mutex<Option<String>>>,
}

impl Abort {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fire; the first reason given sticks.
    pub fn abort(&self, reason: Option<String>) {
        {
            let mut r = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
            if r.is_none() {
                *r = reason;
            }
        }
        self.token.cancel();
    }

    pub fn is_aborted(&self) -> bool {
        self.token.is_cancelled()
    }

    pub fn reason(&self) -> String {
        self.reason.lock().unwrap_or_else(PoisonError::into_inner).clone().unwrap_or_else(|| ABORTED.into())
    }

    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

/// The client: options plus a transport, a metrics registry and a conversation store.
pub struct Client {
    opts: ClientOptions,
    transport: Arc<dyn Transport>,
    registry: Registry,
    store: Arc<dyn ConversationStore>,
}

/// What one tool call settled to.
struct Settled {
    args: Value,
    result: ToolResult,
    halted: Option<Map<String, Value>>,
}

/// A tool call as the model asked for it.
pub(crate) struct Call {
    pub id: Option<Value>,
    pub name: String,
    pub args: Value,
}

/// The loop's working state; kept outside the loop's future so a failed run can still
/// report how far it got.
struct RunState {
    messages: Vec<Value>,
    tools: Vec<Value>,
    records: Vec<ToolCallRecord>,
    usage: Usage,
    turns: u32,
    /// When the LLM call in flight started, if one is: an abort then still reports it as a
    /// failed `llm` call, as the reference does.
    llm_since: Option<Instant>,
}

/// Forwards a stream's text deltas to an `onText` callback and drops every other event.
struct TextOnly<'a>(&'a dyn Callback);

#[async_trait::async_trait]
impl Callback for TextOnly<'_> {
    async fn call(&self, ev: Value) -> Result<Value> {
        match (ev.get("type").and_then(Value::as_str), ev.get("delta")) {
            (Some("text"), Some(d)) => self.0.call(d.clone()).await,
            _ => Ok(Value::Null),
        }
    }
}

impl Client {
    pub fn new(opts: ClientOptions) -> Result<Client> {
        Self::with_store(opts, Arc::new(InMemoryStore::default()))
    }

    /// A client whose `ask` remembers conversations in `store`.
    pub fn with_store(opts: ClientOptions, store: Arc<dyn ConversationStore>) -> Result<Client> {
        // Nothing is refused here, as in the reference: a missing base URL fails the first
        // request, a missing model is left out of the body.
        let transport: Arc<dyn Transport> = match &opts.transport {
            Some(t) => t.clone(),
            None => Arc::new(http::FetchTransport::shared()),
        };
        Ok(Client { opts, transport, registry: Registry::default(), store })
    }

    pub fn options(&self) -> &ClientOptions {
        &self.opts
    }

    pub fn store(&self) -> Arc<dyn ConversationStore> {
        self.store.clone()
    }

    /// The Prometheus text of everything recorded so far.
    pub fn metrics(&self) -> String {
        self.registry.render()
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
        self.execute(prompt, toolkit, ro, None).await
    }

    /// The same loop, streaming: every event goes to `sink` (awaited, in order), ending
    /// with `done`. With an `id`, the thread is loaded from the store first and saved
    /// back just before `done`.
    pub async fn stream(
        &self,
        prompt: &str,
        toolkit: &Toolkit,
        id: Option<&str>,
        mut ro: RunOptions,
        sink: &dyn Callback,
    ) -> Result<RunResult> {
        if let Some(id) = id {
            ro.history = Some(self.store.get(id).await?.unwrap_or_default());
        }
        let result = self.execute(prompt, toolkit, ro, Some(sink)).await?;
        if let Some(id) = id {
            self.store.save(id, result.messages.clone()).await?;
        }
        sink.call(obj([("type", "done".into()), ("result", result.to_value())])).await?;
        Ok(result)
    }

    /// `ask`: with an `id` the store remembers the thread; with `on_text` the answer streams
    /// its text deltas there; without either it is `run`.
    pub async fn ask(
        &self,
        prompt: &str,
        toolkit: &Toolkit,
        id: Option<&str>,
        on_text: Option<&dyn Callback>,
        ro: RunOptions,
    ) -> Result<RunResult> {
        if let Some(on_text) = on_text {
            return self.stream(prompt, toolkit, id, ro, &TextOnly(on_text)).await;
        }
        let Some(id) = id else {
            return self.run(prompt, toolkit, ro).await;
        };
        let history = self.store.get(id).await?.unwrap_or_default();
        let result = self.run(prompt, toolkit, RunOptions { history: Some(history), ..ro }).await?;
        self.store.save(id, result.messages.clone()).await?;
        Ok(result)
    }

    /// Feed an event to the registry and to `onMetric`.
    async fn emit(&self, ev: MetricEvent) -> Result<()> {
        self.registry.record(&ev);
        if let Some(cb) = &self.opts.on_metric {
            cb.call(ev.to_value()).await?;
        }
        Ok(())
    }

    async fn execute(
        &self,
        prompt: &str,
        toolkit: &Toolkit,
        ro: RunOptions,
        sink: Option<&dyn Callback>,
    ) -> Result<RunResult> {
        let key = self.resolve_key()?;
        let abort = ro.abort;
        let started = Instant::now();
        let style = self.opts.style;
        let system = self.system(toolkit);
        let mut messages = ro.history.unwrap_or_default();
        if style == Style::OpenAI && messages.is_empty() && !system.is_empty() {
            messages.push(obj([("role", "system".into()), ("content", system.clone().into())]));
        }
        messages.push(obj([("role", "user".into()), ("content", prompt.into())]));
        let tools = match style {
            Style::OpenAI => toolkit.to_openai(),
            Style::Anthropic => toolkit.to_anthropic(),
        };
        let mut st = RunState { messages, tools, records: vec![], usage: Usage::default(), turns: 0, llm_since: None };
        let outcome = self.bounded(abort, self.drive(&mut st, &key, &system, toolkit, sink, started)).await;
        match outcome {
            Ok(r) => Ok(r),
            Err(e) => {
                if let Some(t0) = st.llm_since.take() {
                    self.llm_metric(false, t0, (0, 0), 1).await?;
                }
                self.run_metric(&st, started, Some(e.to_string())).await?;
                Err(e)
            }
        }
    }

    /// Bound `work` by the caller's abort and the client's `timeoutMs`, whichever comes first.
    async fn bounded<T>(&self, abort: Option<Abort>, work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        let abort = abort.unwrap_or_default();
        if abort.is_aborted() {
            return Err(Error::Aborted(abort.reason()));
        }
        let token = abort.token();
        let deadline = async {
            match self.opts.timeout_ms {
                // Unlike a retry's back-off, the deadline alone keeps no host alive (an unreferenced timer).
                Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            biased;
            _ = token.cancelled() => Err(Error::Aborted(abort.reason())),
            _ = deadline => Err(Error::Timeout(self.opts.timeout_ms.unwrap_or_default())),
            r = work => r,
        }
    }

    fn system(&self, toolkit: &Toolkit) -> String {
        let parts = [self.opts.system_prompt.clone().unwrap_or_default(), toolkit.skills_prompt()];
        parts.into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n\n")
    }

    /// The loop itself, shared by `run` (no sink) and `stream` (events to the sink).
    async fn drive(
        &self,
        st: &mut RunState,
        key: &str,
        system: &str,
        toolkit: &Toolkit,
        sink: Option<&dyn Callback>,
        started: Instant,
    ) -> Result<RunResult> {
        let style = self.opts.style;
        let model = self.opts.model.clone();
        for turn in 0..self.opts.max_turns {
            st.turns += 1;
            if let Some(h) = &self.opts.hooks.before_llm {
                let ev = obj([
                    ("messages", Value::Array(st.messages.clone())),
                    ("tools", Value::Array(st.tools.clone())),
                    ("model", model.clone().into()),
                    ("turn", turn.into()),
                ]);
                let ov = h.call(ev).await?;
                if let Some(m) = field(&ov, "messages") {
                    st.messages = expect_array(m, "beforeLLM: `messages` must be an array")?;
                }
                if let Some(t) = field(&ov, "tools") {
                    st.tools = expect_array(t, "beforeLLM: `tools` must be an array")?;
                }
            }
            let body = wire::body(style, &model, system, &st.messages, &st.tools, sink.is_some());
            let body = self.finalize_body(body).await?;
            st.llm_since = Some(Instant::now());
            let reply = match sink {
                None => {
                    let data = self.llm_json(key, &body).await;
                    st.llm_since = None;
                    let data = data?;
                    wire::add_usage(&mut st.usage, data.get("usage"), style);
                    self.after_llm(data.clone(), turn).await?;
                    let (assistant, calls, text) = wire::read_reply(style, &data)?;
                    sse::Streamed { assistant, finished: calls.is_empty(), calls, text }
                }
                Some(sink) => {
                    let s = self.llm_stream(key, &body, sink, &mut st.usage).await;
                    st.llm_since = None;
                    let s = s?;
                    let response = obj([("streamed", true.into()), ("usage", st.usage.to_value())]);
                    self.after_llm(response, turn).await?;
                    s
                }
            };
            st.messages.push(reply.assistant);
            if reply.finished {
                if let Some(sink) = sink {
                    sink.call(obj([("type", "usage".into()), ("usage", st.usage.to_value())])).await?;
                }
                return self.end_run(st, reply.text, false, started).await;
            }
            let calls = reply.calls;
            let settled: Vec<Settled> = match sink {
                None => try_join_all(calls.iter().map(|c| self.run_call(toolkit, c, turn))).await?,
                Some(sink) => {
                    for c in &calls {
                        let mut ev = Map::with_capacity(4);
                        ev.insert("type".into(), "tool_call".into());
                        if let Some(id) = &c.id {
                            ev.insert("id".into(), id.clone());
                        }
                        ev.insert("name".into(), c.name.as_str().into());
                        ev.insert("args".into(), c.args.clone());
                        sink.call(Value::Object(ev)).await?;
                    }
                    let ran = try_join_all(calls.iter().map(|c| self.run_tool(toolkit, c, turn))).await?;
                    self.settle_in_order(toolkit, &calls, ran, turn, sink).await?
                }
            };
            let mut blocks = Vec::new();
            let mut halted = None;
            for (call, s) in calls.iter().zip(settled) {
                match style {
                    Style::OpenAI => st.messages.push(wire::openai_tool_message(call.id.as_ref(), &s.result.output)),
                    Style::Anthropic => {
                        blocks.push(wire::anthropic_tool_result(call.id.as_ref(), &s.result.output, s.result.is_error))
                    }
                }
                st.records.push(ToolCallRecord { name: call.name.clone(), args: s.args, result: s.result });
                if s.halted.is_some() {
                    halted = s.halted;
                    break;
                }
            }
            if style == Style::Anthropic {
                st.messages.push(obj([("role", "user".into()), ("content", Value::Array(blocks))]));
            }
            if let Some(request) = halted {
                return self.pending_run(st, request, started).await;
            }
        }
        let text = match style {
            Style::OpenAI => last_text(&st.messages),
            Style::Anthropic => String::new(),
        };
        self.end_run(st, text, true, started).await
    }

    /// Streaming order (§10): tools already ran together; now, one by one in call order,
    /// surface a suspension before resolving it, and report each result. Stops at a halt.
    async fn settle_in_order(
        &self,
        toolkit: &Toolkit,
        calls: &[Call],
        ran: Vec<(Value, ToolResult)>,
        turn: u32,
        sink: &dyn Callback,
    ) -> Result<Vec<Settled>> {
        let mut out = Vec::with_capacity(ran.len());
        for (call, (args, result)) in calls.iter().zip(ran) {
            let s = match pending_of(&result).cloned() {
                None => Settled { args, result, halted: None },
                Some(request) => {
                    sink.call(obj([("type", "pending".into()), ("request", Value::Object(request.clone()))])).await?;
                    self.resolve_pending(toolkit, call, args, request, turn).await?
                }
            };
            if s.halted.is_some() {
                out.push(s);
                return Ok(out);
            }
            let mut ev = Map::with_capacity(5);
            ev.insert("type".into(), "tool_result".into());
            if let Some(id) = &call.id {
                ev.insert("id".into(), id.clone());
            }
            ev.insert("name".into(), call.name.as_str().into());
            ev.insert("output".into(), s.result.output.as_str().into());
            ev.insert("isError".into(), s.result.is_error.into());
            sink.call(Value::Object(ev)).await?;
            out.push(s);
        }
        Ok(out)
    }

    async fn after_llm(&self, response: Value, turn: u32) -> Result<()> {
        if let Some(h) = &self.opts.hooks.after_llm {
            let ev = obj([("response", response), ("model", self.opts.model.clone().into()), ("turn", turn.into())]);
            h.call(ev).await?;
        }
        Ok(())
    }

    /// The one `run` event of a run; `error` is set when the run failed.
    async fn run_metric(&self, st: &RunState, started: Instant, error: Option<String>) -> Result<()> {
        self.emit(MetricEvent::Run {
            model: self.opts.model.clone(),
            turns: st.turns,
            tool_calls: st.records.len(),
            total_tokens: st.usage.total_tokens,
            ms: elapsed_ms(started),
            error,
        })
        .await
    }

    /// The run ended with text, or ran out of turns (`exhausted`): with no text that is
    /// a loud "incomplete", never a silent "done".
    async fn end_run(&self, st: &mut RunState, text: String, exhausted: bool, started: Instant) -> Result<RunResult> {
        self.run_metric(st, started, None).await?;
        let incomplete = exhausted && text.is_empty();
        Ok(RunResult {
            text,
            messages: std::mem::take(&mut st.messages),
            tool_calls: std::mem::take(&mut st.records),
            turns: st.turns,
            usage: st.usage,
            model: self.opts.model.clone(),
            status: if incomplete { RunStatus::Incomplete } else { RunStatus::Done },
            pending: None,
            limit: incomplete.then(|| "maxTurns".to_string()),
        })
    }

    /// A tool suspended and there is no `waitFor`: halt durably with the request.
    async fn pending_run(&self, st: &mut RunState, request: Map<String, Value>, started: Instant) -> Result<RunResult> {
        self.run_metric(st, started, None).await?;
        Ok(RunResult {
            text: request_prompt(&request),
            messages: std::mem::take(&mut st.messages),
            tool_calls: std::mem::take(&mut st.records),
            turns: st.turns,
            usage: st.usage,
            model: self.opts.model.clone(),
            status: RunStatus::Pending,
            pending: Some(request),
            limit: None,
        })
    }

    /// One tool call through the hooks, then the §10 rule when it suspends.
    async fn run_call(&self, toolkit: &Toolkit, call: &Call, turn: u32) -> Result<Settled> {
        let (args, result) = self.run_tool(toolkit, call, turn).await?;
        match pending_of(&result).cloned() {
            None => Ok(Settled { args, result, halted: None }),
            Some(request) => self.resolve_pending(toolkit, call, args, request, turn).await,
        }
    }

    /// §10: ask `waitFor`; on ok retry the same call once with `ctx.answer`. Without a
    /// `waitFor` the call halts the run.
    async fn resolve_pending(
        &self,
        toolkit: &Toolkit,
        call: &Call,
        args: Value,
        request: Map<String, Value>,
        turn: u32,
    ) -> Result<Settled> {
        let prompt = request_prompt(&request);
        let Some(wait_for) = &self.opts.wait_for else {
            return Ok(Settled { args, result: ToolResult::error(prompt), halted: Some(request) });
        };
        let answer = wait_for.call(Value::Object(request)).await?;
        if field(&answer, "ok").is_none() {
            return Ok(Settled {
                args,
                result: ToolResult::error(format!("declined/expired: {prompt}")),
                halted: None,
            });
        }
        let t0 = Instant::now();
        let ctx = ToolContext { answer: Some(answer), ..Default::default() };
        let mut result = toolkit.execute(&call.name, args.clone(), ctx).await?;
        if let Some(h) = &self.opts.hooks.after_tool {
            let ov = h.call(tool_event(call, &args, Some(&result), turn)).await?;
            if let Some(r) = field(&ov, "result") {
                result = ToolResult::from_value(r.clone());
            }
        }
        self.emit_tool(toolkit, &call.name, &result, t0).await?;
        if pending_of(&result).is_some() {
            result = ToolResult::error(format!("unresolved: {prompt}"));
        }
        Ok(Settled { args, result, halted: None })
    }

    /// beforeTool (may short-circuit or rewrite args) → execute → afterTool (skipped on a suspension).
    async fn run_tool(&self, toolkit: &Toolkit, call: &Call, turn: u32) -> Result<(Value, ToolResult)> {
        let t0 = Instant::now();
        let mut args = call.args.clone();
        if let Some(h) = &self.opts.hooks.before_tool {
            let ov = h.call(tool_event(call, &args, None, turn)).await?;
            if let Some(r) = field(&ov, "result") {
                let result = ToolResult::from_value(r.clone());
                self.emit_tool(toolkit, &call.name, &result, t0).await?;
                return Ok((args, result));
            }
            if let Some(a) = field(&ov, "args") {
                args = a.clone();
            }
        }
        let mut result = toolkit.execute(&call.name, args.clone(), ToolContext::default()).await?;
        if let Some(h) = &self.opts.hooks.after_tool {
            if pending_of(&result).is_none() {
                let ov = h.call(tool_event(call, &args, Some(&result), turn)).await?;
                if let Some(r) = field(&ov, "result") {
                    result = ToolResult::from_value(r.clone());
                }
            }
        }
        self.emit_tool(toolkit, &call.name, &result, t0).await?;
        Ok((args, result))
    }

    /// The `tool` metric; a suspension is `pending`, never an error.
    async fn emit_tool(&self, toolkit: &Toolkit, name: &str, result: &ToolResult, t0: Instant) -> Result<()> {
        let source = toolkit.get(name).map_or_else(|| "custom".to_string(), |t| t.source().to_string());
        let pending = pending_of(result).is_some();
        self.emit(MetricEvent::Tool {
            tool: name.to_string(),
            source,
            is_error: !pending && result.is_error,
            ms: elapsed_ms(t0),
            pending,
        })
        .await
    }

    /// requestParams merge (forbidden keys refused with a warning), then bodyTransform.
    async fn finalize_body(&self, mut body: Map<String, Value>) -> Result<Value> {
        if let Some(rp) = &self.opts.request_params {
            for (k, v) in rp {
                if k == "messages" || k == "tools" || k == "stream" {
                    crate::warn::warn(&format!(
                        "[toolnexus] requestParams key \"{k}\" is not allowed — ignored (use bodyTransform)"
                    ));
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

    /// The request headers; `translate` spells them in lower case, as the reference does there.
    fn headers(&self, key: &str, translate: bool) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = match (self.opts.style, translate) {
            (Style::OpenAI, false) => vec![
                ("Authorization".into(), format!("Bearer {key}")),
                ("Content-Type".into(), "application/json".into()),
            ],
            (Style::OpenAI, true) => vec![
                ("content-type".into(), "application/json".into()),
                ("authorization".into(), format!("Bearer {key}")),
            ],
            (Style::Anthropic, false) => vec![
                ("x-api-key".into(), key.into()),
                ("anthropic-version".into(), "2023-06-01".into()),
                ("Content-Type".into(), "application/json".into()),
            ],
            (Style::Anthropic, true) => vec![
                ("content-type".into(), "application/json".into()),
                ("x-api-key".into(), key.into()),
                ("anthropic-version".into(), "2023-06-01".into()),
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

    fn request(&self, key: &str, body: &Value, translate: bool) -> HttpRequest {
        HttpRequest { url: self.endpoint(), headers: self.headers(key, translate), body: body.to_string() }
    }

    async fn llm_metric(&self, ok: bool, t0: Instant, tokens: (i64, i64), attempts: u32) -> Result<()> {
        let model = self.opts.model.clone();
        let (prompt_tokens, completion_tokens) = tokens;
        self.emit(MetricEvent::Llm { model, ok, ms: elapsed_ms(t0), prompt_tokens, completion_tokens, attempts }).await
    }

    /// One non-streaming call: POST with retries; a non-2xx is `LLM <status>: <body>`.
    async fn llm_json(&self, key: &str, body: &Value) -> Result<Value> {
        self.llm_json_with(key, body, false).await
    }

    async fn llm_json_with(&self, key: &str, body: &Value, translate: bool) -> Result<Value> {
        let t0 = Instant::now();
        let req = self.request(key, body, translate);
        let mut attempts = 0;
        let outcome = async {
            let res = self.send_with_retries(req, |r| self.transport.post(r), &mut attempts).await?;
            if !res.ok() {
                return Err(Error::Http { status: res.status, body: res.body });
            }
            crate::json::parse_reply(&res.body)
                .await
                .map_err(|e| Error::NotJson(format!("LLM response is not valid JSON ({e}): {}", snippet(&res.body))))
        }
        .await;
        match outcome {
            Ok(data) => {
                let mut one = Usage::default();
                wire::add_usage(&mut one, data.get("usage"), self.opts.style);
                self.llm_metric(true, t0, (one.prompt_tokens, one.completion_tokens), attempts).await?;
                Ok(data)
            }
            Err(e) => {
                self.llm_metric(false, t0, (0, 0), attempts).await?;
                Err(e)
            }
        }
    }

    /// One streaming call: text deltas go to the sink as they arrive; the turn is assembled.
    async fn llm_stream(
        &self,
        key: &str,
        body: &Value,
        sink: &dyn Callback,
        usage: &mut Usage,
    ) -> Result<sse::Streamed> {
        let t0 = Instant::now();
        let before = *usage;
        let req = self.request(key, body, false);
        let style = self.opts.style;
        let mut attempts = 0;
        let outcome = async {
            let res = self.send_with_retries(req, |r| self.transport.post_stream(r), &mut attempts).await?;
            if !res.ok() {
                let status = res.status;
                return Err(Error::Http { status, body: res.text().await? });
            }
            let mut lines = sse::Lines::new(res.body);
            let mut asm = sse::Assembler::new(style);
            while let Some(line) = lines.next_line().await? {
                let Some(rest) = line.strip_prefix("data:") else {
                    continue;
                };
                let (delta, done) = asm.feed(rest.trim(), usage);
                if let Some(d) = delta {
                    sink.call(obj([("type", "text".into()), ("delta", d.into())])).await?;
                }
                if done {
                    break;
                }
            }
            Ok(asm.finish())
        }
        .await;
        match outcome {
            Ok(s) => {
                let (p, c) =
                    (usage.prompt_tokens - before.prompt_tokens, usage.completion_tokens - before.completion_tokens);
                self.llm_metric(true, t0, (p, c), attempts).await?;
                Ok(s)
            }
            Err(e) => {
                self.llm_metric(false, t0, (0, 0), attempts).await?;
                Err(e)
            }
        }
    }

    /// Ask `onError` (or the default: retryable ⇒ retry) whether to try again.
    async fn should_retry(&self, info: Value, retryable: bool) -> Result<bool> {
        match &self.opts.on_error {
            None => Ok(retryable),
            Some(cb) => Ok(cb.call(info).await?.as_str() != Some("fail")),
        }
    }

    /// Retry 429/5xx and network failures with exponential backoff (Retry-After honoured in
    /// its delay-seconds form), as `onError` allows and never past `retries`.
    async fn send_with_retries<R, F, Fut>(&self, req: HttpRequest, send: F, attempts: &mut u32) -> Result<R>
    where
        R: Reply,
        F: Fn(HttpRequest) -> Fut,
        Fut: std::future::Future<Output = Result<R>>,
    {
        let retries = self.opts.retries;
        let base = self.opts.retry_base_ms;
        let mut attempt = 0u32;
        loop {
            *attempts = attempt + 1;
            match send(req.clone()).await {
                Ok(res) if res.ok() => return Ok(res),
                Ok(res) => {
                    let retryable = matches!(res.status(), 429 | 500 | 502 | 503 | 504);
                    let info = obj([
                        ("status", res.status().into()),
                        ("attempt", attempt.into()),
                        ("retryable", retryable.into()),
                    ]);
                    if !self.should_retry(info, retryable).await? || attempt >= retries {
                        return Ok(res);
                    }
                    let wait = retry_after_ms(res.header("retry-after")).unwrap_or_else(|| backoff_ms(base, attempt));
                    crate::host::sleep(Duration::from_secs_f64(wait / 1000.0)).await;
                }
                Err(e) => {
                    let error = e.js_shape().unwrap_or_else(|| e.to_string().into());
                    let info = obj([("error", error), ("attempt", attempt.into()), ("retryable", true.into())]);
                    if !self.should_retry(info, true).await? || attempt >= retries {
                        return Err(e);
                    }
                    crate::host::sleep(Duration::from_secs_f64(backoff_ms(base, attempt) / 1000.0)).await;
                }
            }
            attempt += 1;
        }
    }
}

fn elapsed_ms(t0: Instant) -> u64 {
    u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX)
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
