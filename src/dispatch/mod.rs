//! The one road back to JavaScript.
//!
//! Each Node environment gets a single threadsafe function, created on first use. Everything
//! the core's threads need from the JS thread travels through it as a message: settling a
//! Promise a native method returned, calling a JS callback, forgetting one. napi-rs's
//! `spawn_future` and per-callback threadsafe functions each cost a fresh threadsafe function
//! (and uv handle) per call; this keeps one for the life of the environment, so a crossing is
//! a queue push and, at most, one wake-up of the event loop.
//!
//! A JS callback is called as `fn(json, replyId)`. It answers at once by returning a string,
//! or later through `reply(replyId, json)` / `replyError(replyId, error)` (the JS side does that
//! for Promises), so no JS function is created per call.
//!
//! What keeps the process alive follows Node's own rule: work Node cannot see (the runtime
//! running a native method, a tool sent off the JS thread, a retry's back-off timer) holds the
//! threadsafe function referenced (`keep_up` / `keep_down`); a wait on JavaScript (a tool's
//! Promise, a hook, `waitFor`, an event the consumer has not taken) holds nothing, so a run
//! that can only finish when a Promise that never settles does, lets the process exit as a
//! plain `await` would.
//!
//! Nothing here touches a thread-local or a napi handle once its thread or environment is
//! being torn down (a worker ending, `process.exit`): what is still held then is forgotten,
//! not dropped.
//!
//! # Layout
//!
//! Each file uses only the ones listed before it:
//!
//! - `raw`: raw napi handles carried across threads (`Raw`), napi statuses as results.
//! - `arg`: values for JavaScript that may hold long strings (`Arg`, `Crossed`).
//! - `queue`: the queue's two ends (`Shared`, posting a `Msg`; `Local`, the JS-thread tables)
//!   and the holds on the process (`keep_up` / `keep_down`, `Hold`, `KeepAlive`).
//! - `error`: errors as JavaScript gets them (their class, cause and own fields), made on the
//!   environment's thread.
//! - `promise`: Promises a native method returns (`promise`), the runtime its work runs on.
//! - `executor`: the JS-thread executor (`local_promise`, drains, wakers).
//! - `calls`: calling JS functions (`JsFn`) and routing their late replies (`reply`).
//! - this file: the environment's life (made on first use, torn down by napi), the
//!   dispatcher's callback that hands each message to the file that sent it, `Home`, and
//!   `set_warn`.
//!
//! No edge runs the other way: the first use may come from any file, and making the local
//! half installs `deliver` (which knows every file) as the threadsafe function's callback, so
//! this file hands `create` to `queue` when the addon loads (`install_create`) rather than
//! `queue` importing it.

mod arg;
mod calls;
pub mod error;
mod executor;
mod promise;
mod queue;
mod raw;

use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, RwLock};

use napi::{sys, Env, Error, Result, Status};

pub use arg::{Arg, Crossed};
pub use calls::{reply, JsFn};
#[cfg(unix)]
pub(crate) use executor::wake_from_loop;
pub use executor::{local_promise, spawn_detached};
pub use promise::{promise, runtime_handle, JsPromise};
pub use queue::KeepAlive;

use queue::{is_home, keep_down, with_existing, with_local, Local, Msg, Shared, HERE, LOCAL};
use raw::{check, Raw};

/// Hand `create` to the queue when the addon loads, before any environment uses it.
#[napi_derive::module_init]
fn install_create() {
    queue::install(create);
}

/// The stack V8 allows this thread's JavaScript, in KiB: Node's `--stack-size` when the process
/// was started with one, else V8's default (984).
fn js_stack_kib(env: sys::napi_env) -> usize {
    let read = || -> Result<Vec<String>> {
        use napi::bindgen_prelude::JsObjectValue;
        let env = Env::from_raw(env);
        let process: napi::bindgen_prelude::Object = env.get_global()?.get_named_property("process")?;
        process.get_named_property("execArgv")
    };
    let args = read().unwrap_or_default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = match a.strip_prefix("--stack-size") {
            Some(rest) if rest.starts_with('=') => rest[1..].to_string(),
            Some("") => it.next().cloned().unwrap_or_default(),
            _ => continue,
        };
        if let Ok(kib) = value.trim().parse::<usize>() {
            return kib;
        }
    }
    984
}

/// Make this environment's dispatcher and local half (on the environment's thread).
fn create(env: sys::napi_env) -> Result<Local> {
    let shared = Arc::new(Shared { tsfn: RwLock::new(None) });
    let label = "toolnexus";
    let mut name = ptr::null_mut();
    // SAFETY: called on the environment's own thread (by `with_local`, whose callers all are)
    // with valid out-pointers; `label` outlives the call that copies it. The `Arc` leaked into
    // `finalize_data` is taken back once: by `finalize`, or here when napi made no function.
    unsafe {
        check(sys::napi_create_string_utf8(env, label.as_ptr().cast(), label.len() as isize, &mut name), "name")?;
        let finalize_data = Arc::into_raw(shared.clone()) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        let status = sys::napi_create_threadsafe_function(
            env,
            ptr::null_mut(),
            ptr::null_mut(),
            name,
            0,
            1,
            finalize_data,
            Some(finalize),
            ptr::null_mut(),
            Some(deliver),
            &mut tsfn,
        );
        if status != sys::Status::napi_ok {
            drop(Arc::from_raw(finalize_data as *const Shared));
            return Err(Error::new(Status::from(status), "toolnexus: creating the dispatcher failed".to_string()));
        }
        check(sys::napi_unref_threadsafe_function(env, tsfn), "unref")?;
        *shared.tsfn.write().unwrap_or_else(|p| p.into_inner()) = Some(Raw(tsfn));
        let mut resource = ptr::null_mut();
        let mut async_context = ptr::null_mut();
        check(sys::napi_create_object(env, &mut resource), "resource")?;
        check(sys::napi_async_init(env, resource, name, &mut async_context), "async context")?;
        HERE.with(|h| h.set((env, Arc::as_ptr(&shared))));
        queue::note_top();
        queue::set_js_stack_kib(js_stack_kib(env));
        toolnexus_core::host_thread::set_holder(|| {
            KeepAlive::here().map(|k| Box::new(k) as toolnexus_core::host_thread::Hold)
        });
        Ok(Local {
            env,
            tsfn,
            shared,
            fns: Vec::new(),
            free: Vec::new(),
            replies: HashMap::new(),
            next_reply: 0,
            keep: 0,
            tasks: Vec::new(),
            free_tasks: Vec::new(),
            async_context,
            warn: None,
        })
    }
}

/// The environment is going away: nothing may be posted any more.
///
/// # Safety
///
/// Only napi calls this, once, as the finalizer of the threadsafe function `create` made, on
/// the environment's thread, with the `data` `create` gave it.
unsafe extern "C" fn finalize(env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the `Arc` leaked in `create`, handed back exactly once.
    let shared = unsafe { Arc::from_raw(data as *const Shared) };
    *shared.tsfn.write().unwrap_or_else(|p| p.into_inner()) = None;
    let _ = HERE.try_with(|h| {
        if h.get().1 == Arc::as_ptr(&shared) {
            h.set((ptr::null_mut(), ptr::null()));
        }
    });
    // Dropping the local half drops the waiting reply senders (their callers see an error)
    // and the executor's tasks. It is taken out first and dropped with the table released,
    // since what a task owns may look at the table as it goes.
    let old = LOCAL
        .try_with(|cell| {
            let mut kept = cell.try_borrow_mut().ok()?;
            if kept.0.as_ref().is_some_and(|l| l.env == env || Arc::ptr_eq(&l.shared, &shared)) {
                kept.0.take()
            } else {
                None
            }
        })
        .ok()
        .flatten();
    drop(old);
}

/// The dispatcher's callback: each message goes to the file that sent it.
///
/// # Safety
///
/// Only napi calls this, as the callback of the threadsafe function `create` made: on the
/// environment's thread inside a scope where JavaScript may be called, with `data` an item
/// `Shared::post` queued, each item once; at teardown `env` is null and nothing may be called.
unsafe extern "C" fn deliver(env: sys::napi_env, _js: sys::napi_value, _context: *mut c_void, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    queue::note_top();
    // SAFETY: every item was boxed by `Shared::post`, and napi hands each over once.
    let msg = *unsafe { Box::from_raw(data as *mut Msg) };
    if env.is_null() {
        // The queue is being emptied at teardown; dropping the message is all that is left,
        // except a hold on the process, which would call napi: it goes with the environment.
        if let Msg::Call { transit, .. } = msg {
            std::mem::forget(transit);
        }
        return;
    }
    match msg {
        // SAFETY: on the environment's thread, on its own stack, inside the threadsafe
        // function's callback; `Pending` posts each deferred once, unsettled.
        Msg::Settle { deferred, settle, hold } => unsafe { promise::settle_now(env, deferred.0, settle, hold) },
        // SAFETY: on the environment's thread, on its own stack, inside the threadsafe
        // function's callback.
        Msg::Call { f, arg, reply, hold, transit } => {
            // SAFETY: as above.
            unsafe { calls::call_now(env, f, arg, reply, hold) };
            // The call is made (or could not be): what it waits for now holds the process.
            drop(transit);
        }
        Msg::Unkeep => {
            let _ = with_existing(env, |l| keep_down(env, l));
        }
        Msg::Poll { task } => executor::woken(env, task),
        Msg::Run(job) => job(),
        Msg::Release { f } => calls::release(env, f),
    }
}

/// An environment's thread, as seen from anywhere: whether the caller is on it, and a way to
/// run something there.
#[derive(Clone)]
pub struct Home {
    shared: Arc<Shared>,
    env: Raw<sys::napi_env>,
}

impl Home {
    /// The calling environment's home.
    pub fn of(env: &Env) -> Result<Home> {
        let shared = with_local(env.raw(), |l| l.shared.clone())?;
        Ok(Home { shared, env: Raw(env.raw()) })
    }

    /// The caller is on this environment's thread.
    pub fn here(&self) -> bool {
        is_home(&self.shared)
    }

    /// The environment (only to be used on its thread).
    pub fn env(&self) -> sys::napi_env {
        self.env.0
    }

    /// Run `job` on the environment's thread; `false` when the environment is gone.
    pub fn run_there(&self, job: Box<dyn FnOnce() + Send>) -> bool {
        self.shared.post(Msg::Run(job)).is_ok()
    }
}

/// Send this environment's warnings to `f` (a function that hands its text to `console.warn`):
/// those raised on its thread, and those of the work its native methods start.
pub fn set_warn(env: &Env, f: JsFn) -> Result<()> {
    let f = Arc::new(f);
    let sink: toolnexus_core::warn::Sink = Arc::new(move |text: &str| f.notify_now(text.to_string()));
    with_local(env.raw(), |l| l.warn = Some(sink.clone()))?;
    toolnexus_core::warn::set_thread_sink(Some(sink));
    Ok(())
}
