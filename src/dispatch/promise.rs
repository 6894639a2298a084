//! Promises a native method returns, and the runtime that does the work behind them.
//!
//! A Promise is made on the JS thread with a pending settlement (`Pending`) that goes wherever
//! the work goes; the work's outcome comes back through the queue (`Msg::Settle`), or, for
//! work polled on the JS thread (`executor`), is settled in place.

use std::future::Future;
use std::ptr;
use std::sync::{Arc, OnceLock};

use napi::bindgen_prelude::ToNapiValue;
use napi::{sys, Env, Result};

use super::queue::{with_local, Hold, Msg, Settler, Shared};
use super::raw::{check, Raw};

/// The runtime the core's work runs on: one per process, built on first use and never shut
/// down, so Node worker threads coming and going never take it away from the others. One
/// worker on purpose: the work is I/O and callback hops, and a second worker only adds
/// cross-thread wake-ups (measured: lower latency and CPU per run with one, same throughput
/// at 32 in flight). Blocking work (file walks, skill loading) goes to tokio's blocking pool.
static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();

pub(super) fn runtime() -> Option<&'static tokio::runtime::Runtime> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("toolnexus")
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
}

/// A Promise the JS caller gets now and the core settles later.
pub struct JsPromise(sys::napi_value);

impl ToNapiValue for JsPromise {
    /// # Safety
    ///
    /// `ToNapiValue`'s contract: `env` is the calling environment, on its thread. (Nothing
    /// here relies on it: the Promise is already a value of that environment.)
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        Ok(val.0)
    }
}

tokio::task_local! {
    /// The hold of the native method whose work the current runtime task is doing.
    pub(super) static HOLD: Arc<Hold>;
}

/// Settles the Promise even if the work is dropped without finishing (a panic, a runtime
/// shutting down): the caller gets a rejection, never a Promise that hangs forever.
pub(super) struct Pending {
    pub(super) shared: Arc<Shared>,
    pub(super) deferred: Option<Raw<sys::napi_deferred>>,
    pub(super) hold: Option<Arc<Hold>>,
}

impl Pending {
    fn settle(mut self, settle: Settler) {
        self.post(settle);
    }

    /// Send the settlement to the environment's thread, unless it has been sent already.
    fn post(&mut self, settle: Settler) {
        if let Some(deferred) = self.deferred.take() {
            let hold = self.hold.take();
            let _ = self.shared.post(Msg::Settle { deferred, settle, hold });
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.post(Box::new(|_| Err(super::error::plain("toolnexus: the operation ended without an answer"))));
    }
}

/// A Promise for JS and the pending settlement behind it; with `hold`, the process stays
/// alive until it is settled (less the time its work waits on JavaScript).
pub(super) fn open_promise(raw: sys::napi_env, hold: bool) -> Result<(Pending, JsPromise)> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the environment's thread (inside the native method's call) with valid
    // out-pointers.
    check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "creating a Promise")?;
    let (shared, hold) = with_local(raw, |l| (l.shared.clone(), hold.then(|| Hold::take(raw, l))))?;
    Ok((Pending { shared, deferred: Some(Raw(deferred)), hold }, JsPromise(promise)))
}

/// Settle `deferred` with what `settle` makes, and give its hold back for good.
///
/// # Safety
///
/// On `env`'s thread, inside a scope where values may be made and Promise reactions queued
/// (the dispatcher's callback, or a drain), with `deferred` one of `env`'s that has not been
/// settled yet.
pub(super) unsafe fn settle_now(
    env: sys::napi_env,
    deferred: sys::napi_deferred,
    settle: impl FnOnce(sys::napi_env) -> Result<sys::napi_value>,
    hold: Option<Arc<Hold>>,
) {
    let outcome = settle(env);
    // SAFETY: the caller runs this on the environment's thread inside a scope (the dispatcher's
    // callback or a drain), with `deferred` created there and settled exactly once.
    unsafe {
        match outcome {
            Ok(value) => {
                sys::napi_resolve_deferred(env, deferred, value);
            }
            Err(e) => {
                let value = match super::error::value_of(env, e) {
                    Some(v) => v,
                    None => {
                        let mut undefined = ptr::null_mut();
                        sys::napi_get_undefined(env, &mut undefined);
                        undefined
                    }
                };
                sys::napi_reject_deferred(env, deferred, value);
            }
        }
    }
    if let Some(hold) = hold {
        hold.finish(env);
    }
}

/// Run `work` on the core's runtime and hand JS a Promise of its outcome.
pub fn promise<T, F>(env: &Env, work: F) -> Result<JsPromise>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let runtime = runtime().ok_or_else(|| super::error::plain("toolnexus: the async runtime is not available"))?;
    let (pending, promise) = open_promise(env.raw(), true)?;
    let hold = pending.hold.clone();
    let sink = with_local(env.raw(), |l| l.warn.clone())?;
    let work = toolnexus_core::json::DeepStack::new(work);
    let work = toolnexus_core::warn::scope(sink, async move {
        let outcome = work.await;
        pending.settle(Box::new(move |env| match outcome {
            // SAFETY: a `Msg::Settle`'s settler runs only in `settle_now`, called by the
            // dispatcher's callback on the environment's thread, inside its scope.
            Ok(value) => unsafe { T::to_napi_value(env, value) },
            Err(e) => Err(e),
        }));
    });
    match hold {
        Some(hold) => runtime.spawn(HOLD.scope(hold, work)),
        None => runtime.spawn(work),
    };
    Ok(promise)
}

/// The addon's tokio runtime, for timers that must not hold the process up.
pub fn runtime_handle() -> Option<tokio::runtime::Handle> {
    runtime().map(|rt| rt.handle().clone())
}
