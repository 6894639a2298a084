//! What a run gives back (`RunResult` and its parts) and what it takes besides the prompt.

use serde_json::{Map, Value};

use crate::cancel::Abort;
use crate::json::obj;
use crate::types::ToolResult;

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

/// Where a run parked (SPEC §10): what a resume takes up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaltSite {
    /// A tool call suspended (its own result, or its `beforeTool` hook's): the parked call is
    /// the last one with a result in the transcript, and runs again with the Answer in
    /// `ctx.answer`.
    Tool,
    /// A budget's approval request stopped a tool call before it ran (recorded like a tool's
    /// suspension): the call runs afresh, the Answer going to the budget.
    BudgetTool,
    /// A budget's approval request stopped the run before an LLM call: the transcript is
    /// whole, the run goes on with the Answer given to the budget.
    BudgetLlm,
}

impl HaltSite {
    pub fn as_str(self) -> &'static str {
        match self {
            HaltSite::Tool => "tool",
            HaltSite::BudgetTool => "budget-tool",
            HaltSite::BudgetLlm => "budget-llm",
        }
    }

    pub fn parse(s: &str) -> Option<HaltSite> {
        [HaltSite::Tool, HaltSite::BudgetTool, HaltSite::BudgetLlm].into_iter().find(|h| h.as_str() == s)
    }
}

/// How a parked call is taken up again.
#[derive(Debug, Clone)]
pub enum Resolution {
    /// The Answer to the parked Request (already checked against it).
    Answer(Value),
    /// No Answer at this level: the parked call runs again without one (an agent whose
    /// delegated work was answered further down, its `task` call reattaching).
    Retry,
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
    /// Where a `pending` run parked (not part of the wire shape).
    pub halt: Option<HaltSite>,
    /// The checked answer of a run with `output` (an addition).
    pub output: Option<Value>,
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
        if let Some(o) = &self.output {
            m.insert("output".into(), o.clone());
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
    /// Budgets enforced while the run goes (the agent runtime's); none for a plain client.
    pub limits: Option<std::sync::Arc<dyn RunLimits>>,
    /// The answer's schema (an addition): the run ends with a checked answer.
    pub output: Option<std::sync::Arc<super::output::Output>>,
    /// The caller keeps its own record of what the run parks on (the agent runtime, in its
    /// state): the client records nothing.
    pub own_parks: bool,
    /// Who else hears what the run's tools report while they run (a served A2A Task's caller).
    pub reports: Option<std::sync::Arc<dyn RunReports>>,
}

/// Someone besides the client's own listeners who hears a run's reports (what its tools tell
/// it while they run): each as `duringTool` sees it (`{ type, name, id?, turn, ... }`), told
/// without waiting.
pub trait RunReports: Send + Sync {
    fn report(&self, report: &serde_json::Value);
}

/// What a budget check allows.
#[derive(Debug, Clone, PartialEq)]
pub enum LimitCheck {
    /// Go on.
    Go,
    /// Stop: the named limit is reached.
    Stop(String),
    /// Halt the run on this §10 request (an approval to go past the limit).
    Suspend(Map<String, Value>),
}

/// Budgets a run consults as it goes: before each LLM call, after it, and before each tool
/// call. A limit reached ends the run `incomplete` with that limit named, or suspends it.
#[async_trait::async_trait]
pub trait RunLimits: Send + Sync {
    /// Before an LLM call.
    async fn before_llm(&self) -> crate::error::Result<LimitCheck>;
    /// After an LLM call, with the tokens it used.
    fn spent_tokens(&self, tokens: i64);
    /// Before a tool call: counts it when it may run.
    async fn before_tool(&self) -> crate::error::Result<LimitCheck>;
    /// Resolves when the run's wall-clock budget runs out, raced against each LLM call (its
    /// retries and their back-off included): the call is then dropped, its connection closed,
    /// and `before_llm` decides what follows. Never resolves when there is no such budget, or
    /// when the check before the call already let it go past the deadline.
    async fn wall_expired(&self) {
        std::future::pending::<()>().await
    }
}
