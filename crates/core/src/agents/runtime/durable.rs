//! A runtime whose store is durable (a store URL) keeps its whole state there: every handle
//! (its state, inbox, pools, limits, checkpoint, pending Request, last result, task key, wake
//! queue) and the trace, as one record (`stored`) written after every transition. A runtime
//! opened on the same store (another process, after a crash or a deploy, or beside this one)
//! starts from that record.
//!
//! Writing: a transition only marks the state as changed; one writer task at a time takes a
//! fresh snapshot and writes it, so a burst of transitions costs one write of the latest
//! state. The verbs that settle (`wait`, `close`, `resume`) settle only once the state they
//! saw is written. A write names the version it replaces; when another process wrote the record
//! meanwhile, the two are merged per handle (`stored::merge`: each side's own handles, counters
//! added up, the first writer's field where both changed one) and the table here takes what the
//! other process changed. So any number of processes work on one runtime at once: a resume in
//! one never breaks a resume in another, and of two taking one parking up the first write wins
//! (its claim stands; the other's resume is refused as already answered). A write that fails
//! (the engine is down) is warned about once per outage and retried at the next transition: the
//! run goes on in memory meanwhile.
//!
//! A handle whose turn runs here is written with this process's lease on it, renewed a third
//! of the way through while the turn runs (30 s, `TOOLNEXUS_RUNTIME_LEASE_MS`). Opening: a
//! handle `running` under a live lease runs in another process and stays so; what was `running`
//! when its process ended (its lease run out, or its process gone from this machine) becomes
//! `idle` with an `interrupted` result, the inbox items its turn had taken put back in front,
//! and a trace line saying so; a wake still queued behind `maxConcurrent` ends the same way.
//! Suspended handles come back suspended, ready for `resume(answer)`. Closed branches under the
//! root are left behind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::Value;
use tokio::sync::watch;

use super::core::{AgentRuntime, Inner, Keeper};
use super::stored::{adopt, document, merge, restore, Holder, LAYOUT};
use super::types::HandleState;
use crate::error::{Error, Result};
use crate::store::{Expect, Kind, Records};

/// How long a synchronous open waits for the engine.
const OPEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);
/// How many times a write that lost a race is merged and tried again before the next mark.
const WRITE_ATTEMPTS: u32 = 32;

/// How long a running turn's lease lasts: `TOOLNEXUS_RUNTIME_LEASE_MS` when it is a whole
/// number ≥ 100, else 30 s.
pub(super) fn lease_ms() -> i64 {
    std::env::var("TOOLNEXUS_RUNTIME_LEASE_MS")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|ms| *ms >= 100)
        .unwrap_or(30_000)
}

fn now_ms() -> i64 {
    crate::suspension::now_ms()
}

/// This process's name in the leases it writes: where its process ids mean something, its
/// process id, and a random part for this runtime (`host:pid:nonce`).
fn holder_name() -> String {
    format!("{}:{}:{:016x}", host_name(), std::process::id(), rand::random::<u64>())
}

/// Where a process id names one process: the kernel's boot and the process-id namespace (Linux);
/// two processes that share it see each other's ids. Empty where that cannot be told (another
/// system, or /proc not mounted): then only a lease's time says whether it is live.
fn host_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok();
        let ns = std::fs::read_link("/proc/self/ns/pid").ok();
        match (boot, ns) {
            (Some(b), Some(n)) => {
                let ns: String = n.to_string_lossy().chars().filter(char::is_ascii_digit).collect();
                format!("{}-{ns}", b.trim())
            }
            _ => String::new(),
        }
    })
    .clone()
}

/// The runtimes of this process that hold leases now, by their lease name.
static HOLDERS: Mutex<Vec<(String, Weak<Durable>)>> = Mutex::new(Vec::new());

/// Whether a stored lease is held by a live runtime: not past its time, and, when it was written
/// where this process's ids mean the same (this kernel, this process-id namespace), held by a
/// process that is still running (and, when that is this process, by a runtime that is still
/// here).
fn lease_live(lease: &Value, now: i64) -> bool {
    let until = lease.get("until").and_then(Value::as_i64).unwrap_or(0);
    if until <= now {
        return false;
    }
    let by = lease.get("by").and_then(Value::as_str).unwrap_or_default();
    let mut parts = by.rsplitn(3, ':');
    let (Some(_nonce), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else { return true };
    if host.is_empty() || host != host_name() {
        return true;
    }
    let Ok(pid) = pid.parse::<u32>() else { return true };
    if pid == std::process::id() {
        let holders = HOLDERS.lock().unwrap_or_else(PoisonError::into_inner);
        return holders.iter().any(|(name, d)| name == by && d.strong_count() > 0);
    }
    process_alive(pid)
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return true };
    // SAFETY: kill with signal 0 sends nothing; it only asks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
}

/// The link from a runtime to its record.
pub(super) struct Durable {
    records: Records,
    /// This runtime's name in its leases (see `holder_name`).
    holder: String,
    /// The record as this runtime last read or wrote it, with its version: the base a merge
    /// with another writer's record starts from.
    base: Mutex<Option<(i64, Value)>>,
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
    /// The store holds a layout newer than this code writes: nothing more is written.
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
            let written = self.write_merging(&inner).await;
            drop(inner);
            match written {
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
                Err(Error::Store { code: "ESTORESCHEMA", message }) => {
                    self.writer.lock().unwrap_or_else(PoisonError::into_inner).fenced = true;
                    crate::warn::warn(&format!("[toolnexus] agent runtime: {message}; this one no longer saves to it"));
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

    /// Write the state as it is now over the version last seen; when another process wrote the
    /// record since, merge the two (the table takes the other process's changes) and write that.
    async fn write_merging(&self, inner: &Inner) -> Result<()> {
        for _ in 0..WRITE_ATTEMPTS {
            let holder = Holder { by: &self.holder, until: now_ms() + lease_ms() };
            let ours = document(inner, Some(&self.tree), &holder);
            let (expect, base) = match self.base.lock().unwrap_or_else(PoisonError::into_inner).clone() {
                Some((v, doc)) => (Expect::Version(v), Some(doc)),
                None => (Expect::Absent, None),
            };
            if let Some(v) = self.records.save_at(&self.id, &ours, expect, None).await? {
                *self.base.lock().unwrap_or_else(PoisonError::into_inner) = Some((v, ours));
                return Ok(());
            }
            match self.records.get_versioned(&self.id).await? {
                Some((v, theirs)) => {
                    let layout = theirs.get("layout").and_then(Value::as_i64).unwrap_or(0);
                    if layout > LAYOUT {
                        return Err(crate::store::engine::schema(
                            self.records.label(),
                            format!("another runtime wrote the agent runtime's state in layout {layout}, newer than this toolnexus writes ({LAYOUT})"),
                        ));
                    }
                    let merged = merge(base.as_ref(), &ours, &theirs, &self.holder);

                    adopt(inner, &ours, &merged, &self.holder);
                    *self.base.lock().unwrap_or_else(PoisonError::into_inner) = Some((v, theirs));
                }
                None => *self.base.lock().unwrap_or_else(PoisonError::into_inner) = None,
            }
        }
        Err(crate::store::engine::conflict(self.records.label(), Kind::Runtime, &self.id))
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
            let _hold = crate::host_thread::hold();
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
                let _hold = crate::host_thread::hold();
                let _ = rx.wait_for(|s| *s >= target).await;
            }
            let w = me.writer.lock().unwrap_or_else(PoisonError::into_inner);
            // A write that covered this state landed: what happened to later ones is theirs.
            if w.ok_through >= target {
                return Ok(());
            }
            if w.fenced {
                return Err(Error::Store {
                    code: "ESTORESCHEMA",
                    message: format!(
                        "store {}: another runtime keeps the agent runtime's state there in a newer layout; this runtime's change was not saved",
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

    /// On a durable store: read the state left there (if any) and keep it there from now on,
    /// beside any other runtime that works on it. Must run on a tokio runtime; on a store kept
    /// in memory it does nothing.
    pub async fn open_durable(&self) -> Result<()> {
        let Some(url) = self.durable_url() else { return Ok(()) };
        if self.inner.durable.get().is_some() {
            return Ok(());
        }
        let records = crate::store::records(&url, Kind::Runtime);
        let id = self.inner.runtime_id.clone();
        // Lines traced before the store was opened come after what the store holds.
        let before = std::mem::take(&mut *self.inner.trace.lock().unwrap_or_else(PoisonError::into_inner));
        let found = records.get_versioned(&id).await?;
        let mut tree_name = None;
        if let Some((_, doc)) = &found {
            let now = now_ms();
            let (tree, trace, answered) =
                restore(&self.inner, doc, &|l| lease_live(l, now)).map_err(|why| Error::Store {
                    code: "ESTORECORRUPT",
                    message: format!("store {}: the agent runtime's state cannot be read: {why}", records.label()),
                })?;
            // An open tree goes on under its name; a finished one is replaced by a new tree.
            if !trace.is_empty() || tree.nodes.len() > 1 {
                tree_name = doc.get("tree").and_then(Value::as_str).map(str::to_string);
            }
            *self.inner.tree() = tree;
            *self.inner.answered.lock().unwrap_or_else(PoisonError::into_inner) = answered;
            let mut lines = self.inner.trace.lock().unwrap_or_else(PoisonError::into_inner);
            *lines = trace;
            lines.extend(before.iter().cloned());
        } else {
            self.inner.trace.lock().unwrap_or_else(PoisonError::into_inner).clone_from(&before);
        }
        let durable = Arc::new(Durable {
            records,
            holder: holder_name(),
            base: Mutex::new(found),
            tree: tree_name.unwrap_or_else(new_tree_name),
            id,
            inner: Arc::downgrade(&self.inner),
            rt: tokio::runtime::Handle::current(),
            marked: AtomicU64::new(0),
            settled: watch::channel(0).0,
            writer: Mutex::new(Writer::default()),
        });
        {
            let mut holders = HOLDERS.lock().unwrap_or_else(PoisonError::into_inner);
            holders.retain(|(_, d)| d.strong_count() > 0);
            holders.push((durable.holder.clone(), Arc::downgrade(&durable)));
        }
        // What opening found (a turn interrupted, a new tree) is written before the runtime is
        // used, merged with whatever another runtime wrote meanwhile.
        durable.write_merging(&self.inner).await?;
        renew_leases(Arc::downgrade(&durable), &durable.rt);
        let _ = self.inner.durable.set(durable as Arc<dyn Keeper>);
        Ok(())
    }
}

/// While a runtime lives, mark its state a third of the way through each lease whenever a turn
/// runs here, so its leases are written again before they run out. Holds nothing alive.
fn renew_leases(weak: Weak<Durable>, rt: &tokio::runtime::Handle) {
    let every = std::time::Duration::from_millis((lease_ms() / 3).max(30) as u64);
    rt.spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(me) = weak.upgrade() else { return };
            let Some(inner) = me.inner.upgrade() else { return };
            let running = inner.tree().nodes.iter().any(|n| n.state == HandleState::Running && !n.remote);
            drop(inner);
            if running {
                me.mark();
            }
        }
    });
}

/// A name no other tree has: the time and a random part.
fn new_tree_name() -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("t{ms:x}{:08x}", rand::random::<u32>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_lease_is_live_until_its_time_or_its_holder_is_gone() {
        let now = now_ms();
        let here = host_name();
        // Another machine's, by its time alone.
        assert!(lease_live(&json!({"by": "elsewhere:1:ab", "until": now + 1_000}), now));
        assert!(!lease_live(&json!({"by": "elsewhere:1:ab", "until": now - 1}), now));
        if here.is_empty() {
            return; // no process ids to check here
        }
        // A process of this machine that is not running: gone, whatever its time.
        let mut child = std::process::Command::new(if cfg!(windows) { "cmd" } else { "true" })
            .args(if cfg!(windows) { &["/C", "exit"][..] } else { &[][..] })
            .spawn()
            .unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = json!({"by": format!("{here}:{pid}:ab"), "until": now + 60_000});
        assert_eq!(lease_live(&gone, now), !cfg!(unix));
        // This process, but no runtime of it holds that name.
        let mine = json!({"by": format!("{here}:{}:0000000000000000", std::process::id()), "until": now + 60_000});
        assert!(!lease_live(&mine, now));
    }
}
