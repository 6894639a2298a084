//! Where the core's futures are polled.
//!
//! A host may poll a run on its own event-loop thread (the Node binding does, so a run wakes
//! only when its socket or a callback has something for it). Work that could hold that thread
//! up (file walks, child processes, other servers) is then sent to the runtime instead; work
//! that only calls back into the host stays where it is.

use std::cell::Cell;
use std::future::Future;

use crate::error::{Error, Result};

thread_local! {
    static ON_HOST: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` (one poll of host-driven futures) with this thread marked as the host's.
pub fn polling_on_host<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ON_HOST.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(ON_HOST.with(|c| c.replace(true)));
    f()
}

/// Whether the current poll happens on the host's thread.
pub fn on_host_thread() -> bool {
    ON_HOST.with(Cell::get)
}

/// Await `work` on the runtime when polled on the host's thread, in place otherwise.
pub async fn offload<T, F>(work: F) -> Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    if on_host_thread() {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            return match rt.spawn(work).await {
                Ok(r) => r,
                Err(e) => Err(Error::Invalid(format!("a tool stopped unexpectedly: {e}"))),
            };
        }
    }
    work.await
}
