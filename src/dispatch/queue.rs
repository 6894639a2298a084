//! The queue to the JS thread and its two ends, and the holds on the process.
//!
//! `Shared` is the end anyone may post to: the environment's one threadsafe function, `None`
//! once the environment has torn it down. `Local` is the JS-thread end: it lives in a
//! thread-local of the environment's thread alone and holds the tables the other modules work
//! (the JS functions held for the core and their waiting replies, the executor's tasks).
//!
//! The threadsafe function is referenced while the process must stay up for work Node cannot
//! see (`keep_up` / `keep_down`): a `KeepAlive` for as long as it lives, a `Hold` for a native
//! method's Promise less the time its work waits on JavaScript.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::task::Waker;

use napi::{sys, Error, Result};
use tokio::sync::oneshot;

use super::arg::Arg;
use super::raw::Raw;

/// What a JS callback answered: its JSON text, or what it threw / rejected with.
pub type Reply = Result<String>;

/// Makes the value a Promise settles with, on the environment's thread.
pub(super) type Settler = Box<dyn FnOnce(sys::napi_env) -> Result<sys::napi_value> + Send>;

/// What travels through the threadsafe function to the JS thread.
pub(super) enum Msg {
    /// Settle a native method's Promise (see `promise`).
    Settle { deferred: Raw<sys::napi_deferred>, settle: Settler, hold: Option<Arc<Hold>> },
    /// Call a JS function held for the core (see `calls`).
    ///
    /// `transit` holds the process until the call is made, for a call posted from the
    /// environment's own thread (from a stack grown for a deep value, where V8 may not be
    /// entered) by work that holds nothing else: the call must not be lost because the loop
    /// ran out of other things to wait for first.
    Call {
        f: u32,
        arg: Arg,
        reply: Option<oneshot::Sender<Reply>>,
        hold: Option<Arc<Hold>>,
        transit: Option<KeepAlive>,
    },
    /// A `KeepAlive` dropped off its thread.
    Unkeep,
    /// A `JsFn` dropped: let go of its function.
    Release { f: u32 },
    /// A task of the JS-thread executor was woken elsewhere (`u32::MAX`: just drain).
    Poll { task: u32 },
    /// Work that must happen on the JS thread (closing a socket handle).
    #[cfg_attr(not(unix), allow(dead_code))] // sent only by `uvio`, which is Unix only
    Run(Box<dyn FnOnce() + Send>),
}

/// The thread-safe half: anyone may post; `None` once the environment has torn it down.
pub(super) struct Shared {
    pub(super) tsfn: RwLock<Option<Raw<sys::napi_threadsafe_function>>>,
}

impl Shared {
    /// Queue `msg` for the environment's thread; handed back when the environment is gone.
    pub(super) fn post(&self, msg: Msg) -> std::result::Result<(), Msg> {
        let guard = self.tsfn.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(tsfn) = *guard else { return Err(msg) };
        let data = Box::into_raw(Box::new(msg));
        // SAFETY: the read guard keeps the finalizer (which takes the write lock) from
        // invalidating the handle during the call. On success napi owns `data` and hands it
        // to the dispatcher's callback exactly once, which unboxes it.
        let status = unsafe {
            sys::napi_call_threadsafe_function(tsfn.0, data.cast(), sys::ThreadsafeFunctionCallMode::nonblocking)
        };
        if status == sys::Status::napi_ok {
            Ok(())
        } else {
            // SAFETY: napi refused the item, so ownership never left this function.
            Err(*unsafe { Box::from_raw(data) })
        }
    }
}

/// The JS-thread half.
pub(super) struct Local {
    pub(super) env: sys::napi_env,
    pub(super) tsfn: sys::napi_threadsafe_function,
    pub(super) shared: Arc<Shared>,
    /// The JS functions held for the core (`JsFn`), by index; null where released.
    pub(super) fns: Vec<sys::napi_ref>,
    pub(super) free: Vec<u32>,
    /// Calls waiting for a late `reply`, by reply id.
    pub(super) replies: HashMap<u32, (oneshot::Sender<Reply>, Option<Arc<Hold>>)>,
    pub(super) next_reply: u32,
    /// Holds on the process (see `keep_up`): the threadsafe function is referenced while > 0.
    pub(super) keep: usize,
    /// The executor's tasks, by index.
    pub(super) tasks: Vec<Slot>,
    pub(super) free_tasks: Vec<u32>,
    /// For callback scopes opened around drains that libuv starts (socket readiness).
    #[cfg_attr(not(unix), allow(dead_code))] // read only by `drain_from_loop`
    pub(super) async_context: sys::napi_async_context,
    /// Where this environment's warnings go (`console.warn`, see `set_warn`).
    pub(super) warn: Option<toolnexus_core::warn::Sink>,
}

/// A task of the JS-thread executor.
pub(super) enum Slot {
    Free,
    /// Being polled right now (taken out of the table meanwhile).
    Busy,
    Parked(Pin<Box<dyn Future<Output = ()>>>, Waker),
}

/// The thread-local home of an environment's local half. The environment's teardown takes
/// the local half out and drops it while everything is still alive (`finalize`). Whatever is
/// still here when the thread itself ends (the main thread inside `exit()`, after
/// `process.exit`) is forgotten: dropping it would run futures' destructors that reach
/// thread-locals already destroyed, which aborts the process.
pub(super) struct Kept(pub(super) Option<Local>);

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(local) = self.0.take() {
            std::mem::forget(local);
        }
    }
}

thread_local! {
    pub(super) static LOCAL: RefCell<Kept> = const { RefCell::new(Kept(None)) };
    /// This thread's environment and dispatcher, for telling "here" from "elsewhere" cheaply.
    pub(super) static HERE: Cell<(sys::napi_env, *const Shared)> = const { Cell::new((ptr::null_mut(), ptr::null())) };
}

/// How an environment's local half is made. Making one installs the message router, which
/// knows every concern of the dispatcher, so `mod.rs` hands its `create` in when the addon
/// loads (`install`) instead of this file importing it.
static MAKE: std::sync::OnceLock<fn(sys::napi_env) -> Result<Local>> = std::sync::OnceLock::new();

/// Set how a local half is made (once, when the addon loads).
pub(super) fn install(make: fn(sys::napi_env) -> Result<Local>) {
    let _ = MAKE.set(make);
}

/// Run `f` on this environment's local half, creating it on first use.
pub(super) fn with_local<R>(env: sys::napi_env, f: impl FnOnce(&mut Local) -> R) -> Result<R> {
    let unavailable = || Error::from_reason("toolnexus: dispatcher unavailable");
    LOCAL
        .try_with(|cell| {
            let mut kept = cell.try_borrow_mut().map_err(|_| unavailable())?;
            let slot = &mut kept.0;
            if slot.as_ref().is_none_or(|l| l.env != env) {
                let make = MAKE.get().ok_or_else(unavailable)?;
                *slot = Some(make(env)?);
            }
            match slot.as_mut() {
                Some(local) => Ok(f(local)),
                None => Err(unavailable()),
            }
        })
        .unwrap_or_else(|_| Err(unavailable()))
}

/// Run `f` on this thread's local half if it belongs to `env`; `None` when there is none,
/// when it is borrowed, or when the thread is being torn down. Never creates one.
pub(super) fn with_existing<R>(env: sys::napi_env, f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    LOCAL
        .try_with(|cell| {
            let mut kept = cell.try_borrow_mut().ok()?;
            kept.0.as_mut().filter(|l| l.env == env).map(f)
        })
        .ok()
        .flatten()
}

thread_local! {
    /// The shallowest stack address seen where this thread's event loop calls us: near where
    /// V8 measures its stack limit from.
    static TOP: Cell<usize> = const { Cell::new(0) };
    /// How much of the stack, from there down, may be in use when JavaScript is called in
    /// place: three quarters of what V8 allows the thread; the rest is the callee's.
    static IN_PLACE_BUDGET: Cell<usize> = const { Cell::new(984 * 1024 * 3 / 4) };
}

/// Set the stack V8 allows this thread's JavaScript (KiB), which the in-place budget is taken from.
pub(super) fn set_js_stack_kib(kib: usize) {
    let _ = IN_PLACE_BUDGET.try_with(|b| b.set(kib.saturating_mul(1024) / 4 * 3));
}

/// The address of a local of the caller's frame: how deep the stack is here.
#[inline(never)]
fn stack_here() -> usize {
    let mark = 0u8;
    std::hint::black_box(&mark) as *const u8 as usize
}

/// Remember this point of the stack as shallow (the event loop's call into the dispatcher, or
/// the addon being set up on this thread).
pub(super) fn note_top() {
    let here = stack_here();
    let _ = TOP.try_with(|t| {
        if here > t.get() {
            t.set(here)
        }
    });
}

/// Whether JavaScript may be called right here as far as the stack goes: not on a segment
/// grown for deep values (V8 would not know it), nor so far below the event loop that V8
/// could run out of its stack (a run nested in a run, polled in a drain that JavaScript
/// started). Otherwise the call goes through the dispatcher, from a shallow stack.
pub(super) fn stack_allows_js() -> bool {
    if toolnexus_core::json::on_grown_stack() {
        return false;
    }
    let top = TOP.try_with(Cell::get).unwrap_or(0);
    let budget = IN_PLACE_BUDGET.try_with(Cell::get).unwrap_or(usize::MAX);
    top == 0 || top.saturating_sub(stack_here()) < budget
}

/// Whether the calling thread is the one of the environment `shared` belongs to.
pub(super) fn is_home(shared: &Arc<Shared>) -> bool {
    HERE.try_with(|h| h.get().1 == Arc::as_ptr(shared)).unwrap_or(false)
}

/// The environment `shared` belongs to, when the calling thread is its thread.
pub(super) fn home_env(shared: &Arc<Shared>) -> Option<sys::napi_env> {
    let (env, here) = HERE.try_with(Cell::get).ok()?;
    (!env.is_null() && here == Arc::as_ptr(shared)).then_some(env)
}

/// Take a hold on the process: while any is held, the threadsafe function is referenced.
pub(super) fn keep_up(env: sys::napi_env, l: &mut Local) {
    l.keep += 1;
    if l.keep == 1 {
        // SAFETY: a local half lives only in its environment's thread's `LOCAL` (it is made
        // there, by `with_local`), so this is the environment's thread; `l.tsfn` is live while
        // `l` is, as the finalizer takes `l` out before napi lets the function go.
        unsafe { sys::napi_ref_threadsafe_function(env, l.tsfn) };
    }
}

/// Give a hold back; the last one unreferences the threadsafe function.
pub(super) fn keep_down(env: sys::napi_env, l: &mut Local) {
    if l.keep == 0 {
        return;
    }
    l.keep -= 1;
    if l.keep == 0 {
        // SAFETY: as in `keep_up`.
        unsafe { sys::napi_unref_threadsafe_function(env, l.tsfn) };
    }
}

/// One hold on the process, shared by a native method's Promise and the JavaScript calls its
/// work makes: let go while that work waits on JavaScript, taken again when JavaScript
/// answers, given back for good when the Promise settles. Only changed on the environment's
/// thread (the atomics are for `Send`, not for contention).
pub(crate) struct Hold {
    held: AtomicBool,
    done: AtomicBool,
}

impl Hold {
    /// A hold taken now, on the environment's thread.
    pub(super) fn take(env: sys::napi_env, l: &mut Local) -> Arc<Hold> {
        keep_up(env, l);
        Arc::new(Hold { held: AtomicBool::new(true), done: AtomicBool::new(false) })
    }

    pub(super) fn release(&self, env: sys::napi_env) {
        if self.held.swap(false, Ordering::Relaxed) {
            let _ = with_existing(env, |l| keep_down(env, l));
        }
    }

    pub(super) fn retake(&self, env: sys::napi_env) {
        if !self.done.load(Ordering::Relaxed) && !self.held.swap(true, Ordering::Relaxed) {
            let _ = with_existing(env, |l| keep_up(env, l));
        }
    }

    pub(super) fn finish(&self, env: sys::napi_env) {
        self.done.store(true, Ordering::Relaxed);
        self.release(env);
    }
}

/// A hold on the process for as long as this value lives: for waits on something Node cannot
/// see (the runtime's timers, a tool sent off the JS thread, a name lookup). Taken on the
/// environment's thread; may be dropped anywhere.
pub struct KeepAlive {
    shared: Arc<Shared>,
    env: Raw<sys::napi_env>,
}

impl KeepAlive {
    /// A hold on the environment of the calling thread, if it has one.
    pub fn here() -> Option<KeepAlive> {
        let (env, _) = HERE.try_with(Cell::get).ok()?;
        if env.is_null() {
            return None;
        }
        with_existing(env, |l| {
            keep_up(env, l);
            KeepAlive { shared: l.shared.clone(), env: Raw(env) }
        })
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        let env = self.env.0;
        if is_home(&self.shared) {
            let _ = with_existing(env, |l| keep_down(env, l));
        } else {
            let _ = self.shared.post(Msg::Unkeep);
        }
    }
}
