//! Placeholder for the completion gate (replaced by the full one on merge).

use std::future::Future;

use serde_json::Value;

use crate::callback::SharedCallback;
use crate::client::RunResult;
use crate::error::Result;

/// The gate that stops an agent claiming `done` before its work verifies.
pub struct Completion {
    pub verify: SharedCallback,
    pub max_attempts: Value,
}

/// Run `ask` through the completion gate.
pub async fn run_gated<F, Fut>(mut ask: F, prompt: &str, _completion: Option<&Completion>) -> Result<RunResult>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<RunResult>>,
{
    ask(prompt.to_string()).await
}
