//! Where the core's futures are polled.
//!
//! A host may poll a run on its own event-loop thread (the Node binding does, so a run wakes
//! only when its socket or a callback has something for it). Work that could hold that thread
//! up (file walks, child processes, other servers) is then sent to the runtime instead; work
//! that only calls back into the host stays where it is.
//!
//! Such a host decides for itself when its process may end, so the core tells it, through
//! `hold`, while a run polled there waits on something the host cannot see (work sent to the
//! runtime, a back-off timer). A wait on the host's own callbacks holds nothing.

use std::cell::Cell;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

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

/// Something that keeps the host's process alive for as long as it lives.
pub type Hold = Box<dyn Send>;

static HOLDER: OnceLock<fn() -> Option<Hold>> = OnceLock::new();

/// Install the host's way of taking a hold (once per process; later calls are ignored).
pub fn set_holder(holder: fn() -> Option<Hold>) {
    let _ = HOLDER.set(holder);
}

/// A hold on the host's process, when polled on the host's thread and the host has a way
/// to take one; `None` otherwise (a runtime thread keeps its own process alive).
pub fn hold() -> Option<Hold> {
    if on_host_thread() {
        HOLDER.get().and_then(|take| take())
    } else {
        None
    }
}

/// Sleep for `duration`, keeping the host alive meanwhile (as a pending timer does).
pub async fn sleep(duration: Duration) {
    let _hold = hold();
    tokio::time::sleep(duration).await;
}

/// Await `work` on the runtime when polled on the host's thread, in place otherwise.
pub async fn offload<T, F>(work: F) -> Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    if on_host_thread() {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let _hold = hold();
            return match rt.spawn(crate::json::DeepStack::new(crate::warn::carry(crate::trace::carry(work)))).await {
                Ok(r) => r,
                Err(e) => Err(Error::Invalid(format!("a tool stopped unexpectedly: {e}"))),
            };
        }
    }
    work.await
}
