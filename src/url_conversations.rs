//! `NativeUrlConversations`: the conversations of the durable engine a store URL names, each
//! operation a Promise (the native half of lib/stores.js's store classes).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use crate::{core_err, parse_json};

/// Conversations on the durable engine a store URL names (the JS store classes' side).
#[napi]
pub struct NativeUrlConversations {
    inner: Arc<toolnexus_core::client::store::DurableConversationStore>,
}

#[napi]
impl NativeUrlConversations {
    #[napi(constructor)]
    pub fn new(url: String) -> Self {
        NativeUrlConversations { inner: Arc::new(toolnexus_core::client::store::DurableConversationStore::new(&url)) }
    }

    /// The conversation's JSON, or null.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn get(&self, env: &Env, id: String) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            let found = toolnexus_core::client::ConversationStore::get(&*inner, &id).await.map_err(core_err)?;
            Ok(found.map(|m| toolnexus_core::json::to_string(&Value::Array(m))))
        })
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn save(&self, env: &Env, id: String, messages: String) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        let value = parse_json(&messages, "save")?;
        crate::dispatch::promise(env, async move {
            let Value::Array(items) = value else {
                return Err(napi::Error::new(napi::Status::InvalidArg, "save: messages must be an array"));
            };
            toolnexus_core::client::ConversationStore::save(&*inner, &id, items).await.map_err(core_err)
        })
    }

    /// Delete the conversation and what its runs parked on: whether there was one.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn delete(&self, env: &Env, id: String) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            toolnexus_core::client::ConversationStore::delete(&*inner, &id).await.map_err(core_err)
        })
    }
}
