//! Cancellation with a reason: what a JS `AbortSignal` becomes in the core. A run, a toolkit's
//! MCP load, a tool call and a translate call each take one.
//!
//! Shared vocabulary: it imports nothing of the client, the toolkit or the tool sources.

use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

/// The message a plain abort carries when the caller gave no reason of its own.
pub const ABORTED: &str = "This operation was aborted";

/// A cancellation handle with the reason it fired for.
#[derive(Clone, Default)]
pub struct Abort {
    token: CancellationToken,
    reason: Arc<Mutex<Option<String>>>,
}

impl Abort {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fire; the first reason given sticks.
    pub fn abort(&self, reason: Option<String>) {
        {
            let mut r = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
            if r.is_none() {
                *r = reason;
            }
        }
        self.token.cancel();
    }

    pub fn is_aborted(&self) -> bool {
        self.token.is_cancelled()
    }

    pub fn reason(&self) -> String {
        self.reason.lock().unwrap_or_else(PoisonError::into_inner).clone().unwrap_or_else(|| ABORTED.into())
    }

    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}
