//! A handle as its host shows it: the reference Handle's fields, in its order, each finished
//! (pools and limits as objects, the inbox as items, the checkpoint as `{ input }`). This
//! struct is the one list of those fields; a binding serializes it and reads its keys. What a
//! host alone can make of a field (another handle for an index, its own object for a
//! definition, an abort controller) it makes from the indexes and names given here.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::core::AgentRuntime;
use super::types::{AgentDef, Budget, HandleId, HandleSnapshot, InboxItem, ROOT};

/// The fields of one handle.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandleFields {
    pub id: String,
    pub def: DefRef,
    /// The parent's index; `null` for the root.
    pub parent: Option<HandleId>,
    pub depth: u32,
    /// The children's indexes.
    pub children: Vec<HandleId>,
    pub inbox: Vec<Value>,
    pub state: &'static str,
    pub pool: Pools,
    pub eff: Limits,
    pub deadline: Option<f64>,
    pub usage_total: f64,
    pub tool_calls_total: f64,
    pub turns_total: f64,
    pub pending_request: Option<Value>,
    pub last_result: Option<Value>,
    /// Which turn's abort the handle holds and whether it was aborted; `null` before its
    /// first turn.
    pub abort: Option<AbortSeam>,
    pub checkpoint: Option<Checkpoint>,
    pub drained: Vec<Value>,
    /// Children's wakes deferred by `maxConcurrent`, FIFO.
    pub wake_queue: Vec<Wake>,
    pub task_key: Option<String>,
    pub running_children: f64,
    pub seq: u64,
}

/// Which definition a handle runs under.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DefRef {
    /// The registered definition's name (absent for the runtime's own root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registered: Option<String>,
    /// Set when the spawn carried a budget: the definition's budget with the spawn's over it,
    /// the one the handle runs under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// The root's definition, which the runtime makes itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own: Option<OwnDef>,
}

/// The runtime's own definition (the root's).
#[derive(Debug, Clone, Serialize)]
pub struct OwnDef {
    pub name: String,
    pub does: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Remaining pools (infinite when unbounded).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pools {
    pub tokens: f64,
    pub tool_calls: f64,
    pub children: f64,
}

/// Effective limits.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub max_turns: f64,
    pub max_concurrent: f64,
    pub max_depth: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AbortSeam {
    pub turn: u64,
    pub aborted: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Checkpoint {
    pub input: String,
}

/// A deferred wake: the child's index and its prompt, when it has one.
#[derive(Debug, Clone, Serialize)]
pub struct Wake {
    pub h: HandleId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

fn items(items: &[InboxItem]) -> Vec<Value> {
    items.iter().map(InboxItem::to_value).collect()
}

impl HandleFields {
    fn of(s: HandleSnapshot, def: DefRef) -> Self {
        HandleFields {
            id: s.id,
            def,
            parent: s.parent,
            depth: s.depth,
            children: s.children,
            inbox: items(&s.inbox),
            state: s.state.as_str(),
            pool: Pools { tokens: s.pool.0, tool_calls: s.pool.1, children: s.pool.2 },
            eff: Limits { max_turns: s.eff.0, max_concurrent: s.eff.1, max_depth: s.eff.2 },
            deadline: s.deadline,
            usage_total: s.usage_total,
            tool_calls_total: s.tool_calls_total,
            turns_total: s.turns_total,
            pending_request: s.pending_request,
            last_result: s.last_result.map(|r| r.to_value()),
            abort: s.abort.map(|(turn, aborted)| AbortSeam { turn, aborted }),
            checkpoint: s.checkpoint.map(|input| Checkpoint { input }),
            drained: items(&s.drained),
            wake_queue: s.wake_queue.into_iter().map(|(h, prompt)| Wake { h, prompt }).collect(),
            task_key: s.task_key,
            running_children: s.running_children,
            seq: s.seq,
        }
    }
}

impl AgentRuntime {
    /// Handle `h`'s fields now, or `None` for an index this runtime never handed out.
    pub fn fields(&self, h: HandleId) -> Option<HandleFields> {
        let (snapshot, def) = {
            let t = self.inner.tree();
            (t.snapshot(h)?, t.nodes.get(h)?.def.clone())
        };
        let def = self.def_ref(h, &def);
        Some(HandleFields::of(snapshot, def))
    }

    /// Which definition handle `h` runs under: the root's own, a registered one as registered,
    /// or a registered one under its spawn's budget.
    fn def_ref(&self, h: HandleId, def: &Arc<AgentDef>) -> DefRef {
        if h == ROOT {
            let own = OwnDef { name: def.name.clone(), does: def.does.clone(), model: def.model.clone() };
            return DefRef { registered: None, budget: None, own: Some(own) };
        }
        let registered = self.inner.registry.get(&def.name);
        // A spawn with a budget runs under a copy of its definition; a restored handle whose
        // definition is gone runs under a stand-in, and has no registered one to copy.
        let budget = registered.filter(|r| !Arc::ptr_eq(r, def)).map(|_| def.budget.clone());
        DefRef { registered: Some(def.name.clone()), budget, own: None }
    }
}
