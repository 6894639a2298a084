//! A served A2A Task's caller hears what the Task's run reports while its tools run
//! (`ctx.progress`, `ctx.log`): each report is one more `working` status whose message says it
//! in a text part and carries it whole in a data part. A streaming caller sees each as a
//! status update; the Task's saved states are untouched.
//!
//! The host starts the Task's run with the Task's number in hand (its cancel token carries it);
//! the run looks its listener up here by that number when it starts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use serde_json::{Map, Value};

use crate::client::RunReports;
use crate::json::js_double_text;

/// How many reports one Task passes on; the rest are let go (its states are kept for the
/// Task's streams while it runs).
const MOST: usize = 256;

/// The running Tasks whose reports are heard, by Task id.
static EARS: LazyLock<Mutex<HashMap<String, Weak<TaskEar>>>> = LazyLock::new(Default::default);

/// Where a running Task's reports go: its list of states, as its streams read it.
pub struct TaskEar {
    id: String,
    context: Option<String>,
    states: tokio::sync::watch::Sender<Vec<Value>>,
    told: AtomicUsize,
}

/// A Task's ear, heard while this is held.
pub struct Listening(Arc<TaskEar>);

impl Drop for Listening {
    fn drop(&mut self) {
        EARS.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.0.id);
    }
}

/// Hear Task `id`'s reports into `states` until the guard is dropped.
pub fn listen(id: &str, context: &Option<String>, states: tokio::sync::watch::Sender<Vec<Value>>) -> Listening {
    let ear = Arc::new(TaskEar { id: id.to_string(), context: context.clone(), states, told: AtomicUsize::new(0) });
    EARS.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_string(), Arc::downgrade(&ear));
    Listening(ear)
}

/// The listener of running Task `id`, if it runs here.
pub fn ear_of(id: &str) -> Option<Arc<dyn RunReports>> {
    let ear = EARS.lock().unwrap_or_else(PoisonError::into_inner).get(id)?.upgrade()?;
    Some(ear)
}

impl RunReports for TaskEar {
    fn report(&self, report: &Value) {
        if self.told.fetch_add(1, Ordering::Relaxed) >= MOST {
            return;
        }
        let mut text = Map::new();
        text.insert("kind".into(), "text".into());
        text.insert("text".into(), said(report).into());
        let mut data = Map::new();
        data.insert("kind".into(), "data".into());
        data.insert("data".into(), report.clone());
        let mut message = Map::new();
        message.insert("role".into(), "agent".into());
        message.insert("parts".into(), Value::Array(vec![Value::Object(text), Value::Object(data)]));
        let state = super::task::task(&self.id, &self.context, "working", Some(Value::Object(message)), None);
        self.states.send_modify(|states| states.push(state));
    }
}

/// A report in words: a progress's message (or `done/total`), a log's `level: data`.
fn said(report: &Value) -> String {
    let number = |key: &str| report.get(key).and_then(Value::as_f64).map(js_double_text);
    if report.get("type").and_then(Value::as_str) == Some("progress") {
        if let Some(m) = report.get("message").and_then(Value::as_str) {
            return m.to_string();
        }
        let done = number("progress").unwrap_or_default();
        return match number("total") {
            Some(total) => format!("{done}/{total}"),
            None => done,
        };
    }
    let level = report.get("level").and_then(Value::as_str).unwrap_or("info");
    let data = match report.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    format!("{level}: {data}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_report_in_words() {
        assert_eq!(said(&json!({"type": "progress", "progress": 1.0, "total": 4.0})), "1/4");
        assert_eq!(said(&json!({"type": "progress", "progress": 0.5})), "0.5");
        assert_eq!(said(&json!({"type": "progress", "progress": 1, "message": "half"})), "half");
        assert_eq!(said(&json!({"type": "log", "level": "warning", "data": "low disk"})), "warning: low disk");
        assert_eq!(said(&json!({"type": "log", "level": "info", "data": {"a": 1}})), r#"info: {"a":1}"#);
    }

    #[test]
    fn a_task_heard_while_listened_to_at_most_so_many_times() {
        let (tx, rx) = tokio::sync::watch::channel(Vec::new());
        let listening = listen("t-ear", &Some("c".into()), tx);
        let ear = ear_of("t-ear").expect("listened to");
        for i in 0..MOST + 10 {
            ear.report(&json!({"type": "progress", "progress": i}));
        }
        let states = rx.borrow().clone();
        assert_eq!(states.len(), MOST);
        assert_eq!(states[0]["status"]["state"], "working");
        assert_eq!(states[0]["contextId"], "c");
        assert_eq!(states[1]["status"]["message"]["parts"][0]["text"], "1");
        assert_eq!(states[1]["status"]["message"]["parts"][1]["data"]["progress"], 1);
        drop(listening);
        assert!(ear_of("t-ear").is_none());
    }
}
