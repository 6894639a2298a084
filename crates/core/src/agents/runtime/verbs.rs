//! The six host verbs, the read-only views, and durable resume.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::oneshot;

use super::core::{AgentRuntime, Inner};
use super::tree::Tree;
use super::types::{
    js_num, AgentDef, Budget, HandleId, HandleState, HandleView, InboxItem, Inspection, TaskResult, TaskStatus, ROOT,
};
use crate::error::{Error, Result};
use crate::json::obj;

/// A verb's refusal: returned, never thrown.
pub type VerbError = String;

fn unknown(h: HandleId) -> VerbError {
    format!("unknown handle #{h}")
}

impl AgentRuntime {
    /// A child of `parent` from the definition `def`, with `budget` over the definition's.
    pub fn spawn(
        &self,
        parent: HandleId,
        def: &str,
        budget: Option<&Budget>,
    ) -> std::result::Result<HandleId, VerbError> {
        let inner = &self.inner;
        let Some(base) = inner.registry.get(def) else {
            let mut known: Vec<&str> = inner.registry.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(format!("unknown agent \"{def}\" (known: {})", known.join(", ")));
        };
        let now = inner.clock.now();
        let (h, id, tokens, on_spawn) = {
            let mut t = inner.tree();
            let Some(p) = t.get(parent) else { return Err(unknown(parent)) };
            if p.state == HandleState::Closed || p.closing {
                return Err(format!("parent closed: {}", p.id));
            }
            if f64::from(p.depth) + 1.0 > p.max_depth {
                return Err(format!("maxDepth {} exceeded", js_num(p.max_depth)));
            }
            if p.children.len() as f64 + 1.0 > p.pool_children {
                return Err(format!("maxChildren {} exceeded", js_num(p.pool_children)));
            }
            if let Some(limit) = t.pool_limit(parent, now) {
                return Err(format!("budget exhausted ({limit}); spawn refused"));
            }
            let p = &mut t.nodes[parent];
            p.seq += 1;
            let id = format!("{}/{}.{}", p.id, def, p.seq);
            let def = match budget {
                Some(b) => Arc::new(AgentDef { budget: base.budget.overridden_by(b), ..(**base).clone() }),
                None => base.clone(),
            };
            let on_spawn = def.on_spawn.clone();
            let h = t.add(parent, id.clone(), def, now);
            (h, id, t.nodes[h].pool_tokens, on_spawn)
        };
        inner.t(format!("{id}: spawned (depth {}, tokens {})", id.matches('/').count(), js_num(tokens)));
        if let Some(cb) = on_spawn {
            // Runs before the first turn; a failure is traced, never thrown to the spawner.
            let weak = Arc::downgrade(inner);
            let arg = obj([("handle", h.into()), ("id", id.clone().into())]);
            let ready = async move {
                if let Err(e) = cb.call(arg).await {
                    if let Some(inner) = weak.upgrade() {
                        inner.t(format!("{id}: onSpawn error: {e}"));
                    }
                }
            }
            .boxed()
            .shared();
            inner.tree().nodes[h].ready = Some(ready.clone());
            (inner.spawner)(ready.boxed());
        }
        Ok(h)
    }

    /// Append to the inbox; no transition. Full or closed: refused at once.
    pub fn post(&self, h: HandleId, item: InboxItem) -> std::result::Result<(), VerbError> {
        let inner = &self.inner;
        let mut t = inner.tree();
        let cap = inner.inbox_cap;
        let Some(n) = t.nodes.get_mut(h) else { return Err(unknown(h)) };
        if n.state == HandleState::Closed {
            return Err(format!("inbox closed: {}", n.id));
        }
        // Timer ticks coalesce as they arrive: one queued tick stands for any number of them,
        // so a handle busy through many beats never fills its inbox with them.
        if item.channel == "timer" && n.inbox.iter().any(|i| i.channel == "timer") {
            n.ticks += 1;
            return Ok(());
        }
        if n.inbox.len() as f64 >= cap {
            let line = format!("{}: post REJECTED (inbox full, cap {}) from {}", n.id, js_num(cap), item.from);
            let err = format!("inbox full: {} (cap {})", n.id, js_num(cap));
            drop(t);
            inner.t(line);
            return Err(err);
        }
        if item.channel == "timer" {
            n.ticks = 1;
        }
        n.inbox.push(item);
        drop(t);
        inner.changed();
        Ok(())
    }

    /// `idle → running`, admission atomic with the call; over the parent's concurrency the
    /// wake queues FIFO. A suspended or running handle is left as it is.
    pub fn wake(&self, h: HandleId, prompt: Option<String>) -> std::result::Result<(), VerbError> {
        let inner = &self.inner;
        let now = inner.clock.now();
        let mut t = inner.tree();
        let Some(n) = t.get(h) else { return Err(unknown(h)) };
        match n.state {
            HandleState::Closed => return Err(format!("closed: {}", n.id)),
            HandleState::Suspended | HandleState::Running => return Ok(()),
            HandleState::Idle => {}
        }
        if n.closing || t.is_queued(h) {
            return Ok(());
        }
        if let Some(p) = n.parent {
            let pn = &t.nodes[p];
            if pn.running_children >= pn.max_concurrent {
                let line = format!("{}: wake QUEUED (parent concurrency {})", t.nodes[h].id, js_num(pn.max_concurrent));
                t.nodes[p].wake_queue.push_back((h, prompt));
                drop(t);
                inner.t(line);
                return Ok(());
            }
        }
        if let Some(limit) = t.pool_limit(h, now).or_else(|| t.turn_cap(h)) {
            return Err(Inner::settle_refused(&mut t, h, limit));
        }
        inner.admit(&mut t, h, true);
        drop(t);
        inner.start_turn(h, prompt);
        Ok(())
    }

    /// The next result, or the last one when the handle is settled. `by` enforces that only
    /// the spawner waits; `timeout_ms` ends the wait (the handle keeps running).
    pub fn wait(
        &self,
        h: HandleId,
        timeout_ms: Option<f64>,
        by: Option<HandleId>,
    ) -> impl Future<Output = TaskResult> + Send + 'static {
        let inner = self.inner.clone();
        let (tx, rx) = oneshot::channel();
        let early = {
            let mut t = inner.tree();
            match t.get(h) {
                None => Some(TaskResult {
                    text: unknown(h),
                    is_error: true,
                    status: TaskStatus::Error,
                    pending: None,
                    turns: 0.0,
                    total_tokens: 0.0,
                    output: None,
                }),
                Some(n) if by.is_some_and(|b| n.parent != Some(b)) => {
                    Some(t.result(h, format!("wait refused: only the spawner may wait on {}", n.id), TaskStatus::Error))
                }
                Some(n) if n.state == HandleState::Closed => {
                    Some(n.last_result.clone().unwrap_or_else(|| t.result(h, "closed".into(), TaskStatus::Closed)))
                }
                Some(n) if n.state == HandleState::Suspended => Some(t.pending_result(h)),
                Some(n) if n.state == HandleState::Idle && n.last_result.is_some() && !t.is_queued(h) => {
                    n.last_result.clone()
                }
                Some(_) => {
                    t.next_waiter += 1;
                    let key = t.next_waiter;
                    t.nodes[h].waiters.push((key, tx));
                    if let Some(ms) = timeout_ms.filter(|ms| *ms > 0.0) {
                        let weak = Arc::downgrade(&inner);
                        let cancel = inner.clock.set_timeout(
                            ms,
                            Box::new(move || {
                                let Some(inner) = weak.upgrade() else { return };
                                let mut t = inner.tree();
                                let Some(pos) = t.nodes[h].waiters.iter().position(|w| w.0 == key) else { return };
                                let (_, w) = t.nodes[h].waiters.remove(pos);
                                let state = t.nodes[h].state.as_str();
                                let r = t.result(
                                    h,
                                    format!("wait timeout after {}ms (child still {state})", js_num(ms)),
                                    TaskStatus::Timeout,
                                );
                                let _ = w.send(r);
                            }),
                        );
                        return WaitFuture { early: None, rx: Some(rx), cancel: Some(cancel) }.boxed();
                    }
                    None
                }
            }
        };
        WaitFuture { early, rx: Some(rx), cancel: None }.boxed()
    }

    /// Abort the in-flight turn (→ idle, drained items restored); on a suspended handle,
    /// cancel its pending request (→ idle). Never a kill.
    pub fn interrupt(&self, h: HandleId) {
        let inner = &self.inner;
        let mut t = inner.tree();
        let Some(n) = t.nodes.get_mut(h) else { return };
        match n.state {
            HandleState::Suspended => {
                let kind = n
                    .pending_request
                    .as_ref()
                    .and_then(|r| r.get("kind"))
                    .and_then(Value::as_str)
                    .unwrap_or("undefined")
                    .to_string();
                n.pending_request = None;
                n.checkpoint = None;
                n.state = HandleState::Idle;
                let line = format!("{}: suspended\u{2192}idle (interrupt cancelled pending \"{kind}\")", n.id);
                drop(t);
                inner.t(line);
            }
            HandleState::Running => {
                if let Some(a) = &n.abort {
                    a.abort(Some("interrupted".into()));
                }
            }
            _ => {}
        }
    }

    /// Graceful, leaf-first close: children first, a running turn bounded by `shutdownMs`
    /// (then aborted), `onClose`, waiters told, the final state kept. A second close of the
    /// same handle waits for the first instead of running it again.
    pub fn close(&self, h: HandleId, force: bool, reason: Option<String>) -> futures::future::BoxFuture<'static, ()> {
        let rt = self.clone();
        async move {
            let inner = rt.inner.clone();
            let (children, wait_first) = {
                let mut t = inner.tree();
                let Some(n) = t.nodes.get_mut(h) else { return };
                if n.state == HandleState::Closed {
                    return;
                }
                if n.closing {
                    let (tx, rx) = oneshot::channel();
                    n.close_waiters.push(tx);
                    (Vec::new(), Some(rx))
                } else {
                    // Closing: queued children's wakes are dropped, never started.
                    n.closing = true;
                    n.wake_queue.clear();
                    (n.children.clone(), None)
                }
            };
            if let Some(rx) = wait_first {
                let _ = rx.await;
                return;
            }
            for c in children {
                rt.close(c, force, reason.clone()).await;
            }
            let running = {
                let mut t = inner.tree();
                t.unqueue(h);
                t.nodes[h].state == HandleState::Running
            };
            if running {
                let settled = rt.wait(h, None, None);
                if force {
                    inner.abort_turn(h, "closed");
                } else {
                    let bounded = rt.wait(h, Some(inner.shutdown_ms), None).await;
                    if bounded.status == TaskStatus::Timeout && inner.tree().nodes[h].state == HandleState::Running {
                        inner.abort_turn(h, "closed");
                    }
                }
                settled.await;
            }
            let (on_close, id) = {
                let mut t = inner.tree();
                let n = &mut t.nodes[h];
                if n.state == HandleState::Suspended {
                    n.pending_request = None;
                    n.checkpoint = None;
                }
                (n.def.on_close.clone(), n.id.clone())
            };
            let reason = reason.unwrap_or_else(|| if force { "interrupted" } else { "closed" }.to_string());
            if let Some(cb) = on_close {
                let arg = obj([("handle", h.into()), ("id", id.clone().into()), ("reason", reason.clone().into())]);
                if let Err(e) = cb.call(arg).await {
                    inner.t(format!("{id}: onClose error: {e}"));
                }
            }
            let line = {
                let mut t = inner.tree();
                let prev = t.nodes[h].state;
                t.nodes[h].state = HandleState::Closed;
                let fin = t.result(h, "closed".into(), TaskStatus::Closed);
                t.notify(h, &fin);
                for w in t.nodes[h].close_waiters.drain(..) {
                    let _ = w.send(());
                }
                format!("{id}: {}\u{2192}closed ({reason})", prev.as_str())
            };
            inner.t(line);
        }
        .boxed()
    }

    /// Every handle under `h` in tree order (`h` itself excluded when it is the root).
    pub fn list(&self, h: HandleId) -> Vec<HandleView> {
        let t = self.inner.tree();
        let mut out = Vec::new();
        let mut stack = vec![h];
        while let Some(x) = stack.pop() {
            let Some(n) = t.get(x) else { continue };
            if x != ROOT {
                out.push(t.view(x));
            }
            stack.extend(n.children.iter().rev());
        }
        out
    }

    pub fn inspect(&self, h: HandleId) -> Option<Inspection> {
        let t = self.inner.tree();
        let n = t.get(h)?;
        Some(Inspection {
            view: t.view(h),
            turns: n.turns_total,
            pool_tokens: n.pool_tokens,
            pending: n.pending_request.clone(),
        })
    }

    /// Route `answer` to the suspended handle parked on the Request whose id it echoes (the
    /// deepest such: an ancestor parked on its child's Request shares its id), or, for an
    /// Answer without an id, to the deepest suspended handle; take its parked turn up again
    /// with it, then each suspended ancestor (its `task` reattaches to the finished child).
    /// Refused, with nothing changed: an answer that is not an object with a boolean `ok` (a
    /// `TypeError`), an id no handle is parked on (or one already answered),
    /// a Request past its `expiresAt`, a parked call whose tool is gone, a claim that could
    /// not be saved.
    pub async fn resume(&self, answer: Value) -> Result<()> {
        // An answer nobody gave (a string, a number, null, an `ok` that is not a boolean) is
        // refused before it can reach, or use up, any Request.
        crate::suspension::answer_shape("resume", &answer)?;
        let inner = &self.inner;
        // On a durable store, what other runtimes wrote first (merged into the table here).
        inner.flushed().await;
        let none = || Error::Invalid("no suspended handle to resume".into());
        let leaf = match crate::suspension::id_of(&answer) {
            None => inner.deepest_suspended(ROOT).ok_or_else(none)?,
            Some(id) => match inner.suspended_on(ROOT, &id) {
                // Parked on a Request a handle below it already took up (here or in another
                // runtime): answered already.
                Some(h) if inner.taken_up_below(h, &id).is_some() => {
                    let request = serde_json::Map::from_iter([("id".to_string(), Value::String(id))]);
                    return Err(crate::suspension::taken("resume", &request));
                }
                Some(h) => h,
                None => return Err(inner.not_parked(&id).unwrap_or_else(none)),
            },
        };
        let (id, turns, request, halt) = {
            let t = inner.tree();
            let n = &t.nodes[leaf];
            (n.id.clone(), n.turns_total, n.pending_request.clone(), n.halt)
        };
        if let Some(request) = request.as_ref().and_then(Value::as_object) {
            if let Some(at) = crate::suspension::expires_at_ms(request) {
                if crate::suspension::now_ms() > at {
                    let when = request.get("expiresAt").map(crate::json::js_string).unwrap_or_default();
                    return Err(crate::suspension::refused(
                        crate::suspension::EXPIRED,
                        format!(
                            "resume: request {} expired at {when}; {id} stays suspended",
                            crate::suspension::request_label(request)
                        ),
                    ));
                }
            }
        }
        if let (Some(site), Some(request)) = (halt, request.as_ref()) {
            inner.check_parked(leaf, request, site).await?;
        }
        let on = request.as_ref().and_then(crate::suspension::id_of);
        let ok = crate::json::field(&answer, "ok").is_some_and(crate::json::truthy);
        inner.t(format!("{id}: resume with Answer(ok={ok}) at checkpoint (turns so far: {})", js_num(turns)));
        inner.clone().resume_suspended(leaf, Some(answer), false, on.as_deref()).await?;
        inner.cascade_from(leaf).await
    }
}

impl Inner {
    /// Take each suspended ancestor of `from` up again, nearest first (its `task` reattaches to
    /// the finished child). An ancestor another runtime has taken up (or is running) is theirs
    /// to finish; one that parked again on a Request whose handle below has since finished
    /// (taken up and run in another runtime while it ran here) is taken up again.
    pub(super) async fn cascade_from(self: &Arc<Self>, from: HandleId) -> Result<()> {
        let mut p = self.tree().nodes[from].parent;
        // The Request a handle was last taken up again for, its parking being stale: taken up
        // once more for the same one, and parked on it again, it is left (nothing new to see).
        let mut stale_once: Option<(HandleId, String)> = None;
        while let Some(x) = p.filter(|x| *x != ROOT) {
            // On a durable store, the table as other runtimes left it.
            self.flushed().await;
            let (state, id, parent, on) = {
                let t = self.tree();
                let n = &t.nodes[x];
                (n.state, n.id.clone(), n.parent, n.pending_request.as_ref().and_then(crate::suspension::id_of))
            };
            if state != HandleState::Suspended {
                break;
            }
            self.t(format!("{id}: cascade resume (reattaching delegated work)"));
            match self.clone().resume_suspended(x, None, false, on.as_deref()).await {
                Ok(_) => {}
                Err(Error::Refused { code: crate::suspension::TAKEN, .. }) => break,
                Err(e) => return Err(e),
            }
            self.flushed().await;
            let again = self.tree().nodes[x].pending_request.as_ref().and_then(crate::suspension::id_of);
            p = match again {
                Some(r) if self.parked_stale(x) && stale_once.as_ref() != Some(&(x, r.clone())) => {
                    stale_once = Some((x, r));
                    Some(x)
                }
                _ => parent,
            };
        }
        Ok(())
    }

    /// Whether `h` is parked on a Request that a handle below it took up and has finished: its
    /// parking waits for nothing any more.
    fn parked_stale(&self, h: HandleId) -> bool {
        let on = {
            let t = self.tree();
            let n = &t.nodes[h];
            if n.state != HandleState::Suspended {
                return false;
            }
            n.pending_request.as_ref().and_then(crate::suspension::id_of)
        };
        let Some(on) = on else { return false };
        match self.taken_up_below(h, &on) {
            Some(d) => !matches!(self.tree().nodes[d].state, HandleState::Running | HandleState::Suspended),
            None => false,
        }
    }

    /// A handle below `h` (not `h`) that took the Request `id` up, if any.
    fn taken_up_below(&self, h: HandleId, id: &str) -> Option<HandleId> {
        let t = self.tree();
        let mut stack: Vec<HandleId> = t.nodes[h].children.clone();
        while let Some(x) = stack.pop() {
            let n = &t.nodes[x];
            let took = n.took_up.as_ref().and_then(crate::suspension::id_of);
            let parked_again = n.state == HandleState::Suspended
                && n.pending_request.as_ref().and_then(crate::suspension::id_of).as_deref() == Some(id);
            if took.as_deref() == Some(id) && !parked_again {
                return Some(x);
            }
            stack.extend(n.children.iter().copied());
        }
        None
    }
}

impl AgentRuntime {
    /// One-shot: spawn `name` under the root, wake it with `prompt`, wait, and close the
    /// tree unless the run suspended (then it stays parked for `resume`).
    pub async fn run_agent(&self, name: &str, prompt: &str) -> TaskResult {
        let h = match self.spawn(ROOT, name, None) {
            Ok(h) => h,
            Err(e) => {
                return TaskResult {
                    text: e,
                    is_error: true,
                    status: TaskStatus::Error,
                    pending: None,
                    turns: 0.0,
                    total_tokens: 0.0,
                    output: None,
                }
            }
        };
        if self.wake(h, Some(prompt.to_string())).is_err() {
            return self.wait(h, None, None).await;
        }
        let r = self.wait(h, None, None).await;
        if r.status != TaskStatus::Pending {
            self.close(ROOT, false, None).await;
        }
        r
    }
}

impl Inner {
    /// A refused wake is loud: an `incomplete` result, waiters told, never a throw.
    pub(super) fn settle_refused(t: &mut Tree, h: HandleId, limit: &str) -> String {
        let text = format!("budget exhausted ({limit}); partial work preserved");
        let r = t.result(h, text.clone(), TaskStatus::Incomplete);
        t.nodes[h].last_result = Some(r.clone());
        t.notify(h, &r);
        text
    }

    /// Atomic admission: slot, state, abort, trace line.
    pub(super) fn admit(&self, t: &mut Tree, h: HandleId, trace: bool) {
        if let Some(p) = t.nodes[h].parent {
            t.nodes[p].running_children += 1.0;
        }
        let n = &mut t.nodes[h];
        n.state = HandleState::Running;
        n.arm();
        if trace {
            self.t(format!("{}: idle\u{2192}running (wake)", n.id));
        }
    }

    pub(super) fn abort_turn(&self, h: HandleId, reason: &str) {
        if let Some(a) = &self.tree().nodes[h].abort {
            a.abort(Some(reason.into()));
        }
    }

    /// The deepest suspended handle under `h` parked on the Request `id`.
    fn suspended_on(&self, h: HandleId, id: &str) -> Option<HandleId> {
        let children = self.tree().nodes[h].children.clone();
        for c in children {
            if let Some(found) = self.suspended_on(c, id) {
                return Some(found);
            }
        }
        let t = self.tree();
        let n = &t.nodes[h];
        let on = n.pending_request.as_ref().and_then(crate::suspension::id_of);
        (n.state == HandleState::Suspended && on.as_deref() == Some(id)).then_some(h)
    }

    /// The refusal of an Answer whose id no handle is parked on: already answered, or parked
    /// nowhere (`None` when no handle is suspended at all).
    fn not_parked(&self, id: &str) -> Option<Error> {
        let request = serde_json::Map::from_iter([("id".to_string(), Value::String(id.to_string()))]);
        if self.answered.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().any(|a| a == id) {
            return Some(crate::suspension::taken("resume", &request));
        }
        let t = self.tree();
        let parked: Vec<String> = t
            .nodes
            .iter()
            .filter(|n| n.state == HandleState::Suspended)
            .filter_map(|n| n.pending_request.as_ref().and_then(crate::suspension::id_of))
            .map(|r| format!("{r:?}"))
            .collect();
        if parked.is_empty() {
            return None;
        }
        Some(crate::suspension::refused(
            crate::suspension::UNKNOWN,
            format!(
                "resume: no handle is suspended on request {id:?} (parked: {}); nothing was resumed",
                parked.join(", ")
            ),
        ))
    }

    fn deepest_suspended(&self, h: HandleId) -> Option<HandleId> {
        let children = self.tree().nodes[h].children.clone();
        for c in children {
            if let Some(found) = self.deepest_suspended(c) {
                return Some(found);
            }
        }
        (self.tree().nodes[h].state == HandleState::Suspended).then_some(h)
    }
}

/// `wait`'s future: an answer known at once, or the waiter's channel (a dropped channel
/// means the runtime went away: the wait then never settles, as the reference's).
struct WaitFuture {
    early: Option<TaskResult>,
    rx: Option<oneshot::Receiver<TaskResult>>,
    cancel: Option<super::clock::TimerCancel>,
}

impl Future for WaitFuture {
    type Output = TaskResult;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<TaskResult> {
        if let Some(r) = self.early.take() {
            return std::task::Poll::Ready(r);
        }
        let Some(rx) = self.rx.as_mut() else { return std::task::Poll::Pending };
        match rx.poll_unpin(cx) {
            std::task::Poll::Ready(Ok(r)) => {
                if let Some(c) = self.cancel.take() {
                    c();
                }
                std::task::Poll::Ready(r)
            }
            std::task::Poll::Ready(Err(_)) => {
                self.rx = None;
                std::task::Poll::Pending
            }
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}
