//! Raw napi handles carried across threads, and napi statuses read as results.

use napi::{sys, Error, Result, Status};

/// A raw napi handle carried across threads. It is `Send`/`Sync` only for the three napi
/// pointer types below, each for its own reason; any other `Raw<T>` stays as thread-bound as
/// its `T`.
#[derive(Clone, Copy)]
pub(super) struct Raw<T>(pub(super) T);

// SAFETY: an environment pointer travels with `KeepAlive` and `Home`, but napi is called with
// it only on the environment's own thread: `KeepAlive::drop` checks `is_home` first and posts
// `Msg::Unkeep` otherwise, and `Home::env` is documented (and used by `uvio`) for that thread
// alone. Off that thread it is only copied and compared.
unsafe impl Send for Raw<sys::napi_env> {}
// SAFETY: as for `Send`: a shared reference only copies the pointer out.
unsafe impl Sync for Raw<sys::napi_env> {}

// SAFETY: a deferred is created on the environment's thread and settled there alone: off it,
// it only rides inside `Pending` and `Msg::Settle` through the threadsafe function to that
// thread (or is settled in `local_promise`'s future, which only `drain` polls, on that
// thread). Dropping one anywhere does nothing: it is a plain pointer, with no destructor.
// (Not `Sync`: nothing shares one; it is moved to its thread and settled once.)
unsafe impl Send for Raw<sys::napi_deferred> {}

// SAFETY: `napi_call_threadsafe_function` is napi's entry point for any thread; the handle is
// read under `Shared::tsfn`'s read lock, and the finalizer that invalidates it takes the write
// lock and clears it first, so no thread calls through a released handle.
unsafe impl Send for Raw<sys::napi_threadsafe_function> {}
// SAFETY: as for `Send`: shared references only copy the handle out, under the lock.
unsafe impl Sync for Raw<sys::napi_threadsafe_function> {}

/// `Ok` for `napi_ok`; otherwise an error naming `what` failed.
pub(super) fn check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::new(Status::from(status), format!("toolnexus: {what} failed")))
    }
}
