//! The A2A dialects a served agent answers in. SPEC's wire (`SendMessage` / `GetTask`, a bare
//! Task with lower-case states, answered at once `submitted`) stays as it is for toolnexus
//! peers; the official SDKs speak one of two other generations, told apart by method name and
//! the `A2A-Version` header:
//!
//! - v0.3 (`message/send`, `tasks/get`): bare results carrying `kind` ("task", "message", and on
//!   every part), lower-case states, `configuration.blocking` (default true);
//! - v1.0 (`SendMessage`, `GetTask` with `A2A-Version: 1.x`): a send answers `{ task }`, no
//!   `kind` anywhere, `TASK_STATE_*` and `ROLE_*` enums, `configuration.returnImmediately`
//!   (default false: the send waits for the Task to settle).
//!
//! Tasks are kept in SPEC's shape; each answer is translated on the way out. Both SDK
//! generations need a `contextId` on every Task: a send without one is given one.

use serde_json::{Map, Value};

/// How a request is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SPEC §7B, as toolnexus peers speak it.
    Spec,
    /// A2A v0.3.
    V03,
    /// A2A v1.0.
    V1,
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Send,
    Get,
    /// A send answered as a stream of events (`message/stream`, `SendStreamingMessage`).
    Stream,
    /// `tasks/cancel`, `CancelTask`.
    Cancel,
}

/// The dialect and operation of `method` (with the request's `A2A-Version` header), or `None`
/// for a method no dialect has.
pub fn classify(method: &str, version: Option<&str>) -> Option<(Dialect, Op)> {
    let v1 = version.is_some_and(|v| v.trim().starts_with('1'));
    match method {
        "message/send" => Some((Dialect::V03, Op::Send)),
        "tasks/get" => Some((Dialect::V03, Op::Get)),
        "SendMessage" => Some((if v1 { Dialect::V1 } else { Dialect::Spec }, Op::Send)),
        "GetTask" => Some((if v1 { Dialect::V1 } else { Dialect::Spec }, Op::Get)),
        "message/stream" => Some((Dialect::V03, Op::Stream)),
        "tasks/cancel" => Some((Dialect::V03, Op::Cancel)),
        // SPEC's wire has no stream: only v1.0 peers ask for one by this name.
        "SendStreamingMessage" => Some((Dialect::V1, Op::Stream)),
        "CancelTask" => Some((if v1 { Dialect::V1 } else { Dialect::Spec }, Op::Cancel)),
        _ => None,
    }
}

impl Dialect {
    /// Whether a send waits for the Task to settle before it answers.
    pub fn blocks(self, params: Option<&Value>) -> bool {
        let config = params.and_then(|p| p.get("configuration"));
        match self {
            Dialect::Spec => false,
            Dialect::V03 => config.and_then(|c| c.get("blocking")) != Some(&Value::Bool(false)),
            Dialect::V1 => config.and_then(|c| c.get("returnImmediately")) != Some(&Value::Bool(true)),
        }
    }

    /// Whether a Task must carry a `contextId` (one is made when the message has none).
    pub fn needs_context(self) -> bool {
        self != Dialect::Spec
    }

    /// A send's answer: the Task in this dialect.
    pub fn sent(self, task: Value) -> Value {
        match self {
            Dialect::Spec => task,
            Dialect::V03 => v03_task(task),
            Dialect::V1 => {
                let mut m = Map::new();
                m.insert("task".into(), v1_task(task));
                Value::Object(m)
            }
        }
    }

    /// A get's answer: the Task in this dialect.
    pub fn got(self, task: Value) -> Value {
        match self {
            Dialect::Spec => task,
            Dialect::V03 => v03_task(task),
            Dialect::V1 => v1_task(task),
        }
    }
}

/// What a stream tells of a Task, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The Task as it first is (`submitted`).
    Task(Value),
    /// A new status (`working`, and the last one); `last` ends the stream.
    Status { task: Value, last: bool },
    /// One of the Task's artifacts, whole.
    Artifact { task: Value, artifact: Value },
}

impl Dialect {
    /// One stream event's `result`, in this dialect: v0.3 sends the Task and
    /// `status-update` / `artifact-update` objects with `kind`; v1.0 wraps each in `task`,
    /// `statusUpdate` or `artifactUpdate`.
    pub fn event(self, event: Event) -> Value {
        let ids = |task: &Value| {
            let mut m = Map::new();
            m.insert("taskId".into(), task.get("id").cloned().unwrap_or(Value::Null));
            if let Some(c) = task.get("contextId") {
                m.insert("contextId".into(), c.clone());
            }
            m
        };
        let wrap = |key: &str, inner: Value| {
            let mut m = Map::new();
            m.insert(key.into(), inner);
            Value::Object(m)
        };
        match (self, event) {
            (Dialect::V1, Event::Task(t)) => self.sent(t),
            (_, Event::Task(t)) => self.got(t),
            (dialect, Event::Status { task, last }) => {
                let mut m = ids(&task);
                let translated = dialect.got(task);
                m.insert("status".into(), translated.get("status").cloned().unwrap_or(Value::Null));
                if dialect == Dialect::V1 {
                    return wrap("statusUpdate", Value::Object(m));
                }
                let mut out = Map::new();
                out.insert("kind".into(), "status-update".into());
                out.extend(m);
                out.insert("final".into(), last.into());
                Value::Object(out)
            }
            (dialect, Event::Artifact { task, artifact }) => {
                let mut m = ids(&task);
                let mut holder = Map::new();
                holder.insert("artifacts".into(), Value::Array(vec![artifact]));
                let one = match dialect.got(Value::Object(holder)) {
                    Value::Object(mut h) => match h.remove("artifacts") {
                        Some(Value::Array(mut a)) if !a.is_empty() => a.remove(0),
                        _ => Value::Null,
                    },
                    _ => Value::Null,
                };
                m.insert("artifact".into(), one);
                m.insert("lastChunk".into(), true.into());
                if dialect == Dialect::V1 {
                    return wrap("artifactUpdate", Value::Object(m));
                }
                let mut out = Map::new();
                out.insert("kind".into(), "artifact-update".into());
                out.extend(m);
                Value::Object(out)
            }
        }
    }
}

/// A Task as v0.3 reads it: `kind` on the Task, its messages and their parts; every message
/// with an id.
fn v03_task(task: Value) -> Value {
    let Value::Object(mut t) = task else { return task };
    let id = t.get("id").map(crate::json::js_string).unwrap_or_default();
    if let Some(Value::Object(status)) = t.get_mut("status") {
        if let Some(Value::Object(msg)) = status.get_mut("message") {
            v03_message(msg, &format!("{id}-status"));
        }
    }
    artifact_parts(&mut t, v03_part);
    t.insert("kind".into(), "task".into());
    Value::Object(t)
}

/// `each` applied to every part of every artifact of a Task.
fn artifact_parts(task: &mut Map<String, Value>, each: fn(&mut Value)) {
    if let Some(Value::Array(artifacts)) = task.get_mut("artifacts") {
        for a in artifacts.iter_mut() {
            if let Some(Value::Array(parts)) = a.get_mut("parts") {
                parts.iter_mut().for_each(each);
            }
        }
    }
}

fn v03_message(msg: &mut Map<String, Value>, fallback_id: &str) {
    if !msg.contains_key("messageId") {
        msg.insert("messageId".into(), fallback_id.into());
    }
    if let Some(Value::Array(parts)) = msg.get_mut("parts") {
        parts.iter_mut().for_each(v03_part);
    }
    msg.insert("kind".into(), "message".into());
}

fn v03_part(part: &mut Value) {
    if let Value::Object(p) = part {
        if !p.contains_key("kind") {
            let kind = if p.contains_key("text") {
                "text"
            } else if p.contains_key("data") {
                "data"
            } else {
                "file"
            };
            p.insert("kind".into(), kind.into());
        }
    }
}

/// A Task as v1.0 reads it: no `kind`, enum states and roles, every message with an id.
fn v1_task(task: Value) -> Value {
    let Value::Object(mut t) = task else { return task };
    t.remove("kind");
    let id = t.get("id").map(crate::json::js_string).unwrap_or_default();
    if let Some(Value::Object(status)) = t.get_mut("status") {
        if let Some(Value::String(state)) = status.get_mut("state") {
            *state = v1_state(state).to_string();
        }
        if let Some(Value::Object(msg)) = status.get_mut("message") {
            v1_message(msg, &format!("{id}-status"));
        }
    }
    artifact_parts(&mut t, v1_part);
    Value::Object(t)
}

fn v1_message(msg: &mut Map<String, Value>, fallback_id: &str) {
    msg.remove("kind");
    if !msg.contains_key("messageId") {
        msg.insert("messageId".into(), fallback_id.into());
    }
    if let Some(Value::String(role)) = msg.get_mut("role") {
        *role = match role.as_str() {
            "user" => "ROLE_USER",
            "agent" => "ROLE_AGENT",
            other if other.starts_with("ROLE_") => other,
            _ => "ROLE_UNSPECIFIED",
        }
        .to_string();
    }
    if let Some(Value::Array(parts)) = msg.get_mut("parts") {
        parts.iter_mut().for_each(v1_part);
    }
}

fn v1_part(part: &mut Value) {
    if let Value::Object(p) = part {
        p.remove("kind");
    }
}

/// A v0.3 / SPEC state as v1.0 spells it.
pub fn v1_state(state: &str) -> &'static str {
    match state {
        "submitted" => "TASK_STATE_SUBMITTED",
        "working" => "TASK_STATE_WORKING",
        "completed" => "TASK_STATE_COMPLETED",
        "failed" => "TASK_STATE_FAILED",
        "canceled" => "TASK_STATE_CANCELED",
        "rejected" => "TASK_STATE_REJECTED",
        "input-required" => "TASK_STATE_INPUT_REQUIRED",
        "auth-required" => "TASK_STATE_AUTH_REQUIRED",
        _ => "TASK_STATE_UNSPECIFIED",
    }
}

/// The served card's additions for the SDKs, beside SPEC's fields: the interfaces v1.0
/// clients pick an endpoint from (both generations, one endpoint), the transport v0.3 clients
/// read, and `tags` on every skill (both generations' validators require them).
pub fn interop_card(mut card: Value, url: &str) -> Value {
    let Value::Object(c) = &mut card else { return card };
    let interface = |version: &str| {
        let mut i = Map::new();
        i.insert("url".into(), url.into());
        i.insert("protocolBinding".into(), "JSONRPC".into());
        i.insert("protocolVersion".into(), version.into());
        Value::Object(i)
    };
    c.insert("supportedInterfaces".into(), Value::Array(vec![interface("1.0"), interface("0.3")]));
    c.insert("preferredTransport".into(), "JSONRPC".into());
    if let Some(Value::Array(skills)) = c.get_mut("skills") {
        for s in skills.iter_mut() {
            if let Value::Object(s) = s {
                if !s.contains_key("tags") {
                    let tag = s.get("name").map(crate::json::js_string).unwrap_or_else(|| "skill".into());
                    s.insert("tags".into(), Value::Array(vec![tag.into()]));
                }
            }
        }
    }
    card
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn methods_and_the_version_header_pick_the_dialect() {
        assert_eq!(classify("SendMessage", None), Some((Dialect::Spec, Op::Send)));
        assert_eq!(classify("SendMessage", Some("1.0")), Some((Dialect::V1, Op::Send)));
        assert_eq!(classify("GetTask", Some("0.3")), Some((Dialect::Spec, Op::Get)));
        assert_eq!(classify("tasks/get", Some("1.0")), Some((Dialect::V03, Op::Get)));
        assert_eq!(classify("message/send", None), Some((Dialect::V03, Op::Send)));
        assert_eq!(classify("tasks/cancel", None), Some((Dialect::V03, Op::Cancel)));
        assert_eq!(classify("CancelTask", Some("1.0")), Some((Dialect::V1, Op::Cancel)));
        assert_eq!(classify("CancelTask", None), Some((Dialect::Spec, Op::Cancel)));
        assert_eq!(classify("SendStreamingMessage", None), Some((Dialect::V1, Op::Stream)));
        assert_eq!(classify("message/stream", Some("1.0")), Some((Dialect::V03, Op::Stream)));
        assert_eq!(classify("tasks/resubscribe", None), None);
    }

    #[test]
    fn sends_block_unless_asked_not_to_spec_never_does() {
        let p = |c: Value| json!({ "message": {}, "configuration": c });
        assert!(!Dialect::Spec.blocks(None));
        assert!(Dialect::V03.blocks(None));
        assert!(!Dialect::V03.blocks(Some(&p(json!({ "blocking": false })))));
        assert!(Dialect::V1.blocks(Some(&p(json!({ "blocking": false })))));
        assert!(!Dialect::V1.blocks(Some(&p(json!({ "returnImmediately": true })))));
    }

    #[test]
    fn a_task_is_translated_for_each_generation() {
        let task = json!({ "id": "t1", "contextId": "c", "status": { "state": "completed",
            "message": { "role": "agent", "parts": [{ "kind": "text", "text": "hi" }] } },
            "artifacts": [{ "artifactId": "a", "parts": [{ "kind": "text", "text": "hi" }] }] });
        assert_eq!(Dialect::Spec.sent(task.clone()), task);
        let v1 = Dialect::V1.sent(task.clone());
        assert_eq!(v1["task"]["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(v1["task"]["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(v1["task"]["status"]["message"]["messageId"], "t1-status");
        assert_eq!(v1["task"]["artifacts"][0]["parts"][0], json!({ "text": "hi" }));
        let v03 = Dialect::V03.got(task);
        assert_eq!(v03["kind"], "task");
        assert_eq!(v03["status"]["message"]["kind"], "message");
        assert_eq!(v03["status"]["state"], "completed");
    }

    #[test]
    fn the_served_card_adds_interfaces_and_skill_tags() {
        let card = interop_card(
            json!({ "url": "http://h/", "skills": [{ "id": "s", "name": "s", "description": "" }] }),
            "http://h/",
        );
        assert_eq!(
            card["supportedInterfaces"][0],
            json!({ "url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" })
        );
        assert_eq!(card["supportedInterfaces"][1]["protocolVersion"], "0.3");
        assert_eq!(card["skills"][0]["tags"], json!(["s"]));
        assert_eq!(card["url"], "http://h/");
    }

    #[test]
    fn stream_events_in_each_generation() {
        let task = json!({ "id": "t", "contextId": "c", "status": { "state": "completed" } });
        let artifact = json!({ "artifactId": "a", "parts": [{ "kind": "text", "text": "hi" }] });
        let status = |d: Dialect| d.event(Event::Status { task: task.clone(), last: true });
        assert_eq!(
            status(Dialect::V03),
            json!({ "kind": "status-update", "taskId": "t", "contextId": "c", "status": { "state": "completed" }, "final": true })
        );
        assert_eq!(
            status(Dialect::V1),
            json!({ "statusUpdate": { "taskId": "t", "contextId": "c", "status": { "state": "TASK_STATE_COMPLETED" } } })
        );
        let art = |d: Dialect| d.event(Event::Artifact { task: task.clone(), artifact: artifact.clone() });
        assert_eq!(art(Dialect::V03)["kind"], "artifact-update");
        assert_eq!(art(Dialect::V03)["artifact"]["parts"][0]["kind"], "text");
        assert_eq!(art(Dialect::V1)["artifactUpdate"]["artifact"]["parts"][0], json!({ "text": "hi" }));
        assert_eq!(art(Dialect::V1)["artifactUpdate"]["lastChunk"], true);
        assert_eq!(Dialect::V1.event(Event::Task(task.clone()))["task"]["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(Dialect::V03.event(Event::Task(task))["kind"], "task");
    }
}
