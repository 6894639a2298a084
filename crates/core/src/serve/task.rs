//! What every part of serving says about a Task: its id as the stores key it, its shape, and the one-text
//! messages written into its status. A leaf: the A2A handler, the stores and the lease all use it.

use serde_json::{Map, Value};

use crate::json::js_string;

/// The id a Task is saved under: its `id` as JavaScript's `String(id)` (a missing id is
/// `"undefined"`, as a `Map` key or a template string would make it).
pub fn task_id(task: &Value) -> String {
    match task.get("id") {
        Some(id) => js_string(id),
        None => "undefined".into(),
    }
}

/// A Task: `{ id, contextId?, status: { state, message? }, artifacts? }`.
pub(crate) fn task(
    id: &str,
    context: &Option<String>,
    state: &str,
    message: Option<Value>,
    artifacts: Option<Value>,
) -> Value {
    let mut status = Map::new();
    status.insert("state".into(), state.into());
    if let Some(m) = message {
        status.insert("message".into(), m);
    }
    let mut t = Map::new();
    t.insert("id".into(), id.into());
    if let Some(c) = context {
        t.insert("contextId".into(), c.clone().into());
    }
    t.insert("status".into(), Value::Object(status));
    if let Some(a) = artifacts {
        t.insert("artifacts".into(), a);
    }
    Value::Object(t)
}

pub(crate) fn text_message(role: &str, text: Option<Value>) -> Value {
    let mut part = Map::new();
    part.insert("kind".into(), "text".into());
    if let Some(t) = text {
        part.insert("text".into(), t);
    }
    let mut m = Map::new();
    m.insert("role".into(), role.into());
    m.insert("parts".into(), Value::Array(vec![Value::Object(part)]));
    Value::Object(m)
}

/// An agent's message of one text part.
pub(crate) fn agent_text(text: &str) -> Value {
    text_message("agent", Some(Value::String(text.to_string())))
}

/// Whether `task` is parked for input since `parked_at` (its `metadata.parkedAt`).
pub fn parked_since(task: &Value, parked_at: &str) -> bool {
    task.get("status").and_then(|s| s.get("state")).and_then(Value::as_str) == Some("input-required")
        && task.get("metadata").and_then(|m| m.get("parkedAt")).map(crate::json::js_string).as_deref()
            == Some(parked_at)
}
