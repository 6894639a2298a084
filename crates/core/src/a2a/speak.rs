//! Which A2A wire a remote agent is spoken to in, from its card, and the translation of what it
//! answers back to SPEC's shapes (lower-case states, `kind` on parts), which the rest of the
//! client reads.
//!
//! A card with a top-level `url` is spoken to in SPEC's wire first (toolnexus peers, and the
//! reference's, keep their exact exchange); should that endpoint refuse SPEC's method
//! (-32601 "method not found", or -32009 "version not supported" from a v1.0 server that took
//! the missing `A2A-Version` for 0.3), the card's other offer is used from then on: a v1.0
//! JSON-RPC interface from `supportedInterfaces`, else a v0.3 one, else v0.3 at `url` when the
//! card is v0.3's (it names a `preferredTransport`); a card like SPEC's has no fallback. A card
//! with no `url` is spoken to as its interfaces say.

use serde_json::{Map, Value};

/// One of the wires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Spec,
    V03,
    V1,
}

/// Where and how to reach an agent: a first choice and what to fall back on.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub first: (String, Wire),
    pub fallback: Option<(String, Wire)>,
}

fn interface(card: &Value, major: &str) -> Option<String> {
    card.get("supportedInterfaces")?.as_array()?.iter().find_map(|i| {
        let binding = i.get("protocolBinding").and_then(Value::as_str).unwrap_or("JSONRPC");
        let version = i.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
        (binding.eq_ignore_ascii_case("JSONRPC") && version.starts_with(major))
            .then(|| i.get("url").and_then(Value::as_str).map(str::to_string))
            .flatten()
    })
}

/// The route a card offers; `url` is the card's `url` as the caller read it (`None`: it has
/// none), `origin` the endpoint used when the card names none at all.
pub fn route(card: &Value, url: Option<String>, origin: String) -> Route {
    let v1 = interface(card, "1").map(|u| (u, Wire::V1));
    let v03 = interface(card, "0.3").map(|u| (u, Wire::V03));
    match url {
        Some(u) => {
            // A card of v0.3's SDKs looks like SPEC's but names its transport.
            let v03_card = card.get("preferredTransport").is_some() || card.get("additionalInterfaces").is_some();
            let fallback = v1.or(v03).or_else(|| v03_card.then(|| (u.clone(), Wire::V03)));
            Route { first: (u, Wire::Spec), fallback }
        }
        None => match v1.or(v03) {
            Some(first) => Route { first, fallback: None },
            None => Route { first: (origin, Wire::Spec), fallback: None },
        },
    }
}

/// Whether an error code is an endpoint's way of saying it does not speak that wire.
pub fn refused(code: Option<i64>) -> bool {
    matches!(code, Some(-32601) | Some(-32009))
}

impl Wire {
    pub fn send_method(self) -> &'static str {
        match self {
            Wire::V03 => "message/send",
            Wire::Spec | Wire::V1 => "SendMessage",
        }
    }

    pub fn get_method(self) -> &'static str {
        match self {
            Wire::V03 => "tasks/get",
            Wire::Spec | Wire::V1 => "GetTask",
        }
    }

    /// The cancel of this wire (SPEC's has none).
    pub fn cancel_method(self) -> Option<&'static str> {
        match self {
            Wire::V03 => Some("tasks/cancel"),
            Wire::V1 => Some("CancelTask"),
            Wire::Spec => None,
        }
    }

    /// The streaming send of this wire (SPEC's has none).
    pub fn stream_method(self) -> Option<&'static str> {
        match self {
            Wire::V03 => Some("message/stream"),
            Wire::V1 => Some("SendStreamingMessage"),
            Wire::Spec => None,
        }
    }

    /// A Task (SPEC's shape) as one streamed event leaves it: a Task or a direct Message
    /// replaces it, a status update sets its id and status, an artifact update adds (or, with
    /// `append`, extends) an artifact.
    pub fn fold_event(self, task: Value, event: Value) -> Value {
        let (kind, body) = match self {
            Wire::V1 => match event {
                Value::Object(mut m) => {
                    let found = ["task", "message", "statusUpdate", "artifactUpdate"]
                        .into_iter()
                        .find(|k| m.contains_key(*k))
                        .unwrap_or("");
                    (found.to_string(), m.remove(found).unwrap_or(Value::Null))
                }
                other => (String::new(), other),
            },
            _ => {
                let kind = match event.get("kind").and_then(Value::as_str) {
                    Some("status-update") => "statusUpdate",
                    Some("artifact-update") => "artifactUpdate",
                    Some("message") => "message",
                    _ => "task",
                };
                (kind.to_string(), event)
            }
        };
        match kind.as_str() {
            "task" => self.got(body),
            "message" => {
                let mut wrapped = Map::new();
                wrapped.insert("message".into(), body);
                match self {
                    Wire::V1 => self.task_of(Value::Object(wrapped)),
                    _ => message_task(wrapped.remove("message").unwrap_or(Value::Null)),
                }
            }
            "statusUpdate" => {
                let mut t = match task {
                    Value::Object(t) => t,
                    _ => Map::new(),
                };
                if let Some(id) = body.get("taskId") {
                    t.entry("id").or_insert_with(|| id.clone());
                }
                let mut holder = Map::new();
                holder.insert("status".into(), body.get("status").cloned().unwrap_or(Value::Null));
                let status = self.got(Value::Object(holder)).get("status").cloned().unwrap_or(Value::Null);
                t.insert("status".into(), status);
                Value::Object(t)
            }
            "artifactUpdate" => {
                let mut t = match task {
                    Value::Object(t) => t,
                    _ => Map::new(),
                };
                if let Some(id) = body.get("taskId") {
                    t.entry("id").or_insert_with(|| id.clone());
                }
                let mut holder = Map::new();
                let artifact = body.get("artifact").cloned().unwrap_or(Value::Null);
                holder.insert("artifacts".into(), Value::Array(vec![artifact]));
                let artifact = match self.got(Value::Object(holder)).get_mut("artifacts").map(Value::take) {
                    Some(Value::Array(mut a)) if !a.is_empty() => a.remove(0),
                    _ => Value::Null,
                };
                let append = body.get("append") == Some(&Value::Bool(true));
                let list = t.entry("artifacts").or_insert_with(|| Value::Array(Vec::new()));
                if !list.is_array() {
                    *list = Value::Array(Vec::new());
                }
                if let Value::Array(list) = list {
                    let same =
                        |a: &Value| a.get("artifactId").is_some() && a.get("artifactId") == artifact.get("artifactId");
                    match list.iter_mut().find(|a| same(a)) {
                        Some(old) if append => {
                            let more = artifact.get("parts").and_then(Value::as_array).cloned().unwrap_or_default();
                            if let Some(Value::Array(parts)) = old.get_mut("parts") {
                                parts.extend(more);
                            }
                        }
                        Some(old) => *old = artifact,
                        None => list.push(artifact),
                    }
                }
                Value::Object(t)
            }
            _ => task,
        }
    }

    /// The header a request in this wire carries, beside the agent's own.
    pub fn header(self) -> Option<(String, String)> {
        (self == Wire::V1).then(|| ("A2A-Version".to_string(), "1.0".to_string()))
    }

    /// A send's params: `text` as a user message, answered without waiting for the Task.
    pub fn send_params(self, text: String, message_id: String) -> Value {
        let mut part = Map::with_capacity(2);
        if self != Wire::V1 {
            part.insert("kind".into(), "text".into());
        }
        part.insert("text".into(), text.into());
        let mut message = Map::with_capacity(4);
        message.insert("role".into(), if self == Wire::V1 { "ROLE_USER" } else { "user" }.into());
        message.insert("messageId".into(), message_id.into());
        message.insert("parts".into(), Value::Array(vec![Value::Object(part)]));
        if self == Wire::V03 {
            message.insert("kind".into(), "message".into());
        }
        let mut configuration = Map::with_capacity(1);
        match self {
            Wire::V1 => configuration.insert("returnImmediately".into(), true.into()),
            Wire::Spec | Wire::V03 => configuration.insert("blocking".into(), false.into()),
        };
        let mut params = Map::with_capacity(2);
        params.insert("message".into(), Value::Object(message));
        params.insert("configuration".into(), Value::Object(configuration));
        Value::Object(params)
    }

    /// What a send answered, as a SPEC Task: v1.0's `{ task }` / `{ message }` unwrapped, a
    /// direct Message read as a completed Task holding it, states and parts in SPEC's spelling.
    pub fn task_of(self, result: Value) -> Value {
        match self {
            Wire::Spec => result,
            Wire::V03 => {
                if result.get("kind").and_then(Value::as_str) == Some("message") {
                    message_task(result)
                } else {
                    result
                }
            }
            Wire::V1 => match result {
                Value::Object(mut m) if m.contains_key("task") => spec_task(m.remove("task").unwrap_or(Value::Null)),
                Value::Object(mut m) if m.contains_key("message") => {
                    message_task(spec_message(m.remove("message").unwrap_or(Value::Null)))
                }
                other => spec_task(other),
            },
        }
    }

    /// What a get answered, as a SPEC Task.
    pub fn got(self, result: Value) -> Value {
        match self {
            Wire::V1 => spec_task(result),
            Wire::Spec | Wire::V03 => result,
        }
    }
}

/// A direct Message answer as a completed Task that holds it as its status message.
fn message_task(message: Value) -> Value {
    let mut status = Map::new();
    status.insert("state".into(), "completed".into());
    let mut t = Map::new();
    t.insert("id".into(), "".into());
    t.insert("status".into(), Value::Object(status));
    let mut artifact = Map::new();
    artifact.insert("parts".into(), message.get("parts").cloned().unwrap_or(Value::Array(Vec::new())));
    t.insert("artifacts".into(), Value::Array(vec![Value::Object(artifact)]));
    Value::Object(t)
}

/// A v1.0 Task in SPEC's spelling.
fn spec_task(task: Value) -> Value {
    let Value::Object(mut t) = task else { return task };
    if let Some(Value::Object(status)) = t.get_mut("status") {
        if let Some(Value::String(state)) = status.get_mut("state") {
            *state = spec_state(state);
        }
        if let Some(msg) = status.remove("message") {
            status.insert("message".into(), spec_message(msg));
        }
    }
    if let Some(Value::Array(artifacts)) = t.get_mut("artifacts") {
        for a in artifacts.iter_mut() {
            if let Some(Value::Array(parts)) = a.get_mut("parts") {
                parts.iter_mut().for_each(spec_part);
            }
        }
    }
    if let Some(Value::Array(history)) = t.get_mut("history") {
        for m in history.iter_mut() {
            *m = spec_message(std::mem::take(m));
        }
    }
    Value::Object(t)
}

fn spec_message(message: Value) -> Value {
    let Value::Object(mut m) = message else { return message };
    if let Some(Value::String(role)) = m.get_mut("role") {
        if let Some(r) = role.strip_prefix("ROLE_") {
            *role = r.to_ascii_lowercase();
        }
    }
    if let Some(Value::Array(parts)) = m.get_mut("parts") {
        parts.iter_mut().for_each(spec_part);
    }
    Value::Object(m)
}

fn spec_part(part: &mut Value) {
    if let Value::Object(p) = part {
        if !p.contains_key("kind") && p.get("text").is_some_and(Value::is_string) {
            p.insert("kind".into(), "text".into());
        }
    }
}

/// `TASK_STATE_INPUT_REQUIRED` → `input-required`; anything else as it came.
fn spec_state(state: &str) -> String {
    match state.strip_prefix("TASK_STATE_") {
        Some(rest) => rest.to_ascii_lowercase().replace('_', "-"),
        None => state.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_card_with_a_url_is_spoken_to_in_spec_first() {
        let spec = json!({ "url": "http://a/", "protocolVersion": "0.3.0" });
        assert_eq!(
            route(&spec, Some("http://a/".into()), "http://a".into()),
            Route { first: ("http://a/".into(), Wire::Spec), fallback: None }
        );
        let v03 = json!({ "url": "http://a/", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC" });
        assert_eq!(route(&v03, Some("http://a/".into()), "x".into()).fallback, Some(("http://a/".into(), Wire::V03)));
        let merged = json!({ "url": "http://a/", "supportedInterfaces": [
            { "url": "http://a/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3" },
            { "url": "http://a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }] });
        assert_eq!(
            route(&merged, Some("http://a/".into()), "x".into()).fallback,
            Some(("http://a/v1".into(), Wire::V1))
        );
        let v1 = json!({ "supportedInterfaces": [{ "url": "http://b/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }] });
        assert_eq!(route(&v1, None, "x".into()), Route { first: ("http://b/rpc".into(), Wire::V1), fallback: None });
        assert_eq!(route(&json!({}), None, "http://o".into()).first, ("http://o".into(), Wire::Spec));
    }

    #[test]
    fn answers_come_back_in_spec_shapes() {
        let v1 = json!({ "task": { "id": "t", "status": { "state": "TASK_STATE_INPUT_REQUIRED",
            "message": { "role": "ROLE_AGENT", "parts": [{ "text": "which?" }] } } } });
        let t = Wire::V1.task_of(v1);
        assert_eq!(t["status"]["state"], "input-required");
        assert_eq!(t["status"]["message"]["role"], "agent");
        assert_eq!(t["status"]["message"]["parts"][0], json!({ "text": "which?", "kind": "text" }));
        let direct = Wire::V03.task_of(json!({ "kind": "message", "parts": [{ "kind": "text", "text": "hi" }] }));
        assert_eq!(direct["status"]["state"], "completed");
        assert_eq!(direct["artifacts"][0]["parts"][0]["text"], "hi");
        assert_eq!(Wire::Spec.task_of(json!({ "id": "t" })), json!({ "id": "t" }));
        assert_eq!(Wire::V1.send_params("x".into(), "m".into())["message"]["parts"][0], json!({ "text": "x" }));
        assert_eq!(Wire::V03.send_params("x".into(), "m".into())["message"]["kind"], "message");
    }

    #[test]
    fn streamed_events_fold_into_one_task() {
        let v1 = [
            json!({"task": {"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}}),
            json!({"artifactUpdate": {"taskId": "t", "artifact": {"artifactId": "a", "parts": [{"text": "he"}]}}}),
            json!({"artifactUpdate": {"taskId": "t", "append": true, "artifact": {"artifactId": "a", "parts": [{"text": "llo"}]}}}),
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ];
        let task = v1.into_iter().fold(Value::Null, |t, e| Wire::V1.fold_event(t, e));
        assert_eq!(task["id"], "t");
        assert_eq!(task["status"]["state"], "completed");
        assert_eq!(
            task["artifacts"][0]["parts"],
            json!([{"text": "he", "kind": "text"}, {"text": "llo", "kind": "text"}])
        );
        let v03 = [
            json!({"kind": "status-update", "taskId": "u", "status": {"state": "working"}, "final": false}),
            json!({"kind": "artifact-update", "taskId": "u", "artifact": {"parts": [{"kind": "text", "text": "x"}]}}),
            json!({"kind": "status-update", "taskId": "u", "status": {"state": "completed"}, "final": true}),
        ];
        let task = v03.into_iter().fold(Value::Null, |t, e| Wire::V03.fold_event(t, e));
        assert_eq!((task["id"].as_str(), task["status"]["state"].as_str()), (Some("u"), Some("completed")));
        assert_eq!(task["artifacts"][0]["parts"][0]["text"], "x");
        let msg =
            Wire::V03.fold_event(Value::Null, json!({"kind": "message", "parts": [{"kind": "text", "text": "hi"}]}));
        assert_eq!(msg["status"]["state"], "completed");
    }
}
