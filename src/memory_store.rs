//! `NativeMemoryStore`: the in-memory conversation store behind `InMemoryConversationStore`,
//! one core store shared by reference between JavaScript and the clients given it.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::client::InMemoryStore;

use crate::dispatch::Crossed;
use crate::options_doc::Shared;
use crate::{core_err, deep, with_json};

/// The default conversation store, shared by reference between JS and the core.
#[napi]
pub struct NativeMemoryStore {
    inner: Arc<InMemoryStore>,
}

#[napi]
impl NativeMemoryStore {
    /// A store by its options' JSON (`maxEntries`: the core's default when absent).
    #[napi(constructor)]
    pub fn new(options: Option<String>) -> Result<Self> {
        let cap =
            toolnexus_core::options::max_entries(options.as_deref(), "InMemoryConversationStore").map_err(core_err)?;
        let store = cap.map_or_else(InMemoryStore::default, InMemoryStore::with_cap);
        Ok(NativeMemoryStore { inner: Arc::new(store) })
    }

    /// The thread as JSON (in pieces when it holds long strings), or null.
    #[napi(ts_return_type = "string | string[] | null")]
    pub fn get(&self, id: String) -> Option<Crossed> {
        deep(|| self.inner.get_now(&id).map(|m| Crossed::of(Value::Array(m))))
    }

    #[napi]
    pub fn save(&self, id: String, messages: String) -> Result<()> {
        with_json(&messages, "save", |v| self.inner.save_value(&id, v).map_err(core_err))
    }

    /// Let the conversation go: whether there was one.
    #[napi]
    pub fn delete(&self, id: String) -> bool {
        self.inner.delete_now(&id)
    }

    /// This store as an options document names it.
    #[napi(ts_return_type = "ExternalObject<unknown>")]
    pub fn shared(&self) -> External<Shared> {
        External::new(Shared(self.inner.clone()))
    }
}
