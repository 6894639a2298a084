//! The runtime's shared state: the handle table behind one lock, the trace, the gates.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use super::clock::Clock;
use super::tree::Tree;
use super::turngate::TurnGate;
use super::types::{AgentDef, HandleId, HandleSnapshot, Llm, RuntimeOptions, Spawner};
use crate::callback::SharedCallback;
use crate::client::{ConversationStore, Hooks, Transport};

pub(crate) struct Inner {
    pub(super) registry: HashMap<String, Arc<AgentDef>>,
    pub(super) llm: Llm,
    pub(super) transport: Option<Arc<dyn Transport>>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) store: Arc<dyn ConversationStore>,
    pub(super) inbox_cap: f64,
    pub(super) shutdown_ms: f64,
    pub(super) hooks: Hooks,
    pub(super) on_metric: Option<SharedCallback>,
    pub(super) on_budget: Option<SharedCallback>,
    pub(super) spawner: Spawner,
    pub(super) runtime_id: String,
    pub(super) logger: Option<crate::warn::Sink>,
    /// Records the turns' spans (the `telemetry` option), one id space for the whole tree.
    pub(super) tracing: Option<crate::trace::Tracing>,
    pub(super) tree: Mutex<Tree>,
    pub(super) trace: Mutex<Vec<String>>,
    pub(super) gate: TurnGate,
    pub(super) concurrent_turns: AtomicUsize,
    pub(super) max_observed_turns: AtomicUsize,
    /// Set once the runtime keeps its state on a durable store.
    pub(super) durable: OnceLock<Arc<dyn Keeper>>,
    /// The ids of the Requests answered last (newest last, at most `ANSWERED`): an Answer to
    /// one of them is refused as already applied.
    pub(super) answered: Mutex<std::collections::VecDeque<String>>,
}

/// How many answered Request ids a runtime remembers.
pub(super) const ANSWERED: usize = 256;

/// What keeps a runtime's state on a durable store (`durable::Durable`), as the runtime sees it.
pub(super) trait Keeper: Send + Sync {
    /// A transition happened: the state is to be written.
    fn mark(self: Arc<Self>);
    /// Settles once the state as it is now is written (or given up on).
    fn flushed(self: Arc<Self>) -> futures::future::BoxFuture<'static, ()>;
    /// Settles once the state as it is now is written: `Err` when it could not be (the engine
    /// failed, or another runtime keeps the store now).
    fn written(self: Arc<Self>) -> futures::future::BoxFuture<'static, crate::error::Result<()>>;
    /// The name of the tree being kept.
    fn tree(&self) -> &str;
}

/// The runtime. Cheap to clone; every clone is the same runtime.
#[derive(Clone)]
pub struct AgentRuntime {
    pub(super) inner: Arc<Inner>,
}

impl Inner {
    pub(super) fn tree(&self) -> MutexGuard<'_, Tree> {
        self.tree.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Record a transition: its trace line, and (on a durable store) the state to save.
    pub(super) fn t(&self, line: String) {
        self.trace.lock().unwrap_or_else(PoisonError::into_inner).push(line);
        self.changed();
    }
}

impl AgentRuntime {
    pub fn new(opts: RuntimeOptions) -> Self {
        let now = opts.clock.now();
        let registry = opts.registry.into_iter().map(|d| (d.name.clone(), Arc::new(d))).collect();
        let root = AgentDef {
            name: "root".into(),
            does: "runtime root".into(),
            model: Some("none".into()),
            ..Default::default()
        };
        let inner = Inner {
            registry,
            llm: opts.llm,
            transport: opts.transport,
            clock: opts.clock,
            store: opts.store,
            inbox_cap: opts.inbox_cap,
            shutdown_ms: opts.shutdown_ms,
            hooks: opts.hooks,
            on_metric: opts.on_metric,
            on_budget: opts.on_budget,
            spawner: opts.spawner,
            runtime_id: opts.runtime_id,
            logger: opts.logger,
            tracing: opts.telemetry.map(crate::trace::Tracing::new),
            tree: Mutex::new(Tree::new(Arc::new(root), now)),
            trace: Mutex::new(Vec::new()),
            gate: TurnGate::new(opts.max_concurrent_turns),
            concurrent_turns: AtomicUsize::new(0),
            max_observed_turns: AtomicUsize::new(0),
            durable: OnceLock::new(),
            answered: Mutex::new(std::collections::VecDeque::new()),
        };
        AgentRuntime { inner: Arc::new(inner) }
    }

    /// The transition trace so far: one line per transition.
    pub fn trace(&self) -> Vec<String> {
        self.inner.trace.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The one conversation store of every handle (conversation id = handle id).
    pub fn store(&self) -> Arc<dyn ConversationStore> {
        self.inner.store.clone()
    }

    pub fn clock(&self) -> Arc<dyn Clock> {
        self.inner.clock.clone()
    }

    /// LLM calls in flight now.
    pub fn concurrent_turns(&self) -> usize {
        self.inner.concurrent_turns.load(Ordering::SeqCst)
    }

    /// The most LLM calls ever in flight at once.
    pub fn max_observed_concurrent_turns(&self) -> usize {
        self.inner.max_observed_turns.load(Ordering::SeqCst)
    }

    /// The handle whose id path is `id`.
    pub fn find(&self, id: &str) -> Option<HandleId> {
        self.inner.tree().find(id)
    }

    /// Everything a host reads off one handle; `None` for an unknown handle.
    pub fn snapshot(&self, h: HandleId) -> Option<HandleSnapshot> {
        self.inner.tree().snapshot(h)
    }

    /// The definition `name` as registered.
    pub fn def(&self, name: &str) -> Option<Arc<AgentDef>> {
        self.inner.registry.get(name).cloned()
    }
}
