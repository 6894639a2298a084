//! What a tool tells the run while it runs (`ctx.progress`, `ctx.log`; an addition): handed to
//! the `duringTool` hook, to `onMetric` and to whoever the run reports to (a served A2A Task's
//! caller) as the tool reports it, in order, before the call's own result goes on. Without a
//! listener the tool's `ctx` carries no reporting functions and the call costs what it did.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::metrics::MetricEvent;
use super::result::RunReports;
use super::run::Client;
use super::wire::Call;
use crate::error::{Error, Result};
use crate::tool::{Caller, ToolContext, ToolEvent};
use crate::toolkit::Toolkit;
use crate::types::ToolResult;

tokio::task_local! {
    /// Who the run in this task reports to, besides the client's listeners.
    static REPORTS: Arc<dyn RunReports>;
}

/// `work` (a run) with its reports also going to `to`.
pub(super) async fn reporting<F: std::future::Future>(to: Arc<dyn RunReports>, work: F) -> F::Output {
    REPORTS.scope(to, work).await
}

/// How many reports may wait for the listeners; past that, a report is dropped (a tool that
/// reports in a tight loop cannot grow the process without bound).
const BACKLOG: usize = 1024;

/// The run's ear on one call: reports queue here for the run to hand on.
struct Ear(mpsc::Sender<ToolEvent>);

#[async_trait]
impl Caller for Ear {
    fn event(&self, event: ToolEvent) {
        if !matches!(event, ToolEvent::CloseStream) {
            let _ = self.0.try_send(event);
        }
    }
    fn offers(&self, _what: &str) -> bool {
        false
    }
    async fn request(&self, method: &str, _params: Value) -> Result<Value> {
        Err(Error::Invalid(format!(
            "{method}: the caller of this tool cannot be asked (the call is not served over MCP)"
        )))
    }
}

impl Client {
    /// The call executed with its reports heard: each goes to `duringTool` and `onMetric` as it
    /// comes, the result once all of them have. A listener that throws fails the run, as a
    /// throwing hook does, once the tool has finished.
    pub(super) async fn heard_execute(
        &self,
        toolkit: &Toolkit,
        call: &Call,
        args: Value,
        mut ctx: ToolContext,
        turn: u32,
    ) -> Result<ToolResult> {
        let also = REPORTS.try_with(Arc::clone).ok();
        if self.opts.hooks.during_tool.is_none() && self.opts.on_metric.is_none() && also.is_none() {
            return self.traced_execute(toolkit, call, args, ctx).await;
        }
        let (tx, mut rx) = mpsc::channel(BACKLOG);
        ctx.events = Some(Arc::new(Ear(tx)));
        let source = toolkit.get(&call.name).map_or_else(|| "custom".to_string(), |t| t.source().to_string());
        let out = self.traced_execute(toolkit, call, args, ctx);
        tokio::pin!(out);
        let mut failed = None;
        let result = loop {
            tokio::select! {
                biased;
                Some(event) = rx.recv() => self.hand_on(call, turn, &source, event, also.as_deref(), &mut failed).await,
                r = &mut out => break r,
            }
        };
        while let Ok(event) = rx.try_recv() {
            self.hand_on(call, turn, &source, event, also.as_deref(), &mut failed).await;
        }
        match failed {
            Some(e) => Err(e),
            None => result,
        }
    }

    /// One report to the listeners; after a listener has failed, the rest are let go.
    async fn hand_on(
        &self,
        call: &Call,
        turn: u32,
        source: &str,
        event: ToolEvent,
        also: Option<&dyn RunReports>,
        failed: &mut Option<Error>,
    ) {
        if failed.is_some() {
            return;
        }
        let told = async {
            let during = &self.opts.hooks.during_tool;
            if also.is_some() || during.is_some() {
                let report = hook_event(call, turn, &event);
                if let Some(to) = also {
                    to.report(&report);
                }
                if let Some(h) = during {
                    h.call(report).await?;
                }
            }
            if self.opts.on_metric.is_some() {
                let (tool, source) = (call.name.clone(), source.to_string());
                self.emit(MetricEvent::ToolReport { tool, source, report: event }).await?;
            }
            Ok::<(), Error>(())
        };
        if let Err(e) = told.await {
            *failed = Some(e);
        }
    }
}

/// `duringTool`'s argument: `{ type, name, id?, turn, ...the report }`.
fn hook_event(call: &Call, turn: u32, event: &ToolEvent) -> Value {
    let mut m = Map::with_capacity(8);
    let kind = if matches!(event, ToolEvent::Progress { .. }) { "progress" } else { "log" };
    m.insert("type".into(), kind.into());
    m.insert("name".into(), call.name.as_str().into());
    if let Some(id) = &call.id {
        m.insert("id".into(), id.clone());
    }
    m.insert("turn".into(), turn.into());
    event.fields_into(&mut m);
    Value::Object(m)
}
