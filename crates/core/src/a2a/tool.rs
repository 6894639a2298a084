//! Card resolution and the skill tool: one `SendMessage`, then `GetTask` polls until the task
//! ends, the whole call bounded by one budget.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::agent::Agent;
use super::speak::Wire;
use super::wire::{self, checked_headers, fired, json_rpc, Fail, Reply};
use crate::error::{Error, Result};
use crate::fetch::Request;
use crate::json::js_string;
use crate::tool::{SharedTool, Tool, ToolContext, ToolDecl};
use crate::types::{sanitize, ToolResult};

/// The description of the one argument every A2A tool takes.
pub const TASK_DESCRIPTION: &str = "The task to send to the agent, in natural language.";

/// `{ type: "object", properties: { task: { type: "string", description } }, required: ["task"],
/// additionalProperties: false }`
fn task_schema() -> Value {
    let mut task = Map::with_capacity(2);
    task.insert("type".into(), "string".into());
    task.insert("description".into(), TASK_DESCRIPTION.into());
    let mut props = Map::with_capacity(1);
    props.insert("task".into(), Value::Object(task));
    let mut schema = Map::with_capacity(4);
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(props));
    schema.insert("required".into(), Value::Array(vec!["task".into()]));
    schema.insert("additionalProperties".into(), Value::Bool(false));
    Value::Object(schema)
}

/// The descriptor's headers, `${ENV}` expanded, checked.
fn headers_of(agent: &Agent) -> std::result::Result<Vec<(String, String)>, Fail> {
    let expanded = crate::mcp::expand_env_headers(agent.headers.as_ref()).map_err(|e| Fail::Message(e.to_string()))?;
    let pairs = expanded.unwrap_or_default().into_iter().map(|(k, v)| (k, js_string(&v))).collect();
    checked_headers(pairs)
}

fn fail_to_error(f: Fail) -> Error {
    match f {
        Fail::Fetch(e) => Error::Fetch(e),
        other => Error::Invalid(other.message()),
    }
}

/// `GET` the card with the descriptor's headers, within its timeout; a non-2xx reply is
/// `HTTP <status>: <body>`, a body that is not JSON a `SyntaxError`.
async fn fetch_card(agent: &Agent, headers: Vec<(String, String)>) -> Result<Value> {
    let until = wire::deadline(Instant::now(), agent.timeout_ms());
    let mut secrets = crate::redact::Secrets::new();
    secrets.add_headers(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let req = Request { method: http::Method::GET, url: agent.card.clone(), headers, body: None };
    let (status, text) = wire::send(req, until, None).await.map_err(fail_to_error)?;
    if !(200..300).contains(&status) {
        return Err(Error::Invalid(secrets.scrub(&format!("HTTP {status}: {text}")).into_owned()));
    }
    crate::json::parse_str::<Value>(&text)
        .map_err(|e| Error::NotJson(format!("the agent card at {} is not valid JSON ({e})", agent.card)))
}

/// `Cannot read properties of <v> (reading '<key>')` for a null card or skill.
fn read_of_null(v: &Value, key: &str) -> Error {
    Error::BadShape(format!("Cannot read properties of {} (reading '{key}')", js_string(v)))
}

/// `v[key] ?? fallback` of a JSON value (a primitive has no fields).
fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|o| o.get(key)).filter(|x| !x.is_null())
}

/// Resolve a descriptor to its tools: fetch the card and make one tool per skill. The tools'
/// prefix is the card's `name` ("agent" without one); their endpoint the card's `url`, else
/// the card URL's origin.
pub async fn agent_tools(agent: &Agent) -> Result<Vec<SharedTool>> {
    let headers = headers_of(agent).map_err(fail_to_error)?;
    let card = fetch_card(agent, headers).await?;
    if card.is_null() {
        return Err(read_of_null(&card, "name"));
    }
    let agent_name = field(&card, "name").cloned().unwrap_or_else(|| "agent".into());
    let origin = url::Url::parse(&agent.card).map(|u| u.origin().ascii_serialization()).unwrap_or_default();
    let streams = field(&card, "capabilities").and_then(|c| field(c, "streaming")) == Some(&Value::Bool(true));
    let route = Arc::new(Routing::new(
        super::speak::route(&card, field(&card, "url").map(js_string), origin),
        agent.header_origins(),
        streams,
    ));
    let skills = match field(&card, "skills") {
        None => return Ok(Vec::new()),
        Some(Value::Array(s)) => s,
        Some(_) => return Err(Error::BadShape("card.skills.map is not a function".into())),
    };
    let prefix = sanitize(&js_string(&agent_name));
    let schema = task_schema();
    skills
        .iter()
        .map(|skill| {
            if skill.is_null() {
                return Err(read_of_null(skill, "id"));
            }
            let skill_id = field(skill, "id").or_else(|| field(skill, "name")).map(js_string).unwrap_or_default();
            let description = field(skill, "description")
                .or_else(|| field(skill, "name"))
                .map(js_string)
                .unwrap_or_else(|| skill_id.clone());
            Ok(Arc::new(A2aTool {
                decl: ToolDecl::new(format!("{prefix}_{}", sanitize(&skill_id)), description, schema.clone(), "a2a"),
                agent_name: agent_name.clone(),
                route: route.clone(),
                agent: agent.clone(),
            }) as SharedTool)
        })
        .collect()
}

/// One advertised skill of a remote agent.
pub struct A2aTool {
    decl: ToolDecl,
    /// The card's `name` (or "agent"), as `metadata.agent`.
    agent_name: Value,
    /// Where the JSON-RPC calls go, and in which wire (shared by the agent's skills).
    route: Arc<Routing>,
    agent: Agent,
}

/// A route and whether its fallback has been taken (once an endpoint refused SPEC's wire).
pub struct Routing {
    route: super::speak::Route,
    fell_back: std::sync::atomic::AtomicBool,
    /// The origins the agent's headers may go to.
    header_origins: Vec<String>,
    /// Whether the warning about headers held back has been given.
    warned: std::sync::atomic::AtomicBool,
    /// The card says the agent streams: sends in a wire that has a stream use it.
    streams: bool,
}

impl Routing {
    fn new(route: super::speak::Route, header_origins: Vec<String>, streams: bool) -> Routing {
        Routing {
            route,
            fell_back: std::sync::atomic::AtomicBool::new(false),
            header_origins,
            warned: std::sync::atomic::AtomicBool::new(false),
            streams,
        }
    }

    /// The headers an endpoint gets: all of them on the card's origin or a trusted one, none
    /// elsewhere (a card can name any host as its endpoint; an `Authorization` meant for the
    /// card's host must not follow it there). Held back once, a warning says so.
    fn headers_for<'a>(&self, endpoint: &str, card: &str, headers: &'a [(String, String)]) -> &'a [(String, String)] {
        if headers.is_empty() {
            return headers;
        }
        let origin = url::Url::parse(endpoint).map(|u| u.origin().ascii_serialization()).unwrap_or_default();
        if self.header_origins.contains(&origin) {
            return headers;
        }
        if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let shown = crate::redact::redact_urls(card);
            crate::warn::warn(&format!(
                "[toolnexus] A2A agent {shown}: its card names an endpoint on another origin ({origin}); \
                 the agent's headers are not sent there (list that origin in trustedOrigins to send them)"
            ));
        }
        &[]
    }

    fn current(&self) -> (String, Wire) {
        match &self.route.fallback {
            Some(fb) if self.fell_back.load(std::sync::atomic::Ordering::Relaxed) => fb.clone(),
            _ => self.route.first.clone(),
        }
    }

    /// After a refusal of SPEC's wire: the fallback, from now on (`None` when there is none).
    fn fall_back(&self, wire: Wire, code: Option<i64>) -> Option<(String, Wire)> {
        if wire != Wire::Spec || !super::speak::refused(code) {
            return None;
        }
        let fb = self.route.fallback.clone()?;
        self.fell_back.store(true, std::sync::atomic::Ordering::Relaxed);
        Some(fb)
    }
}

/// One JSON-RPC call in `wire` (its header added to the agent's).
async fn call(
    endpoint: &str,
    wire: Wire,
    method: &str,
    params: Value,
    headers: &[(String, String)],
    until: Option<Instant>,
    token: Option<&CancellationToken>,
) -> std::result::Result<Reply, Fail> {
    match wire.header() {
        None => json_rpc(endpoint, method, params, headers, until, token).await,
        Some(h) => {
            let mut all = headers.to_vec();
            all.push(h);
            json_rpc(endpoint, method, params, &all, until, token).await
        }
    }
}

impl A2aTool {
    /// The JSON-RPC endpoint this tool calls (its first choice).
    pub fn endpoint(&self) -> &str {
        &self.route.route.first.0
    }

    /// One send of `text` in `wire`, as a SPEC Task (`None`: a 2xx reply that is not JSON).
    /// When the card says the agent streams and the wire has a stream, the send is streamed
    /// and its events (read to the end of the stream) make the Task.
    async fn send_once(
        &self,
        endpoint: &str,
        wire: Wire,
        text: &str,
        headers: &[(String, String)],
        until: Option<Instant>,
        token: Option<&CancellationToken>,
    ) -> std::result::Result<Option<Value>, Fail> {
        let mut params = wire.send_params(text.to_string(), wire::uuid());
        let sent = self.route.headers_for(endpoint, &self.agent.card, headers);
        let Some(method) = wire.stream_method().filter(|_| self.route.streams) else {
            return Ok(match call(endpoint, wire, wire.send_method(), params, sent, until, token).await? {
                Reply::Result(r) => Some(wire.task_of(r.unwrap_or(Value::Null))),
                Reply::NotJson => None,
            });
        };
        // A stream runs to the Task's end: the "answer at once" settings are not for it.
        if let Value::Object(p) = &mut params {
            p.remove("configuration");
        }
        let mut all = sent.to_vec();
        all.extend(wire.header());
        let mut task = Value::Null;
        for reply in wire::json_rpc_events(endpoint, method, params, &all, until, token).await? {
            match reply {
                Reply::Result(r) => task = wire.fold_event(task, r.unwrap_or(Value::Null)),
                Reply::NotJson => return Ok(None),
            }
        }
        Ok(Some(task))
    }
}

/// What a call has seen so far, for its `metadata`.
struct Progress {
    start: Instant,
    agent: Value,
    task_id: Value,
    state: Value,
    polls: u64,
}

impl Progress {
    fn result(&self, output: String, is_error: bool) -> ToolResult {
        let mut m = Map::with_capacity(5);
        m.insert("agent".into(), self.agent.clone());
        m.insert("taskId".into(), self.task_id.clone());
        m.insert("state".into(), self.state.clone());
        m.insert("polls".into(), self.polls.into());
        m.insert("ms".into(), (self.start.elapsed().as_millis() as u64).into());
        ToolResult { output, is_error, metadata: Some(Value::Object(m)), rich: None }
    }

    fn error(&self, output: String) -> ToolResult {
        self.result(output, true)
    }

    fn canceled(&mut self) -> ToolResult {
        self.state = "canceled".into();
        self.error(format!("A2A task {} canceled", js_string(&self.task_id)))
    }

    fn timed_out(&self, budget: f64) -> ToolResult {
        let budget = crate::json::js_double_text(budget);
        self.error(format!(
            "A2A task {} timed out after {budget}ms (state={})",
            js_string(&self.task_id),
            js_string(&self.state)
        ))
    }

    /// A failed RPC: a cancel that landed meanwhile is the cancel it is.
    fn failed(&mut self, f: Fail, token: Option<&CancellationToken>) -> ToolResult {
        if fired(token) || matches!(f, Fail::Canceled) {
            return self.canceled();
        }
        self.error(f.message())
    }
}

fn terminal(state: &Value) -> bool {
    matches!(state.as_str(), Some("completed" | "failed" | "canceled"))
}

/// The `kind: "text"` parts' texts of a message or artifact.
fn texts(holder: &Value) -> Vec<&str> {
    match field(holder, "parts") {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| field(p, "kind").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| field(p, "text").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

/// A completed task's text: every artifact's text parts joined by newlines, else the last
/// agent message of the history that has text.
fn task_output(task: &Value) -> String {
    let list = |k: &str| match field(task, k) {
        Some(Value::Array(items)) => items.as_slice(),
        _ => &[],
    };
    let parts: Vec<&str> = list("artifacts").iter().flat_map(texts).collect();
    if !parts.is_empty() {
        return parts.join("\n");
    }
    for msg in list("history").iter().rev() {
        if field(msg, "role").and_then(Value::as_str) != Some("agent") {
            continue;
        }
        let text = texts(msg).join("\n");
        if !text.is_empty() {
            return text;
        }
    }
    String::new()
}

/// The text of a task's `status.message`.
fn status_text(task: &Value) -> String {
    field(task, "status").and_then(|s| field(s, "message")).map(|m| texts(m).join("\n")).unwrap_or_default()
}

#[async_trait]
impl Tool for A2aTool {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    fn as_any(&self) -> &dyn Any {
        self
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        let out = self.call_agent(args, ctx).await?;
        self.tell_canceled(&out);
        Ok(out)
    }
}

impl A2aTool {
    /// A call that ended canceled with a task the agent knows of: the agent is told, in a
    /// wire that has a cancel (SPEC's has none), without waiting for its answer.
    fn tell_canceled(&self, out: &ToolResult) {
        let meta = out.metadata.as_ref();
        let state = meta.and_then(|m| m.get("state")).and_then(Value::as_str);
        let task_id = meta.and_then(|m| m.get("taskId")).and_then(Value::as_str).unwrap_or("");
        let (endpoint, wire) = self.route.current();
        let Some(method) = wire.cancel_method() else { return };
        if state != Some("canceled") || task_id.is_empty() {
            return;
        }
        let Ok(headers) = headers_of(&self.agent) else { return };
        let headers = self.route.headers_for(&endpoint, &self.agent.card, &headers).to_vec();
        let mut params = Map::with_capacity(1);
        params.insert("id".into(), task_id.into());
        let until = wire::deadline(Instant::now(), 5_000.0);
        tokio::spawn(async move {
            let _ = call(&endpoint, wire, method, Value::Object(params), &headers, until, None).await;
        });
    }

    async fn call_agent(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        let start = Instant::now();
        let budget = ctx.timeout.unwrap_or_else(|| self.agent.timeout_ms());
        let until = wire::deadline(start, budget);
        let token = ctx.cancel.as_ref();
        let mut p =
            Progress { start, agent: self.agent_name.clone(), task_id: "".into(), state: "submitted".into(), polls: 0 };
        let headers = match headers_of(&self.agent) {
            Ok(h) => h,
            Err(f) => return Ok(p.error(f.message())),
        };
        // A call cancelled before it starts sends nothing.
        if fired(token) {
            return Ok(p.canceled());
        }
        let text = match field(&args, "task") {
            None => String::new(),
            Some(t) => js_string(t),
        };
        let (mut endpoint, mut wire) = self.route.current();
        let mut sent = self.send_once(&endpoint, wire, &text, &headers, until, token).await;
        if let Err(Fail::Rpc(code, _)) = &sent {
            if let Some((e, w)) = self.route.fall_back(wire, *code) {
                (endpoint, wire) = (e, w);
                sent = self.send_once(&endpoint, wire, &text, &headers, until, token).await;
            }
        }
        let mut task = match sent {
            Ok(Some(task)) => task,
            Ok(None) => {
                return Ok(p.error("A2A SendMessage: the agent's reply is not JSON".into()));
            }
            Err(f) => return Ok(p.failed(f, token)),
        };
        p.task_id = field(&task, "id").cloned().unwrap_or_else(|| "".into());
        if let Some(s) = field(&task, "status").and_then(|s| field(s, "state")) {
            p.state = s.clone();
        }

        let poll_every = self.agent.poll_every_ms();
        let past = || until.is_some_and(|d| Instant::now() >= d);
        while !terminal(&p.state) {
            if fired(token) {
                return Ok(p.canceled());
            }
            if start.elapsed().as_secs_f64() * 1000.0 >= budget || past() {
                return Ok(p.timed_out(budget));
            }
            wire::sleep(poll_every, until, token).await;
            if fired(token) {
                return Ok(p.canceled());
            }
            if past() {
                return Ok(p.timed_out(budget));
            }
            let mut id = Map::with_capacity(1);
            id.insert("id".into(), p.task_id.clone());
            let sent_headers = self.route.headers_for(&endpoint, &self.agent.card, &headers);
            match call(&endpoint, wire, wire.get_method(), Value::Object(id), sent_headers, until, token).await {
                Ok(reply) => {
                    p.polls += 1;
                    task = match reply {
                        Reply::Result(r) => wire.got(r.unwrap_or(Value::Null)),
                        Reply::NotJson => Value::Null,
                    };
                    if let Some(s) = field(&task, "status").and_then(|s| field(s, "state")) {
                        p.state = s.clone();
                    }
                }
                Err(Fail::TimedOut) if !fired(token) => return Ok(p.timed_out(budget)),
                Err(f) => return Ok(p.failed(f, token)),
            }
        }

        if p.state.as_str() == Some("completed") {
            let out = task_output(&task);
            return Ok(p.result(out, false));
        }
        let detail = status_text(&task);
        let state = js_string(&p.state);
        let id = js_string(&p.task_id);
        let output = if detail.is_empty() {
            format!("A2A task {id} {state}")
        } else {
            format!("A2A task {id} {state}: {detail}")
        };
        Ok(p.error(output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputs_come_from_artifacts_then_the_last_agent_message() {
        let t = json!({"artifacts": [{"parts": [{"kind": "text", "text": "a"}, {"kind": "data", "text": "x"}]},
            {"parts": [{"kind": "text", "text": "b"}, {"kind": "text", "text": 5}]}, null]});
        assert_eq!(task_output(&t), "a\nb");
        let t = json!({"artifacts": [], "history": [
            {"role": "agent", "parts": [{"kind": "text", "text": "old"}]},
            {"role": "agent", "parts": [{"kind": "text", "text": "new"}, {"kind": "text", "text": "er"}]},
            {"role": "agent", "parts": []},
            {"role": "user", "parts": [{"kind": "text", "text": "q"}]}]});
        assert_eq!(task_output(&t), "new\ner");
        assert_eq!(task_output(&json!(null)), "");
        assert_eq!(status_text(&json!({"status": {"message": {"parts": [{"kind": "text", "text": "why"}]}}})), "why");
        assert_eq!(status_text(&json!({"status": {}})), "");
    }

    #[test]
    fn the_schema_in_its_order() {
        assert_eq!(
            crate::json::to_string(&task_schema()),
            r#"{"type":"object","properties":{"task":{"type":"string","description":"The task to send to the agent, in natural language."}},"required":["task"],"additionalProperties":false}"#
        );
    }
}
