//! A runtime whose store is durable (a store URL) keeps its whole state there: every handle
//! (its state, inbox, pools, limits, checkpoint, pending Request, last result, task key, wake
//! queue) and the trace, as one record written after every transition. A runtime opened on
//! the same store later (another process, after a crash or a deploy) starts from that record.
//!
//! Writing: a transition only marks the state as changed; one writer task at a time takes a
//! fresh snapshot and writes it, so a burst of transitions costs one write of the latest
//! state. The verbs that settle (`wait`, `close`, `resume`) settle only once the state they
//! saw is written. A write that fails (the engine is down) is warned about once per outage and
//! retried at the next transition: the run goes on in memory meanwhile. A write that finds the
//! record changed by another runtime means that runtime took the store over: this one warns
//! and stops writing (the newest opener owns the state).
//!
//! Opening: what was `running` when its process ended becomes `idle` with an `interrupted`
//! result, the inbox items its turn had taken put back in front, and a trace line saying so;
//! a wake still queued behind `maxConcurrent` ends the same way. Suspended handles come back
//! suspended, ready for `resume(answer)`. Closed branches under the root are left behind.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::{Map, Value};
use tokio::sync::watch;

use super::core::{AgentRuntime, Inner, Keeper};
use super::tree::{Node, Tree};
use super::types::{num, AgentDef, HandleId, HandleState, InboxItem, TaskResult, TaskStatus, ROOT};
use crate::error::{Error, Result};
use crate::store::{Kind, Records};

/// How long a synchronous open waits for the engine.
const OPEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);
/// The record's own layout version. 2: a suspended handle's conversation ends with its
/// parked turn and `halt` says where it parked (taken up there on resume); 1 (read, never
/// written): the conversation was rewound to before the turn, replayed from `checkpoint`.
const LAYOUT: i64 = 2;

/// The link from a runtime to its record.
pub(super) struct Durable {
    records: Records,
    /// This tree's name, new with every tree: a handle's conversation is kept under it, so a
    /// later tree (or another runtime) reusing a handle id never finds an old transcript.
    tree: String,
    /// The record's id: the runtime's `runtimeId`.
    id: String,
    inner: Weak<Inner>,
    rt: tokio::runtime::Handle,
    /// Transitions marked so far.
    marked: AtomicU64,
    /// The last mark whose state is written (or given up on): what barriers wait for.
    settled: watch::Sender<u64>,
    writer: Mutex<Writer>,
}

#[derive(Default)]
struct Writer {
    running: bool,
    /// Another runtime took the store over: nothing more is written.
    fenced: bool,
    /// A failure was warned about and no write has succeeded since.
    failing: bool,
    /// Why the last write failed (`None` when it succeeded): its code and message.
    last_failure: Option<(&'static str, String)>,
    /// The last mark a successful write covered.
    ok_through: u64,
}

impl Durable {
    /// A transition happened: the state is written soon.
    pub(super) fn mark(self: &Arc<Self>) {
        self.marked.fetch_add(1, Ordering::SeqCst);
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if w.running || w.fenced {
            if w.fenced {
                self.settled.send_replace(self.marked.load(Ordering::SeqCst));
            }
            return;
        }
        w.running = true;
        drop(w);
        let me = self.clone();
        let logger = self.inner.upgrade().and_then(|i| i.logger.clone());
        self.rt.spawn(crate::warn::scope_with(logger.as_ref(), async move { me.write_loop().await }));
    }

    async fn write_loop(self: Arc<Self>) {
        loop {
            let target = self.marked.load(Ordering::SeqCst);
            let Some(inner) = self.inner.upgrade() else {
                self.stop(u64::MAX);
                return;
            };
            let doc = document(&inner);
            drop(inner);
            match self.records.save(&self.id, &doc).await {
                Ok(()) => {
                    let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
                    w.last_failure = None;
                    w.ok_through = w.ok_through.max(target);
                    if w.failing {
                        w.failing = false;
                        drop(w);
                        crate::warn::warn(&format!(
                            "[toolnexus] agent runtime: its state is saved to {} again",
                            self.records.label()
                        ));
                    }
                }
                Err(Error::Store { code: "ESTORECONFLICT", .. }) => {
                    self.writer.lock().unwrap_or_else(PoisonError::into_inner).fenced = true;
                    crate::warn::warn(&format!(
                        "[toolnexus] agent runtime: another runtime opened {} and now keeps its state there; this one no longer saves to it",
                        self.records.label()
                    ));
                    self.stop(u64::MAX);
                    return;
                }
                Err(e) => {
                    let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
                    let code = match &e {
                        Error::Store { code, .. } => code,
                        _ => "ESTOREUNAVAILABLE",
                    };
                    w.last_failure = Some((code, e.to_string()));
                    if !w.failing {
                        w.failing = true;
                        drop(w);
                        crate::warn::warn(&format!(
                            "[toolnexus] agent runtime: could not save its state ({e}); it goes on in memory and saves again at its next transition"
                        ));
                    }
                }
            }
            self.settled.send_replace(target);
            let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            if self.marked.load(Ordering::SeqCst) == target {
                w.running = false;
                return;
            }
        }
    }

    fn stop(&self, through: u64) {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner).running = false;
        self.settled.send_replace(through);
    }

    /// Settles once the state as it is now is written (or given up on).
    pub(super) fn flushed(self: &Arc<Self>) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.mark();
        let target = self.marked.load(Ordering::SeqCst);
        let mut rx = self.settled.subscribe();
        async move {
            // The host's process stays up until the state is written.
            let _hold = crate::host::hold();
            let _ = rx.wait_for(|s| *s >= target).await;
        }
    }
}

impl Durable {
    /// Settles once the state as it is now is written, or with why it could not be.
    fn written(self: &Arc<Self>) -> impl std::future::Future<Output = Result<()>> + Send + 'static {
        self.mark();
        let target = self.marked.load(Ordering::SeqCst);
        let mut rx = self.settled.subscribe();
        let me = self.clone();
        async move {
            {
                // The host's process stays up until the state is written.
                let _hold = crate::host::hold();
                let _ = rx.wait_for(|s| *s >= target).await;
            }
            let w = me.writer.lock().unwrap_or_else(PoisonError::into_inner);
            // A write that covered this state landed: what happened to later ones is theirs.
            if w.ok_through >= target {
                return Ok(());
            }
            if w.fenced {
                return Err(Error::Store {
                    code: "ESTORECONFLICT",
                    message: format!(
                        "store {}: another agent runtime opened it and keeps its state there now; this runtime's change was not saved",
                        me.records.label()
                    ),
                });
            }
            match &w.last_failure {
                Some((code, message)) => Err(Error::Store { code, message: message.clone() }),
                None => Ok(()),
            }
        }
    }
}

impl Keeper for Durable {
    fn mark(self: Arc<Self>) {
        Durable::mark(&self)
    }

    fn flushed(self: Arc<Self>) -> futures::future::BoxFuture<'static, ()> {
        use futures::FutureExt;
        Durable::flushed(&self).boxed()
    }

    fn written(self: Arc<Self>) -> futures::future::BoxFuture<'static, Result<()>> {
        use futures::FutureExt;
        Durable::written(&self).boxed()
    }

    fn tree(&self) -> &str {
        &self.tree
    }
}

impl Inner {
    /// The id a handle's conversation is kept under: the handle id (the reference's rule),
    /// qualified by runtime and tree on a durable store, which outlives both.
    pub(super) fn conversation_id(&self, handle: &str) -> String {
        match self.durable.get() {
            Some(d) => format!("{}/{}/{handle}", self.runtime_id, d.tree()),
            None => handle.to_string(),
        }
    }

    /// Mark a transition (no-op on a runtime kept in memory).
    pub(super) fn changed(&self) {
        if let Some(d) = self.durable.get() {
            d.clone().mark();
        }
    }

    /// Settles when the state as it is now is written (at once on a runtime kept in memory).
    pub(super) fn flushed(&self) -> futures::future::BoxFuture<'static, ()> {
        use futures::FutureExt;
        match self.durable.get() {
            Some(d) => d.clone().flushed(),
            None => futures::future::ready(()).boxed(),
        }
    }

    /// Settles when the state as it is now is written, or with why it could not be (at once,
    /// `Ok`, on a runtime kept in memory).
    pub(super) fn written(&self) -> futures::future::BoxFuture<'static, Result<()>> {
        use futures::FutureExt;
        match self.durable.get() {
            Some(d) => d.clone().written(),
            None => futures::future::ready(Ok(())).boxed(),
        }
    }
}

impl AgentRuntime {
    /// Settles once the runtime's state as it is now is written to its durable store (at
    /// once when it has none): what a host awaits before it settles a verb's promise.
    pub fn saved(&self) -> futures::future::BoxFuture<'static, ()> {
        self.inner.flushed()
    }

    /// The store URL this runtime keeps its state on, when its store is durable.
    pub fn durable_url(&self) -> Option<String> {
        self.inner.store.durable_url().map(str::to_string)
    }

    /// `open_durable`, run on `rt` and waited for here (a host whose runtime constructor is
    /// synchronous). Bounded: an engine that neither answers nor fails is given up on.
    pub fn open_durable_on(&self, rt: &tokio::runtime::Handle) -> Result<()> {
        if self.durable_url().is_none() {
            return Ok(());
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let me = self.clone();
        rt.spawn(crate::warn::scope_with(self.inner.logger.as_ref(), async move {
            let _ = tx.send(me.open_durable().await);
        }));
        match rx.recv_timeout(OPEN_WITHIN) {
            Ok(r) => r,
            Err(_) => Err(crate::store::engine::unavailable(
                &crate::store::redacted(&self.durable_url().unwrap_or_default()),
                format!("no answer within {} s while opening the agent runtime's state", OPEN_WITHIN.as_secs()),
            )),
        }
    }

    /// On a durable store: read the state a previous runtime left there (if any), take the
    /// store over, and write from now on. Must run on a tokio runtime; on a store kept in
    /// memory it does nothing.
    pub async fn open_durable(&self) -> Result<()> {
        let Some(url) = self.durable_url() else { return Ok(()) };
        if self.inner.durable.get().is_some() {
            return Ok(());
        }
        let records = crate::store::records(&url, Kind::Runtime);
        let id = self.inner.runtime_id.clone();
        // Lines traced before the store was opened come after what the store holds.
        let before = std::mem::take(&mut *self.inner.trace.lock().unwrap_or_else(PoisonError::into_inner));
        let mut attempts = 0;
        // Take the store over: a runtime still writing there from before stops. Another runtime
        // opening at the same moment may write between the read and the write: read again and
        // take over from what it wrote (the newest opener owns the store).
        let tree = loop {
            let mut tree_name = None;
            if let Some(doc) = records.get(&id).await? {
                let (tree, trace) = restore(&self.inner, &doc).map_err(|why| Error::Store {
                    code: "ESTORECORRUPT",
                    message: format!("store {}: the agent runtime's state cannot be read: {why}", records.label()),
                })?;
                // An open tree goes on under its name; a finished one is replaced by a new tree.
                if !trace.is_empty() || tree.nodes.len() > 1 {
                    tree_name = doc.get("tree").and_then(Value::as_str).map(str::to_string);
                }
                *self.inner.tree() = tree;
                let mut lines = self.inner.trace.lock().unwrap_or_else(PoisonError::into_inner);
                *lines = trace;
                lines.extend(before.iter().cloned());
            } else {
                self.inner.trace.lock().unwrap_or_else(PoisonError::into_inner).clone_from(&before);
            }
            let tree = tree_name.unwrap_or_else(new_tree_name);
            let mut doc = document(&self.inner);
            if let Value::Object(m) = &mut doc {
                m.insert("tree".into(), Value::String(tree.clone()));
            }
            match records.save(&id, &doc).await {
                Ok(()) => break tree,
                Err(Error::Store { code: "ESTORECONFLICT", .. }) if attempts < OPEN_ATTEMPTS => attempts += 1,
                Err(e) => return Err(e),
            }
        };
        let durable = Arc::new(Durable {
            records,
            tree,
            id,
            inner: Arc::downgrade(&self.inner),
            rt: tokio::runtime::Handle::current(),
            marked: AtomicU64::new(0),
            settled: watch::channel(0).0,
            writer: Mutex::new(Writer::default()),
        });
        let _ = self.inner.durable.set(durable as Arc<dyn Keeper>);
        Ok(())
    }
}

/// How many times an open reads the store again when another runtime wrote it meanwhile.
const OPEN_ATTEMPTS: u32 = 8;

/// A name no other tree has: the time and a random part.
fn new_tree_name() -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("t{ms:x}{:08x}", rand::random::<u32>())
}

/// A number, infinite ones included (JSON has none: they are written as text).
fn f(n: f64) -> Value {
    if n.is_finite() {
        num(n)
    } else {
        Value::String(crate::agents::runtime::types::js_num(n))
    }
}

fn read_f(v: Option<&Value>) -> std::result::Result<f64, String> {
    match v {
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| "a number is out of range".to_string()),
        Some(Value::String(s)) => match s.as_str() {
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            "NaN" => Ok(f64::NAN),
            other => Err(format!("{other:?} is not a number")),
        },
        _ => Err("a number is missing".into()),
    }
}

fn item(i: &InboxItem) -> Value {
    i.to_value()
}

fn read_item(v: &Value) -> std::result::Result<InboxItem, String> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string).ok_or(format!("an inbox item has no {k}"));
    Ok(InboxItem { from: s("from")?, channel: s("channel")?, text: s("text")? })
}

fn read_items(v: Option<&Value>) -> std::result::Result<Vec<InboxItem>, String> {
    v.and_then(Value::as_array).map(|a| a.iter().map(read_item).collect()).unwrap_or(Ok(Vec::new()))
}

fn state_of(s: &str) -> Option<HandleState> {
    [HandleState::Idle, HandleState::Running, HandleState::Suspended, HandleState::Closed]
        .into_iter()
        .find(|x| x.as_str() == s)
}

fn status_of(s: &str) -> Option<TaskStatus> {
    [
        TaskStatus::Done,
        TaskStatus::Pending,
        TaskStatus::Incomplete,
        TaskStatus::Interrupted,
        TaskStatus::Closed,
        TaskStatus::Timeout,
        TaskStatus::Error,
    ]
    .into_iter()
    .find(|x| x.as_str() == s)
}

fn read_result(v: &Value) -> std::result::Result<TaskResult, String> {
    Ok(TaskResult {
        text: v.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
        is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
        status: v.get("status").and_then(Value::as_str).and_then(status_of).ok_or("a result has no status")?,
        pending: v.get("pending").cloned(),
        turns: read_f(v.get("turns"))?,
        total_tokens: read_f(v.get("totalTokens"))?,
        output: v.get("output").filter(|o| !o.is_null()).cloned(),
    })
}

fn opt_str(s: &Option<String>) -> Value {
    s.clone().map(Value::String).unwrap_or(Value::Null)
}

/// The runtime's whole state as one JSON document.
fn document(inner: &Inner) -> Value {
    let nodes: Vec<Value> = {
        let t = inner.tree();
        t.nodes.iter().map(node_doc).collect()
    };
    let trace = inner.trace.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let mut m = Map::new();
    m.insert("layout".into(), LAYOUT.into());
    if let Some(d) = inner.durable.get() {
        m.insert("tree".into(), d.tree().into());
    }
    m.insert("handles".into(), Value::Array(nodes));
    m.insert("trace".into(), trace.into());
    let answered: Vec<Value> =
        inner.answered.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().map(Value::String).collect();
    m.insert("answered".into(), Value::Array(answered));
    Value::Object(m)
}

fn node_doc(n: &Node) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), n.id.clone().into());
    m.insert("def".into(), n.def.name.clone().into());
    m.insert("parent".into(), n.parent.map(Value::from).unwrap_or(Value::Null));
    m.insert("depth".into(), n.depth.into());
    m.insert("children".into(), n.children.clone().into());
    m.insert("inbox".into(), Value::Array(n.inbox.iter().map(item).collect()));
    m.insert("ticks".into(), n.ticks.into());
    m.insert("state".into(), n.state.as_str().into());
    m.insert("poolTokens".into(), f(n.pool_tokens));
    m.insert("poolToolCalls".into(), f(n.pool_tool_calls));
    m.insert("poolChildren".into(), f(n.pool_children));
    m.insert("maxTurns".into(), f(n.max_turns));
    m.insert("maxConcurrent".into(), f(n.max_concurrent));
    m.insert("maxDepth".into(), f(n.max_depth));
    m.insert("deadline".into(), n.deadline.map(f).unwrap_or(Value::Null));
    m.insert("usageTotal".into(), f(n.usage_total));
    m.insert("toolCallsTotal".into(), f(n.tool_calls_total));
    m.insert("turnsTotal".into(), f(n.turns_total));
    m.insert("pending".into(), n.pending_request.clone().unwrap_or(Value::Null));
    m.insert("lastResult".into(), n.last_result.as_ref().map(TaskResult::to_value).unwrap_or(Value::Null));
    m.insert("aborts".into(), n.aborts.into());
    m.insert("checkpoint".into(), opt_str(&n.checkpoint));
    m.insert("halt".into(), n.halt.map(|h| Value::String(h.as_str().into())).unwrap_or(Value::Null));
    m.insert("drained".into(), Value::Array(n.drained.iter().map(item).collect()));
    let queue: Vec<Value> = n.wake_queue.iter().map(|(h, p)| Value::Array(vec![(*h).into(), opt_str(p)])).collect();
    m.insert("wakeQueue".into(), Value::Array(queue));
    m.insert("taskKey".into(), opt_str(&n.task_key));
    m.insert("runningChildren".into(), f(n.running_children));
    m.insert("seq".into(), n.seq.into());
    Value::Object(m)
}

/// A node as written, its definition found in `registry`; `None` when the definition is gone.
fn read_node(
    v: &Value,
    inner: &Inner,
    root: &Arc<AgentDef>,
    layout: i64,
) -> std::result::Result<(Node, Option<String>), String> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let id = s("id").ok_or("a handle has no id")?;
    let def_name = s("def").ok_or_else(|| format!("{id} has no definition"))?;
    let parent = v.get("parent").and_then(Value::as_u64).map(|p| p as HandleId);
    let (def, missing) = if parent.is_none() {
        (root.clone(), None)
    } else {
        match inner.registry.get(&def_name) {
            Some(d) => (d.clone(), None),
            None => (Arc::new(AgentDef { name: def_name.clone(), ..Default::default() }), Some(def_name)),
        }
    };
    let mut n = Node::restored(id.clone(), def, parent);
    n.depth = v.get("depth").and_then(Value::as_u64).unwrap_or(0) as u32;
    n.children = v
        .get("children")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).map(|c| c as HandleId).collect())
        .unwrap_or_default();
    n.inbox = read_items(v.get("inbox"))?;
    n.ticks = v.get("ticks").and_then(Value::as_u64).unwrap_or(0) as u32;
    n.state = s("state").as_deref().and_then(state_of).ok_or_else(|| format!("{id} has no state"))?;
    n.pool_tokens = read_f(v.get("poolTokens"))?;
    n.pool_tool_calls = read_f(v.get("poolToolCalls"))?;
    n.pool_children = read_f(v.get("poolChildren"))?;
    n.max_turns = read_f(v.get("maxTurns"))?;
    n.max_concurrent = read_f(v.get("maxConcurrent"))?;
    n.max_depth = read_f(v.get("maxDepth"))?;
    n.deadline = match v.get("deadline") {
        None | Some(Value::Null) => None,
        d => Some(read_f(d)?),
    };
    n.usage_total = read_f(v.get("usageTotal"))?;
    n.tool_calls_total = read_f(v.get("toolCallsTotal"))?;
    n.turns_total = read_f(v.get("turnsTotal"))?;
    n.pending_request = v.get("pending").filter(|p| !p.is_null()).cloned();
    n.last_result = match v.get("lastResult") {
        None | Some(Value::Null) => None,
        Some(r) => Some(read_result(r)?),
    };
    n.aborts = v.get("aborts").and_then(Value::as_u64).unwrap_or(0);
    n.checkpoint = s("checkpoint");
    n.halt = match (layout, s("halt")) {
        // Layout 1 parked by rewinding the turn: it is replayed from its checkpoint.
        (1, _) | (_, None) => None,
        (_, Some(h)) => {
            Some(crate::client::HaltSite::parse(&h).ok_or_else(|| format!("{id} parked at {h:?}, unknown here"))?)
        }
    };
    if layout >= 2 && n.state == HandleState::Suspended && n.halt.is_none() {
        return Err(format!("{id} is suspended and does not say where it parked"));
    }
    n.drained = read_items(v.get("drained"))?;
    n.wake_queue = v
        .get("wakeQueue")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|e| {
                    let h = e.get(0).and_then(Value::as_u64)? as HandleId;
                    Some((h, e.get(1).and_then(Value::as_str).map(str::to_string)))
                })
                .collect::<VecDeque<_>>()
        })
        .unwrap_or_default();
    n.task_key = s("taskKey");
    n.running_children = read_f(v.get("runningChildren"))?;
    n.seq = v.get("seq").and_then(Value::as_u64).unwrap_or(0);
    Ok((n, missing))
}

/// The tree and trace a document describes, with the crash rules applied (see the module).
fn restore(inner: &Inner, doc: &Value) -> std::result::Result<(Tree, Vec<String>), String> {
    let layout = doc.get("layout").and_then(Value::as_i64).ok_or("it has no layout version")?;
    if layout > LAYOUT {
        return Err(format!("its layout is version {layout}, newer than this toolnexus reads ({LAYOUT})"));
    }
    let handles = doc.get("handles").and_then(Value::as_array).ok_or("it has no handles")?;
    let mut trace: Vec<String> = doc
        .get("trace")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|l| l.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let root = inner.tree().nodes[ROOT].def.clone();
    let mut read = Vec::with_capacity(handles.len());
    for h in handles {
        read.push(read_node(h, inner, &root, layout)?);
    }
    let answered: std::collections::VecDeque<String> = doc
        .get("answered")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    *inner.answered.lock().unwrap_or_else(PoisonError::into_inner) = answered;
    if read.first().is_none_or(|(n, _)| n.parent.is_some()) {
        return Err("its first handle is not the root".into());
    }
    let count = read.len();
    let valid = |h: HandleId| h < count;
    if read.iter().any(|(n, _)| n.parent.is_some_and(|p| !valid(p)) || n.children.iter().any(|c| !valid(*c))) {
        return Err("a handle names a handle that is not there".into());
    }
    // A finished tree (its root closed) is not resumed: the runtime starts a new one.
    if read[ROOT].0.state == HandleState::Closed {
        return Ok((Tree::new(root, inner.clock.now()), Vec::new()));
    }
    // Closed branches are left behind: a handle stays if it or a descendant is not closed.
    let mut keep = vec![false; count];
    keep[ROOT] = true;
    for i in 1..count {
        if read[i].0.state != HandleState::Closed {
            let mut a = Some(i);
            while let Some(x) = a.filter(|x| !keep[*x]) {
                keep[x] = true;
                a = read[x].0.parent;
            }
        }
    }
    let mut index: HashMap<HandleId, HandleId> = HashMap::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut missing: Vec<(HandleId, String)> = Vec::new();
    for (i, (node, gone)) in read.into_iter().enumerate() {
        if keep[i] {
            index.insert(i, nodes.len());
            if let Some(name) = gone {
                missing.push((nodes.len(), name));
            }
            nodes.push(node);
        }
    }
    for n in &mut nodes {
        n.parent = n.parent.and_then(|p| index.get(&p).copied());
        n.children = n.children.iter().filter_map(|c| index.get(c).copied()).collect();
        n.wake_queue = n.wake_queue.iter().filter_map(|(h, p)| Some((*index.get(h)?, p.clone()))).collect();
    }
    let mut tree = Tree { nodes, next_waiter: 0 };
    // What was running (or waiting to run) when its process ended is interrupted.
    let queued: Vec<HandleId> =
        tree.nodes.iter().flat_map(|n| n.wake_queue.iter().map(|(h, _)| *h)).collect::<Vec<_>>();
    for n in &mut tree.nodes {
        n.wake_queue.clear();
        n.running_children = 0.0;
    }
    for h in 0..tree.nodes.len() {
        let was_running = tree.nodes[h].state == HandleState::Running;
        if !was_running && !queued.contains(&h) {
            continue;
        }
        let n = &mut tree.nodes[h];
        n.state = HandleState::Idle;
        let mut back = std::mem::take(&mut n.drained);
        back.append(&mut n.inbox);
        n.inbox = back;
        let why = if was_running {
            "its turn was running when its process ended"
        } else {
            "its wake was queued when its process ended"
        };
        let r = tree.result(h, format!("interrupted: {why}"), TaskStatus::Interrupted);
        tree.nodes[h].last_result = Some(r);
        trace.push(format!(
            "{}: {}\u{2192}idle (interrupted: {why})",
            tree.nodes[h].id,
            if was_running { "running" } else { "idle" }
        ));
    }
    for (h, name) in missing {
        let n = &mut tree.nodes[h];
        if n.state != HandleState::Closed {
            n.state = HandleState::Closed;
            trace.push(format!("{}: closed (its definition \"{name}\" is not in this runtime's registry)", n.id));
        }
    }
    Ok((tree, trace))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infinite_numbers_survive_the_round_trip() {
        for n in [f64::INFINITY, f64::NEG_INFINITY, 3.0, 0.5] {
            assert_eq!(read_f(Some(&f(n))).ok(), Some(n));
        }
        assert!(read_f(Some(&f(f64::NAN))).is_ok_and(f64::is_nan));
        assert!(read_f(Some(&Value::String("lots".into()))).is_err());
    }
}
