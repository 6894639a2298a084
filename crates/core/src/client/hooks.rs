//! Host callbacks: hooks, the suspension resolver, and friends. Each takes one JSON
//! argument and answers one JSON value (`null` for "nothing").

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::Result;

#[async_trait]
pub trait Callback: Send + Sync {
    async fn call(&self, arg: Value) -> Result<Value>;
}

pub type SharedCallback = Arc<dyn Callback>;

/// A callback backed by a Rust closure.
pub struct FnCallback<F>(pub F);

#[async_trait]
impl<F, Fut> Callback for FnCallback<F>
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = Result<Value>> + Send,
{
    async fn call(&self, arg: Value) -> Result<Value> {
        (self.0)(arg).await
    }
}

/// Wrap a closure as a shared callback.
pub fn callback<F, Fut>(f: F) -> SharedCallback
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value>> + Send + 'static,
{
    Arc::new(FnCallback(f))
}

/// The four lifecycle hooks (§8). An unset hook costs nothing.
#[derive(Clone, Default)]
pub struct Hooks {
    /// `{ messages, tools, model, turn }` → `{ messages?, tools? }`
    pub before_llm: Option<SharedCallback>,
    /// `{ response, model, turn }`
    pub after_llm: Option<SharedCallback>,
    /// `{ name, args, id, turn }` → `{ result? , args? }`
    pub before_tool: Option<SharedCallback>,
    /// `{ name, args, result, id, turn }` → `{ result? }`
    pub after_tool: Option<SharedCallback>,
}
