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

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::task::{Context, Poll, Wake, Waker};

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, Unknown, ValidateNapiValue};
use napi::{sys, Env, Error, Result, Status, ValueType};
use tokio::sync::oneshot;
use toolnexus_core::json::{self, Pieces};
use toolnexus_core::jsstr;

/// What a JS callback answered: its JSON text, or what it threw / rejected with.
pub type Reply = Result<String>;

type Settler = Box<dyn FnOnce(sys::napi_env) -> Result<sys::napi_value> + Send>;

/// A raw napi handle carried across threads. It is `Send`/`Sync` only for the three napi
/// pointer types below, each for its own reason; any other `Raw<T>` stays as thread-bound as
/// its `T`.
#[derive(Clone, Copy)]
struct Raw<T>(T);

// SAFETY: an environment pointer travels with `KeepAlive` and `Home`, but napi is called with
// it only on the environment's own thread: `KeepAlive::drop` checks `is_home` first and posts
// `Msg::Unkeep` otherwise, and `Home::env` is documented (and used by `uvio`) for that thread
// alone. Off that thread it is only copied and compared.
unsafe impl Send for Raw<sys::napi_env> {}
// SAFETY: as for `Send`: a shared reference only copies the pointer out.
unsafe impl Sync for Raw<sys::napi_env> {}

// SAFETY: a deferred is created on the environment's thread and settled there alone: off it,
// it only rides inside `Msg::Settle` through the threadsafe function to that thread (or is
// settled in `local_promise`'s future, which only `drain` polls, on that thread).
// (Not `Sync`: nothing shares one; it is moved to its thread and settled once.)
unsafe impl Send for Raw<sys::napi_deferred> {}

// SAFETY: `napi_call_threadsafe_function` is napi's entry point for any thread; the handle is
// read under `Shared::tsfn`'s read lock, and the finalizer that invalidates it takes the write
// lock and clears it first, so no thread calls through a released handle.
unsafe impl Send for Raw<sys::napi_threadsafe_function> {}
// SAFETY: as for `Send`: shared references only copy the handle out, under the lock.
unsafe impl Sync for Raw<sys::napi_threadsafe_function> {}

enum Msg {
    Settle {
        deferred: Raw<sys::napi_deferred>,
        settle: Settler,
        hold: Option<Arc<Hold>>,
    },
    Call {
        f: u32,
        arg: Arg,
        reply: Option<oneshot::Sender<Reply>>,
        hold: Option<Arc<Hold>>,
    },
    /// A `KeepAlive` dropped off its thread.
    Unkeep,
    Release {
        f: u32,
    },
    /// A task of the JS-thread executor was woken elsewhere (`u32::MAX`: just drain).
    Poll {
        task: u32,
    },
    /// Work that must happen on the JS thread (closing a socket handle).
    #[cfg_attr(not(unix), allow(dead_code))] // sent only by `uvio`, which is Unix only
    Run(Box<dyn FnOnce() + Send>),
}

/// The thread-safe half: anyone may post; `None` once the environment has torn it down.
struct Shared {
    tsfn: RwLock<Option<Raw<sys::napi_threadsafe_function>>>,
}

impl Shared {
    fn post(&self, msg: Msg) -> std::result::Result<(), Msg> {
        let guard = self.tsfn.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(tsfn) = *guard else { return Err(msg) };
        let data = Box::into_raw(Box::new(msg));
        // SAFETY: the read guard keeps the finalizer (which takes the write lock) from
        // invalidating the handle during the call.
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
struct Local {
    env: sys::napi_env,
    tsfn: sys::napi_threadsafe_function,
    shared: Arc<Shared>,
    fns: Vec<sys::napi_ref>,
    free: Vec<u32>,
    replies: HashMap<u32, (oneshot::Sender<Reply>, Option<Arc<Hold>>)>,
    next_reply: u32,
    /// Holds on the process (see `keep_up`): the threadsafe function is referenced while > 0.
    keep: usize,
    tasks: Vec<Slot>,
    free_tasks: Vec<u32>,
    /// For callback scopes opened around drains that libuv starts (socket readiness).
    #[cfg_attr(not(unix), allow(dead_code))] // read only by `drain_from_loop`
    async_context: sys::napi_async_context,
    /// Where this environment's warnings go (`console.warn`, see `set_warn`).
    warn: Option<toolnexus_core::warn::Sink>,
}

/// A task of the JS-thread executor.
enum Slot {
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
struct Kept(Option<Local>);

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(local) = self.0.take() {
            std::mem::forget(local);
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Kept> = const { RefCell::new(Kept(None)) };
    /// Tasks of this thread's executor waiting for a poll.
    static READY: RefCell<VecDeque<u32>> = const { RefCell::new(VecDeque::new()) };
    /// A drain is under way on this thread: wake-ups only queue.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
    /// A drain has been asked of the dispatcher and not yet run.
    static POKED: Cell<bool> = const { Cell::new(false) };
    /// This thread's environment and dispatcher, for telling "here" from "elsewhere" cheaply.
    static HERE: Cell<(sys::napi_env, *const Shared)> = const { Cell::new((ptr::null_mut(), ptr::null())) };
}

/// The runtime the core's work runs on: one per process, built on first use and never shut
/// down, so Node worker threads coming and going never take it away from the others. One
/// worker on purpose: the work is I/O and callback hops, and a second worker only adds
/// cross-thread wake-ups (measured: lower latency and CPU per run with one, same throughput
/// at 32 in flight). Blocking work (file walks, skill loading) goes to tokio's blocking pool.
static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();

fn runtime() -> Option<&'static tokio::runtime::Runtime> {
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

fn check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::new(Status::from(status), format!("toolnexus: {what} failed")))
    }
}

/// Run `f` on this environment's local half, creating it on first use.
fn with_local<R>(env: sys::napi_env, f: impl FnOnce(&mut Local) -> R) -> Result<R> {
    let unavailable = || Error::from_reason("toolnexus: dispatcher unavailable");
    LOCAL
        .try_with(|cell| {
            let mut kept = cell.try_borrow_mut().map_err(|_| unavailable())?;
            let slot = &mut kept.0;
            if slot.as_ref().is_none_or(|l| l.env != env) {
                *slot = Some(create(env)?);
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
fn with_existing<R>(env: sys::napi_env, f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    LOCAL
        .try_with(|cell| {
            let mut kept = cell.try_borrow_mut().ok()?;
            kept.0.as_mut().filter(|l| l.env == env).map(f)
        })
        .ok()
        .flatten()
}

/// Take a hold on the process: while any is held, the threadsafe function is referenced.
fn keep_up(env: sys::napi_env, l: &mut Local) {
    l.keep += 1;
    if l.keep == 1 {
        // SAFETY: `l` is this thread's local half, so this is the environment's thread.
        unsafe { sys::napi_ref_threadsafe_function(env, l.tsfn) };
    }
}

/// Give a hold back; the last one unreferences the threadsafe function.
fn keep_down(env: sys::napi_env, l: &mut Local) {
    if l.keep == 0 {
        return;
    }
    l.keep -= 1;
    if l.keep == 0 {
        // SAFETY: as in `keep_up`.
        unsafe { sys::napi_unref_threadsafe_function(env, l.tsfn) };
    }
}

fn create(env: sys::napi_env) -> Result<Local> {
    let shared = Arc::new(Shared { tsfn: RwLock::new(None) });
    let label = "toolnexus";
    let mut name = ptr::null_mut();
    // SAFETY: called on the environment's own thread with valid out-pointers.
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
        toolnexus_core::host::set_holder(|| KeepAlive::here().map(|k| Box::new(k) as toolnexus_core::host::Hold));
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

unsafe extern "C" fn deliver(env: sys::napi_env, _js: sys::napi_value, _context: *mut c_void, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: every item was boxed by `Shared::post`.
    let msg = *unsafe { Box::from_raw(data as *mut Msg) };
    if env.is_null() {
        // The queue is being emptied at teardown; dropping the message is all that is left.
        return;
    }
    match msg {
        // SAFETY: on the environment's thread, inside the threadsafe function's callback.
        Msg::Settle { deferred, settle, hold } => unsafe { settle_now(env, deferred.0, settle, hold) },
        // SAFETY: as above.
        Msg::Call { f, arg, reply, hold } => unsafe { call_now(env, f, arg, reply, hold) },
        Msg::Unkeep => {
            let _ = with_existing(env, |l| keep_down(env, l));
        }
        Msg::Poll { task } => woken(env, task),
        Msg::Run(job) => job(),
        Msg::Release { f } => release(env, f),
    }
}

unsafe fn settle_now(
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
                let value = match <Error as ToNapiValue>::to_napi_value(env, e) {
                    Ok(v) => v,
                    Err(_) => {
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

unsafe fn call_now(
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
        // SAFETY: a live reference of this env, on its thread.
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
    // SAFETY: on the environment's thread (the caller's contract), with `func` just read from
    // a live reference of this environment.
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

unsafe fn invoke(env: sys::napi_env, func: sys::napi_value, arg: &Arg, id: u32) -> Invoked {
    // SAFETY: the caller is on the environment's thread inside a scope where JavaScript may be
    // called; every out-pointer below is a local of this frame.
    unsafe {
        let mut args = [ptr::null_mut(); 2];
        args[0] = match arg_value(env, arg) {
            Ok(v) => v,
            Err(e) => return Invoked::Now(Err(e)),
        };
        if sys::napi_create_uint32(env, id, &mut args[1]) != sys::Status::napi_ok {
            return Invoked::Now(Err(Error::from_reason("toolnexus: could not pass a value to a callback")));
        }
        let mut recv = ptr::null_mut();
        sys::napi_get_undefined(env, &mut recv);
        let mut ret = ptr::null_mut();
        let status = sys::napi_call_function(env, recv, func, 2, args.as_ptr(), &mut ret);
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
            _ => Invoked::Now(Err(Error::from_reason("toolnexus: a bridged callback must answer with a JSON string"))),
        }
    }
}

/// A `Msg::Release` has arrived: let go of function `f`. On the environment's thread.
fn release(env: sys::napi_env, f: u32) {
    let _ = with_existing(env, |l| {
        if let Some(r) = l.fns.get_mut(f as usize) {
            if !r.is_null() {
                // SAFETY: the reference was created on this thread for this env.
                unsafe { sys::napi_delete_reference(env, *r) };
                *r = ptr::null_mut();
                l.free.push(f);
            }
        }
    });
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
        let _ = tx.send(answer);
    }
    // The answer may have woken a task of this thread: carry on with it now, still inside
    // the JS call (its microtasks follow as usual).
    if READY.try_with(|r| !r.borrow().is_empty()).unwrap_or(false) {
        drain(env.raw());
    }
}

/// A Promise the JS caller gets now and the core settles later.
pub struct JsPromise(sys::napi_value);

impl ToNapiValue for JsPromise {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        Ok(val.0)
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
    fn take(env: sys::napi_env, l: &mut Local) -> Arc<Hold> {
        keep_up(env, l);
        Arc::new(Hold { held: AtomicBool::new(true), done: AtomicBool::new(false) })
    }

    fn release(&self, env: sys::napi_env) {
        if self.held.swap(false, Ordering::Relaxed) {
            let _ = with_existing(env, |l| keep_down(env, l));
        }
    }

    fn retake(&self, env: sys::napi_env) {
        if !self.done.load(Ordering::Relaxed) && !self.held.swap(true, Ordering::Relaxed) {
            let _ = with_existing(env, |l| keep_up(env, l));
        }
    }

    fn finish(&self, env: sys::napi_env) {
        self.done.store(true, Ordering::Relaxed);
        self.release(env);
    }
}

tokio::task_local! {
    /// The hold of the native method whose work the current runtime task is doing.
    static HOLD: Arc<Hold>;
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

/// Settles the Promise even if the work is dropped without finishing (a panic, a runtime
/// shutting down): the caller gets a rejection, never a Promise that hangs forever.
struct Pending {
    shared: Arc<Shared>,
    deferred: Option<Raw<sys::napi_deferred>>,
    hold: Option<Arc<Hold>>,
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
        self.post(Box::new(|_| Err(Error::from_reason("toolnexus: the operation ended without an answer"))));
    }
}

/// A Promise for JS and the pending settlement behind it; with `hold`, the process stays
/// alive until it is settled (less the time its work waits on JavaScript).
fn open_promise(raw: sys::napi_env, hold: bool) -> Result<(Pending, JsPromise)> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the environment's thread with valid out-pointers.
    check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "creating a Promise")?;
    let (shared, hold) = with_local(raw, |l| (l.shared.clone(), hold.then(|| Hold::take(raw, l))))?;
    Ok((Pending { shared, deferred: Some(Raw(deferred)), hold }, JsPromise(promise)))
}

/// Whether the calling thread is the one of the environment `shared` belongs to.
fn is_home(shared: &Arc<Shared>) -> bool {
    HERE.try_with(|h| h.get().1 == Arc::as_ptr(shared)).unwrap_or(false)
}

/// The environment `shared` belongs to, when the calling thread is its thread.
fn home_env(shared: &Arc<Shared>) -> Option<sys::napi_env> {
    let (env, here) = HERE.try_with(Cell::get).ok()?;
    (!env.is_null() && here == Arc::as_ptr(shared)).then_some(env)
}

/// Run `work` on the core's runtime and hand JS a Promise of its outcome.
pub fn promise<T, F>(env: &Env, work: F) -> Result<JsPromise>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let runtime = runtime().ok_or_else(|| Error::from_reason("toolnexus: the async runtime is not available"))?;
    let (pending, promise) = open_promise(env.raw(), true)?;
    let hold = pending.hold.clone();
    let sink = with_local(env.raw(), |l| l.warn.clone())?;
    let work = toolnexus_core::json::DeepStack::new(work);
    let work = toolnexus_core::warn::scope(sink, async move {
        let outcome = work.await;
        pending.settle(Box::new(move |env| match outcome {
            // SAFETY: runs on the environment's thread, inside the dispatcher's callback.
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
            // SAFETY: on the environment's thread, inside a drain's scope.
            unsafe { call_now(env, self.f, arg, Some(tx), None) };
            return rx.await.unwrap_or_else(|_| Err(gone()));
        }
        let hold = HOLD.try_with(Arc::clone).ok();
        if self.shared.post(Msg::Call { f: self.f, arg, reply: Some(tx), hold }).is_err() {
            return Err(gone());
        }
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// The environment, when this is its thread and a drain is under way (so JavaScript may
    /// be called now, inside a scope napi or the drain opened).
    fn callable_here(&self) -> Option<sys::napi_env> {
        // On a stack segment grown for deep values, V8 would see a stack it does not know.
        if !DRAINING.try_with(Cell::get).unwrap_or(false) || toolnexus_core::json::on_grown_stack() {
            return None;
        }
        home_env(&self.shared)
    }

    /// Call without waiting for an answer.
    pub fn notify(&self, arg: String) {
        let _ = self.shared.post(Msg::Call { f: self.f, arg: Arg::Text(arg), reply: None, hold: None });
    }

    /// Call without waiting for an answer: right away when on the environment's thread (the
    /// addon only runs there inside a call from JavaScript, a drain or the dispatcher's own
    /// callback, where JavaScript may be called), through the dispatcher otherwise.
    pub fn notify_now(&self, arg: String) {
        match home_env(&self.shared).filter(|_| !toolnexus_core::json::on_grown_stack()) {
            // SAFETY: on the environment's thread, inside one of the scopes listed above.
            Some(env) => unsafe { call_now(env, self.f, Arg::Text(arg), None, None) },
            None => self.notify(arg),
        }
    }
}

fn gone() -> Error {
    Error::from_reason("toolnexus: the JavaScript environment is shutting down")
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

// ---------------------------------------------------------------------------------------
// The JS-thread executor
// ---------------------------------------------------------------------------------------
//
// A client run is polled here, on the JS thread, rather than on the runtime: its sockets are
// watched by libuv (see `uvio`), its JS callbacks are called in place, and its Promise is
// settled in place, so a run is woken by the event loop that is already waiting, as a run of
// plain JavaScript is, instead of hopping between threads at every step. Timers and work on
// the runtime (other tools, DNS) wake it through the dispatcher.

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
        if queued && !DRAINING.try_with(Cell::get).unwrap_or(true) {
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
fn woken(env: sys::napi_env, task: u32) {
    if task == u32::MAX {
        let _ = POKED.try_with(|p| p.set(false));
        let _ = with_existing(env, |l| keep_down(env, l));
    } else {
        let _ = READY.try_with(|r| r.borrow_mut().push_back(task));
    }
    drain(env);
}

/// Poll every ready task of this thread until none is left.
fn drain(env: sys::napi_env) {
    if DRAINING.try_with(|d| d.replace(true)).unwrap_or(true) {
        return;
    }
    let _enter = runtime().map(|rt| rt.enter());
    toolnexus_core::host::polling_on_host(|| {
        while let Some(task) = READY.try_with(|r| r.borrow_mut().pop_front()).ok().flatten() {
            let taken = with_local(env, |l| match l.tasks.get_mut(task as usize) {
                Some(slot @ Slot::Parked(..)) => match std::mem::replace(slot, Slot::Busy) {
                    Slot::Parked(fut, waker) => Some((fut, waker)),
                    _ => None,
                },
                _ => None,
            });
            let Ok(Some((mut fut, waker))) = taken else { continue };
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
    });
    let _ = DRAINING.try_with(|d| d.set(false));
}

/// A drain started by libuv (a socket became ready): inside a handle scope and a callback
/// scope, so Promise reactions and `process.nextTick` callbacks run when it ends.
#[cfg_attr(not(unix), allow(dead_code))] // called only by `uvio`, which is Unix only
pub(crate) fn drain_from_loop(env: sys::napi_env) {
    let Ok(context) = with_local(env, |l| l.async_context) else { return };
    // SAFETY: called by libuv on the environment's thread, outside any other scope.
    unsafe {
        let mut handles = ptr::null_mut();
        if sys::napi_open_handle_scope(env, &mut handles) != sys::Status::napi_ok {
            return;
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
}

/// Poll `work` on this JS thread and hand JS a Promise of its outcome. The first poll happens
/// on the next turn of the event loop, never inside the caller's own call.
pub fn local_promise<T, F>(env: &Env, work: F) -> Result<JsPromise>
where
    T: ToNapiValue + 'static,
    F: Future<Output = Result<T>> + 'static,
{
    let raw = env.raw();
    // A run polled here holds nothing by itself: what it waits on does (see `KeepAlive`).
    let (pending, promise) = open_promise(raw, false)?;
    let shared = pending.shared.clone();
    let task = with_local(raw, |l| match l.free_tasks.pop() {
        Some(t) => t,
        None => {
            l.tasks.push(Slot::Free);
            (l.tasks.len() - 1) as u32
        }
    })?;
    // The work runs (and is dropped) with room for the deepest value seen; settling, which
    // calls into V8, stays on the thread's own stack.
    let work = toolnexus_core::json::DeepStack::new(work);
    let fut = async move {
        let outcome = work.await;
        let mut pending = pending;
        if let Some(deferred) = pending.deferred.take() {
            // SAFETY: polled only by `drain`, on the environment's thread, inside a scope.
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
    let waker = Waker::from(Arc::new(TaskWaker { task, shared: shared.clone() }));
    with_local(raw, |l| {
        if let Some(slot) = l.tasks.get_mut(task as usize) {
            *slot = Slot::Parked(Box::pin(fut), waker);
        }
    })?;
    let _ = READY.try_with(|r| r.borrow_mut().push_back(task));
    poke(&shared);
    Ok(promise)
}

/// An environment's thread, as seen from anywhere: whether the caller is on it, and a way to
/// run something there. (Used only by `uvio`, which is Unix only.)
#[cfg_attr(not(unix), allow(dead_code))]
#[derive(Clone)]
pub struct Home {
    shared: Arc<Shared>,
    env: Raw<sys::napi_env>,
}

#[cfg_attr(not(unix), allow(dead_code))]
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

// ---------------------------------------------------------------------------------------
// Values with long strings
// ---------------------------------------------------------------------------------------

/// Strings longer than this (in bytes) cross as strings of their own (see `json::Pieces`).
pub const SPLIT_ABOVE: usize = 1 << 20;

/// What a callback is called with: JSON text, or a value in pieces.
pub enum Arg {
    Text(String),
    Pieces(Pieces),
}

impl From<String> for Arg {
    fn from(text: String) -> Arg {
        Arg::Text(text)
    }
}

impl Arg {
    /// A value to hand JavaScript: one JSON text when it has no long string, else in pieces.
    pub fn of(v: serde_json::Value) -> Arg {
        let p = json::split_long_strings(v, SPLIT_ABOVE);
        if p.strings.is_empty() {
            Arg::Text(p.json)
        } else {
            Arg::Pieces(p)
        }
    }
}

/// A value for JavaScript as `index.js` reads it (`fromCore`): its JSON text, or
/// `[json, places, ...long strings]`. A string longer than JavaScript allows rejects with V8's
/// own RangeError for it, never a failed conversion.
pub struct Crossed(pub Arg);

impl Crossed {
    pub fn of(v: serde_json::Value) -> Crossed {
        Crossed(Arg::of(v))
    }
}

impl ToNapiValue for Crossed {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        // SAFETY: napi-rs converts return values on the environment's thread.
        unsafe { arg_value(env, &val.0) }
    }
}

/// A JavaScript string of `s`; V8's RangeError when it is longer than a string may be.
unsafe fn js_string(env: sys::napi_env, s: &str) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: on the environment's thread (the caller's contract); `s` outlives the calls.
    let status = unsafe {
        if s.len() <= jsstr::MAX_LENGTH {
            sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out)
        } else if jsstr::fits(s) {
            // More UTF-8 bytes than V8 takes at once, but few enough UTF-16 units.
            let units: Vec<u16> = s.encode_utf16().collect();
            sys::napi_create_string_utf16(env, units.as_ptr(), units.len() as isize, &mut out)
        } else {
            return Err(range_error(env, jsstr::INVALID_LENGTH));
        }
    };
    check(status, "creating a string")?;
    Ok(out)
}

/// V8's `RangeError` with `message`, as the value a Promise rejects with or a call fails with.
unsafe fn range_error(env: sys::napi_env, message: &str) -> Error {
    let mut msg = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: on the environment's thread (the caller's contract), with local out-pointers.
    unsafe {
        if sys::napi_create_string_utf8(env, message.as_ptr().cast(), message.len() as isize, &mut msg)
            != sys::Status::napi_ok
            || sys::napi_create_range_error(env, ptr::null_mut(), msg, &mut err) != sys::Status::napi_ok
        {
            return Error::from_reason(message.to_string());
        }
        Error::from_unknown_without_coercion(Unknown::from_raw_unchecked(env, err))
    }
}

/// `arg` as JavaScript values: a string, or an array of the pieces.
unsafe fn arg_value(env: sys::napi_env, arg: &Arg) -> Result<sys::napi_value> {
    // SAFETY: on the environment's thread (the caller's contract), with local out-pointers.
    unsafe {
        match arg {
            Arg::Text(text) => js_string(env, text),
            Arg::Pieces(p) => {
                let mut list = ptr::null_mut();
                check(sys::napi_create_array_with_length(env, p.strings.len() + 2, &mut list), "creating an array")?;
                let parts =
                    [p.json.as_str(), p.places.as_str()].into_iter().chain(p.strings.iter().map(String::as_str));
                for (i, part) in parts.enumerate() {
                    let v = js_string(env, part)?;
                    check(sys::napi_set_element(env, list, i as u32, v), "filling an array")?;
                }
                Ok(list)
            }
        }
    }
}
