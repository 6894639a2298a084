//! How this environment's LLM requests reach the network: the per-thread fetcher over the event
//! loop's sockets, the per-thread bridge to `globalThis.fetch` (`setGlobalFetch`), each dropped by
//! an environment cleanup hook, and `SeamTransport`, which picks between the two per request.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
#[cfg(unix)]
use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::seams::HostTransport;
use toolnexus_core::client::{HttpRequest, HttpResponse, StreamResponse, Transport};
#[cfg(unix)]
use toolnexus_core::fetch::Fetcher;

use crate::bridge::{JsCallback, JsonFn};

#[cfg(unix)]
thread_local! {
    /// This environment's fetcher: one connection pool per origin for every client made here,
    /// as Node's global dispatcher is one per environment. The environment's cleanup hook
    /// drops it; the thread's own end never does (by then its handles are gone).
    static FETCHER: std::cell::RefCell<std::mem::ManuallyDrop<Option<Fetcher>>> =
        const { std::cell::RefCell::new(std::mem::ManuallyDrop::new(None)) };
}

#[cfg(unix)]
/// The environment cleanup hook that drops this thread's fetcher.
///
/// # Safety
/// Node calls it on the environment's own thread while that environment is torn down; it
/// touches only this thread's slot and ignores `_arg`.
unsafe extern "C" fn drop_fetcher(_arg: *mut std::ffi::c_void) {
    let old = FETCHER.try_with(|f| f.borrow_mut().take());
    drop(old);
}

thread_local! {
    /// This environment's bridge to `globalThis.fetch` (see `setGlobalFetch`), read at the time
    /// of each request. Dropped by the environment's cleanup hook, never by the thread's end.
    static GLOBAL_FETCH: std::cell::RefCell<std::mem::ManuallyDrop<Option<Arc<dyn Transport>>>> =
        const { std::cell::RefCell::new(std::mem::ManuallyDrop::new(None)) };
}

/// The environment cleanup hook that drops this thread's bridge to `globalThis.fetch`.
///
/// # Safety
/// Node calls it on the environment's own thread while that environment is torn down; it
/// touches only this thread's slot and ignores `_arg`.
#[cfg_attr(test, allow(dead_code))]
unsafe extern "C" fn drop_global_fetch(_arg: *mut std::ffi::c_void) {
    let old = GLOBAL_FETCH.try_with(|f| f.borrow_mut().take());
    drop(old);
}

/// `setGlobalFetch(fn)`: how this environment reaches `globalThis.fetch` (a `fetch`-option
/// bridge over it). A run whose caller found the user's own seam in place (a replaced
/// `globalThis.fetch`, an undici global dispatcher, Node's env proxy) sends its LLM requests
/// through it instead of the built-in HTTP.
#[napi(js_name = "setGlobalFetch")]
#[cfg_attr(test, allow(dead_code))]
pub fn set_global_fetch(env: &Env, f: JsonFn) -> Result<()> {
    let transport = Arc::new(HostTransport::new(Arc::new(JsCallback(f)))) as Arc<dyn Transport>;
    let first = GLOBAL_FETCH.try_with(|g| g.borrow().is_none()).unwrap_or(false);
    if first {
        // SAFETY: on the environment's thread, with a hook that only touches this thread's slot.
        let status =
            unsafe { napi::sys::napi_add_env_cleanup_hook(env.raw(), Some(drop_global_fetch), std::ptr::null_mut()) };
        if status != napi::sys::Status::napi_ok {
            return Err(crate::dispatch::error::plain("toolnexus: could not register the environment's cleanup"));
        }
    }
    let _ = GLOBAL_FETCH.try_with(|g| **g.borrow_mut() = Some(transport));
    Ok(())
}

/// The transport a run goes through when its caller asks for the user's seam, if set.
pub(crate) fn global_fetch() -> Option<Arc<dyn Transport>> {
    GLOBAL_FETCH.try_with(|g| (**g.borrow()).clone()).ok().flatten()
}

/// The built-in HTTP of something that runs many turns over time (the agent runtime): its
/// owner says, whenever JavaScript calls it, whether the user's seam is in place; each
/// request then goes through `globalThis.fetch` or the built-in HTTP accordingly.
pub(crate) struct SeamTransport {
    own: Arc<dyn Transport>,
    pub(crate) seam: Arc<std::sync::atomic::AtomicBool>,
}

impl SeamTransport {
    pub(crate) fn new(own: Arc<dyn Transport>) -> Self {
        SeamTransport { own, seam: Arc::default() }
    }

    fn pick(&self) -> Arc<dyn Transport> {
        if self.seam.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(t) = global_fetch() {
                return t;
            }
        }
        self.own.clone()
    }
}

#[async_trait::async_trait]
impl Transport for SeamTransport {
    async fn post(&self, req: HttpRequest) -> std::result::Result<HttpResponse, toolnexus_core::Error> {
        self.pick().post(req).await
    }

    async fn post_stream(&self, req: HttpRequest) -> std::result::Result<StreamResponse, toolnexus_core::Error> {
        self.pick().post_stream(req).await
    }
}

#[cfg(unix)]
/// The environment's fetcher over sockets its event loop watches; `None` where libuv cannot
/// be reached (the client then uses the core's own, on its runtime).
fn env_fetcher(env: &Env) -> Option<Fetcher> {
    if let Some(f) = FETCHER.try_with(|f| (**f.borrow()).clone()).ok().flatten() {
        return Some(f);
    }
    let connect = crate::uvio::UvConnect::new(env)?;
    // Node's fetch decodes zstd from Node 24 on.
    let zstd = env.get_node_version().map(|v| v.major >= 24).unwrap_or(false);
    let options = toolnexus_core::fetch::Options { zstd, ..Default::default() };
    let fetcher = Fetcher::with_options(connect, options);
    // SAFETY: on the environment's thread, with a hook that only touches this thread's slot.
    let status = unsafe { napi::sys::napi_add_env_cleanup_hook(env.raw(), Some(drop_fetcher), std::ptr::null_mut()) };
    if status == napi::sys::Status::napi_ok {
        let _ = FETCHER.try_with(|f| **f.borrow_mut() = Some(fetcher.clone()));
    }
    Some(fetcher)
}

/// The built-in HTTP transport: on Unix, over sockets the environment's event loop watches
/// (`uvio`), when libuv can be reached. `None` (elsewhere, or without libuv) leaves the core's
/// own client, on its runtime.
#[cfg(unix)]
pub(crate) fn event_loop_transport(env: &Env) -> Option<Arc<dyn Transport>> {
    env_fetcher(env).map(|f| Arc::new(FetchTransport::new(f)) as Arc<dyn Transport>)
}

/// No event-loop sockets off Unix: the core's own client, on its runtime.
#[cfg(not(unix))]
pub(crate) fn event_loop_transport(_env: &Env) -> Option<Arc<dyn Transport>> {
    None
}
