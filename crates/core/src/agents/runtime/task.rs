//! `task`: the model's one delegation tool, spawn → wake → wait → close fused. Only the
//! caller's team is reachable; a repeated call reattaches to the child it already made.

use std::any::Any;
use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};

use super::core::{AgentRuntime, Inner};
use super::types::{num, AgentDef, HandleId, HandleState, TaskResult, TaskStatus};
use crate::error::Result;
use crate::json::js_string;
use crate::tool::{SharedTool, Tool, ToolContext, ToolDecl};
use crate::types::ToolResult;

struct TaskTool {
    inner: Weak<Inner>,
    parent: HandleId,
    team: Vec<String>,
    decl: ToolDecl,
}

pub(super) fn task_tool(inner: &Arc<Inner>, parent: HandleId, def: &AgentDef) -> SharedTool {
    let mut team = def.team.clone();
    team.sort();
    let advertised: Vec<String> = team
        .iter()
        .map(|n| match inner.registry.get(n) {
            Some(d) => format!("{n}: {}", d.does),
            None => n.clone(),
        })
        .collect();
    let description = format!(
        "Delegate a subtask to an isolated subagent (it runs on a fresh transcript and returns only its final answer). Available agents \u{2014} {}",
        advertised.join("; ")
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "agent": { "type": "string", "description": "Team agent to delegate to" },
            "prompt": { "type": "string", "description": "The subtask prompt" }
        },
        "required": ["agent", "prompt"]
    });
    Arc::new(TaskTool {
        inner: Arc::downgrade(inner),
        parent,
        team,
        decl: ToolDecl::new("task", description, schema, "custom"),
    })
}

/// What a `task` call reattaching to a child whose turn runs in another runtime gets: pending on
/// the Request that turn took up (or, for a turn not started by a resume, on one naming it).
fn running_elsewhere(inner: &Inner, child: HandleId) -> TaskResult {
    let t = inner.tree();
    let n = &t.nodes[child];
    let pending = n.took_up.clone().unwrap_or_else(|| {
        json!({
            "id": format!("run-{}", n.id),
            "kind": "task",
            "prompt": format!("{} is running in another process", n.id),
        })
    });
    let text = pending.get("prompt").map(js_string).unwrap_or_default();
    TaskResult {
        text,
        is_error: false,
        status: TaskStatus::Pending,
        pending: Some(pending),
        turns: 0.0,
        total_tokens: 0.0,
        output: None,
    }
}

fn arg(args: &Value, key: &str) -> String {
    match args.get(key) {
        None => "undefined".into(),
        Some(v) => js_string(v),
    }
}

#[async_trait::async_trait]
impl Tool for TaskTool {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    fn as_any(&self) -> &dyn Any {
        self
    }

    /// It only touches the table and awaits the child, so it stays on the thread that polls
    /// the turn. Moved to the runtime, two calls of one reply would start in whatever order
    /// its threads reach them, and the first child could finish before the second is spawned.
    fn light(&self) -> bool {
        true
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(ToolResult::error("the agent runtime is gone"));
        };
        let rt = AgentRuntime { inner: inner.clone() };
        let name = arg(&args, "agent");
        let prompt = arg(&args, "prompt");
        if !self.team.contains(&name) {
            let team = if self.team.is_empty() { "none".to_string() } else { self.team.join(", ") };
            return Ok(ToolResult::error(format!("agent \"{name}\" is not in this agent's team (available: {team})")));
        }
        let key = format!("{name}:{prompt}");
        let existing = {
            let t = inner.tree();
            t.nodes[self.parent]
                .children
                .iter()
                .copied()
                .find(|&c| t.nodes[c].task_key.as_deref() == Some(key.as_str()))
        };
        let (child, r): (HandleId, TaskResult) = match existing {
            Some(child) => {
                let (id, state, pid, last, remote) = {
                    let t = inner.tree();
                    let n = &t.nodes[child];
                    (n.id.clone(), n.state, t.nodes[self.parent].id.clone(), n.last_result.clone(), n.remote)
                };
                inner.t(format!("{pid}: task replay \u{2192} REATTACH to {id} (state {})", state.as_str()));
                let r = match state {
                    HandleState::Suspended => match ctx.answer {
                        Some(answer) => {
                            let on =
                                inner.tree().nodes[child].pending_request.as_ref().and_then(crate::suspension::id_of);
                            match inner.clone().resume_suspended(child, Some(answer), true, on.as_deref()).await {
                                Ok(r) => r,
                                Err(e) => return Ok(ToolResult::error(e.to_string())),
                            }
                        }
                        None => inner.tree().pending_result(child),
                    },
                    // Its turn runs in another runtime (on a durable store): nothing here will see
                    // it end, so this call parks on the Request that turn took up; that runtime
                    // takes this one up again when the child is done.
                    HandleState::Running if remote => running_elsewhere(&inner, child),
                    HandleState::Running => rt.wait(child, None, Some(self.parent)).await,
                    _ => last.unwrap_or_else(|| {
                        inner.tree().result(child, format!("no recorded result for {id}"), TaskStatus::Error)
                    }),
                };
                (child, r)
            }
            None => {
                let child = match rt.spawn(self.parent, &name, None) {
                    Ok(c) => c,
                    Err(e) => return Ok(ToolResult::error(e)),
                };
                inner.tree().nodes[child].task_key = Some(key);
                if let Err(e) = rt.wake(child, Some(prompt)) {
                    return Ok(ToolResult::error(e));
                }
                (child, rt.wait(child, None, Some(self.parent)).await)
            }
        };
        if r.status == TaskStatus::Pending {
            if let Some(p) = r.pending {
                let prompt = p.get("prompt").map(js_string).unwrap_or_else(|| "undefined".into());
                let mut meta = Map::new();
                meta.insert("pending".into(), p);
                return Ok(ToolResult {
                    output: prompt,
                    is_error: true,
                    metadata: Some(Value::Object(meta)),
                    rich: None,
                });
            }
        }
        if inner.tree().nodes[child].state != HandleState::Closed {
            rt.close(child, false, None).await;
        }
        let output = if r.status == TaskStatus::Done { r.text } else { format!("[{}] {}", r.status.as_str(), r.text) };
        let mut meta = Map::new();
        meta.insert("agent".into(), name.into());
        meta.insert("turns".into(), num(r.turns));
        meta.insert("totalTokens".into(), num(r.total_tokens));
        Ok(ToolResult { output, is_error: r.is_error, metadata: Some(Value::Object(meta)), rich: None })
    }
}
