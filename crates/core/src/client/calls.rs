//! One tool call of the loop, from the model's request to what goes back in the transcript: the
//! run's budgets, the tool itself (traced, with its hooks and metrics), and a call that suspends
//! resolved through `waitFor` or parked for a later answer.

use std::time::Instant;

use serde_json::{Map, Value};

use super::metrics::{elapsed_ms, MetricEvent};
use super::result::{LimitCheck, RunLimits};
use super::run::Client;
use super::wire::Call;
use crate::callback::Callback;
use crate::error::Result;
use crate::json::{field, obj};
use crate::suspension::{echo, expires_at_ms, now_ms, request_label, Echo};
use crate::tool::ToolContext;
use crate::toolkit::Toolkit;
use crate::trace::Kind;
use crate::types::{pending_of, request_prompt, ToolResult};

/// What one tool call settled to.
pub(super) struct Settled {
    pub(super) args: Value,
    pub(super) result: ToolResult,
    pub(super) halted: Option<Map<String, Value>>,
    /// The halt is a budget's approval request (the call was not run), not the tool's own.
    pub(super) by_budget: bool,
    /// The budget limit that refused this call (it was not run).
    pub(super) refused: Option<String>,
}

impl Settled {
    fn done(args: Value, result: ToolResult) -> Settled {
        Settled { args, result, halted: None, by_budget: false, refused: None }
    }
}

impl Client {
    /// The parked call run again with its Answer (§10's retry): declined unless `ok`; a retry
    /// that suspends again is a new suspension, resolved by `waitFor` or parking the run on
    /// its new Request.
    pub(super) async fn answered_call(
        &self,
        toolkit: &Toolkit,
        call: &Call,
        request: &Map<String, Value>,
        answer: Value,
        turn: u32,
    ) -> Result<Settled> {
        let args = call.args.clone();
        if field(&answer, "ok").is_none() {
            let declined = ToolResult::error(format!("declined/expired: {}", request_prompt(request)));
            return Ok(Settled::done(args, declined));
        }
        let result = self.retry_answered(toolkit, call, &args, answer, turn).await?;
        match pending_of(&result).cloned() {
            None => Ok(Settled::done(args, result)),
            Some(again) => self.resolve_pending(toolkit, call, args, again, turn).await,
        }
    }

    /// Streaming order (§10): tools already ran together; now, one by one in call order,
    /// surface a suspension before resolving it, and report each result. Stops at a halt.
    pub(super) async fn settle_in_order(
        &self,
        toolkit: &Toolkit,
        calls: &[Call],
        ran: Vec<(Value, ToolResult, Option<String>, bool)>,
        turn: u32,
        sink: &dyn Callback,
    ) -> Result<Vec<Settled>> {
        let mut out = Vec::with_capacity(ran.len());
        for (call, (args, result, refused, by_budget)) in calls.iter().zip(ran) {
            let s = match pending_of(&result).cloned() {
                None => Settled { args, result, halted: None, by_budget: false, refused },
                Some(request) => {
                    sink.call(obj([("type", "pending".into()), ("request", Value::Object(request.clone()))])).await?;
                    let mut s = self.resolve_pending(toolkit, call, args, request, turn).await?;
                    s.by_budget = by_budget && s.halted.is_some();
                    s
                }
            };
            if s.halted.is_some() {
                out.push(s);
                return Ok(out);
            }
            let mut ev = Map::with_capacity(5);
            ev.insert("type".into(), "tool_result".into());
            if let Some(id) = &call.id {
                ev.insert("id".into(), id.clone());
            }
            ev.insert("name".into(), call.name.as_str().into());
            ev.insert("output".into(), s.result.output.as_str().into());
            ev.insert("isError".into(), s.result.is_error.into());
            sink.call(Value::Object(ev)).await?;
            out.push(s);
        }
        Ok(out)
    }

    /// Before a tool call: what the budget decides, as the call's settlement when it is not
    /// run (refused with the limit named, or halted on the budget's approval request).
    async fn budgeted(call: &Call, limits: Option<&dyn RunLimits>) -> Result<Option<Settled>> {
        let Some(l) = limits else { return Ok(None) };
        Ok(match l.before_tool().await? {
            LimitCheck::Go => None,
            LimitCheck::Stop(limit) => {
                let result = ToolResult::error(format!("budget exhausted ({limit})"));
                Some(Settled { args: call.args.clone(), result, halted: None, by_budget: false, refused: Some(limit) })
            }
            LimitCheck::Suspend(request) => {
                let result = ToolResult::error(request_prompt(&request));
                Some(Settled { args: call.args.clone(), result, halted: Some(request), by_budget: true, refused: None })
            }
        })
    }

    /// `run_tool` unless a budget decides otherwise (streaming order: a budget's approval
    /// request is surfaced like a tool's own suspension, then it halts).
    pub(super) async fn limited_tool(
        &self,
        toolkit: &Toolkit,
        call: &Call,
        turn: u32,
        limits: Option<&dyn RunLimits>,
    ) -> Result<(Value, ToolResult, Option<String>, bool)> {
        match Self::budgeted(call, limits).await? {
            Some(Settled { args, halted: Some(request), .. }) => {
                Ok((args, crate::types::pending(request)?, None, true))
            }
            Some(Settled { args, result, refused, .. }) => Ok((args, result, refused, false)),
            None => {
                let (args, result) = self.run_tool(toolkit, call, turn).await?;
                Ok((args, result, None, false))
            }
        }
    }

    /// One tool call through the hooks, then the §10 rule when it suspends.
    pub(super) async fn run_call(
        &self,
        toolkit: &Toolkit,
        call: &Call,
        turn: u32,
        limits: Option<&dyn RunLimits>,
    ) -> Result<Settled> {
        if let Some(settled) = Self::budgeted(call, limits).await? {
            return Ok(settled);
        }
        let (args, result) = self.run_tool(toolkit, call, turn).await?;
        match pending_of(&result).cloned() {
            None => Ok(Settled::done(args, result)),
            Some(request) => self.resolve_pending(toolkit, call, args, request, turn).await,
        }
    }

    /// §10: ask `waitFor`; on ok retry the same call once with `ctx.answer`. Without a
    /// `waitFor` the call halts the run. An answer that names another Request's id, or comes
    /// after the Request's `expiresAt`, reaches no tool: the call is answered as declined.
    async fn resolve_pending(
        &self,
        toolkit: &Toolkit,
        call: &Call,
        args: Value,
        request: Map<String, Value>,
        turn: u32,
    ) -> Result<Settled> {
        let prompt = request_prompt(&request);
        let Some(wait_for) = &self.opts.wait_for else {
            let placeholder = ToolResult::error(prompt);
            return Ok(Settled { args, result: placeholder, halted: Some(request), by_budget: false, refused: None });
        };
        let answer = wait_for.call(Value::Object(request.clone())).await?;
        if field(&answer, "ok").is_none() {
            return Ok(Settled::done(args, ToolResult::error(format!("declined/expired: {prompt}"))));
        }
        if let Echo::Other(id) = echo(&request, &answer) {
            crate::warn::warn(&format!(
                "[toolnexus] waitFor answered request {} with an answer for {id:?}; it was not applied (an answer reaches only the request whose id it echoes)",
                request_label(&request)
            ));
            let refused = format!("declined/expired: {prompt} (the answer was for another request)");
            return Ok(Settled::done(args, ToolResult::error(refused)));
        }
        if expires_at_ms(&request).is_some_and(|at| now_ms() > at) {
            return Ok(Settled::done(args, ToolResult::error(format!("declined/expired: {prompt}"))));
        }
        let mut result = self.retry_answered(toolkit, call, &args, answer, turn).await?;
        if pending_of(&result).is_some() {
            result = ToolResult::error(format!("unresolved: {prompt}"));
        }
        Ok(Settled::done(args, result))
    }

    /// The call run again with `ctx.answer`, then `afterTool` and its `tool` metric.
    async fn retry_answered(
        &self,
        toolkit: &Toolkit,
        call: &Call,
        args: &Value,
        answer: Value,
        turn: u32,
    ) -> Result<ToolResult> {
        let t0 = Instant::now();
        let ctx = ToolContext { answer: Some(answer), ..Default::default() };
        let result = self.heard_execute(toolkit, call, args.clone(), ctx, turn).await?;
        let result = self.after_tool(call, args, result, turn).await?;
        self.emit_tool(toolkit, &call.name, &result, t0).await?;
        Ok(result)
    }

    /// beforeTool (may short-circuit or rewrite args) → execute → afterTool (skipped on a suspension).
    async fn run_tool(&self, toolkit: &Toolkit, call: &Call, turn: u32) -> Result<(Value, ToolResult)> {
        let t0 = Instant::now();
        let mut args = call.args.clone();
        if let Some(h) = &self.opts.hooks.before_tool {
            let ov = h.call(tool_event(call, &args, None, turn)).await?;
            if let Some(r) = field(&ov, "result") {
                let result = ToolResult::from_value(r.clone());
                self.emit_tool(toolkit, &call.name, &result, t0).await?;
                return Ok((args, result));
            }
            if let Some(a) = field(&ov, "args") {
                args = a.clone();
            }
        }
        let mut result = self.heard_execute(toolkit, call, args.clone(), ToolContext::default(), turn).await?;
        if pending_of(&result).is_none() {
            result = self.after_tool(call, &args, result, turn).await?;
        }
        self.emit_tool(toolkit, &call.name, &result, t0).await?;
        Ok((args, result))
    }

    /// One tool's execution, as an `execute_tool` span when spans are recorded: requests the
    /// tool makes carry it, runs it starts are its children.
    pub(super) async fn traced_execute(
        &self,
        toolkit: &Toolkit,
        call: &Call,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolResult> {
        if !crate::trace::active() {
            return toolkit.execute(&call.name, args, ctx).await;
        }
        let mut attrs = Map::with_capacity(5);
        attrs.insert("gen_ai.operation.name".into(), "execute_tool".into());
        attrs.insert("gen_ai.tool.name".into(), call.name.as_str().into());
        attrs.insert("gen_ai.tool.type".into(), "function".into());
        if let Some(id) = call.id.as_ref().and_then(Value::as_str) {
            attrs.insert("gen_ai.tool.call.id".into(), id.into());
        }
        if let Some(t) = toolkit.get(&call.name) {
            attrs.insert("toolnexus.tool.source".into(), t.source().into());
        }
        let Some(mut span) = crate::trace::start(format!("execute_tool {}", call.name), Kind::Internal, attrs).await
        else {
            return toolkit.execute(&call.name, args, ctx).await;
        };
        let out = span.enter(toolkit.execute(&call.name, args, ctx)).await;
        match &out {
            Ok(r) if pending_of(r).is_some() => {
                span.set("toolnexus.tool.pending", true);
                span.end(None)
            }
            Ok(r) if r.is_error => {
                span.set("error.type", "tool_error");
                span.end(Some(&r.output))
            }
            Ok(_) => span.end(None),
            Err(e) => {
                span.set("error.type", e.kind());
                span.end(Some(&e.to_string()))
            }
        }
        out
    }

    /// afterTool: it sees the result and may replace it.
    async fn after_tool(&self, call: &Call, args: &Value, result: ToolResult, turn: u32) -> Result<ToolResult> {
        let Some(h) = &self.opts.hooks.after_tool else {
            return Ok(result);
        };
        let ov = h.call(tool_event(call, args, Some(&result), turn)).await?;
        Ok(match field(&ov, "result") {
            Some(r) => ToolResult::from_value(r.clone()),
            None => result,
        })
    }

    /// The `tool` metric; a suspension is `pending`, never an error.
    async fn emit_tool(&self, toolkit: &Toolkit, name: &str, result: &ToolResult, t0: Instant) -> Result<()> {
        let source = toolkit.get(name).map_or_else(|| "custom".to_string(), |t| t.source().to_string());
        let pending = pending_of(result).is_some();
        self.emit(MetricEvent::Tool {
            tool: name.to_string(),
            source,
            is_error: !pending && result.is_error,
            ms: elapsed_ms(t0),
            pending,
        })
        .await
    }
}

/// `call` raced against the run's wall-clock budget: `None` when the budget ran out first (the
/// call is dropped).
pub(super) async fn walled<T>(limits: Option<&dyn RunLimits>, call: impl std::future::Future<Output = T>) -> Option<T> {
    let Some(l) = limits else { return Some(call.await) };
    tokio::select! {
        biased;
        r = call => Some(r),
        _ = l.wall_expired() => None,
    }
}

fn tool_event(call: &Call, args: &Value, result: Option<&ToolResult>, turn: u32) -> Value {
    let mut m = Map::with_capacity(5);
    m.insert("name".into(), Value::String(call.name.clone()));
    m.insert("args".into(), args.clone());
    if let Some(r) = result {
        m.insert("result".into(), r.to_value());
    }
    if let Some(id) = &call.id {
        m.insert("id".into(), id.clone());
    }
    m.insert("turn".into(), turn.into());
    Value::Object(m)
}
