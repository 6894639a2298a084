//! The A2A inbound profile (SPEC §7B): the Agent Card, the JSON-RPC methods `SendMessage` and
//! `GetTask` (and their A2A v0.3 / v1.0 forms, see `dialect`), and the background fulfilment of
//! a Task through the host's `runTask`.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::callback::SharedCallback;
use crate::error::Error;
use crate::json::{truthy, DeepStack};
use crate::serve::dialect::Op;
use crate::serve::options::A2AConfig;
use crate::serve::store::SharedTaskStore;
use crate::serve::task::{task, text_message};
use crate::skills::SkillInfo;

pub const PROTOCOL_VERSION: &str = "0.3.0";
pub const DEFAULT_VERSION: &str = "0.1.0";
pub const DEFAULT_NAME: &str = "toolnexus-agent";

/// What the card needs of a skill: its name and description, as given.
#[derive(Debug, Clone, Default)]
pub struct CardSkill {
    pub name: Option<Value>,
    pub description: Option<Value>,
}

impl CardSkill {
    pub fn of_info(s: &SkillInfo) -> CardSkill {
        CardSkill { name: Some(Value::String(s.name.clone())), description: s.description.clone().map(Value::String) }
    }

    /// From a `SkillInfo`-shaped JSON value (anything else has neither field).
    pub fn of_value(v: &Value) -> CardSkill {
        CardSkill { name: v.get("name").cloned(), description: v.get("description").cloned() }
    }
}

/// `v ?? fallback`: absent or `null` takes the fallback.
fn or_default(v: &Option<Value>, fallback: &str) -> Value {
    match v {
        Some(Value::Null) | None => Value::String(fallback.into()),
        Some(v) => v.clone(),
    }
}

/// Whether a skill passes the `skills` filter: an array names the wanted skills (strictly
/// equal names), a string is searched for the name as text; anything else keeps all.
fn wanted(filter: &Option<Value>, skill: &CardSkill) -> bool {
    let Some(filter) = filter.as_ref().filter(|f| truthy(f)) else { return true };
    match filter {
        Value::Array(names) => skill.name.as_ref().is_some_and(|n| names.contains(n)),
        Value::String(text) => {
            let name = skill.name.as_ref().map_or_else(|| "undefined".to_string(), crate::json::js_string);
            text.contains(&name)
        }
        _ => true,
    }
}

/// The Agent Card for `cfg`, advertising `skills` (filtered by `cfg.skills`), whose JSON-RPC
/// endpoint is `url`.
pub fn build_agent_card(cfg: &A2AConfig, skills: &[CardSkill], url: &str) -> Value {
    let mut card = Map::new();
    card.insert("name".into(), or_default(&cfg.name, DEFAULT_NAME));
    card.insert("description".into(), or_default(&cfg.description, ""));
    card.insert("version".into(), or_default(&cfg.version, DEFAULT_VERSION));
    card.insert("protocolVersion".into(), PROTOCOL_VERSION.into());
    let mut capabilities = Map::new();
    capabilities.insert("streaming".into(), false.into());
    capabilities.insert("pushNotifications".into(), false.into());
    card.insert("capabilities".into(), Value::Object(capabilities));
    card.insert("defaultInputModes".into(), Value::Array(vec!["text".into()]));
    card.insert("defaultOutputModes".into(), Value::Array(vec!["text".into()]));
    let advertised = skills
        .iter()
        .filter(|s| wanted(&cfg.skills, s))
        .map(|s| {
            let mut m = Map::new();
            if let Some(name) = &s.name {
                m.insert("id".into(), name.clone());
                m.insert("name".into(), name.clone());
            }
            m.insert("description".into(), or_default(&s.description, ""));
            Value::Object(m)
        })
        .collect();
    card.insert("skills".into(), Value::Array(advertised));
    card.insert("url".into(), url.into());
    if let Some(provider) = cfg.provider.as_ref().filter(|p| truthy(p)) {
        card.insert("provider".into(), provider.clone());
    }
    Value::Object(card)
}

/// A random (version 4) UUID in its usual text form.
pub fn new_id() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// A JSON-RPC answer: `{ jsonrpc, id, result | error }`.
pub fn rpc_result(id: Value, result: Value) -> Value {
    envelope(id, "result", result)
}

pub fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    let mut e = Map::new();
    e.insert("code".into(), code.into());
    e.insert("message".into(), message.into());
    envelope(id, "error", Value::Object(e))
}

fn envelope(id: Value, key: &str, payload: Value) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), "2.0".into());
    m.insert("id".into(), id);
    m.insert(key.into(), payload);
    Value::Object(m)
}

pub const PARSE_ERROR: i64 = -32700;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INTERNAL_ERROR: i64 = -32603;
pub const TASK_NOT_FOUND: i64 = -32001;
pub const INVALID_PARAMS: i64 = -32602;
/// A2A's `UnsupportedOperationError`.
pub const UNSUPPORTED: i64 = -32004;

/// The text of a `SendMessage`'s message: its text parts joined with nothing between. A text
/// part is `{ kind: "text", text }`, or `{ text }` with no `kind` at all (A2A 1.0 peers drop
/// the discriminator; the reference reads only the former).
pub fn message_text(params: Option<&Value>) -> String {
    let parts = params.and_then(|p| p.get("message")).and_then(|m| m.get("parts")).and_then(Value::as_array);
    let Some(parts) = parts else { return String::new() };
    parts
        .iter()
        .filter(|p| match p.get("kind") {
            Some(kind) => kind.as_str() == Some("text"),
            None => p.is_object(),
        })
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// The A2A side of a running server.
pub struct A2AService {
    pub config: A2AConfig,
    pub skills: Vec<CardSkill>,
    pub store: SharedTaskStore,
    /// Runs one Task: called with `{ text, contextId?, call }`, answers a `RunResult`; told
    /// `{ abort: call }` (a notification) when the Task is canceled while it runs.
    pub run_task: SharedCallback,
    /// Told `{ id, task, result?, state }` once a Task reaches its final state.
    pub on_task: Option<SharedCallback>,
    /// Takes a Task parked for input up again: called with `{ contextId, pending, answer, call }`,
    /// answers a `RunResult` (`None`: this server resumes no Task).
    pub resume_task: Option<SharedCallback>,
    /// The Tasks this server is running, by id.
    pub running: std::sync::Mutex<std::collections::HashMap<String, Arc<Running>>>,
}

/// A Task this server is running: how to cancel it, and every state it has been in so far
/// for those waiting on it (a blocking send and a cancel want the last; a stream shows each,
/// even those a fast run left before the stream's task got to look).
pub struct Running {
    cancel: tokio_util::sync::CancellationToken,
    latest: tokio::sync::watch::Sender<Vec<Value>>,
}

/// The states a Task has been in, oldest first, as its waiters see them.
type States = tokio::sync::watch::Receiver<Vec<Value>>;

/// The last of a Task's states (`Null` before the first, which cannot be seen).
fn last_of(states: &[Value]) -> Value {
    states.last().cloned().unwrap_or(Value::Null)
}

/// What a JSON-RPC request is answered with.
pub enum Answer {
    /// One JSON-RPC response.
    One(Value),
    /// A stream of JSON-RPC responses (server-sent events), ending with the Task.
    Events(tokio::sync::mpsc::Receiver<Value>),
}

/// Whether a Task in `state` has stopped (for good, or until its caller answers).
fn settled(state: Option<&str>) -> bool {
    !matches!(state, Some("submitted" | "working"))
}

fn state_of(task: &Value) -> Option<&str> {
    task.get("status").and_then(|s| s.get("state")).and_then(Value::as_str)
}

/// The JSON-RPC error for a Task that cannot be canceled (A2A's `TaskNotCancelableError`).
pub const TASK_NOT_CANCELABLE: i64 = -32002;

impl A2AService {
    pub fn new(
        config: A2AConfig,
        skills: Vec<CardSkill>,
        store: SharedTaskStore,
        run_task: SharedCallback,
        on_task: Option<SharedCallback>,
    ) -> A2AService {
        A2AService { config, skills, store, run_task, on_task, resume_task: None, running: Default::default() }
    }

    /// This service, taking parked Tasks up again through `resume_task`.
    pub fn resuming(mut self, resume_task: Option<SharedCallback>) -> A2AService {
        self.resume_task = resume_task;
        self
    }

    /// The served card: SPEC's, plus what the SDKs of both A2A generations read (see `dialect`).
    pub fn card(&self, url: &str) -> Value {
        let mut card = super::dialect::interop_card(build_agent_card(&self.config, &self.skills, url), url);
        if self.config.streaming.as_ref().is_some_and(truthy) {
            if let Some(Value::Object(c)) = card.get_mut("capabilities") {
                c.insert("streaming".into(), true.into());
            }
        }
        card
    }

    fn running(&self, id: &str) -> Option<Arc<Running>> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(id).cloned()
    }

    /// Answer one JSON-RPC request body, in the dialect it was asked in (`version`: the
    /// request's `A2A-Version` header).
    pub async fn rpc(self: &Arc<Self>, body: &[u8], version: Option<&str>) -> Value {
        match self.answer(body, version).await {
            Answer::One(v) => v,
            // A caller that cannot take a stream gets the stream's last word.
            Answer::Events(mut rx) => {
                let mut last = Value::Null;
                while let Some(v) = rx.recv().await {
                    last = v;
                }
                last
            }
        }
    }

    /// Answer one JSON-RPC request body: one response, or (for a stream) a series of them.
    pub async fn answer(self: &Arc<Self>, body: &[u8], version: Option<&str>) -> Answer {
        let before = crate::json::deepest();
        let Ok(req) = crate::json::parse_slice::<Value>(body) else {
            return Answer::One(rpc_error(Value::Null, PARSE_ERROR, "Parse error"));
        };
        // A request deeper than any seen so far: the rest of this work (a clone of its id,
        // its drop) runs with the stack for it (see `json::DeepStack`, which polls this).
        crate::json::settle_depth(before).await;
        let id = match req.get("id") {
            Some(id) => id.clone(),
            None => Value::Null,
        };
        let params = req.get("params");
        let asked = match req.get("method") {
            Some(Value::String(m)) => super::dialect::classify(m, version),
            _ => None,
        };
        let one = Answer::One;
        match asked {
            Some((dialect, op @ (Op::Send | Op::Stream))) => {
                let text = message_text(params);
                let mut context = params
                    .and_then(|p| p.get("message"))
                    .and_then(|m| m.get("contextId"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if context.is_none() && dialect.needs_context() {
                    context = Some(new_id());
                }
                let blocks = dialect.blocks(params);
                let continued = params
                    .and_then(|p| p.get("message"))
                    .and_then(|m| m.get("taskId"))
                    .filter(|t| !t.is_null())
                    .map(crate::json::js_string);
                let message = params.and_then(|p| p.get("message")).cloned().unwrap_or(Value::Null);
                // The save and the start of the fulfilment go on in a task of their own, so a
                // caller that hangs up meanwhile never leaves a Task half started.
                let this = self.clone();
                let work = tokio::spawn(DeepStack::new(crate::warn::carry(crate::trace::carry(async move {
                    match continued {
                        Some(task_id) => this.resume(task_id, message).await,
                        None => this.send(text, context).await.map_err(Refusal::Failed),
                    }
                }))));
                let (submitted, latest) = match work.await {
                    Ok(Ok(started)) => started,
                    Ok(Err(Refusal::Failed(e))) => {
                        return one(rpc_error(id, INTERNAL_ERROR, &for_callers("SendMessage", &e)))
                    }
                    Ok(Err(Refusal::Rpc(code, message, reason))) => {
                        return one(rpc_refusal(id, code, &message, reason))
                    }
                    Err(e) => return one(rpc_error(id, INTERNAL_ERROR, &format!("SendMessage stopped: {e}"))),
                };
                if op == Op::Stream {
                    return Answer::Events(stream(id, dialect, submitted, latest));
                }
                if !blocks {
                    return one(rpc_result(id, dialect.sent(submitted)));
                }
                one(rpc_result(id, dialect.sent(settle(latest, submitted).await)))
            }
            Some((dialect, Op::Get)) => match self.lookup(params).await {
                Ok((_, Some(task))) => one(rpc_result(id, dialect.got(task))),
                Ok((task_id, None)) => one(rpc_error(id, TASK_NOT_FOUND, &format!("Task not found: {task_id}"))),
                Err(e) => one(rpc_error(id, INTERNAL_ERROR, &for_callers("GetTask", &e))),
            },
            Some((dialect, Op::Cancel)) => one(self.cancel(id, dialect, params).await),
            None => {
                let name = match req.get("method") {
                    None => "undefined".to_string(),
                    Some(m) => crate::json::js_string(m),
                };
                one(rpc_error(id, METHOD_NOT_FOUND, &format!("Method not found: {name}")))
            }
        }
    }

    /// The Task `params.id` names, from the store (`None` when there is none).
    async fn lookup(&self, params: Option<&Value>) -> Result<(String, Option<Value>), Error> {
        let task_id = match params.and_then(|p| p.get("id")) {
            None | Some(Value::Null) => String::new(),
            Some(v) => crate::json::js_string(v),
        };
        let before = crate::json::deepest();
        let found = self.store.get(&task_id).await;
        crate::json::settle_depth(before).await;
        Ok((task_id, found?.filter(|t| !t.is_null())))
    }

    /// Cancel a Task: one running here stops (its run is told to abort) and ends `canceled`;
    /// one that is not running anywhere but has not ended (`input-required`, or a Task whose
    /// server went away) is saved `canceled`; one that has ended cannot be.
    async fn cancel(&self, id: Value, dialect: super::dialect::Dialect, params: Option<&Value>) -> Value {
        let (task_id, found) = match self.lookup(params).await {
            Ok(found) => found,
            Err(e) => return rpc_error(id, INTERNAL_ERROR, &for_callers("CancelTask", &e)),
        };
        if let Some(run) = self.running(&task_id) {
            let latest = run.latest.subscribe();
            run.cancel.cancel();
            let now = last_of(&latest.borrow());
            let last = settle(latest, now).await;
            return match state_of(&last) {
                Some("canceled") => rpc_result(id, dialect.got(last)),
                _ => rpc_error(id, TASK_NOT_CANCELABLE, &format!("Task cannot be canceled: {task_id}")),
            };
        }
        let Some(task) = found else {
            return rpc_error(id, TASK_NOT_FOUND, &format!("Task not found: {task_id}"));
        };
        if matches!(state_of(&task), Some("completed" | "failed" | "canceled" | "rejected")) {
            return rpc_error(id, TASK_NOT_CANCELABLE, &format!("Task cannot be canceled: {task_id}"));
        }
        let mut canceled = task;
        if let Some(Value::Object(status)) = canceled.get_mut("status") {
            status.insert("state".into(), "canceled".into());
            status.remove("message");
        }
        match self.store.save(canceled.clone()).await {
            Ok(()) => rpc_result(id, dialect.got(canceled)),
            Err(e) => rpc_error(id, INTERNAL_ERROR, &for_callers("CancelTask", &e)),
        }
    }

    /// Save a new `submitted` Task and start its fulfilment: the Task as submitted, and where
    /// its later states will show.
    async fn send(self: Arc<Self>, text: String, context: Option<String>) -> Result<(Value, States), Error> {
        let id = new_id();
        let submitted = task(&id, &context, "submitted", None, None);
        self.store.save_own(submitted.clone()).await?;
        Ok(self.start(id, context, submitted, Work::Fresh(text)))
    }

    /// The Task `first` (just saved) running: where its later states will show.
    fn start(self: Arc<Self>, id: String, context: Option<String>, first: Value, work: Work) -> (Value, States) {
        let (latest, rx) = tokio::sync::watch::channel(vec![first.clone()]);
        let run = Arc::new(Running { cancel: tokio_util::sync::CancellationToken::new(), latest });
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id.clone(), run.clone());
        // Polled with the stack for whatever depth a run's result may have.
        tokio::spawn(DeepStack::new(crate::warn::carry(crate::trace::carry(self.fulfil(id, context, work, run)))));
        (first, rx)
    }

    /// A message continuing Task `task_id` (its `taskId`): the Answer to the Request the Task is
    /// parked on (SPEC §10 across A2A), in a data part `{ id?, ok, data? }`. The Task is claimed
    /// in the store first, so of the replicas sent the same Answer one takes the Task up; it
    /// then runs on `working` through the host's `resumeTask`. Refused with nothing changed:
    /// an unknown Task, one not parked, an Answer for another Request or after `expiresAt`, a
    /// Task started without a `contextId` (its conversation was not kept), a server with no
    /// `resumeTask`.
    async fn resume(self: Arc<Self>, task_id: String, message: Value) -> Result<(Value, States), Refusal> {
        let found = self.store.get(&task_id).await.map_err(Refusal::Failed)?.filter(|t| !t.is_null());
        let Some(parked) = found else {
            return Err(Refusal::Rpc(TASK_NOT_FOUND, format!("Task not found: {task_id}"), None));
        };
        let state = state_of(&parked).unwrap_or("unknown").to_string();
        let invalid = |message: String, reason: Option<&'static str>| Refusal::Rpc(INVALID_PARAMS, message, reason);
        let answered = answered_of(&parked);
        // An Answer to a Request this Task already took up is refused as one, whatever the Task
        // went on to (the same code and words as a resume that lost the race to take it up).
        if let Some(id) = answer_part(&message).as_ref().and_then(crate::suspension::id_of) {
            if answered.contains(&id) {
                let request = Map::from_iter([("id".to_string(), Value::String(id))]);
                let e = crate::suspension::taken("resume", &request);
                return Err(invalid(format!("Task {task_id}: {e}"), Some(crate::suspension::TAKEN)));
            }
        }
        if state != "input-required" {
            return Err(invalid(
                format!("Task {task_id} is {state}: only a Task waiting for input (input-required) is continued by a message"),
                None,
            ));
        }
        let Some(request) = parked.get("metadata").and_then(|m| m.get("pending")).and_then(Value::as_object).cloned()
        else {
            return Err(invalid(format!("Task {task_id} does not say which request it waits for"), None));
        };
        let Some(answer) = answer_part(&message) else {
            return Err(invalid(
                format!(
                    "Task {task_id} waits for the answer to request {}: send it as a data part {{ id, ok, data? }}",
                    crate::suspension::request_label(&request)
                ),
                None,
            ));
        };
        // An `ok` that is not a boolean is refused before the Task is claimed.
        if let Err(e) = crate::suspension::answer_shape("resume", &answer) {
            return Err(invalid(format!("Task {task_id}: {e}"), None));
        }
        if let Err(e) = crate::suspension::check("resume", &request, &answer, crate::suspension::now_ms(), false) {
            let reason = match &e {
                Error::Refused { code, .. } => Some(*code),
                _ => None,
            };
            return Err(invalid(e.to_string(), reason));
        }
        let Some(resume_task) = self.resume_task.clone() else {
            return Err(Refusal::Rpc(
                UNSUPPORTED,
                format!("Task {task_id} cannot be continued: this server resumes no Task (it has no resumeTask)"),
                None,
            ));
        };
        let context = parked.get("contextId").and_then(Value::as_str).map(str::to_string);
        let Some(context_id) = context.clone() else {
            return Err(invalid(
                format!("Task {task_id} was started without a contextId, so its conversation was not kept: it cannot be continued"),
                None,
            ));
        };
        // Taken up by writing it `working` over the parking read here (compared and set where
        // the store can): of the resumes sent the same Answer, here or on other replicas, one
        // takes it; the others are refused as already resumed.
        let at = parked.get("metadata").and_then(|m| m.get("parkedAt")).map(crate::json::js_string).unwrap_or_default();
        let mut answered = answered;
        answered.push(crate::json::js_string(&request["id"]));
        if answered.len() > ANSWERED_KEPT {
            answered.drain(..answered.len() - ANSWERED_KEPT);
        }
        let working = with_answered(task(&task_id, &context, "working", None, None), &answered);
        if !self.store.take_parked(&task_id, &at, working.clone()).await.map_err(Refusal::Failed)? {
            let e = crate::suspension::taken("resume", &request);
            return Err(invalid(format!("Task {task_id}: {e}"), Some(crate::suspension::TAKEN)));
        }
        let work = Work::Resume { context_id, request, answer, resume_task, answered };
        Ok(self.start(task_id, context, working, work))
    }

    /// submitted → working → completed | input-required | failed | canceled (a resumed Task
    /// starts at working). Never fails: an error becomes a `failed` Task.
    async fn fulfil(self: Arc<Self>, id: String, context: Option<String>, work: Work, run: Arc<Running>) {
        let mut result: Option<Value> = None;
        let answered = match &work {
            Work::Resume { answered, .. } => answered.clone(),
            Work::Fresh(_) => Vec::new(),
        };
        let outcome: Result<(Value, &str), Error> = async {
            let mut arg = Map::new();
            let call = match work {
                Work::Fresh(text) => {
                    let working = task(&id, &context, "working", None, None);
                    self.store.save_own(working.clone()).await?;
                    run.latest.send_modify(|states| states.push(working));
                    arg.insert("text".into(), text.into());
                    if let Some(c) = &context {
                        arg.insert("contextId".into(), c.clone().into());
                    }
                    self.run_task.clone()
                }
                Work::Resume { context_id, request, answer, resume_task, .. } => {
                    arg.insert("contextId".into(), context_id.into());
                    arg.insert("pending".into(), Value::Object(request));
                    arg.insert("answer".into(), answer);
                    resume_task
                }
            };
            arg.insert("call".into(), id.clone().into());
            // Under a traced request, the host runs the Task in the request's trace.
            crate::trace::ready().await;
            let trace = crate::trace::headers();
            if !trace.is_empty() {
                let carrier: Map<String, Value> = trace.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
                arg.insert("trace".into(), Value::Object(carrier));
            }
            let before = crate::json::deepest();
            // What the run's tools report while it runs is told as `working` statuses.
            let _heard = super::a2a_reports::listen(&id, &context, run.latest.clone());
            let r = tokio::select! {
                r = call.call(Value::Object(arg)) => r?,
                _ = run.cancel.cancelled() => {
                    let mut abort = Map::new();
                    abort.insert("abort".into(), id.clone().into());
                    call.notify(Value::Object(abort));
                    return Ok((task(&id, &context, "canceled", None, None), "canceled"));
                }
            };
            crate::json::settle_depth(before).await;
            if r.is_null() {
                return Err(Error::Invalid("Cannot read properties of undefined (reading 'status')".into()));
            }
            let pending = r.get("pending").filter(|p| truthy(p));
            let out = if r.get("status").and_then(Value::as_str) == Some("pending") && pending.is_some() {
                let prompt = pending.and_then(|p| p.get("prompt")).cloned();
                let mut t = task(&id, &context, "input-required", Some(text_message("agent", prompt)), None);
                // What it waits for, and since when: a message carrying the Answer takes it up.
                // (In `metadata`: the status keeps the reference's shape.)
                if let (Value::Object(m), Some(p)) = (&mut t, pending) {
                    let mut meta = Map::new();
                    meta.insert("pending".into(), p.clone());
                    meta.insert("parkedAt".into(), timestamp().into());
                    m.insert("metadata".into(), Value::Object(meta));
                }
                (t, "input-required")
            } else {
                let mut part = Map::new();
                part.insert("kind".into(), "text".into());
                if let Some(t) = r.get("text") {
                    part.insert("text".into(), t.clone());
                }
                let mut artifact = Map::new();
                artifact.insert("artifactId".into(), new_id().into());
                artifact.insert("parts".into(), Value::Array(vec![Value::Object(part)]));
                let t = task(&id, &context, "completed", None, Some(Value::Array(vec![Value::Object(artifact)])));
                (t, "completed")
            };
            result = Some(r);
            Ok(out)
        }
        .await;
        let (final_task, state) = match outcome {
            Ok(done) => done,
            Err(e) => {
                let msg = text_message("agent", Some(Value::String(for_callers("A task", &e))));
                (task(&id, &context, "failed", Some(msg), None), "failed")
            }
        };
        // What the store holds is what callers are told: a write that lost to another writer
        // (the Task canceled, or ended by a reader when its lease ran out) leaves that writer's
        // Task. A store that fails here must not stop the server, nor the host hearing of it.
        let final_task = self.save_final(&id, with_answered(final_task, &answered)).await;
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
        run.latest.send_modify(|states| states.push(final_task.clone()));
        if let Some(on_task) = &self.on_task {
            let mut ev = Map::new();
            ev.insert("id".into(), id.into());
            ev.insert("task".into(), final_task);
            if let Some(r) = result {
                ev.insert("result".into(), r);
            }
            ev.insert("state".into(), state.into());
            let _ = on_task.call(Value::Object(ev)).await;
        }
    }
}

impl A2AService {
    /// Save a Task's last state. When another writer changed the Task since this server last
    /// wrote it, read it again: a Task that writer ended stays as it ended it (that is what is
    /// answered from now on); one still running is written again over what was read.
    async fn save_final(&self, id: &str, last: Value) -> Value {
        for _ in 0..8 {
            match self.store.save_own(last.clone()).await {
                Err(Error::Store { code: "ESTORECONFLICT", .. }) => match self.store.get(id).await {
                    Ok(Some(stored)) if !super::store::running(&stored) => return stored,
                    Ok(_) => continue,
                    Err(_) => return last,
                },
                _ => return last,
            }
        }
        last
    }
}

/// What a Task's fulfilment runs: a new message's text, or the Answer to its parked Request.
enum Work {
    Fresh(String),
    Resume {
        context_id: String,
        request: Map<String, Value>,
        answer: Value,
        resume_task: SharedCallback,
        /// The Requests this Task has taken up, this one last.
        answered: Vec<String>,
    },
}

/// How many answered Request ids a Task keeps in `metadata.answered`.
const ANSWERED_KEPT: usize = 32;

/// The ids of the Requests a Task has taken up (`metadata.answered`).
fn answered_of(task: &Value) -> Vec<String> {
    task.get("metadata")
        .and_then(|m| m.get("answered"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// `task` with `metadata.answered` when it has taken up any Request (a Task that never parked
/// keeps the reference's shape).
fn with_answered(mut task: Value, answered: &[String]) -> Value {
    if answered.is_empty() {
        return task;
    }
    if let Value::Object(m) = &mut task {
        let meta = m.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert("answered".into(), Value::Array(answered.iter().cloned().map(Value::String).collect()));
        }
    }
    task
}

/// Why a send was not taken: a JSON-RPC error (its code, message and, for a refused Answer,
/// its `code` word), or a failure of the server's own.
enum Refusal {
    Rpc(i64, String, Option<&'static str>),
    Failed(Error),
}

/// A JSON-RPC error whose `data.code` names why an Answer was refused.
fn rpc_refusal(id: Value, code: i64, message: &str, reason: Option<&str>) -> Value {
    let mut v = rpc_error(id, code, message);
    if let (Some(reason), Some(Value::Object(e))) = (reason, v.get_mut("error")) {
        let mut data = Map::new();
        data.insert("code".into(), reason.into());
        e.insert("data".into(), Value::Object(data));
    }
    v
}

/// The Answer a continuing message carries: its first data part that has an `ok` (A2A v0.3's
/// `{ kind: "data", data }`, v1.0's `{ data: { data } }` too).
fn answer_part(message: &Value) -> Option<Value> {
    let parts = message.get("parts").and_then(Value::as_array)?;
    parts.iter().find_map(|p| {
        let data = p.get("data")?;
        let answer =
            if data.get("ok").is_some() { data } else { data.get("data").filter(|d| d.get("ok").is_some())? };
        answer.is_object().then(|| answer.clone())
    })
}

/// Now, as RFC 3339 with milliseconds (a Task status's `timestamp`).
fn timestamp() -> String {
    let now = time::OffsetDateTime::now_utc();
    let ms = now.millisecond();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

/// The Task once it has settled (or as it last was, should its fulfilment vanish).
async fn settle(mut latest: States, mut last: Value) -> Value {
    loop {
        if settled(state_of(&last)) {
            return last;
        }
        if latest.changed().await.is_err() {
            return last_of(&latest.borrow());
        }
        last = last_of(&latest.borrow_and_update());
    }
}

/// A send answered as a stream: the Task as submitted, each new status, and once it has
/// settled its artifacts and its last status. The stream ends there.
fn stream(
    id: Value,
    dialect: super::dialect::Dialect,
    submitted: Value,
    mut latest: States,
) -> tokio::sync::mpsc::Receiver<Value> {
    use super::dialect::Event;
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        let send = |event: Event| tx.send(rpc_result(id.clone(), dialect.event(event)));
        if send(Event::Task(submitted.clone())).await.is_err() {
            return;
        }
        // How many of the Task's states the stream has shown: the first is the submitted Task.
        let mut shown = 1;
        loop {
            let fresh = latest.borrow_and_update().get(shown..).unwrap_or_default().to_vec();
            if fresh.is_empty() {
                if latest.changed().await.is_err() {
                    // The fulfilment is gone without a last word, and nothing more will come.
                    return;
                }
                continue;
            }
            // Once the fulfilment is gone, the last state it left ends the stream.
            let gone = latest.has_changed().is_err();
            let count = fresh.len();
            for (i, now) in fresh.into_iter().enumerate() {
                shown += 1;
                let last = settled(state_of(&now)) || (gone && i + 1 == count);
                if last {
                    if let Some(Value::Array(artifacts)) = now.get("artifacts") {
                        for a in artifacts {
                            if send(Event::Artifact { task: now.clone(), artifact: a.clone() }).await.is_err() {
                                return;
                            }
                        }
                    }
                }
                if send(Event::Status { task: now, last }).await.is_err() || last {
                    return;
                }
            }
        }
    });
    rx
}

/// An error as the server's callers see it: no absolute path of the server's disk (a file
/// store's failure names its file). When a path was cut, the whole text goes to the
/// server's own log as a warning.
fn for_callers(what: &str, e: &Error) -> String {
    let full = e.to_string();
    match crate::redact::hide_paths(&full) {
        std::borrow::Cow::Borrowed(_) => full,
        std::borrow::Cow::Owned(shown) => {
            crate::warn::warn(&format!("[toolnexus] A2A: {what} failed: {full}"));
            shown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn card_defaults_and_order() {
        let card = build_agent_card(&A2AConfig::default(), &[], "http://h:1/");
        let keys: Vec<&str> = card.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(
            keys,
            [
                "name",
                "description",
                "version",
                "protocolVersion",
                "capabilities",
                "defaultInputModes",
                "defaultOutputModes",
                "skills",
                "url"
            ]
        );
        assert_eq!(card["name"], "toolnexus-agent");
        assert_eq!(card["capabilities"], json!({"streaming": false, "pushNotifications": false}));
    }

    #[test]
    fn uuids_look_like_v4() {
        let id = new_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert_ne!(new_id(), id);
    }

    #[test]
    fn message_text_joins_text_parts() {
        let p = json!({"message": {"parts": [{"kind": "text", "text": "a"}, {"kind": "data", "text": "no"}, {"kind": "text", "text": "b"}, {"kind": "text", "text": 1}, {"text": "c"}, {"kind": null, "text": "no"}]}});
        assert_eq!(message_text(Some(&p)), "abc");
        assert_eq!(message_text(None), "");
    }

    async fn kinds(mut rx: tokio::sync::mpsc::Receiver<Value>) -> Vec<String> {
        let mut got = Vec::new();
        while let Some(ev) = rx.recv().await {
            let r = &ev["result"];
            let kind = r["kind"].as_str().unwrap_or_default();
            let state = r["status"]["state"].as_str().unwrap_or_default();
            got.push(format!("{kind} {state}").trim().to_string());
        }
        got
    }

    #[tokio::test]
    async fn a_stream_shows_every_state_even_those_left_before_it_looked() {
        let (submitted, working, done) = (
            task("t", &None, "submitted", None, None),
            task("t", &None, "working", None, None),
            task("t", &None, "completed", None, Some(json!([{ "artifactId": "a", "parts": [] }]))),
        );
        // A run so fast that working and completed are both there before the stream starts.
        let (tx, rx) = tokio::sync::watch::channel(vec![submitted.clone()]);
        tx.send_modify(|s| s.push(working.clone()));
        tx.send_modify(|s| s.push(done.clone()));
        let got = kinds(stream(json!(1), super::super::dialect::Dialect::V03, submitted.clone(), rx)).await;
        assert_eq!(got, ["task submitted", "status-update working", "artifact-update", "status-update completed"]);

        // States arriving one by one while the stream waits.
        let (tx, rx) = tokio::sync::watch::channel(vec![submitted.clone()]);
        let events = stream(json!(1), super::super::dialect::Dialect::V03, submitted.clone(), rx);
        tokio::task::yield_now().await;
        tx.send_modify(|s| s.push(working.clone()));
        tokio::task::yield_now().await;
        tx.send_modify(|s| s.push(done));
        assert_eq!(
            kinds(events).await,
            ["task submitted", "status-update working", "artifact-update", "status-update completed"]
        );

        // A fulfilment that goes away mid-run: the last state it left ends the stream.
        let (tx, rx) = tokio::sync::watch::channel(vec![submitted.clone()]);
        tx.send_modify(|s| s.push(working));
        drop(tx);
        let events = stream(json!(1), super::super::dialect::Dialect::V03, submitted, rx);
        let mut rx = events;
        let mut finals = Vec::new();
        while let Some(ev) = rx.recv().await {
            finals.push(ev["result"]["final"].clone());
        }
        assert_eq!(finals, [Value::Null, json!(true)]);
    }
}
