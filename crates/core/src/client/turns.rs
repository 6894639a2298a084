//! The tool-calling loop (§8) with suspension (§10): turns, tool calls through the hooks,
//! `waitFor`, and how a run ends (done, pending, incomplete).

use std::time::{Duration, Instant};

use futures::future::try_join_all;
use serde_json::{Map, Value};

use super::answer::{Outcome, Partials};
use super::calls::{walled, Settled};
use super::fallback::Got;
use super::metrics::{elapsed_ms, MetricEvent};
use super::output::OutputRun;
use super::parked::{Resumed, Start};
use super::result::{
    HaltSite, LimitCheck, Resolution, RunLimits, RunOptions, RunResult, RunStatus, ToolCallRecord, Usage,
};
use super::run::Client;
use super::streamed::Streamed;
use super::wire::{self, expect_array, Call, Style};
use crate::callback::Callback;
use crate::cancel::Abort;
use crate::error::{Error, Result};
use crate::json::{field, obj};
use crate::toolkit::Toolkit;
use crate::trace::Kind;
use crate::types::request_prompt;

/// How recording a turn's calls ended the run, if it did.
enum Ending {
    Halt(Map<String, Value>, HaltSite),
    Limit(String),
}

/// The loop's working state; kept outside the loop's future so a failed run can still
/// report how far it got.
struct RunState {
    messages: Vec<Value>,
    /// The toolkit's declarations, shared with every other run, until `beforeLLM` replaces them.
    tools: std::sync::Arc<[Value]>,
    records: Vec<ToolCallRecord>,
    usage: Usage,
    turns: u32,
    /// When the LLM call in flight started, if one is: an abort then still reports it as a
    /// failed `llm` call, as the reference does.
    llm_since: Option<Instant>,
    /// The run's budgets, when it has any.
    limits: Option<std::sync::Arc<dyn RunLimits>>,
    /// The model of the fallback entry that answered the last call, when one did.
    answered_by: Option<String>,
    /// The run's structured output, when it has one.
    output: Option<OutputRun>,
    /// The checked answer, once there is one.
    answer: Option<Value>,
}

impl Client {
    pub(super) async fn execute(
        &self,
        start: Start<'_>,
        toolkit: &Toolkit,
        mut ro: RunOptions,
        sink: Option<&dyn Callback>,
    ) -> Result<RunResult> {
        match ro.reports.take() {
            // Boxed: the run without one keeps the size it had.
            Some(to) => Box::pin(super::heard::reporting(to, self.execute_traced(start, toolkit, ro, sink))).await,
            None => self.execute_traced(start, toolkit, ro, sink).await,
        }
    }

    async fn execute_traced(
        &self,
        start: Start<'_>,
        toolkit: &Toolkit,
        ro: RunOptions,
        sink: Option<&dyn Callback>,
    ) -> Result<RunResult> {
        if !crate::trace::active() {
            return self.execute_untraced(start, toolkit, ro, sink).await;
        }
        let mut span = crate::trace::start(
            format!("invoke_agent {}", self.opts.model),
            Kind::Internal,
            self.gen_ai("invoke_agent"),
        )
        .await;
        let out = match &span {
            Some(s) => s.enter(self.execute_untraced(start, toolkit, ro, sink)).await,
            None => self.execute_untraced(start, toolkit, ro, sink).await,
        };
        if let Some(mut s) = span.take() {
            match &out {
                Ok(r) => {
                    s.set("gen_ai.usage.input_tokens", r.usage.prompt_tokens);
                    s.set("gen_ai.usage.output_tokens", r.usage.completion_tokens);
                    s.set("toolnexus.run.turns", r.turns);
                    s.set("toolnexus.run.tool_calls", r.tool_calls.len());
                    s.set("toolnexus.run.status", r.status.as_str());
                    s.end(None)
                }
                Err(e) => {
                    s.set("error.type", e.kind());
                    s.end(Some(&e.to_string()))
                }
            }
        }
        out
    }

    /// The attributes every span of this client's starts with: the operation, the provider
    /// and the model asked for.
    pub(super) fn gen_ai(&self, operation: &str) -> Map<String, Value> {
        let mut m = Map::with_capacity(5);
        m.insert("gen_ai.operation.name".into(), operation.into());
        let provider = match self.opts.style {
            Style::OpenAI => "openai",
            Style::Anthropic => "anthropic",
        };
        m.insert("gen_ai.provider.name".into(), provider.into());
        if !self.opts.model.is_empty() {
            m.insert("gen_ai.request.model".into(), self.opts.model.clone().into());
        }
        m
    }

    async fn execute_untraced(
        &self,
        start: Start<'_>,
        toolkit: &Toolkit,
        ro: RunOptions,
        sink: Option<&dyn Callback>,
    ) -> Result<RunResult> {
        let key = self.resolve_key()?;
        let abort = ro.abort;
        let limits = ro.limits;
        let output = ro.output.map(|o| OutputRun::new(o, |name| toolkit.get(name).is_some()));
        let started = Instant::now();
        let style = self.opts.style;
        let system = self.system(toolkit);
        let (messages, resumed) = match start {
            Start::Prompt(prompt) => {
                let mut messages = ro.history.unwrap_or_default();
                if style == Style::OpenAI && messages.is_empty() && !system.is_empty() {
                    messages.push(obj([("role", "system".into()), ("content", system.clone().into())]));
                }
                // A turn left parked, now left for a new prompt: one result per call still.
                wire::answer_the_unanswered(style, &mut messages);
                messages.push(obj([("role", "user".into()), ("content", prompt.into())]));
                (messages, None)
            }
            Start::Resume(mut r) => (std::mem::take(&mut r.messages), Some(r)),
        };
        let tools = match style {
            Style::OpenAI => toolkit.openai_declarations(),
            Style::Anthropic => toolkit.anthropic_declarations(),
        };
        let mut st = RunState {
            messages,
            tools,
            records: vec![],
            usage: Usage::default(),
            turns: 0,
            llm_since: None,
            limits,
            answered_by: None,
            output,
            answer: None,
        };
        // With an output schema a stream also reports the answer's partial object.
        let partials = match (sink, &st.output) {
            (Some(inner), Some(_)) => Some(Partials::new(inner)),
            _ => None,
        };
        let sink = match &partials {
            Some(p) => Some(p as &dyn Callback),
            None => sink,
        };
        // The loop's future is the biggest part of a run's; boxed, it is written once into the
        // heap, and the futures above it (bounded, traced, the host's) stay small enough that
        // moving them costs nothing (unboxed, a run copied ~10 KB at each of several levels).
        let outcome = match resumed {
            // A run from a prompt boxes the loop alone: the resumed calls' future would make
            // every run's box bigger.
            None => self.bounded(abort, Box::pin(self.drive(&mut st, &key, &system, toolkit, sink, started))).await,
            Some(r) => {
                let (st_ref, key_ref, system_ref) = (&mut st, &key, &system);
                let resumed = Box::pin(async move {
                    let limits_held = st_ref.limits.clone();
                    if let Some(end) = self.resume_calls(st_ref, toolkit, *r, limits_held.as_deref()).await? {
                        return self.ended(st_ref, end, started).await;
                    }
                    self.drive(st_ref, key_ref, system_ref, toolkit, sink, started).await
                });
                self.bounded(abort, resumed).await
            }
        };
        match outcome {
            Ok(r) => Ok(r),
            Err(e) => {
                if let Some(t0) = st.llm_since.take() {
                    self.llm_metric(&self.primary(), false, t0, (0, 0), 1).await?;
                }
                self.run_metric(&st, started, Some(e.to_string())).await?;
                Err(e)
            }
        }
    }

    /// Bound `work` by the caller's abort and the client's `timeoutMs`, whichever comes first.
    pub(super) async fn bounded<T>(
        &self,
        abort: Option<Abort>,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let abort = abort.unwrap_or_default();
        if abort.is_aborted() {
            return Err(Error::Aborted(abort.reason()));
        }
        let token = abort.token();
        let deadline = async {
            match self.opts.timeout_ms {
                // Unlike a retry's back-off, the deadline alone keeps no host alive (an unreferenced timer).
                Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            biased;
            _ = token.cancelled() => Err(Error::Aborted(abort.reason())),
            _ = deadline => Err(Error::Timeout(self.opts.timeout_ms.unwrap_or_default())),
            r = work => r,
        }
    }

    pub(super) fn system(&self, toolkit: &Toolkit) -> String {
        let parts = [self.opts.system_prompt.clone().unwrap_or_default(), toolkit.skills_prompt()];
        parts.into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n\n")
    }

    /// The loop itself, shared by `run` (no sink) and `stream` (events to the sink).
    async fn drive(
        &self,
        st: &mut RunState,
        key: &str,
        system: &str,
        toolkit: &Toolkit,
        sink: Option<&dyn Callback>,
        started: Instant,
    ) -> Result<RunResult> {
        let limits_held = st.limits.clone();
        let limits = limits_held.as_deref();
        let style = self.opts.style;
        let model = self.opts.model.clone();
        for turn in 0..self.opts.max_turns {
            if let Some(l) = limits {
                match l.before_llm().await? {
                    LimitCheck::Go => {}
                    LimitCheck::Stop(limit) => return self.end_limited(st, limit, started).await,
                    LimitCheck::Suspend(request) => {
                        return self.pending_run(st, request, HaltSite::BudgetLlm, started).await
                    }
                }
            }
            st.turns += 1;
            if let Some(h) = &self.opts.hooks.before_llm {
                let ev = obj([
                    ("messages", Value::Array(st.messages.clone())),
                    ("tools", Value::Array(st.tools.to_vec())),
                    ("model", model.clone().into()),
                    ("turn", turn.into()),
                ]);
                let ov = h.call(ev).await?;
                if let Some(m) = field(&ov, "messages") {
                    st.messages = expect_array(m, "beforeLLM: `messages` must be an array")?;
                }
                if let Some(t) = field(&ov, "tools") {
                    st.tools = expect_array(t, "beforeLLM: `tools` must be an array")?.into();
                }
            }
            let parts = wire::Parts {
                style,
                model: &model,
                system,
                messages: &st.messages,
                tools: &st.tools,
                stream: sink.is_some(),
                output: st.output.as_ref(),
            };
            let body = self.body_text(&parts).await?;
            st.llm_since = Some(Instant::now());
            let spent_before = st.usage.total_tokens;
            let called = match walled(limits, self.complete(key, &parts, &body, sink, &mut st.usage)).await {
                Some(got) => got,
                None => match self.cut_by_wall(st, limits, started).await? {
                    Some(ended) => return Ok(ended),
                    None => {
                        let parts = wire::Parts {
                            style,
                            model: &model,
                            system,
                            messages: &st.messages,
                            tools: &st.tools,
                            stream: sink.is_some(),
                            output: st.output.as_ref(),
                        };
                        self.complete(key, &parts, &body, sink, &mut st.usage).await
                    }
                },
            };
            st.llm_since = None;
            let (got, by) = called?;
            let mut reply = match got {
                Got::Json(data) => {
                    wire::add_usage(&mut st.usage, data.get("usage"), by.style);
                    self.after_llm(&data, turn).await?;
                    let (assistant, calls, text) = wire::read_reply(by.style, data)?;
                    Streamed { assistant, finished: calls.is_empty(), calls, text }
                }
                Got::Stream(s) => {
                    let response = obj([("streamed", true.into()), ("usage", st.usage.to_value())]);
                    self.after_llm(&response, turn).await?;
                    s
                }
            };
            // A reply from an endpoint of the other style enters the transcript in this one's.
            if by.style != style {
                reply.assistant = super::fallback::assistant_in(style, &reply.text, &reply.calls);
            }
            st.answered_by = by.entry.map(|_| by.model);
            if let Some(l) = limits {
                l.spent_tokens(st.usage.total_tokens - spent_before);
            }
            if let Some(out) = st.output.as_mut() {
                let turns_left = turn + 1 < self.opts.max_turns;
                reply = match out.read(style, &mut st.messages, reply, turns_left).await? {
                    Outcome::Pass(reply) => reply,
                    Outcome::Again { attempt, issues, text } => {
                        // A stream marks the retry: the rejected attempt's text and partial
                        // object end here, and the next attempt's start afresh.
                        if let Some(sink) = sink {
                            sink.call(super::answer::retry_event(attempt, &issues, text)).await?;
                        }
                        continue;
                    }
                    Outcome::Done { text, value } => {
                        st.answer = Some(value);
                        if let Some(sink) = sink {
                            sink.call(obj([("type", "usage".into()), ("usage", st.usage.to_value())])).await?;
                        }
                        return self.end_run(st, text, false, started).await;
                    }
                };
            }
            st.messages.push(reply.assistant);
            if reply.finished {
                if let Some(sink) = sink {
                    sink.call(obj([("type", "usage".into()), ("usage", st.usage.to_value())])).await?;
                }
                return self.end_run(st, reply.text, false, started).await;
            }
            let calls = reply.calls;
            let settled: Vec<Settled> = match sink {
                None => try_join_all(calls.iter().map(|c| self.run_call(toolkit, c, turn, limits))).await?,
                Some(sink) => {
                    for c in &calls {
                        let mut ev = Map::with_capacity(4);
                        ev.insert("type".into(), "tool_call".into());
                        if let Some(id) = &c.id {
                            ev.insert("id".into(), id.clone());
                        }
                        ev.insert("name".into(), c.name.as_str().into());
                        ev.insert("args".into(), c.args.clone());
                        sink.call(Value::Object(ev)).await?;
                    }
                    let ran = try_join_all(calls.iter().map(|c| self.limited_tool(toolkit, c, turn, limits))).await?;
                    self.settle_in_order(toolkit, &calls, ran, turn, sink).await?
                }
            };
            if let Some(end) = self.record(st, &calls, settled, Vec::new()) {
                return self.ended(st, end, started).await;
            }
        }
        let text = match style {
            Style::OpenAI => last_text(&st.messages),
            Style::Anthropic => String::new(),
        };
        self.end_run(st, text, true, started).await
    }

    /// Write a turn's settled calls into the transcript and the records, in call order, up to
    /// the first halt (the calls after it never enter: they run again on resume). Anthropic's
    /// results go in one user message, after `blocks` (results already written for this turn).
    fn record(
        &self,
        st: &mut RunState,
        calls: &[Call],
        settled: Vec<Settled>,
        mut blocks: Vec<Value>,
    ) -> Option<Ending> {
        let style = self.opts.style;
        let mut halted = None;
        let mut refused = None;
        for (call, s) in calls.iter().zip(settled) {
            if refused.is_none() {
                refused = s.refused.clone();
            }
            match style {
                Style::OpenAI => st.messages.push(wire::openai_tool_message(call.id.as_ref(), &s.result.output)),
                Style::Anthropic => {
                    blocks.push(wire::anthropic_tool_result(call.id.as_ref(), &s.result.output, s.result.is_error))
                }
            }
            st.records.push(ToolCallRecord { name: call.name.clone(), args: s.args, result: s.result });
            if let Some(request) = s.halted {
                let site = if s.by_budget { HaltSite::BudgetTool } else { HaltSite::Tool };
                halted = Some(Ending::Halt(request, site));
                break;
            }
        }
        if style == Style::Anthropic {
            st.messages.push(obj([("role", "user".into()), ("content", Value::Array(blocks))]));
        }
        halted.or(refused.map(Ending::Limit))
    }

    /// The run's result when recording a turn ended it.
    async fn ended(&self, st: &mut RunState, end: Ending, started: Instant) -> Result<RunResult> {
        match end {
            Ending::Halt(request, site) => self.pending_run(st, request, site, started).await,
            Ending::Limit(limit) => self.end_limited(st, limit, started).await,
        }
    }

    /// A parked turn taken up again: the parked call first (with the Answer when the tool
    /// itself asked, afresh when a budget did or when there is no Answer at this level), then,
    /// unless it parks again, the calls after it together. Recorded as a turn is; the loop goes
    /// on from there unless this ends the run.
    async fn resume_calls(
        &self,
        st: &mut RunState,
        toolkit: &Toolkit,
        r: Resumed,
        limits: Option<&dyn RunLimits>,
    ) -> Result<Option<Ending>> {
        let Some((parked, rest)) = r.calls.split_first() else { return Ok(None) };
        let first = match (&r.resolution, r.site) {
            (Resolution::Answer(answer), HaltSite::Tool) => {
                self.answered_call(toolkit, parked, &r.request, answer.clone(), 0).await?
            }
            _ => self.run_call(toolkit, parked, 0, limits).await?,
        };
        let mut settled = vec![first];
        if settled[0].halted.is_none() {
            settled.extend(try_join_all(rest.iter().map(|c| self.run_call(toolkit, c, 0, limits))).await?);
        }
        let end = self.record(st, &r.calls[..settled.len()], settled, r.blocks);
        if let (None, Some(id)) = (&end, &r.keep) {
            // The calls ran: their results are kept even if what follows fails.
            self.store.save(id, st.messages.clone()).await?;
        }
        Ok(end)
    }

    pub(super) async fn after_llm(&self, response: &Value, turn: u32) -> Result<()> {
        if let Some(h) = &self.opts.hooks.after_llm {
            let ev =
                obj([("response", response.clone()), ("model", self.opts.model.clone().into()), ("turn", turn.into())]);
            h.call(ev).await?;
        }
        Ok(())
    }

    /// The one `run` event of a run; `error` is set when the run failed.
    async fn run_metric(&self, st: &RunState, started: Instant, error: Option<String>) -> Result<()> {
        self.emit(MetricEvent::Run {
            model: self.opts.model.clone(),
            turns: st.turns,
            tool_calls: st.records.len(),
            total_tokens: st.usage.total_tokens,
            ms: elapsed_ms(started),
            error,
        })
        .await
    }

    /// The run ended with text, or ran out of turns (`exhausted`): with no text that is
    /// a loud "incomplete", never a silent "done".
    async fn end_run(&self, st: &mut RunState, text: String, exhausted: bool, started: Instant) -> Result<RunResult> {
        let incomplete = exhausted && text.is_empty();
        let (status, limit) = match incomplete {
            true => (RunStatus::Incomplete, Some("maxTurns".to_string())),
            false => (RunStatus::Done, None),
        };
        self.finish(st, text, status, None, limit, None, started).await
    }

    /// The run's result, after its `run` metric.
    #[allow(clippy::too_many_arguments)] // the parts of a result, each its own field
    async fn finish(
        &self,
        st: &mut RunState,
        text: String,
        status: RunStatus,
        pending: Option<Map<String, Value>>,
        limit: Option<String>,
        halt: Option<HaltSite>,
        started: Instant,
    ) -> Result<RunResult> {
        self.run_metric(st, started, None).await?;
        Ok(RunResult {
            text,
            messages: std::mem::take(&mut st.messages),
            tool_calls: std::mem::take(&mut st.records),
            turns: st.turns,
            usage: st.usage,
            model: st.answered_by.take().unwrap_or_else(|| self.opts.model.clone()),
            status,
            pending,
            limit,
            halt,
            output: st.answer.take(),
        })
    }

    /// A budget limit stopped the run: loud, `incomplete`, with the limit named and the
    /// transcript so far kept.
    /// The wall-clock budget ran out during an LLM call, which was dropped (its connection
    /// closed): it is reported as a failed call, as an abort's is, then the budget decides as
    /// before any call: the run ends `incomplete` (or halts on the budget's approval request)
    /// with `Some`, or, with `None`, the call is made again past the limit.
    async fn cut_by_wall(
        &self,
        st: &mut RunState,
        limits: Option<&dyn RunLimits>,
        started: Instant,
    ) -> Result<Option<RunResult>> {
        if let Some(t0) = st.llm_since.take() {
            self.llm_metric(&self.primary(), false, t0, (0, 0), 1).await?;
        }
        let check = match limits {
            Some(l) => l.before_llm().await?,
            None => LimitCheck::Go,
        };
        match check {
            LimitCheck::Go => {
                st.llm_since = Some(Instant::now());
                Ok(None)
            }
            LimitCheck::Stop(limit) => self.end_limited(st, limit, started).await.map(Some),
            LimitCheck::Suspend(request) => self.pending_run(st, request, HaltSite::BudgetLlm, started).await.map(Some),
        }
    }

    async fn end_limited(&self, st: &mut RunState, limit: String, started: Instant) -> Result<RunResult> {
        self.finish(st, String::new(), RunStatus::Incomplete, None, Some(limit), None, started).await
    }

    /// A tool suspended and there is no `waitFor`: halt durably with the request.
    async fn pending_run(
        &self,
        st: &mut RunState,
        request: Map<String, Value>,
        site: HaltSite,
        started: Instant,
    ) -> Result<RunResult> {
        self.finish(st, request_prompt(&request), RunStatus::Pending, Some(request), None, Some(site), started).await
    }
}

fn last_text(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match (m.get("role"), m.get("content")) {
            (Some(Value::String(r)), Some(Value::String(c))) if r == "assistant" => Some(c.clone()),
            _ => None,
        })
        .unwrap_or_default()
}
