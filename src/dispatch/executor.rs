//! The JS-thread executor.
//!
//! A client run is polled here, on the JS thread, rather than on the runtime: its sockets are
//! watched by libuv (see `uvio`), its JS callbacks are called in place, and its Promise is
//! settled in place, so a run is woken by the event loop that is already waiting, as a run of
//! plain JavaScript is, instead of hopping between threads at every step. Timers and work on
//! the runtime (other tools, DNS) wake it through the dispatcher.
//!
//! A drain polls every ready task of the thread; it runs inside a scope where JavaScript may
//! be called: the dispatcher's callback, a call from JavaScript (`reply`, or the call that
//! starts a task: `local_promise`), or the scopes `drain_from_loop` opens.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::ptr;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use napi::bindgen_prelude::ToNapiValue;
use napi::{sys, Env, Result};

use super::promise::{open_promise, runtime, settle_now, JsPromise};
use super::queue::{is_home, keep_down, keep_up, with_existing, with_local, Msg, Shared, Slot, HERE};

thread_local! {
    /// Tasks of this thread's executor waiting for a poll.
    pub(super) static READY: RefCell<VecDeque<u32>> = const { RefCell::new(VecDeque::new()) };
    /// A drain is under way on this thread: wake-ups only queue.
    pub(super) static DRAINING: Cell<bool> = const { Cell::new(false) };
    /// A drain has been asked of the dispatcher and not yet run.
    static POKED: Cell<bool> = const { Cell::new(false) };
    /// A drain follows on this thread before control goes back to the event loop: wake-ups
    /// only queue, as they do during one (see `wake_then_drain`).
    static DRAIN_FOLLOWS: Cell<bool> = const { Cell::new(false) };
}

/// Wakes one task: queued directly when woken on its own thread, posted otherwise.
struct TaskWaker {
    task: u32,
    shared: Arc<Shared>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !is_home(&self.shared) {
            let _ = self.shared.post(Msg::Poll { task: self.task });
            return;
        }
        let queued = READY.try_with(|r| r.borrow_mut().push_back(self.task)).is_ok();
        let drain_comes =
            DRAINING.try_with(Cell::get).unwrap_or(true) || DRAIN_FOLLOWS.try_with(Cell::get).unwrap_or(true);
        if queued && !drain_comes {
            poke(&self.shared);
        }
    }
}

/// Ask the dispatcher for a drain on the next turn of the event loop (once). Called on the
/// environment's thread. A task that is ready to run holds the process until it has run (a
/// run just started, one woken by its abort signal), as a queued callback of Node's would.
fn poke(shared: &Shared) {
    if POKED.try_with(|p| p.replace(true)).unwrap_or(true) {
        return;
    }
    let env = HERE.try_with(Cell::get).map(|(env, _)| env).unwrap_or(ptr::null_mut());
    let _ = with_existing(env, |l| keep_up(env, l));
    if shared.post(Msg::Poll { task: u32::MAX }).is_err() {
        let _ = POKED.try_with(|p| p.set(false));
        let _ = with_existing(env, |l| keep_down(env, l));
    }
}

/// A `Msg::Poll` has arrived: queue its task (or, for a poke, give back the poke's hold), then
/// drain. On the environment's thread, in the dispatcher's callback.
pub(super) fn woken(env: sys::napi_env, task: u32) {
    if task == u32::MAX {
        let _ = POKED.try_with(|p| p.set(false));
        let _ = with_existing(env, |l| keep_down(env, l));
    } else {
        let _ = READY.try_with(|r| r.borrow_mut().push_back(task));
    }
    drain(env);
}

/// Poll every ready task of this thread until none is left.
pub(super) fn drain(env: sys::napi_env) {
    if DRAINING.try_with(|d| d.replace(true)).unwrap_or(true) {
        return;
    }
    let _enter = runtime().map(|rt| rt.enter());
    toolnexus_core::host_thread::polling_on_host(|| {
        while let Some(task) = READY.try_with(|r| r.borrow_mut().pop_front()).ok().flatten() {
            poll_task(env, task);
        }
    });
    let _ = DRAINING.try_with(|d| d.set(false));
}

/// Poll one task once, if it is parked (not finished, nor being polled further up this stack).
/// Inside a drain.
fn poll_task(env: sys::napi_env, task: u32) {
    let taken = with_local(env, |l| match l.tasks.get_mut(task as usize) {
        Some(slot @ Slot::Parked(..)) => match std::mem::replace(slot, Slot::Busy) {
            Slot::Parked(fut, waker) => Some((fut, waker)),
            _ => None,
        },
        _ => None,
    });
    let Ok(Some((mut fut, waker))) = taken else { return };
    let mut cx = Context::from_waker(&waker);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(&mut cx)));
    let finished = !matches!(outcome, Ok(Poll::Pending));
    // A finished task is dropped here, outside the local state.
    let parked = if finished {
        drop(fut);
        None
    } else {
        Some((fut, waker))
    };
    let _ = with_local(env, |l| {
        if let Some(slot) = l.tasks.get_mut(task as usize) {
            match parked {
                Some((fut, waker)) => *slot = Slot::Parked(fut, waker),
                None => {
                    *slot = Slot::Free;
                    l.free_tasks.push(task);
                }
            }
        }
    });
}

/// Run `wake` (which wakes tasks of this thread) knowing that a drain follows at once, so its
/// wake-ups only queue instead of each asking the dispatcher for a drain of its own (a message
/// through the threadsafe function and one more turn of the loop). The caller drains next.
pub(super) fn wake_then_drain<R>(wake: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = DRAIN_FOLLOWS.try_with(|f| f.set(self.0));
        }
    }
    let _restore = Restore(DRAIN_FOLLOWS.try_with(|f| f.replace(true)).unwrap_or(false));
    wake()
}

/// A socket became ready: `wake` wakes its waiters (and says whether it woke any), then the
/// tasks it woke are polled at once, inside a handle scope and a callback scope, so Promise
/// reactions and `process.nextTick` callbacks run when it ends. `env` must be the environment
/// of the calling thread, and no scope of it may be open (`uvio` calls this only from a poll
/// handle's callback).
#[cfg_attr(not(unix), allow(dead_code))] // called only by `uvio`, which is Unix only
pub(crate) fn wake_from_loop(env: sys::napi_env, wake: impl FnOnce() -> bool) {
    if !wake_then_drain(wake) {
        return;
    }
    if !drain_from_loop(env) {
        // No scope could be opened: the woken tasks wait for the dispatcher's drain instead.
        if let Ok(shared) = with_local(env, |l| l.shared.clone()) {
            poke(&shared);
        }
    }
}

/// Whether the drain ran (see `wake_from_loop`).
fn drain_from_loop(env: sys::napi_env) -> bool {
    let Ok(context) = with_local(env, |l| l.async_context) else { return false };
    // SAFETY: reached only from `wake_from_loop`, in a poll handle's callback, which libuv
    // runs on the environment's thread with no scope of it open; `env` is the environment
    // whose loop watches that handle, and `context` was made for it in `create`. Each scope
    // opened here is closed before returning, innermost first.
    unsafe {
        let mut handles = ptr::null_mut();
        if sys::napi_open_handle_scope(env, &mut handles) != sys::Status::napi_ok {
            return false;
        }
        let mut resource = ptr::null_mut();
        let mut scope = ptr::null_mut();
        let opened = sys::napi_create_object(env, &mut resource) == sys::Status::napi_ok
            && sys::napi_open_callback_scope(env, resource, context, &mut scope) == sys::Status::napi_ok;
        drain(env);
        if opened {
            sys::napi_close_callback_scope(env, scope);
        }
        sys::napi_close_handle_scope(env, handles);
    }
    true
}

/// Poll `work` on this JS thread and hand JS a Promise of its outcome. The first poll happens
/// inside the caller's own call, as an async function of JavaScript runs until its first
/// `await`: a run's first hook and its first request start there, as in the reference.
pub fn local_promise<T, F>(env: &Env, work: F) -> Result<JsPromise>
where
    T: ToNapiValue + 'static,
    F: Future<Output = Result<T>> + 'static,
{
    let raw = env.raw();
    // A run polled here holds nothing by itself: what it waits on does (see `KeepAlive`).
    let (pending, promise) = open_promise(raw, false)?;
    // The work runs (and is dropped) with room for the deepest value seen; settling, which
    // calls into V8, stays on the thread's own stack.
    let work = toolnexus_core::json::DeepStack::new(work);
    let fut = async move {
        let outcome = work.await;
        let mut pending = pending;
        if let Some(deferred) = pending.deferred.take() {
            // SAFETY: this future is polled only by `drain`, on the environment's thread, inside
            // a scope, and on the thread's own stack; the settler's conversion runs there too.
            // `deferred` was made by `open_promise` for `raw`, and taking it out of `pending`
            // leaves nothing else to settle it.
            unsafe {
                settle_now(
                    raw,
                    deferred.0,
                    move |env| match outcome {
                        Ok(value) => T::to_napi_value(env, value),
                        Err(e) => Err(e),
                    },
                    None,
                )
            };
        }
    };
    park(raw, fut, First::Now)?;
    Ok(promise)
}

/// Poll `work` on this JS thread, detached: nothing waits for its outcome. The first poll
/// happens on the next turn of the event loop.
pub fn spawn_detached<F>(env: sys::napi_env, work: F) -> Result<()>
where
    F: Future<Output = ()> + 'static,
{
    park(env, toolnexus_core::json::DeepStack::new(work), First::NextTurn)
}

/// When a new task is first polled.
enum First {
    /// In a drain asked of the dispatcher: on the next turn of the event loop.
    NextTurn,
    /// Now: in a drain of its own, or, when the caller is itself polled by a drain (a hook
    /// that starts a run), right there, as the caller's call from JavaScript may call
    /// JavaScript. Only from a call from JavaScript, on the thread's own stack.
    Now,
}

/// Put `fut` in a free task slot of this thread's executor and have it polled (see [`First`]).
fn park(env: sys::napi_env, fut: impl Future<Output = ()> + 'static, first: First) -> Result<()> {
    let (task, shared) = with_local(env, |l| {
        let task = match l.free_tasks.pop() {
            Some(t) => t,
            None => {
                l.tasks.push(Slot::Free);
                (l.tasks.len() - 1) as u32
            }
        };
        let waker = Waker::from(Arc::new(TaskWaker { task, shared: l.shared.clone() }));
        if let Some(slot) = l.tasks.get_mut(task as usize) {
            *slot = Slot::Parked(Box::pin(fut), waker);
        }
        (task, l.shared.clone())
    })?;
    if matches!(first, First::Now) && DRAINING.try_with(Cell::get).unwrap_or(false) {
        poll_task(env, task);
        return Ok(());
    }
    let _ = READY.try_with(|r| r.borrow_mut().push_back(task));
    match first {
        First::Now => drain(env),
        First::NextTurn => poke(&shared),
    }
    Ok(())
}
