//! Calling JavaScript functions held for the core, and routing their late replies.
//!
//! A JS function is called as `fn(json, replyId)`. It answers at once by returning a string,
//! or later through `reply(replyId, json)` / `replyError(replyId, error)` (the JS side does that
//! for Promises), so no JS function is created per call. A call is made in place when the
//! caller is already where JavaScript may be called (a drain on the environment's thread), and
//! through the queue otherwise.

use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

use napi::bindgen_prelude::{FromNapiValue, TypeName, Unknown, ValidateNapiValue};
use napi::{sys, Env, Error, Result, Status, ValueType};
use tokio::sync::oneshot;

use super::arg::{arg_value, Arg};
use super::executor::{drain, wake_then_drain, DRAINING, READY};
use super::promise::HOLD;
use super::queue::{home_env, stack_allows_js, with_existing, with_local, Hold, KeepAlive, Msg, Reply, Shared};
use super::raw::check;

/// A JS function held for the core: callable from any thread, released when dropped.
pub struct JsFn {
    f: u32,
    shared: Arc<Shared>,
}

impl JsFn {
    /// Call with a JSON argument (or a value in pieces); resolves with the callback's answer.
    pub async fn call(&self, arg: impl Into<Arg>) -> Reply {
        let arg = arg.into();
        let (tx, rx) = oneshot::channel();
        if let Some(env) = self.callable_here() {
            // Polled by this environment's executor: call JavaScript right here.
            // SAFETY: `callable_here` found this to be the environment's thread, inside a
            // drain (which runs in a scope where JavaScript may be called), on its own stack.
            unsafe { call_now(env, self.f, arg, Some(tx), None) };
            return rx.await.unwrap_or_else(|_| Err(gone()));
        }
        let hold = HOLD.try_with(Arc::clone).ok();
        // On the environment's own thread (a grown stack), nothing else may be keeping the
        // loop turning until the call is made.
        let transit = if hold.is_none() { KeepAlive::here() } else { None };
        if self.shared.post(Msg::Call { f: self.f, arg, reply: Some(tx), hold, transit }).is_err() {
            return Err(gone());
        }
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// The environment, when this is its thread and a drain is under way (so JavaScript may
    /// be called now, inside a scope napi or the drain opened).
    fn callable_here(&self) -> Option<sys::napi_env> {
        // Not where V8 could not take the call (see `stack_allows_js`).
        if !DRAINING.try_with(Cell::get).unwrap_or(false) || !stack_allows_js() {
            return None;
        }
        home_env(&self.shared)
    }

    /// Call right now and take the answer the function returned synchronously: only on the
    /// environment's thread, inside a call from JavaScript or a drain. `None` elsewhere, or
    /// when the function answered with a Promise.
    pub fn call_sync(&self, arg: String) -> Option<Reply> {
        let env = home_env(&self.shared).filter(|_| stack_allows_js())?;
        let (tx, mut rx) = oneshot::channel();
        // SAFETY: on the environment's thread, on its own stack; the addon only runs there
        // inside a call from JavaScript, a drain or the dispatcher's callback, where JavaScript
        // may be called.
        unsafe { call_now(env, self.f, Arg::Text(arg), Some(tx), None) };
        rx.try_recv().ok()
    }

    /// Call without waiting for an answer.
    pub fn notify(&self, arg: String) {
        let _ = self.shared.post(Msg::Call { f: self.f, arg: Arg::Text(arg), reply: None, hold: None, transit: None });
    }

    /// Call without waiting for an answer: right away when on the environment's thread (the
    /// addon only runs there inside a call from JavaScript, a drain or the dispatcher's own
    /// callback, where JavaScript may be called), through the dispatcher otherwise.
    pub fn notify_now(&self, arg: String) {
        match home_env(&self.shared).filter(|_| stack_allows_js()) {
            // SAFETY: on the environment's thread, on its own stack, inside one of the scopes
            // listed above.
            Some(env) => unsafe { call_now(env, self.f, Arg::Text(arg), None, None) },
            None => self.notify(arg),
        }
    }
}

fn gone() -> Error {
    super::error::plain("toolnexus: the JavaScript environment is shutting down")
}

impl Drop for JsFn {
    fn drop(&mut self) {
        let _ = self.shared.post(Msg::Release { f: self.f });
    }
}

impl TypeName for JsFn {
    fn type_name() -> &'static str {
        "Function"
    }
    fn value_type() -> ValueType {
        ValueType::Function
    }
}

impl ValidateNapiValue for JsFn {}

impl FromNapiValue for JsFn {
    /// # Safety
    ///
    /// `FromNapiValue`'s contract: called on the environment's thread, inside its scope, with
    /// `value` a live value of that environment.
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let mut kind = 0;
        // SAFETY: called by napi-rs on the environment's thread with a live value.
        unsafe { check(sys::napi_typeof(env, value, &mut kind), "typeof")? };
        if ValueType::from(kind) != ValueType::Function {
            return Err(Error::new(Status::InvalidArg, "expected a function".to_string()));
        }
        let mut r = ptr::null_mut();
        // SAFETY: as above; `value` is the live function napi-rs handed over.
        unsafe { check(sys::napi_create_reference(env, value, 1, &mut r), "holding a callback")? };
        with_local(env, |l| {
            let f = match l.free.pop() {
                Some(f) if (f as usize) < l.fns.len() => {
                    l.fns[f as usize] = r;
                    f
                }
                _ => {
                    l.fns.push(r);
                    (l.fns.len() - 1) as u32
                }
            };
            JsFn { f, shared: l.shared.clone() }
        })
    }
}

/// A `Msg::Release` has arrived: let go of function `f`. On the environment's thread.
pub(super) fn release(env: sys::napi_env, f: u32) {
    let _ = with_existing(env, |l| {
        if let Some(r) = l.fns.get_mut(f as usize) {
            if !r.is_null() {
                // SAFETY: `with_existing` found `l` for `env` in this thread's `LOCAL`, so this
                // is the environment's thread; the reference was made for `env` (in
                // `from_napi_value`), and nulling it here deletes it only once.
                unsafe { sys::napi_delete_reference(env, *r) };
                *r = ptr::null_mut();
                l.free.push(f);
            }
        }
    });
}

/// Call function `f` with `arg` now; its answer goes to `reply` (at once, or when JavaScript
/// calls `reply` with the id it was given).
///
/// # Safety
///
/// On `env`'s thread, on that thread's own stack, inside a scope where JavaScript may be
/// called (the dispatcher's callback, a call from JavaScript, or a drain within one of those).
pub(super) unsafe fn call_now(
    env: sys::napi_env,
    f: u32,
    arg: Arg,
    reply: Option<oneshot::Sender<Reply>>,
    hold: Option<Arc<Hold>>,
) {
    // Look the function up and park the reply slot, then let go of the local state before
    // JavaScript runs: the callback may call back into the addon.
    let found = with_existing(env, |l| {
        let r = *l.fns.get(f as usize).filter(|r| !r.is_null())?;
        let mut func = ptr::null_mut();
        // SAFETY: a live (non-null, not yet deleted) reference of this env, on its thread.
        if unsafe { sys::napi_get_reference_value(env, r, &mut func) } != sys::Status::napi_ok || func.is_null() {
            return None;
        }
        let id = l.next_reply;
        l.next_reply = l.next_reply.wrapping_add(1);
        if let Some(tx) = reply {
            l.replies.insert(id, (tx, hold.clone()));
        }
        Some((func, id))
    })
    .flatten();
    let Some((func, id)) = found else {
        // Without the local state the sender was dropped with the closure: the caller sees an error.
        return;
    };
    // SAFETY: on the environment's thread inside a scope (the caller's contract), with `func`
    // just read from a live reference of this environment.
    let result = unsafe { invoke(env, func, &arg, id) };
    let answer = match result {
        Invoked::Later => {
            // Now waiting on JavaScript: whatever that Promise waits for keeps the process
            // alive, or nothing does (as for a plain `await`).
            if let Some(hold) = hold {
                hold.release(env);
            }
            return;
        }
        Invoked::Now(r) => r,
    };
    if let Some((tx, _)) = take_reply(env, id) {
        let _ = tx.send(answer);
    }
}

enum Invoked {
    Now(Reply),
    Later,
}

/// # Safety
///
/// On `env`'s thread inside a scope where JavaScript may be called, with `func` a live value
/// of `env`.
unsafe fn invoke(env: sys::napi_env, func: sys::napi_value, arg: &Arg, id: u32) -> Invoked {
    // SAFETY: the caller is on the environment's thread inside a scope where JavaScript may be
    // called; every out-pointer below is a local of this frame, and each value is read only
    // after napi has made it (`exception` after a pending exception, `ret` after a call that
    // succeeded).
    unsafe {
        let mut args = [ptr::null_mut(); 3];
        args[0] = match arg_value(env, arg) {
            Ok(v) => v,
            Err(e) => return Invoked::Now(Err(e)),
        };
        if sys::napi_create_uint32(env, id, &mut args[1]) != sys::Status::napi_ok {
            return Invoked::Now(Err(super::error::plain("toolnexus: could not pass a value to a callback")));
        }
        // A third argument, `true`, only for a value the callback may change in place.
        let argc = match arg {
            Arg::InPlace(_) if sys::napi_get_boolean(env, true, &mut args[2]) == sys::Status::napi_ok => 3,
            _ => 2,
        };
        let mut recv = ptr::null_mut();
        sys::napi_get_undefined(env, &mut recv);
        let mut ret = ptr::null_mut();
        let status = sys::napi_call_function(env, recv, func, argc, args.as_ptr(), &mut ret);
        if status == sys::Status::napi_pending_exception {
            let mut exception = ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env, &mut exception);
            let mut e = Error::from_unknown_without_coercion(Unknown::from_raw_unchecked(env, exception));
            e.status = Status::PendingException;
            return Invoked::Now(Err(e));
        }
        if status != sys::Status::napi_ok {
            return Invoked::Now(Err(Error::new(
                Status::from(status),
                "toolnexus: calling a callback failed".to_string(),
            )));
        }
        let mut kind = 0;
        sys::napi_typeof(env, ret, &mut kind);
        match ValueType::from(kind) {
            ValueType::Undefined => Invoked::Later,
            ValueType::String => Invoked::Now(<String as FromNapiValue>::from_napi_value(env, ret)),
            _ => Invoked::Now(Err(super::error::plain("toolnexus: a bridged callback must answer with a JSON string"))),
        }
    }
}

fn take_reply(env: sys::napi_env, id: u32) -> Option<(oneshot::Sender<Reply>, Option<Arc<Hold>>)> {
    with_existing(env, |l| l.replies.remove(&id)).flatten()
}

/// `reply(id, json)` from JS: a callback's late answer.
pub fn reply(env: &Env, id: u32, answer: Reply) {
    if let Some((tx, hold)) = take_reply(env.raw(), id) {
        // The work goes on off this thread again: hold the process for it first.
        if let Some(hold) = hold {
            hold.retake(env.raw());
        }
        // The drain below polls what this wakes.
        let _ = wake_then_drain(|| tx.send(answer));
    }
    // The answer may have woken a task of this thread: carry on with it now, still inside
    // the JS call (its microtasks follow as usual).
    if READY.try_with(|r| !r.borrow().is_empty()).unwrap_or(false) {
        drain(env.raw());
    }
}
