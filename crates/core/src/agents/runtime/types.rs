//! The runtime's data: definitions, budgets, options, results and views.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::clock::{Clock, SystemClock};
use crate::agents::gate::Completion;
use crate::callback::SharedCallback;
use crate::client::{ConversationStore, Hooks, InMemoryStore, Style, Transport};
use crate::tool::SharedTool;

/// A handle's index in its runtime's table; the root is 0.
pub type HandleId = usize;
/// The root handle.
pub const ROOT: HandleId = 0;

/// Starts a turn (or any runtime task) somewhere it will be polled.
pub type Spawner = Arc<dyn Fn(BoxFuture<'static, ()>) + Send + Sync>;

/// Hierarchical caps; an absent field is no cap (or the runtime's default). It serializes as
/// its option names, set fields only.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wall_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_children: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<f64>,
}

impl Budget {
    /// `over`'s fields where set, else this budget's.
    pub fn overridden_by(&self, over: &Budget) -> Budget {
        Budget {
            max_turns: over.max_turns.or(self.max_turns),
            max_tokens: over.max_tokens.or(self.max_tokens),
            max_tool_calls: over.max_tool_calls.or(self.max_tool_calls),
            max_wall_ms: over.max_wall_ms.or(self.max_wall_ms),
            max_children: over.max_children.or(self.max_children),
            max_concurrent: over.max_concurrent.or(self.max_concurrent),
            max_depth: over.max_depth.or(self.max_depth),
        }
    }
}

/// An agent definition: what the runtime spawns handles from.
#[derive(Clone, Default)]
pub struct AgentDef {
    pub name: String,
    pub does: String,
    /// The system prompt; empty means none.
    pub soul: Option<String>,
    /// The model; absent or "inherit" means the runtime's `llm.model`.
    pub model: Option<String>,
    pub tools: Vec<SharedTool>,
    /// The `task` tool's targets; empty means no `task` tool.
    pub team: Vec<String>,
    pub budget: Budget,
    /// §10 interpreter authority for suspensions escalating through this agent.
    pub wait_for: Option<SharedCallback>,
    /// Called with `{handle, id}` once, before the first turn.
    pub on_spawn: Option<SharedCallback>,
    /// Called with `{handle, id, reason}` when the handle closes.
    pub on_close: Option<SharedCallback>,
    /// Set: replaces the runtime's `hooks` for this agent.
    pub hooks: Option<Hooks>,
    /// Set: replaces the runtime's `onMetric` for this agent.
    pub on_metric: Option<SharedCallback>,
    pub completion: Option<Arc<Completion>>,
    /// The answer's schema (an addition): each of the agent's turns ends with a checked answer.
    pub output: Option<Arc<crate::client::output::Output>>,
}

/// The runtime's default LLM endpoint.
#[derive(Debug, Clone, Default)]
pub struct Llm {
    pub base_url: Option<String>,
    pub style: Option<Style>,
    pub api_key: Option<String>,
    pub model: Option<String>,
    /// Where an agent's LLM call goes when this endpoint fails it (see the client's `fallback`).
    pub fallback: Vec<crate::client::Fallback>,
}

/// Everything a runtime is built from.
pub struct RuntimeOptions {
    pub registry: Vec<AgentDef>,
    pub llm: Llm,
    /// The HTTP seam for every agent's client; none means the built-in one.
    pub transport: Option<Arc<dyn Transport>>,
    pub clock: Arc<dyn Clock>,
    pub store: Arc<dyn ConversationStore>,
    pub inbox_cap: f64,
    pub max_concurrent_turns: f64,
    pub shutdown_ms: f64,
    pub hooks: Hooks,
    pub on_metric: Option<SharedCallback>,
    /// Asked when a budget stops a running turn: answers "stop", "extend" or "suspend".
    pub on_budget: Option<SharedCallback>,
    pub spawner: Spawner,
    /// On a durable store: the name its state is kept under (one runtime per name).
    pub runtime_id: String,
    /// Where the runtime's warnings go (its turns, its durable store); `None`: wherever the
    /// caller's go.
    pub logger: Option<crate::warn::Sink>,
    /// Records the turns' spans (the `telemetry` option; see `trace`).
    pub telemetry: Option<SharedCallback>,
}

impl RuntimeOptions {
    /// The reference's defaults, turns spawned on the current tokio runtime.
    pub fn new(registry: Vec<AgentDef>) -> Self {
        let rt = tokio::runtime::Handle::try_current().ok();
        let spawn_rt = rt.clone();
        RuntimeOptions {
            registry,
            llm: Llm::default(),
            transport: None,
            clock: Arc::new(SystemClock::new(rt)),
            store: Arc::new(InMemoryStore::default()),
            inbox_cap: 8.0,
            max_concurrent_turns: 8.0,
            shutdown_ms: 200.0,
            hooks: Hooks::default(),
            on_metric: None,
            on_budget: None,
            runtime_id: DEFAULT_RUNTIME_ID.into(),
            logger: None,
            telemetry: None,
            spawner: Arc::new(move |f| {
                if let Some(rt) = &spawn_rt {
                    rt.spawn(f);
                }
            }),
        }
    }
}

/// The name a runtime's state is kept under on a durable store when none is given.
pub const DEFAULT_RUNTIME_ID: &str = "agents";

/// An unsolicited inbox item.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxItem {
    pub from: String,
    pub channel: String,
    pub text: String,
}

impl InboxItem {
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(3);
        m.insert("from".into(), self.from.clone().into());
        m.insert("channel".into(), self.channel.clone().into());
        m.insert("text".into(), self.text.clone().into());
        Value::Object(m)
    }
}

/// A handle's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleState {
    Idle,
    Running,
    Suspended,
    Closed,
}

impl HandleState {
    pub fn as_str(self) -> &'static str {
        match self {
            HandleState::Idle => "idle",
            HandleState::Running => "running",
            HandleState::Suspended => "suspended",
            HandleState::Closed => "closed",
        }
    }
}

/// The closed result-status vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Done,
    Pending,
    Incomplete,
    Interrupted,
    Closed,
    Timeout,
    Error,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Done => "done",
            TaskStatus::Pending => "pending",
            TaskStatus::Incomplete => "incomplete",
            TaskStatus::Interrupted => "interrupted",
            TaskStatus::Closed => "closed",
            TaskStatus::Timeout => "timeout",
            TaskStatus::Error => "error",
        }
    }
}

/// One settled (or halted) turn, as waiters and `task` see it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskResult {
    pub text: String,
    pub is_error: bool,
    pub status: TaskStatus,
    /// Present iff the status is `pending`; `data.path` names the suspended handle.
    pub pending: Option<Value>,
    pub turns: f64,
    pub total_tokens: f64,
    /// The checked answer of an agent with `output` (an addition).
    pub output: Option<Value>,
}

impl TaskResult {
    /// The reference's shape and key order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(6);
        m.insert("text".into(), self.text.clone().into());
        m.insert("isError".into(), self.is_error.into());
        m.insert("status".into(), self.status.as_str().into());
        if let Some(p) = &self.pending {
            m.insert("pending".into(), p.clone());
        }
        m.insert("turns".into(), num(self.turns));
        m.insert("totalTokens".into(), num(self.total_tokens));
        if let Some(o) = &self.output {
            m.insert("output".into(), o.clone());
        }
        Value::Object(m)
    }
}

/// A finite number as JSON (integers stay integers); non-finite ones become null.
pub(crate) fn num(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
    }
}

/// A number as JavaScript prints it in a template string.
pub(crate) fn js_num(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i128)
    } else {
        serde_json::Number::from_f64(n).map(|x| crate::json::js_number_text(&x)).unwrap_or_default()
    }
}

/// A read-only row of `list()` / `inspect()`.
#[derive(Debug, Clone, PartialEq)]
pub struct HandleView {
    pub handle: HandleId,
    pub id: String,
    pub state: HandleState,
    pub tokens: f64,
    pub inbox: usize,
}

/// `inspect()`: the view plus the handle's own turns, its token pool and its pending request.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspection {
    pub view: HandleView,
    pub turns: f64,
    pub pool_tokens: f64,
    pub pending: Option<Value>,
}

/// Everything a host reads off one handle.
#[derive(Debug, Clone)]
pub struct HandleSnapshot {
    pub id: String,
    pub def: String,
    pub parent: Option<HandleId>,
    pub depth: u32,
    pub children: Vec<HandleId>,
    pub inbox: Vec<InboxItem>,
    pub state: HandleState,
    pub usage_total: f64,
    pub tool_calls_total: f64,
    pub turns_total: f64,
    pub pending_request: Option<Value>,
    pub last_result: Option<TaskResult>,
    /// Remaining pools: tokens, tool calls, children (infinite when unbounded).
    pub pool: (f64, f64, f64),
    /// Effective limits: max turns, max concurrent children, max depth.
    pub eff: (f64, f64, f64),
    /// The wall-clock deadline (clock ms), when a `maxWallMs` applies on the chain.
    pub deadline: Option<f64>,
    /// The abort of the turn in flight or of the last one, if any turn ran: which turn's it
    /// is (a count), and whether it was aborted.
    pub abort: Option<(u64, bool)>,
    /// The halted turn's input, replayed on resume.
    pub checkpoint: Option<String>,
    /// Items the in-flight turn consumed.
    pub drained: Vec<InboxItem>,
    /// Children's wakes deferred by `maxConcurrent`, FIFO: the child and its prompt.
    pub wake_queue: Vec<(HandleId, Option<String>)>,
    /// The reattachment key, when spawned by `task`.
    pub task_key: Option<String>,
    pub running_children: f64,
    /// The child id sequence.
    pub seq: u64,
}
