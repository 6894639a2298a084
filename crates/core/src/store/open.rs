//! Opening engines: lazily (a store is made at once; its engine is reached on first use, so an
//! engine that is down fails the call that needs it, and the next call tries again), and once
//! per URL per process (every store on one URL shares its connections).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use super::engine::{unavailable, Engine};
use super::url::{redacted, StoreUrl};
use crate::error::Result;

/// An engine reached on first use.
#[derive(Clone)]
pub struct LazyEngine {
    url: Arc<str>,
    label: Arc<str>,
    cell: Arc<tokio::sync::OnceCell<Arc<dyn Engine>>>,
}

impl LazyEngine {
    /// The engine of `url` (a text [`StoreUrl::parse`] accepts; anything else fails at first use).
    pub fn new(url: &str) -> LazyEngine {
        LazyEngine { url: url.into(), label: redacted(url).into(), cell: Arc::new(tokio::sync::OnceCell::new()) }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The engine, opened (or found open in this process) the first time.
    pub async fn get(&self) -> Result<Arc<dyn Engine>> {
        let url = self.url.clone();
        let label = self.label.clone();
        self.cell
            .get_or_try_init(
                || async move { crate::host_thread::offload(async move { shared(&url, &label).await }).await },
            )
            .await
            .cloned()
    }
}

static OPEN: OnceLock<Mutex<HashMap<String, Weak<dyn Engine>>>> = OnceLock::new();

/// The process's engine for `url` on the current runtime, opened when none is. (An engine's
/// connections are driven by the runtime that opened them, so each runtime has its own.)
async fn shared(url: &str, label: &str) -> Result<Arc<dyn Engine>> {
    let key = match tokio::runtime::Handle::try_current() {
        Ok(rt) => format!("{} {url}", rt.id()),
        Err(_) => url.to_string(),
    };
    let table = OPEN.get_or_init(Default::default);
    if let Some(engine) = table.lock().unwrap_or_else(PoisonError::into_inner).get(&key).and_then(Weak::upgrade) {
        return Ok(engine);
    }
    let engine = open(url, label).await?;
    let mut open = table.lock().unwrap_or_else(PoisonError::into_inner);
    open.retain(|_, e| e.strong_count() > 0);
    // Another caller may have opened it meanwhile: keep theirs, drop ours.
    if let Some(theirs) = open.get(&key).and_then(Weak::upgrade) {
        return Ok(theirs);
    }
    open.insert(key, Arc::downgrade(&engine));
    Ok(engine)
}

async fn open(url: &str, label: &str) -> Result<Arc<dyn Engine>> {
    let label = label.to_string();
    match StoreUrl::parse(url) {
        Some(StoreUrl::Sqlite(path)) => {
            let opened = match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    let l = label.clone();
                    rt.spawn_blocking(move || super::sqlite::SqliteEngine::open(path, l))
                        .await
                        .map_err(|e| unavailable(&label, e))?
                }
                Err(_) => super::sqlite::SqliteEngine::open(path, label),
            };
            Ok(Arc::new(opened?))
        }
        Some(StoreUrl::Postgres(u)) => Ok(Arc::new(super::postgres::PostgresEngine::connect(&u, label).await?)),
        Some(StoreUrl::Redis(u)) => Ok(Arc::new(super::redis::RedisEngine::connect(&u, label).await?)),
        None => Err(unavailable(
            &label,
            "not a store URL (expected sqlite:<path>, postgres://…, postgresql://… or redis://…)",
        )),
    }
}
