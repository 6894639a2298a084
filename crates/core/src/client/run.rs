//! The client (§8): its transport, metrics registry and conversation store, and the three
//! ways in (`run`, `stream`, `ask`). The loop itself is in `turns`, the LLM call in `llm`.

use std::sync::Arc;

use serde_json::Value;

use super::http::FetchTransport;
use super::metrics::{MetricEvent, Registry};
use super::options::ClientOptions;
use super::park::Scope;
use super::parked::Start;
use super::result::{RunOptions, RunResult};
use super::store::{ConversationStore, InMemoryStore};
use super::transport::Transport;
use super::wire::Style;
use crate::callback::Callback;
use crate::error::{Error, Result};
use crate::json::obj;
use crate::toolkit::Toolkit;

/// The client: options plus a transport, a metrics registry and a conversation store.
pub struct Client {
    pub(super) opts: ClientOptions,
    pub(super) transport: Arc<dyn Transport>,
    pub(super) registry: Registry,
    pub(super) store: Arc<dyn ConversationStore>,
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
    /// A client whose `ask` remembers conversations in the options' store (by default, a fresh
    /// in-memory one).
    pub fn new(opts: ClientOptions) -> Result<Client> {
        let store = opts.store.clone().unwrap_or_else(|| Arc::new(InMemoryStore::default()));
        Self::with_store(opts, store)
    }

    /// A client whose `ask` remembers conversations in `store`.
    pub fn with_store(opts: ClientOptions, store: Arc<dyn ConversationStore>) -> Result<Client> {
        // Nothing is refused here, as in the reference: a missing base URL fails the first
        // request, a missing model is left out of the body.
        let transport: Arc<dyn Transport> = match &opts.transport {
            Some(t) => t.clone(),
            None => Arc::new(FetchTransport::shared()),
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

    /// Run the tool-calling loop to a final answer, a suspension, or `maxTurns`. A suspension
    /// is recorded (see `park`) before the result is handed out.
    pub async fn run(&self, prompt: &str, toolkit: &Toolkit, ro: RunOptions) -> Result<RunResult> {
        let own = ro.own_parks;
        let mut result = self.run_only(prompt, toolkit, ro).await?;
        self.record_park(&Scope::Run, &mut result, own).await?;
        Ok(result)
    }

    async fn run_only(&self, prompt: &str, toolkit: &Toolkit, ro: RunOptions) -> Result<RunResult> {
        crate::warn::scope_with(self.opts.logger.as_ref(), self.execute(Start::Prompt(prompt), toolkit, ro, None)).await
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
        let own = ro.own_parks;
        let mut result = crate::warn::scope_with(
            self.opts.logger.as_ref(),
            self.execute(Start::Prompt(prompt), toolkit, ro, Some(sink)),
        )
        .await?;
        let scope = id.map(|id| Scope::Conversation(id.to_string())).unwrap_or(Scope::Run);
        self.record_park(&scope, &mut result, own).await?;
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
        let own = ro.own_parks;
        let mut result = self.run_only(prompt, toolkit, RunOptions { history: Some(history), ..ro }).await?;
        self.record_park(&Scope::Conversation(id.to_string()), &mut result, own).await?;
        self.store.save(id, result.messages.clone()).await?;
        Ok(result)
    }

    /// `work` (a run of this client's) with its spans recorded, when `telemetry` is on and the
    /// host named the context the run was started in (`root`); as it is otherwise.
    pub async fn traced<F: std::future::Future>(&self, root: Option<u64>, work: F) -> F::Output {
        match (&self.opts.telemetry, root) {
            (Some(tracing), Some(root)) => tracing.run(root, work).await,
            _ => work.await,
        }
    }

    /// Feed an event to the registry and to `onMetric`.
    pub(super) async fn emit(&self, ev: MetricEvent) -> Result<()> {
        self.registry.record(&ev);
        if let Some(cb) = &self.opts.on_metric {
            cb.call(ev.to_value()).await?;
        }
        Ok(())
    }
}
