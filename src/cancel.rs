//! `CancelToken`: the core's `Abort` behind a handle a JS `AbortSignal` listener fires.

use napi_derive::napi;
use toolnexus_core::cancel::Abort;

/// A cancellation handle a JS AbortSignal listener fires.
#[napi]
pub struct CancelToken {
    pub(crate) abort: Abort,
}

#[napi]
impl CancelToken {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        CancelToken { abort: Abort::new() }
    }

    /// Fire, with the message of the signal's reason when it has one.
    #[napi]
    pub fn cancel(&self, reason: Option<String>) {
        self.abort.abort(reason);
    }
}

impl CancelToken {
    /// The core cancellation token this handle fires.
    pub(crate) fn token(&self) -> tokio_util::sync::CancellationToken {
        self.abort.token()
    }
}
