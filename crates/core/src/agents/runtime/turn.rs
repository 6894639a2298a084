//! One turn of a handle: its client run (through the completion gate), the global turn
//! gate around each LLM call, the live budget ledger, and how the turn settles.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use futures::FutureExt;
use serde_json::{json, Map, Value};

use super::core::Inner;
use super::tree::Ready;
use super::turngate::TurnGate;
use super::types::{num, AgentDef, HandleId, HandleState, TaskResult, TaskStatus};
use crate::agents::gate::run_gated;
use crate::callback::{callback, SharedCallback};
use crate::client::http::FetchTransport;
use crate::client::transport::StreamResponse;
use crate::client::{
    Client, ClientOptions, HaltSite, HttpRequest, HttpResponse, LimitCheck, Resolution, RunLimits, RunOptions,
    RunResult, RunStatus, Style, Transport,
};
use crate::error::{Error, Result};
use crate::json::{field, js_string};
use crate::toolkit::Toolkit;

/// The LLM transport of one turn: the runtime's, wrapped in the turn gate.
struct GatedTransport {
    base: Arc<dyn Transport>,
    inner: Weak<Inner>,
    gate: TurnGate,
}

/// Counts one LLM call in flight for as long as it lives.
struct InFlight(Weak<Inner>);

impl InFlight {
    fn start(inner: &Weak<Inner>) -> InFlight {
        if let Some(i) = inner.upgrade() {
            let now = i.concurrent_turns.fetch_add(1, Ordering::SeqCst) + 1;
            i.max_observed_turns.fetch_max(now, Ordering::SeqCst);
        }
        InFlight(inner.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(i) = self.0.upgrade() {
            i.concurrent_turns.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[async_trait::async_trait]
impl Transport for GatedTransport {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse> {
        let _permit = self.gate.acquire().await;
        let _in_flight = InFlight::start(&self.inner);
        self.base.post(req).await
    }

    async fn post_stream(&self, req: HttpRequest) -> Result<StreamResponse> {
        let permit = self.gate.acquire().await;
        let in_flight = InFlight::start(&self.inner);
        let res = self.base.post_stream(req).await?;
        // The slot is held until the body has been read.
        let held = (permit, in_flight);
        let body = futures::StreamExt::map(res.body, move |chunk| {
            let _ = &held;
            chunk
        });
        Ok(StreamResponse { status: res.status, headers: res.headers, body: Box::pin(body) })
    }
}

// ---- the live budget ledger --------------------------------------------------------------

/// A handle's budgets as its run consults them: every LLM call and tool call is checked
/// against the live ancestor chain and rolled up as it happens. A limit reached asks the
/// host's `onBudget`, when there is one: stop, extend, or suspend on an approval.
struct HandleLimits {
    inner: Weak<Inner>,
    h: HandleId,
    /// The Answer a budget's approval request parked on, if this turn takes it up.
    answer: Option<Value>,
    /// Past a limit for the rest of this turn: the host extended or an approval granted it.
    granted: std::sync::atomic::AtomicBool,
}

impl HandleLimits {
    async fn decide(&self, inner: &Arc<Inner>, limit: &'static str) -> Result<LimitCheck> {
        let Some(on_budget) = inner.on_budget.clone() else {
            return Ok(LimitCheck::Stop(limit.into()));
        };
        let (info, wait_for) = {
            let t = inner.tree();
            let n = &t.nodes[self.h];
            let info = json!({
                "handle": self.h,
                "id": n.id,
                "limit": limit,
                "tokens": num(n.usage_total),
                "toolCalls": num(n.tool_calls_total),
                "turns": num(n.turns_total),
            });
            (info, n.def.wait_for.clone())
        };
        let verdict = on_budget.call(info).await?;
        match verdict.as_str() {
            Some("extend") => Ok(LimitCheck::Go),
            Some("suspend") => {
                let approved = |a: &Value| field(a, "ok").is_some_and(crate::json::truthy);
                if let Some(answer) = &self.answer {
                    return Ok(if approved(answer) { self.grant() } else { LimitCheck::Stop(limit.into()) });
                }
                let mut request = Map::new();
                request.insert("id".into(), Value::String(crate::types::new_pending_id()));
                request.insert("kind".into(), "approval".into());
                request.insert("prompt".into(), format!("budget exhausted ({limit}): continue past it?").into());
                request.insert("data".into(), json!({ "limit": limit }));
                match wait_for {
                    Some(w) => {
                        let answer = w.call(Value::Object(request)).await?;
                        Ok(if approved(&answer) { self.grant() } else { LimitCheck::Stop(limit.into()) })
                    }
                    None => Ok(LimitCheck::Suspend(request)),
                }
            }
            _ => Ok(LimitCheck::Stop(limit.into())),
        }
    }

    fn grant(&self) -> LimitCheck {
        self.granted.store(true, Ordering::SeqCst);
        LimitCheck::Go
    }
}

#[async_trait::async_trait]
impl RunLimits for HandleLimits {
    async fn before_llm(&self) -> Result<LimitCheck> {
        let Some(inner) = self.inner.upgrade() else { return Ok(LimitCheck::Go) };
        let now = inner.clock.now();
        let limit = inner.tree().llm_limit(self.h, now);
        match limit {
            Some(l) if !self.granted.load(Ordering::SeqCst) => self.decide(&inner, l).await,
            _ => Ok(LimitCheck::Go),
        }
    }

    fn spent_tokens(&self, tokens: i64) {
        if let Some(inner) = self.inner.upgrade() {
            inner.tree().spend_tokens(self.h, tokens as f64);
        }
    }

    async fn wall_expired(&self) {
        let timer = {
            let Some(inner) = self.inner.upgrade() else { return std::future::pending().await };
            let deadline = inner.tree().wall_deadline(self.h);
            let now = inner.clock.now();
            match deadline {
                // Past it already, the check before this call let it go on.
                Some(d) if now < d && !self.granted.load(Ordering::SeqCst) => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    // Rounded up and a millisecond more: a clock that truncates must not fire
                    // before the deadline the budget check then reads.
                    let ms = (d - now).ceil() + 1.0;
                    let cancel = inner.clock.set_timeout(
                        ms,
                        Box::new(move || {
                            let _ = tx.send(());
                        }),
                    );
                    Some((rx, CancelTimer(Some(cancel))))
                }
                _ => None,
            }
        };
        match timer {
            Some((rx, _cancel)) => {
                if rx.await.is_err() {
                    // The clock dropped the timer without firing it.
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    }

    async fn before_tool(&self) -> Result<LimitCheck> {
        let Some(inner) = self.inner.upgrade() else { return Ok(LimitCheck::Go) };
        let now = inner.clock.now();
        let granted = self.granted.load(Ordering::SeqCst);
        let limit = inner.tree().take_tool_call(self.h, now, granted);
        match limit {
            None => Ok(LimitCheck::Go),
            Some(l) => match self.decide(&inner, l).await? {
                LimitCheck::Go => {
                    inner.tree().take_tool_call(self.h, now, true);
                    Ok(LimitCheck::Go)
                }
                other => Ok(other),
            },
        }
    }
}

/// Cancels a clock's timer when dropped (a no-op once it fired).
struct CancelTimer(Option<super::clock::TimerCancel>);

impl Drop for CancelTimer {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel();
        }
    }
}

// ---- the turn ------------------------------------------------------------------------------

/// How a turn runs.
#[derive(Clone)]
pub(super) enum How {
    /// From its input: a new user turn.
    Fresh,
    /// A parked turn taken up where it parked (SPEC §10 durable resume): the Answer reaches
    /// the parked call alone; `None` runs the parked call again without one (an agent whose
    /// delegated work was answered further down).
    Resume { request: Map<String, Value>, site: HaltSite, answer: Option<Value> },
    /// A turn parked by a runtime of layout 1 (its transcript rewound, its input kept):
    /// replayed from its input, the first suspension in the replay getting the Answer.
    Replay { answer: Option<Value> },
}

/// A suspended handle's parked turn, as a resume takes it over.
pub(super) struct Parked {
    pub request: Option<Value>,
    pub checkpoint: Option<String>,
    pub halt: Option<HaltSite>,
}

/// A turn's input, taken at admission when it can be (the drain is atomic with the wake),
/// else after `onSpawn` settled (so what it posted is part of the first turn).
pub(super) struct TurnStart {
    input: Option<String>,
    ready: Option<Ready>,
}

impl Inner {
    pub(super) fn begin(&self, h: HandleId, prompt: &str) -> TurnStart {
        let mut t = self.tree();
        match t.nodes[h].ready.clone() {
            Some(ready) => TurnStart { input: None, ready: Some(ready) },
            None => TurnStart { input: Some(format!("{prompt}{}", t.drain(h))), ready: None },
        }
    }

    /// Start an admitted handle's turn on the spawner.
    pub(super) fn start_turn(self: &Arc<Self>, h: HandleId, prompt: Option<String>) {
        let prompt = prompt.unwrap_or_default();
        let start = self.begin(h, &prompt);
        let inner = self.clone();
        (self.spawner)(
            async move {
                inner.execute_turn(h, prompt, start, How::Fresh).await;
            }
            .boxed(),
        );
    }

    /// Run one turn to its settlement. Failures come back as results, never as errors.
    pub(super) async fn execute_turn(
        self: Arc<Self>,
        h: HandleId,
        prompt: String,
        start: TurnStart,
        how: How,
    ) -> TaskResult {
        if let Some(ready) = start.ready {
            ready.await;
            self.tree().nodes[h].ready = None;
        }
        let input = match start.input {
            Some(i) => i,
            None => format!("{prompt}{}", self.tree().drain(h)),
        };
        // This turn's claim on the handle: on a durable store another runtime may take the
        // handle up after this turn parks it, while this one is still settling.
        let epoch = self.tree().nodes[h].claim.clone();
        let outcome = self.clone().run_turn(h, &input, how).await;
        let result = match outcome {
            Ok(r) => self.settle_run(h, input, r).await,
            Err(e) => self.settle_error(h, e),
        };
        let started = self.release_child_slot(h);
        {
            // The result was recorded with the state it ends in (`settle_*`); written again here
            // only while the handle is still this turn's, never over a later turn's.
            let mut t = self.tree();
            if t.nodes[h].claim == epoch {
                t.nodes[h].last_result = Some(result.clone());
            }
            t.notify(h, &result);
        }
        for (next, prompt) in started {
            self.start_turn(next, prompt);
        }
        result
    }

    async fn run_turn(self: Arc<Self>, h: HandleId, input: &str, how: How) -> Result<RunResult> {
        let (def, id, turns_left, abort, trace_parent) = {
            let t = self.tree();
            let n = &t.nodes[h];
            let left = (n.max_turns - n.turns_total).max(1.0);
            (n.def.clone(), n.id.clone(), left, n.abort.clone().unwrap_or_default(), n.trace_parent)
        };
        if let Some(tracing) = self.tracing.clone() {
            // The turn as an `invoke_agent <name>` span under whatever spawned the handle; the
            // client's own spans (its run, model and tool calls) nest inside it.
            let inner = self.clone();
            return tracing
                .within(trace_parent, async move {
                    let mut attrs = Map::with_capacity(3);
                    attrs.insert("gen_ai.operation.name".into(), "invoke_agent".into());
                    attrs.insert("gen_ai.agent.name".into(), def.name.clone().into());
                    attrs.insert("gen_ai.agent.id".into(), id.clone().into());
                    let span =
                        crate::trace::start(format!("invoke_agent {}", def.name), crate::trace::Kind::Internal, attrs)
                            .await;
                    crate::trace::around(span, inner.run_turn_in(h, input, how, def, id, turns_left, abort)).await
                })
                .await;
        }
        self.run_turn_in(h, input, how, def, id, turns_left, abort).await
    }

    #[allow(clippy::too_many_arguments)] // the turn's parts, read once under the tree's lock
    async fn run_turn_in(
        self: Arc<Self>,
        h: HandleId,
        input: &str,
        how: How,
        def: Arc<AgentDef>,
        id: String,
        turns_left: f64,
        abort: crate::cancel::Abort,
    ) -> Result<RunResult> {
        let id = self.conversation_id(&id);
        let toolkit = self.toolkit_for(h, &def);
        // A budget's approval is answered through the budget; a tool's reaches the tool alone.
        let (budget_answer, replay_answer) = match &how {
            How::Resume { site: HaltSite::BudgetTool | HaltSite::BudgetLlm, answer, .. } => (answer.clone(), None),
            How::Replay { answer } => (answer.clone(), answer.clone()),
            _ => (None, None),
        };
        let client = Client::with_store(self.client_options(h, &def, turns_left, replay_answer), self.store.clone())?;
        let limits: Arc<dyn RunLimits> = Arc::new(HandleLimits {
            inner: Arc::downgrade(&self),
            h,
            answer: budget_answer,
            granted: std::sync::atomic::AtomicBool::new(false),
        });
        let ro = RunOptions {
            history: None,
            abort: Some(abort),
            limits: Some(limits),
            output: def.output.clone(),
            own_parks: true,
            reports: None,
        };
        let mut parked = match how {
            How::Resume { request, site, answer } => Some((request, site, answer)),
            _ => None,
        };
        let (client, toolkit, id_ref) = (&client, &toolkit, id.as_str());
        run_gated(
            |p: String| {
                let ro = ro.clone();
                let first = parked.take();
                async move {
                    match first {
                        Some((request, site, answer)) => {
                            let resolution = answer.map_or(Resolution::Retry, Resolution::Answer);
                            client.resume_conversation(toolkit, id_ref, request, site, resolution, ro).await
                        }
                        None => client.ask(&p, toolkit, Some(id_ref), None, ro).await,
                    }
                }
            },
            input,
            def.completion.as_deref(),
        )
        .await
    }

    /// Whether `h`'s parked turn could be taken up with the tools it has now: the refusal
    /// `resume` gives before anything changes (the parked call's tool gone, the conversation
    /// no longer ending with the parked turn).
    pub(super) async fn check_parked(self: &Arc<Self>, h: HandleId, request: &Value, site: HaltSite) -> Result<()> {
        let (def, id) = {
            let t = self.tree();
            (t.nodes[h].def.clone(), t.nodes[h].id.clone())
        };
        let Some(request) = request.as_object() else { return Ok(()) };
        let toolkit = self.toolkit_for(h, &def);
        let client = Client::with_store(self.client_options(h, &def, 1.0, None), self.store.clone())?;
        match client.check_parked(&toolkit, &self.conversation_id(&id), request, site).await {
            // This runtime holds the handle parked on this very Request, yet the shared
            // transcript has moved past it: another process took the Request up first.
            Err(Error::Refused { code: crate::suspension::UNKNOWN, .. }) => {
                Err(crate::suspension::taken("resume", request))
            }
            other => other,
        }
    }

    /// The handle's scoped tools, plus `task` when its definition has a team.
    fn toolkit_for(self: &Arc<Self>, h: HandleId, def: &AgentDef) -> Toolkit {
        let mut extra = def.tools.clone();
        if !def.team.is_empty() {
            extra.push(super::task::task_tool(self, h, def));
        }
        Toolkit::from_tools(extra)
    }

    fn client_options(
        self: &Arc<Self>,
        h: HandleId,
        def: &AgentDef,
        turns_left: f64,
        answer: Option<Value>,
    ) -> ClientOptions {
        let llm = &self.llm;
        let model = match def.model.as_deref() {
            None | Some("") | Some("inherit") => llm.model.clone().unwrap_or_else(|| "inherit".into()),
            Some(m) => m.to_string(),
        };
        let base = llm.base_url.clone().unwrap_or_else(|| "http://mock.local".into());
        let mut o = ClientOptions::new(base, llm.style.unwrap_or(Style::OpenAI), model);
        o.api_key = Some(llm.api_key.clone().unwrap_or_else(|| "unused-local".into()));
        o.fallback = llm.fallback.clone();
        o.system_prompt = def.soul.clone().filter(|s| !s.is_empty());
        o.max_turns = turns_left.min(f64::from(u32::MAX)) as u32;
        let base: Arc<dyn Transport> = match &self.transport {
            Some(t) => t.clone(),
            None => Arc::new(FetchTransport::shared()),
        };
        o.transport = Some(Arc::new(GatedTransport { base, inner: Arc::downgrade(self), gate: self.gate.clone() }));
        o.wait_for = match answer {
            // A layout-1 replay's interpreter: the replay's first suspension is the parked
            // call asking again (under a new id) and gets the Answer; any other goes to this
            // handle's authority, or is declined (nothing can park inside a replay).
            Some(a) => {
                let once = Arc::new(std::sync::Mutex::new(Some(a)));
                let escalation = self.escalation(h, def);
                Some(callback(move |req: Value| {
                    let answer = once.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
                    let escalation = escalation.clone();
                    async move {
                        match (answer, escalation) {
                            (Some(mut a), _) => {
                                if let (Some(m), Some(id)) = (a.as_object_mut(), req.get("id")) {
                                    m.insert("id".into(), id.clone());
                                }
                                Ok(a)
                            }
                            (None, Some(e)) => e.call(req).await,
                            (None, None) => {
                                Ok(json!({ "id": req.get("id").cloned().unwrap_or(Value::Null), "ok": false }))
                            }
                        }
                    }
                }))
            }
            None => self.escalation(h, def),
        };
        o.hooks = def.hooks.clone().unwrap_or_else(|| self.hooks.clone());
        o.on_metric = def.on_metric.clone().or_else(|| self.on_metric.clone());
        o.logger = self.logger.clone();
        o
    }

    /// This handle's §10 authority, with the escalation traced.
    fn escalation(self: &Arc<Self>, h: HandleId, def: &AgentDef) -> Option<SharedCallback> {
        let wait_for = def.wait_for.clone()?;
        let weak = Arc::downgrade(self);
        let id = self.tree().nodes[h].id.clone();
        Some(callback(move |req: Value| {
            let (wait_for, weak, id) = (wait_for.clone(), weak.clone(), id.clone());
            async move {
                let path = match req.get("data").and_then(|d| d.get("path")) {
                    Some(Value::Array(parts)) => parts.iter().map(js_string).collect::<Vec<_>>().join("/"),
                    _ => id.clone(),
                };
                if let Some(inner) = weak.upgrade() {
                    inner.t(format!("{path}: escalate \u{2192} {id} answers (\"nearest interpreter\")"));
                }
                wait_for.call(req).await
            }
        }))
    }

    async fn settle_run(&self, h: HandleId, input: String, r: RunResult) -> TaskResult {
        let total = r.usage.total_tokens as f64;
        let turns = f64::from(r.turns);
        if r.status == RunStatus::Pending {
            if let Some(pending) = r.pending.clone() {
                let id = self.tree().nodes[h].id.clone();
                // The conversation ends with the parked turn (the client saved it): resume
                // takes it up there.
                let stamped = stamp_path(pending, &id);
                let kind = stamped.get("kind").map(js_string).unwrap_or_else(|| "undefined".into());
                let parked = TaskResult {
                    text: r.text.clone(),
                    is_error: false,
                    status: TaskStatus::Pending,
                    pending: Some(Value::Object(stamped.clone())),
                    turns,
                    total_tokens: total,
                    output: None,
                };
                {
                    let mut t = self.tree();
                    let n = &mut t.nodes[h];
                    n.turns_total += turns;
                    n.state = HandleState::Suspended;
                    n.pending_request = Some(Value::Object(stamped.clone()));
                    n.checkpoint = Some(input);
                    n.halt = Some(r.halt.unwrap_or(HaltSite::Tool));
                    n.drained.clear();
                    n.last_result = Some(parked.clone());
                }
                self.t(format!("{id}: running\u{2192}suspended (pending \"{kind}\")"));
                // A parking nobody could resume is an error, not a `pending`: on a durable
                // store the suspension must be written before it is reported.
                if let Err(e) = self.written().await {
                    let r = {
                        let mut t = self.tree();
                        let n = &mut t.nodes[h];
                        if n.state == HandleState::Suspended {
                            n.state = HandleState::Idle;
                            n.pending_request = None;
                            n.checkpoint = None;
                            n.halt = None;
                        }
                        let r = t.result(h, format!("the suspension could not be saved: {e}"), TaskStatus::Error);
                        t.nodes[h].last_result = Some(r.clone());
                        r
                    };
                    self.t(format!("{id}: suspended\u{2192}idle (error: the suspension could not be saved: {e})"));
                    return r;
                }
                return parked;
            }
        }
        let (result, line) = if r.status == RunStatus::Incomplete {
            let limit = r.limit.clone().unwrap_or_else(|| "maxTurns".into());
            let text = match limit.as_str() {
                "completion" => r.text,
                "maxTurns" => "hit maxTurns without a final answer".into(),
                other => format!("budget exhausted ({other}); partial work preserved"),
            };
            let result = TaskResult {
                text,
                is_error: true,
                status: TaskStatus::Incomplete,
                pending: None,
                turns,
                total_tokens: total,
                output: None,
            };
            (result, format!("incomplete: {limit}"))
        } else {
            let result = TaskResult {
                text: r.text,
                is_error: false,
                status: TaskStatus::Done,
                pending: None,
                turns,
                total_tokens: total,
                output: r.output,
            };
            (result, format!("done, turns={}, tokens={}", r.turns, r.usage.total_tokens))
        };
        // The state and the result it ends with change together: a store's reader (another
        // process) never sees the handle idle with the result of an earlier turn.
        let mut t = self.tree();
        let n = &mut t.nodes[h];
        n.turns_total += turns;
        if n.state != HandleState::Closed {
            n.state = HandleState::Idle;
        }
        n.drained.clear();
        n.last_result = Some(result.clone());
        let id = n.id.clone();
        drop(t);
        self.t(format!("{id}: running\u{2192}idle ({line})"));
        result
    }

    fn settle_error(&self, h: HandleId, e: crate::Error) -> TaskResult {
        let msg = e.to_string();
        let mut t = self.tree();
        let n = &mut t.nodes[h];
        let abort = n.abort.clone().unwrap_or_default();
        let aborted = abort.is_aborted();
        let closing = aborted && abort.reason() == "closed";
        if aborted {
            let mut restored = std::mem::take(&mut n.drained);
            if restored.iter().any(|i| i.channel == "timer") && n.inbox.iter().any(|i| i.channel == "timer") {
                n.inbox.retain(|i| i.channel != "timer");
            }
            restored.append(&mut n.inbox);
            n.inbox = restored;
        }
        n.drained.clear();
        if n.state != HandleState::Closed {
            n.state = HandleState::Idle;
        }
        let what = if aborted { "interrupted; inbox intact".to_string() } else { format!("error: {msg}") };
        let line = format!("{}: running\u{2192}idle ({what})", n.id);
        let status = if closing {
            TaskStatus::Closed
        } else if aborted {
            TaskStatus::Interrupted
        } else {
            TaskStatus::Error
        };
        let r = t.result(h, msg, status);
        t.nodes[h].last_result = Some(r.clone());
        drop(t);
        self.t(line);
        r
    }

    /// Free a finished turn's slot and hand it to the parent's queued wakes, FIFO, budgets
    /// checked again at dequeue. Returns the wakes admitted, to start outside the lock.
    fn release_child_slot(&self, h: HandleId) -> Vec<(HandleId, Option<String>)> {
        let now = self.clock.now();
        let mut t = self.tree();
        let Some(p) = t.nodes[h].parent else { return Vec::new() };
        t.nodes[p].running_children -= 1.0;
        let mut started = Vec::new();
        while t.nodes[p].running_children < t.nodes[p].max_concurrent {
            let Some((next, prompt)) = t.nodes[p].wake_queue.pop_front() else { break };
            if t.nodes[next].state != HandleState::Idle || t.nodes[next].closing {
                continue;
            }
            if let Some(limit) = t.pool_limit(next, now).or_else(|| t.turn_cap(next)) {
                Inner::settle_refused(&mut t, next, limit);
                continue;
            }
            self.t(format!("{}: DEQUEUED wake (slot transferred)", t.nodes[next].id));
            self.admit(&mut t, next, true);
            started.push((next, prompt));
        }
        started
    }

    /// Take a suspended handle's parked turn up again, with `answer` (or none: its delegated
    /// work was answered further down). Inline (the Answer reached it within its parent's run):
    /// `suspended → running`; durable: `suspended → idle → running`. The handle leaving
    /// `suspended` is the claim on its Request: it must still be suspended (on `request_id`,
    /// when given), and on a durable store the change is written before anything runs, so of
    /// two runtimes resuming one Request only the one whose write lands goes on. `Err`: the
    /// claim failed and the handle is as it was.
    pub(super) async fn resume_suspended(
        self: Arc<Self>,
        h: HandleId,
        answer: Option<Value>,
        inline: bool,
        request_id: Option<&str>,
    ) -> Result<TaskResult> {
        let (parked, id, claim) = {
            let mut t = self.tree();
            let n = &mut t.nodes[h];
            let on = n.pending_request.as_ref().and_then(crate::suspension::id_of);
            if n.state != HandleState::Suspended || request_id.is_some_and(|r| Some(r) != on.as_deref()) {
                let request = n.pending_request.clone().or_else(|| request_id.map(|r| json!({ "id": r })));
                let request = request.and_then(|r| r.as_object().cloned()).unwrap_or_default();
                return Err(crate::suspension::taken("resume", &request));
            }
            let parked =
                Parked { request: n.pending_request.take(), checkpoint: n.checkpoint.take(), halt: n.halt.take() };
            n.took_up = parked.request.clone();
            let id = n.id.clone();
            if let Some(on) = on {
                let mut answered = self.answered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                answered.push_back(on);
                while answered.len() > super::core::ANSWERED {
                    answered.pop_front();
                }
            }
            if inline {
                if let Some(p) = n.parent {
                    t.nodes[p].running_children += 1.0;
                }
                let n = &mut t.nodes[h];
                n.state = HandleState::Running;
                n.arm();
                let ok = match answer.as_ref().and_then(|a| field(a, "ok")) {
                    Some(v) => js_string(v),
                    None => "true".into(),
                };
                self.t(format!("{id}: suspended\u{2192}running (Answer ok={ok})"));
            } else {
                n.state = HandleState::Idle;
                self.t(format!("{id}: suspended\u{2192}idle (Answer accepted, checkpoint restored)"));
                self.admit(&mut t, h, true);
            }
            // The claim: the new turn's own token on the handle (`arm`). On a durable store
            // another runtime may take the same parking up at the same moment; the write that
            // lands first keeps its token (see `stored`), and the other finds it there.
            let claim = t.nodes[h].claim.clone().unwrap_or_default();
            (parked, id, claim)
        };
        if let Err(e) = self.written().await {
            // Not claimed: back to suspended, as if nothing had happened.
            let mut t = self.tree();
            if let Some(p) = t.nodes[h].parent {
                t.nodes[p].running_children -= 1.0;
            }
            let n = &mut t.nodes[h];
            let on = parked.request.as_ref().and_then(crate::suspension::id_of);
            n.state = HandleState::Suspended;
            n.pending_request = parked.request;
            n.checkpoint = parked.checkpoint;
            n.halt = parked.halt;
            drop(t);
            if let Some(on) = on {
                let mut answered = self.answered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if answered.back() == Some(&on) {
                    answered.pop_back();
                }
            }
            self.t(format!("{id}: running\u{2192}suspended (the resume could not be saved: {e})"));
            return Err(e);
        }
        {
            // Another runtime's resume of this parking was written first: its claim stands and
            // the table shows its state; this one runs nothing (its count on the parent goes).
            let mut t = self.tree();
            if t.nodes[h].claim.as_deref() != Some(claim.as_str()) {
                if let Some(p) = t.nodes[h].parent {
                    t.nodes[p].running_children -= 1.0;
                }
                let request = parked.request.and_then(|r| r.as_object().cloned()).unwrap_or_default();
                drop(t);
                self.t(format!("{id}: the resume was refused (another runtime took the request up first)"));
                return Err(crate::suspension::taken("resume", &request));
            }
        }
        let input = parked.checkpoint.unwrap_or_else(|| "continue".into());
        let (start, how) = match (parked.halt, parked.request) {
            (Some(site), Some(Value::Object(request))) => {
                (TurnStart { input: Some(input.clone()), ready: None }, How::Resume { request, site, answer })
            }
            _ => (self.begin(h, &input), How::Replay { answer }),
        };
        Ok(self.execute_turn(h, input, start, how).await)
    }
}

/// The request with this level's handle path at `data.path`.
fn stamp_path(mut req: Map<String, Value>, id: &str) -> Map<String, Value> {
    let path = Value::Array(id.split('/').map(|p| Value::String(p.into())).collect());
    match req.get_mut("data") {
        Some(Value::Object(d)) => {
            d.insert("path".into(), path);
        }
        _ => {
            let mut d = Map::new();
            d.insert("path".into(), path);
            req.insert("data".into(), Value::Object(d));
        }
    }
    req
}
