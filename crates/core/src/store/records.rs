//! Records of one kind on one engine, as JSON values, with no lost update: each id's version
//! last seen here (read or written) is the condition of its next write.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::engine::{conflict, Engine, Expect, Kind};
use super::open::LazyEngine;
use crate::error::{Error, Result};

/// How many ids' versions a store remembers. An id forgotten (the oldest beyond this) is next
/// written as by a writer that never read it: the write wins over whatever is stored.
pub const SEEN_CAP: usize = 65_536;

/// How often a process sweeps an engine of expired records (when it writes records that expire).
pub const SWEEP_EVERY_MS: i64 = 60_000;

/// When each engine (by label) was last swept by this process.
static SWEPT: Mutex<Option<HashMap<String, i64>>> = Mutex::new(None);

/// One kind of record on one engine.
pub struct Records {
    engine: LazyEngine,
    kind: Kind,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    versions: HashMap<String, i64>,
    order: VecDeque<String>,
    /// Writes and deletes made here so far, of any id: a read that began before one ended
    /// may hold an older version than the one that write left, and must not be remembered.
    writes: u64,
    /// The last `writes` count at which each id was written here.
    written_at: HashMap<String, u64>,
}

impl Seen {
    /// A write or delete of `id` ended here.
    fn wrote(&mut self, id: &str) {
        self.writes += 1;
        let n = self.writes;
        self.written_at.insert(id.to_string(), n);
        if self.written_at.len() > SEEN_CAP {
            // Forget the oldest half: a read racing one of those writes is long over.
            let mut marks: Vec<u64> = self.written_at.values().copied().collect();
            marks.sort_unstable();
            let cut = marks[marks.len() / 2];
            self.written_at.retain(|_, at| *at > cut);
        }
    }

    /// What a read of `id` that began when `writes` was `since` found, remembered unless `id`
    /// was written here meanwhile (then what that write left is newer).
    fn read(&mut self, id: &str, since: u64, version: Option<i64>) {
        if self.written_at.get(id).is_some_and(|at| *at > since) {
            return;
        }
        self.set(id, version);
    }

    fn get(&self, id: &str) -> Option<i64> {
        self.versions.get(id).copied()
    }

    fn set(&mut self, id: &str, version: Option<i64>) {
        // `None`: known to be absent (version 0 is never written).
        let v = version.unwrap_or(0);
        if self.versions.insert(id.to_string(), v).is_none() {
            self.order.push_back(id.to_string());
            while self.order.len() > SEEN_CAP {
                if let Some(old) = self.order.pop_front() {
                    self.versions.remove(&old);
                }
            }
        }
    }
}

impl Records {
    pub fn new(engine: LazyEngine, kind: Kind) -> Records {
        Records { engine, kind, seen: Mutex::new(Seen::default()) }
    }

    /// The engine's URL with its password hidden.
    pub fn label(&self) -> &str {
        self.engine.label()
    }

    async fn engine(&self) -> Result<Arc<dyn Engine>> {
        self.engine.get().await
    }

    /// The record `id` as JSON, `None` when there is none.
    pub async fn get(&self, id: &str) -> Result<Option<Value>> {
        Ok(self.get_versioned(id).await?.map(|(_, v)| v))
    }

    /// The record `id` and its version (the condition a [`Records::save_at`] names).
    pub async fn get_versioned(&self, id: &str) -> Result<Option<(i64, Value)>> {
        let engine = self.engine().await?;
        let (kind, key) = (self.kind, id.to_string());
        let since = self.seen.lock().unwrap_or_else(PoisonError::into_inner).writes;
        // Engines run on the runtime (their sockets and blocking calls are its), and the host
        // is kept alive meanwhile.
        let found = crate::host_thread::offload(async move { engine.load(kind, &key).await }).await?;
        let seen = found.as_ref().map(|(v, _)| *v);
        let value = match found {
            Some((version, body)) => Some((
                version,
                crate::json::parse_str::<Value>(&body).map_err(|e| Error::Store {
                    code: "ESTORECORRUPT",
                    message: format!("store {}: {} {id:?} is not JSON: {e}", self.label(), self.kind.as_str()),
                })?,
            )),
            None => None,
        };
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).read(id, since, seen);
        Ok(value)
    }

    /// Write `value` as record `id` only if there is none yet: `true` when this write made it,
    /// `false` when one was there (nothing written).
    pub async fn create(&self, id: &str, value: &Value) -> Result<bool> {
        Ok(self.save_at(id, value, Expect::Absent, None).await?.is_some())
    }

    /// Write `value` as record `id` if `expect` holds, expiring at `expires` (ms since the
    /// epoch) when given: the new version, or `None` when another writer got there first
    /// (nothing written).
    pub async fn save_at(&self, id: &str, value: &Value, expect: Expect, expires: Option<i64>) -> Result<Option<i64>> {
        let body = crate::json::to_string(value);
        let engine = self.engine().await?;
        let (kind, key) = (self.kind, id.to_string());
        let written =
            crate::host_thread::offload(async move { engine.write(kind, &key, body, expect, expires).await }).await?;
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        match written {
            Some(version) => {
                seen.wrote(id);
                seen.set(id, Some(version));
            }
            None => {
                seen.versions.remove(id);
            }
        }
        Ok(written)
    }

    /// Delete record `id`: `true` when there was one.
    pub async fn delete(&self, id: &str) -> Result<bool> {
        let engine = self.engine().await?;
        let (kind, key) = (self.kind, id.to_string());
        let gone = crate::host_thread::offload(async move { engine.delete(kind, &key).await }).await?;
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.wrote(id);
        seen.set(id, None);
        Ok(gone)
    }

    /// Delete every record of this kind whose id starts with `prefix`: how many there were.
    pub async fn delete_prefix(&self, prefix: &str) -> Result<u64> {
        let engine = self.engine().await?;
        let (kind, key) = (self.kind, prefix.to_string());
        let gone = crate::host_thread::offload(async move { engine.delete_prefix(kind, &key).await }).await?;
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let ids: Vec<String> = seen.versions.keys().filter(|k| k.starts_with(prefix)).cloned().collect();
        for id in ids {
            seen.wrote(&id);
            seen.versions.remove(&id);
        }
        Ok(gone)
    }

    /// Delete what has expired on the engine, at most once per [`SWEEP_EVERY_MS`] per process
    /// and engine; a failure is left for the next one.
    pub async fn sweep_now_and_then(&self) {
        let now = super::sql::now_ms();
        {
            let mut last = SWEPT.lock().unwrap_or_else(PoisonError::into_inner);
            let at = last.get_or_insert_with(HashMap::new).entry(self.label().to_string()).or_insert(i64::MIN);
            if now.saturating_sub(*at) < SWEEP_EVERY_MS {
                return;
            }
            *at = now;
        }
        let Ok(engine) = self.engine().await else { return };
        let _ = crate::host_thread::offload(async move { engine.sweep(now).await }).await;
    }

    /// Write `value` as record `id`, unless another writer changed it since this store last
    /// read or wrote it (then `ESTORECONFLICT`, and nothing is written; the stale version is
    /// forgotten, so the next read learns the current one).
    pub async fn save(&self, id: &str, value: &Value) -> Result<()> {
        let expect = match self.seen.lock().unwrap_or_else(PoisonError::into_inner).get(id) {
            None => Expect::Any,
            Some(0) => Expect::Absent,
            Some(v) => Expect::Version(v),
        };
        match self.save_at(id, value, expect, None).await? {
            Some(_) => Ok(()),
            None => Err(conflict(self.label(), self.kind, id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_raced_a_write_here_is_not_remembered_over_it() {
        let mut seen = Seen::default();
        // A read begins; a write of the same id ends before it does.
        let since = seen.writes;
        seen.wrote("t");
        seen.set("t", Some(4));
        seen.read("t", since, Some(3));
        assert_eq!(seen.get("t"), Some(4), "the write's version stands");
        // A read that began after the write is remembered.
        let since = seen.writes;
        seen.read("t", since, Some(6));
        assert_eq!(seen.get("t"), Some(6));
        // A write of another id does not stop a read of this one.
        let since = seen.writes;
        seen.wrote("u");
        seen.read("t", since, Some(7));
        assert_eq!(seen.get("t"), Some(7));
    }
}
