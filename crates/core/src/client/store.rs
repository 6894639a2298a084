//! Conversation memory (SPEC §8): where `ask` keeps a thread's transcript.

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::Value;

use crate::error::Result;
use crate::lru::Lru;

/// Two methods: read a thread's transcript, write it back.
#[async_trait]
pub trait ConversationStore: Send + Sync {
    async fn get(&self, id: &str) -> Result<Option<Vec<Value>>>;
    async fn save(&self, id: &str, messages: Vec<Value>) -> Result<()>;
    /// The store URL of a durable store (what an agent runtime keeps its own state on).
    fn durable_url(&self) -> Option<&str> {
        None
    }
    /// Where a durable store keeps what runs parked on (`client::park`); `None` for a store
    /// kept in memory or a host's own, whose parks this process keeps.
    fn parks(&self) -> Option<&crate::store::Records> {
        None
    }
    /// Delete conversation `id`: `true` when there was one. (What it parked is the client's to
    /// forget.)
    async fn delete(&self, id: &str) -> Result<bool> {
        let _ = id;
        Err(crate::error::Error::Type("deleteConversation: the store has no delete(id)".into()))
    }
}

/// How many conversations an in-memory store keeps by default; beyond it, the least recently
/// used one is let go.
pub const MEMORY_CONVERSATIONS: usize = 1_000;

/// The default store: transcripts in memory, at most `cap` of them (the least recently used
/// one is let go to make room).
pub struct InMemoryStore {
    threads: Mutex<Lru<Vec<Value>>>,
}

impl Default for InMemoryStore {
    fn default() -> Self {
        InMemoryStore::with_cap(MEMORY_CONVERSATIONS)
    }
}

impl std::fmt::Debug for InMemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        write!(f, "InMemoryStore({} of {})", threads.len(), threads.cap())
    }
}

impl InMemoryStore {
    /// A store of at most `cap` conversations.
    pub fn with_cap(cap: usize) -> InMemoryStore {
        InMemoryStore { threads: Mutex::new(Lru::new(cap)) }
    }

    /// A copy of the thread, so callers never share the stored vector.
    pub fn get_now(&self, id: &str) -> Option<Vec<Value>> {
        self.threads.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// `save(id, messages)` with the messages as any JSON value: they must be an array.
    pub fn save_value(&self, id: &str, messages: Value) -> crate::error::Result<()> {
        match messages {
            Value::Array(items) => {
                self.save_now(id, items);
                Ok(())
            }
            _ => Err(crate::error::Error::Invalid("save: messages must be an array".into())),
        }
    }

    /// Let conversation `id` go: `true` when there was one.
    pub fn delete_now(&self, id: &str) -> bool {
        let gone = self.threads.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        let was = gone.is_some();
        drop(gone);
        was
    }

    pub fn save_now(&self, id: &str, messages: Vec<Value>) {
        let gone =
            self.threads.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_string(), messages, |_| false);
        // Let go of what was replaced or evicted outside the lock.
        drop(gone);
    }
}

#[async_trait]
impl ConversationStore for InMemoryStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<Value>>> {
        Ok(self.get_now(id))
    }
    async fn save(&self, id: &str, messages: Vec<Value>) -> Result<()> {
        self.save_now(id, messages);
        Ok(())
    }
    async fn delete(&self, id: &str) -> Result<bool> {
        Ok(self.delete_now(id))
    }
}

/// Conversations on a durable engine (a store URL: `sqlite:`, `postgres://`, `redis://`...),
/// reached on first use, with what their runs parked on. A conversation saved by another
/// process since this one read it is not overwritten: the save fails with `ESTORECONFLICT`.
pub struct DurableConversationStore(crate::store::Records, String, crate::store::Records);

impl DurableConversationStore {
    pub fn new(url: &str) -> DurableConversationStore {
        DurableConversationStore(
            crate::store::records(url, crate::store::Kind::Conversation),
            url.to_string(),
            crate::store::records(url, crate::store::Kind::Park),
        )
    }
}

#[async_trait]
impl ConversationStore for DurableConversationStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<Value>>> {
        match self.0.get(id).await? {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(crate::error::Error::Store {
                code: "ESTORECORRUPT",
                message: format!("store {}: conversation {id:?} is not an array of messages", self.0.label()),
            }),
        }
    }

    async fn save(&self, id: &str, messages: Vec<Value>) -> Result<()> {
        self.0.save(id, &Value::Array(messages)).await
    }

    fn durable_url(&self) -> Option<&str> {
        Some(&self.1)
    }

    fn parks(&self) -> Option<&crate::store::Records> {
        Some(&self.2)
    }

    /// The conversation and what its runs parked on.
    async fn delete(&self, id: &str) -> Result<bool> {
        let had = self.0.delete(id).await?;
        self.2.delete_prefix(&super::park::Scope::Conversation(id.to_string()).prefix()).await?;
        Ok(had)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_least_recently_used_conversation_goes_past_the_cap() {
        let store = InMemoryStore::with_cap(2);
        store.save_now("a", vec![json!(1)]);
        store.save_now("b", vec![json!(2)]);
        assert!(store.get_now("a").is_some());
        store.save_now("c", vec![json!(3)]);
        assert_eq!(
            (store.get_now("a").is_some(), store.get_now("b").is_some(), store.get_now("c").is_some()),
            (true, false, true)
        );
        assert_eq!(format!("{store:?}"), "InMemoryStore(2 of 2)");
    }

    #[test]
    fn saving_a_json_value_needs_an_array() {
        let store = InMemoryStore::default();
        store.save_value("t", serde_json::json!([{"role": "user"}])).unwrap();
        assert_eq!(store.get_now("t").map(|m| m.len()), Some(1));
        let e = store.save_value("t", serde_json::json!({"role": "user"})).unwrap_err();
        assert_eq!(e.to_string(), "save: messages must be an array");
        assert_eq!(store.get_now("t").map(|m| m.len()), Some(1));
    }
}
