//! `CancelToken`: the core's `Abort` behind a handle a JS `AbortSignal` listener fires.

use napi_derive::napi;
use toolnexus_core::cancel::Abort;

/// A cancellation handle a JS AbortSignal listener fires; for a served A2A Task's signal, it
/// names the Task, whose caller then hears what the run started with it reports.
#[napi]
pub struct CancelToken {
    pub(crate) abort: Abort,
    pub(crate) task: Option<String>,
}

#[napi]
impl CancelToken {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new(task: Option<String>) -> Self {
        CancelToken { abort: Abort::new(), task }
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
