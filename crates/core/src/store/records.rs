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
}

impl Seen {
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
        let engine = self.engine().await?;
        let (kind, key) = (self.kind, id.to_string());
        // Engines run on the runtime (their sockets and blocking calls are its), and the host
        // is kept alive meanwhile.
        let found = crate::host::offload(async move { engine.load(kind, &key).await }).await?;
        let seen = found.as_ref().map(|(v, _)| *v);
        let value = match found {
            Some((_, body)) => Some(crate::json::parse_str::<Value>(&body).map_err(|e| Error::Store {
                code: "ESTORECORRUPT",
                message: format!("store {}: {} {id:?} is not JSON: {e}", self.label(), self.kind.as_str()),
            })?),
            None => None,
        };
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).set(id, seen);
        Ok(value)
    }

    /// Write `value` as record `id` only if there is none yet: `true` when this write made it,
    /// `false` when one was there (nothing written).
    pub async fn create(&self, id: &str, value: &Value) -> Result<bool> {
        let body = crate::json::to_string(value);
        let engine = self.engine().await?;
        let (kind, key) = (self.kind, id.to_string());
        let made = crate::host::offload(async move { engine.write(kind, &key, body, Expect::Absent).await }).await?;
        Ok(made.is_some())
    }

    /// Write `value` as record `id`, unless another writer changed it since this store last
    /// read or wrote it (then `ESTORECONFLICT`, and nothing is written).
    pub async fn save(&self, id: &str, value: &Value) -> Result<()> {
        let body = crate::json::to_string(value);
        let expect = match self.seen.lock().unwrap_or_else(PoisonError::into_inner).get(id) {
            None => Expect::Any,
            Some(0) => Expect::Absent,
            Some(v) => Expect::Version(v),
        };
        let engine = self.engine().await?;
        let (kind, key) = (self.kind, id.to_string());
        match crate::host::offload(async move { engine.write(kind, &key, body, expect).await }).await? {
            Some(version) => {
                self.seen.lock().unwrap_or_else(PoisonError::into_inner).set(id, Some(version));
                Ok(())
            }
            None => {
                // Forget the stale version: the next read learns the current one.
                self.seen.lock().unwrap_or_else(PoisonError::into_inner).versions.remove(id);
                Err(conflict(self.label(), self.kind, id))
            }
        }
    }
}
