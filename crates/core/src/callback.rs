//! Host callbacks: one JSON value in, one JSON value out (`null` for "nothing"). Hooks,
//! `waitFor`, `onMetric`, an MCP elicitation's answerer and a stream's sink are all this.
//!
//! Shared vocabulary: it imports nothing of the client, the toolkit or the tool sources.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::Result;

#[async_trait]
pub trait Callback: Send + Sync {
    async fn call(&self, arg: Value) -> Result<Value>;

    /// Call with `arg` as a value the callee may change in place (`bodyTransform`'s body):
    /// the answer when it is truthy, else `arg` as the callee left it. A host whose values are
    /// shared objects (JavaScript) hands the changed value back; by default nothing changes it.
    async fn call_in_place(&self, arg: Value) -> Result<Value> {
        let out = self.call(arg.clone()).await?;
        Ok(if crate::json::truthy(&out) { out } else { arg })
    }

    /// Tell the host something it need not answer (an abort, a cancelled read), without
    /// waiting: queued behind what the host is doing. By default, nothing is told.
    fn notify(&self, _arg: Value) {}

    /// [`Callback::notify`], made at once when the host can take it here (the host's own
    /// thread), so it is told before anything that follows; queued otherwise.
    fn notify_now(&self, arg: Value) {
        self.notify(arg)
    }
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
