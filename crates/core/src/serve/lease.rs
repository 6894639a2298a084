//! Leases on the Tasks a server is running, kept beside them on a durable store, so a replica
//! that dies mid-Task (SIGKILL, a lost machine) never leaves it `submitted` or `working`
//! forever: every replica sharing the store sees the lease run out and the Task end `failed`.
//!
//! The server that runs a Task writes it with a lease (`until`, a wall-clock time in ms) and
//! renews every lease it holds a third of the way through; a reader that finds a running Task
//! whose lease has run out writes it `failed` (compare-and-set, so a late renewal or the real
//! end wins over it) and answers that. Tasks parked for input or auth hold no lease: nothing
//! runs them. The lease never shows in a Task read back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde_json::{Map, Value};

use super::task::{agent_text, task_id};
use crate::error::{Error, Result};
use crate::store::Records;

/// Where the lease sits in a stored Task (taken off before it is handed out).
const LEASE_KEY: &str = "__toolnexusLease";
/// A lease's length unless `TOOLNEXUS_TASK_LEASE_MS` says otherwise.
const DEFAULT_LEASE_MS: u64 = 30_000;

/// The text of a Task whose server stopped.
pub const EXPIRED: &str = "the server running this task stopped before it finished (its lease expired)";

/// The lease length in ms: `TOOLNEXUS_TASK_LEASE_MS` when it is a whole number ≥ 100.
pub fn lease_ms() -> u64 {
    std::env::var("TOOLNEXUS_TASK_LEASE_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms >= 100)
        .unwrap_or(DEFAULT_LEASE_MS)
}

fn now_ms() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as f64).unwrap_or(0.0)
}

fn leased_state(task: &Value) -> bool {
    matches!(task.get("status").and_then(|s| s.get("state")).and_then(Value::as_str), Some("submitted" | "working"))
}

/// Durable Tasks and the leases this process holds on them.
pub struct Leased {
    records: Records,
    ms: u64,
    /// Running Tasks of this process, as last written, by id.
    held: Mutex<HashMap<String, Value>>,
    /// One write at a time: a renewal never races the Task's own next write.
    writing: tokio::sync::Mutex<()>,
    renewing: Mutex<bool>,
}

impl Leased {
    pub fn new(records: Records, ms: u64) -> Arc<Leased> {
        Arc::new(Leased {
            records,
            ms,
            held: Mutex::new(HashMap::new()),
            writing: tokio::sync::Mutex::new(()),
            renewing: Mutex::new(false),
        })
    }

    fn with_lease(&self, task: &Value) -> Value {
        let mut t = task.clone();
        if let Value::Object(m) = &mut t {
            let mut lease = Map::new();
            lease.insert("until".into(), ((now_ms() as u64).saturating_add(self.ms)).into());
            lease.insert("by".into(), std::process::id().into());
            m.insert(LEASE_KEY.into(), Value::Object(lease));
        }
        t
    }

    /// A Task read back: its lease taken off, and ended `failed` when the lease ran out.
    pub async fn get(&self, id: &str) -> Result<Option<Value>> {
        let Some(mut task) = self.records.get(id).await? else { return Ok(None) };
        let lease = match &mut task {
            Value::Object(m) => m.remove(LEASE_KEY),
            _ => None,
        };
        let until = lease.as_ref().and_then(|l| l.get("until")).and_then(Value::as_f64);
        let ours = self.held.lock().unwrap_or_else(PoisonError::into_inner).contains_key(id);
        if !(leased_state(&task) && until.is_some_and(|u| u < now_ms()) && !ours) {
            return Ok(Some(task));
        }
        if let Some(Value::Object(status)) = task.get_mut("status") {
            status.insert("state".into(), "failed".into());
            status.insert("message".into(), agent_text(EXPIRED));
        }
        let _guard = self.writing.lock().await;
        match self.records.save(id, &task).await {
            Ok(()) => Ok(Some(task)),
            // Renewed or ended meanwhile: what is stored now is the answer.
            Err(Error::Store { code: "ESTORECONFLICT", .. }) => {
                drop(_guard);
                let mut now = self.records.get(id).await?;
                if let Some(Value::Object(m)) = &mut now {
                    m.remove(LEASE_KEY);
                }
                Ok(now)
            }
            Err(e) => Err(e),
        }
    }

    /// A Task written by someone else than its server: no lease.
    pub async fn save(&self, task: Value) -> Result<()> {
        let id = task_id(&task);
        let _guard = self.writing.lock().await;
        self.held.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        let saved = self.records.save(&id, &task).await;
        crate::json::release(task);
        saved
    }

    /// A Task written by the server running it: leased while it runs.
    pub async fn save_own(self: &Arc<Self>, task: Value) -> Result<()> {
        let id = task_id(&task);
        let _guard = self.writing.lock().await;
        if !leased_state(&task) {
            self.held.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
            let saved = self.records.save(&id, &task).await;
            crate::json::release(task);
            return saved;
        }
        let body = self.with_lease(&task);
        self.records.save(&id, &body).await?;
        self.held.lock().unwrap_or_else(PoisonError::into_inner).insert(id, task);
        self.renew_soon();
        Ok(())
    }

    /// Write `working` (leased) over Task `id` if it is still parked for input since
    /// `parked_at`, compared and set on the version read: `true` when this call did.
    pub async fn take_parked(self: &Arc<Self>, id: &str, parked_at: &str, working: Value) -> Result<bool> {
        let _guard = self.writing.lock().await;
        let Some((version, mut stored)) = self.records.get_versioned(id).await? else { return Ok(false) };
        if let Value::Object(m) = &mut stored {
            m.remove(LEASE_KEY);
        }
        if !super::task::parked_since(&stored, parked_at) {
            return Ok(false);
        }
        let body = self.with_lease(&working);
        if self.records.save_at(id, &body, crate::store::Expect::Version(version), None).await?.is_none() {
            return Ok(false);
        }
        self.held.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_string(), working);
        self.renew_soon();
        Ok(true)
    }

    /// Start the renewer, unless it runs (it stops when no lease is held).
    fn renew_soon(self: &Arc<Self>) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        {
            let mut on = self.renewing.lock().unwrap_or_else(PoisonError::into_inner);
            if *on {
                return;
            }
            *on = true;
        }
        let weak = Arc::downgrade(self);
        let every = Duration::from_millis((self.ms / 3).max(30));
        rt.spawn(renew(weak, every));
    }
}

async fn renew(weak: Weak<Leased>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(me) = weak.upgrade() else { return };
        let ids: Vec<String> = {
            let held = me.held.lock().unwrap_or_else(PoisonError::into_inner);
            if held.is_empty() {
                *me.renewing.lock().unwrap_or_else(PoisonError::into_inner) = false;
                return;
            }
            held.keys().cloned().collect()
        };
        for id in ids {
            let _guard = me.writing.lock().await;
            let Some(task) = me.held.lock().unwrap_or_else(PoisonError::into_inner).get(&id).cloned() else { continue };
            let body = me.with_lease(&task);
            if let Err(Error::Store { code: "ESTORECONFLICT", .. }) = me.records.save(&id, &body).await {
                // Someone else wrote it (it was ended for us): no longer ours to renew.
                me.held.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
            }
        }
    }
}
