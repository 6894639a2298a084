//! What a remote server's calls keep between processes: records of kind `credential` on a durable
//! store (SQLite, PostgreSQL, Redis: every process and replica on that store shares them), or this
//! process's memory when none is given. A sign-in keeps, each under the server's URL:
//!
//! - `client <url>`: the client identity the authorization server knows (its id, its secret when
//!   it has one, the redirect URI, the scopes) and the server's authorization metadata;
//! - `token <url>`: the tokens (rmcp's stored credentials: access, refresh, expiry, scopes);
//! - `login <url> <request id>` and `state <csrf>`: a login handed to a person and not finished
//!   yet (what it needs to finish anywhere: the client and the PKCE verifier), for one hour.
//!
//! A tool call a server answered "input required" (protocol 2026-07-28) that parked keeps
//! `input <server> <request id>`: the server's `requestState` and the answers given so far.
//!
//! rmcp's manager reads and writes the last two through [`KeptCredentials`] and [`KeptStates`].

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, CredentialStore, StateStore, StoredAuthorizationState, StoredCredentials};
use serde_json::Value;

use crate::lru::Lru;
use crate::store::{Expect, Kind, Records};

/// How many records the memory keeps (least recently used go first).
const MEMORY_CAP: usize = 4096;
/// How long a login waits for its person.
pub(crate) const LOGIN_TTL_MS: i64 = 3_600_000;

/// A record in memory, and when it expires (ms since the epoch).
type Entry = (Value, Option<i64>);

/// This process's records when there is no store, shared by every toolkit and `loadMcp` here.
static MEMORY: Mutex<Option<Lru<Entry>>> = Mutex::new(None);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn memory<T>(f: impl FnOnce(&mut Lru<Entry>) -> T) -> T {
    let mut guard = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(|| Lru::new(MEMORY_CAP)))
}

/// The records of one store (or of memory).
#[derive(Clone)]
pub(crate) struct Keep {
    records: Option<Arc<Records>>,
}

impl Keep {
    /// The store `url` names (`None` or `"memory"`: this process's memory).
    pub(crate) fn new(url: Option<&str>) -> Keep {
        let records = url.filter(|u| *u != "memory").map(|u| Arc::new(crate::store::records(u, Kind::Credential)));
        Keep { records }
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<Value>, String> {
        match &self.records {
            Some(r) => r.get(id).await.map_err(|e| e.to_string()),
            None => Ok(memory(|m| match m.get(id) {
                Some((v, expires)) if expires.is_none_or(|at| at > now_ms()) => Some(v.clone()),
                _ => None,
            })),
        }
    }

    /// Write `value` as `id` (whatever was there), for `ttl_ms` when given.
    pub(crate) async fn put(&self, id: &str, value: &Value, ttl_ms: Option<i64>) -> Result<(), String> {
        let expires = ttl_ms.map(|t| now_ms().saturating_add(t));
        match &self.records {
            Some(r) => r.save_at(id, value, Expect::Any, expires).await.map(|_| ()).map_err(|e| e.to_string()),
            None => {
                let gone = memory(|m| m.insert(id.to_string(), (value.clone(), expires), |_| false));
                drop(gone);
                Ok(())
            }
        }
    }

    /// Read `id` and delete it, once: of two takers the one whose delete removed it gets it.
    pub(crate) async fn take(&self, id: &str) -> Result<Option<Value>, String> {
        match &self.records {
            Some(r) => {
                let Some(v) = r.get(id).await.map_err(|e| e.to_string())? else { return Ok(None) };
                Ok(r.delete(id).await.map_err(|e| e.to_string())?.then_some(v))
            }
            None => {
                Ok(memory(|m| m.remove(id))
                    .and_then(|(v, expires)| expires.is_none_or(|at| at > now_ms()).then_some(v)))
            }
        }
    }

    pub(crate) async fn remove(&self, id: &str) -> Result<(), String> {
        match &self.records {
            Some(r) => r.delete(id).await.map(|_| ()).map_err(|e| e.to_string()),
            None => {
                memory(|m| m.remove(id));
                Ok(())
            }
        }
    }
}

fn store_error(e: String) -> AuthError {
    AuthError::InternalError(format!("the credential store failed: {e}"))
}

/// rmcp's credentials of one server, kept as `token <url>`.
pub(crate) struct KeptCredentials {
    pub keep: Keep,
    pub id: String,
}

#[async_trait]
impl CredentialStore for KeptCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match self.keep.get(&self.id).await.map_err(store_error)? {
            None => Ok(None),
            // A record this version cannot read is no credentials (a new sign-in replaces it).
            Some(v) => Ok(serde_json::from_value(v).ok()),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let v = serde_json::to_value(&credentials).map_err(|e| store_error(e.to_string()))?;
        self.keep.put(&self.id, &v, None).await.map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.keep.remove(&self.id).await.map_err(store_error)
    }
}

/// rmcp's PKCE states (by their CSRF token), kept as `state <csrf>` for an hour.
pub(crate) struct KeptStates {
    pub keep: Keep,
}

fn state_id(csrf: &str) -> String {
    format!("state {csrf}")
}

#[async_trait]
impl StateStore for KeptStates {
    async fn save(&self, csrf_token: &str, state: StoredAuthorizationState) -> Result<(), AuthError> {
        let v = serde_json::to_value(&state).map_err(|e| store_error(e.to_string()))?;
        self.keep.put(&state_id(csrf_token), &v, Some(LOGIN_TTL_MS)).await.map_err(store_error)
    }

    async fn load(&self, csrf_token: &str) -> Result<Option<StoredAuthorizationState>, AuthError> {
        match self.keep.get(&state_id(csrf_token)).await.map_err(store_error)? {
            None => Ok(None),
            Some(v) => Ok(serde_json::from_value(v).ok()),
        }
    }

    async fn delete(&self, csrf_token: &str) -> Result<(), AuthError> {
        self.keep.remove(&state_id(csrf_token)).await.map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn memory_records_are_read_written_taken_once_and_expire() {
        let keep = Keep::new(None);
        let id = format!("test {}", now_ms());
        assert_eq!(keep.get(&id).await.unwrap(), None);
        keep.put(&id, &json!({"a": 1}), None).await.unwrap();
        assert_eq!(keep.get(&id).await.unwrap(), Some(json!({"a": 1})));
        assert_eq!(keep.take(&id).await.unwrap(), Some(json!({"a": 1})));
        assert_eq!(keep.take(&id).await.unwrap(), None);
        keep.put(&id, &json!(2), Some(-1)).await.unwrap();
        assert_eq!(keep.get(&id).await.unwrap(), None, "expired");
    }

    #[tokio::test]
    async fn sqlite_records_are_shared_by_two_keeps_of_one_url() {
        let dir = std::env::temp_dir().join(format!("tn-keep-{}-{}", std::process::id(), now_ms()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite:{}", dir.join("k.db").display());
        let (a, b) = (Keep::new(Some(&url)), Keep::new(Some(&url)));
        a.put("login x 1", &json!({"client": "c"}), Some(LOGIN_TTL_MS)).await.unwrap();
        assert_eq!(b.take("login x 1").await.unwrap(), Some(json!({"client": "c"})));
        assert_eq!(a.take("login x 1").await.unwrap(), None);
        let creds = KeptCredentials { keep: b.clone(), id: "token x".into() };
        assert!(creds.load().await.unwrap().is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
