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
//! The threadsafe function is unreferenced while no native Promise is outstanding: callbacks
//! alone never keep the process alive, pending operations do.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::future::Future;
use std::ptr;
use std::sync::{Arc, OnceLock, RwLock};

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, Unknown, ValidateNapiValue};
use napi::{sys, Env, Error, Result, Status, ValueType};
use tokio::sync::oneshot;

/// What a JS callback answered: its JSON text, or what it threw / rejected with.
pub type Reply = Result<String>;

type Settler = Box<dyn FnOnce(sys::napi_env) -> Result<sys::napi_value> + Send>;

/// A raw handle that is only ever dereferenced on its environment's thread.
#[derive(Clone, Copy)]
struct Raw<T>(T);
// SAFETY: the pointers inside are passed between threads but only used by napi on the thread
// that owns the environment (deferreds, references), or through napi's thread-safe entry point
// (the threadsafe function, guarded by `Shared::tsfn`).
unsafe impl<T> Send for Raw<T> {}
unsafe impl<T> Sync for Raw<T> {}

enum Msg {
    Settle { deferred: Raw<sys::napi_deferred>, settle: Settler },
    Call { f: u32, arg: String, reply: Option<oneshot::Sender<Reply>> },
    Release { f: u32 },
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
    replies: HashMap<u32, oneshot::Sender<Reply>>,
    next_reply: u32,
    outstanding: usize,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
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
    LOCAL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|l| l.env != env) {
            *slot = Some(create(env)?);
        }
        match slot.as_mut() {
            Some(local) => Ok(f(local)),
            None => Err(Error::from_reason("toolnexus: dispatcher unavailable")),
        }
    })
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
            Some(call_js),
            &mut tsfn,
        );
        if status != sys::Status::napi_ok {
            drop(Arc::from_raw(finalize_data as *const Shared));
            return Err(Error::new(Status::from(status), "toolnexus: creating the dispatcher failed".to_string()));
        }
        check(sys::napi_unref_threadsafe_function(env, tsfn), "unref")?;
        *shared.tsfn.write().unwrap_or_else(|p| p.into_inner()) = Some(Raw(tsfn));
        Ok(Local {
            env,
            tsfn,
            shared,
            fns: Vec::new(),
            free: Vec::new(),
            replies: HashMap::new(),
            next_reply: 0,
            outstanding: 0,
        })
    }
}

/// The environment is going away: nothing may be posted any more.
unsafe extern "C" fn finalize(env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the `Arc` leaked in `create`, handed back exactly once.
    let shared = unsafe { Arc::from_raw(data as *const Shared) };
    *shared.tsfn.write().unwrap_or_else(|p| p.into_inner()) = None;
    // Dropping the local half drops the waiting reply senders: their callers see an error.
    let _ = LOCAL.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            if slot.as_ref().is_some_and(|l| l.env == env || Arc::ptr_eq(&l.shared, &shared)) {
                *slot = None;
            }
        }
    });
}

unsafe extern "C" fn call_js(env: sys::napi_env, _js: sys::napi_value, _context: *mut c_void, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: every item was boxed by `Shared::post`.
    let msg = *unsafe { Box::from_raw(data as *mut Msg) };
    if env.is_null() {
        // The queue is being drained at teardown; dropping the message is all that is left.
        return;
    }
    match msg {
        Msg::Settle { deferred, settle } => unsafe { settle_now(env, deferred.0, settle) },
        Msg::Call { f, arg, reply } => unsafe { call_now(env, f, arg, reply) },
        Msg::Release { f } => {
            let _ = LOCAL.try_with(|cell| {
                if let Ok(mut slot) = cell.try_borrow_mut() {
                    if let Some(l) = slot.as_mut().filter(|l| l.env == env) {
                        if let Some(r) = l.fns.get_mut(f as usize) {
                            if !r.is_null() {
                                // SAFETY: the reference was created on this thread for this env.
                                unsafe { sys::napi_delete_reference(env, *r) };
                                *r = ptr::null_mut();
                                l.free.push(f);
                            }
                        }
                    }
                }
            });
        }
    }
}

unsafe fn settle_now(env: sys::napi_env, deferred: sys::napi_deferred, settle: Settler) {
    let outcome = settle(env);
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
    let _ = LOCAL.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            if let Some(l) = slot.as_mut().filter(|l| l.env == env) {
                l.outstanding = l.outstanding.saturating_sub(1);
                if l.outstanding == 0 {
                    // SAFETY: on the environment's thread.
                    unsafe { sys::napi_unref_threadsafe_function(env, l.tsfn) };
                }
            }
        }
    });
}

unsafe fn call_now(env: sys::napi_env, f: u32, arg: String, reply: Option<oneshot::Sender<Reply>>) {
    // Look the function up and park the reply slot, then let go of the local state before
    // JavaScript runs: the callback may call back into the addon.
    let found = LOCAL
        .try_with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            let l = slot.as_mut().filter(|l| l.env == env)?;
            let r = *l.fns.get(f as usize).filter(|r| !r.is_null())?;
            let mut func = ptr::null_mut();
            // SAFETY: a live reference of this env, on its thread.
            if unsafe { sys::napi_get_reference_value(env, r, &mut func) } != sys::Status::napi_ok || func.is_null() {
                return None;
            }
            let id = l.next_reply;
            l.next_reply = l.next_reply.wrapping_add(1);
            if let Some(tx) = reply {
                l.replies.insert(id, tx);
            }
            Some((func, id))
        })
        .ok()
        .flatten();
    let Some((func, id)) = found else {
        // Without the local state the sender was dropped with the closure: the caller sees an error.
        return;
    };
    let result = unsafe { invoke(env, func, &arg, id) };
    let answer = match result {
        Invoked::Later => return,
        Invoked::Now(r) => r,
    };
    if let Some(tx) = take_reply(env, id) {
        let _ = tx.send(answer);
    }
}

enum Invoked {
    Now(Reply),
    Later,
}

unsafe fn invoke(env: sys::napi_env, func: sys::napi_value, arg: &str, id: u32) -> Invoked {
    unsafe {
        let mut args = [ptr::null_mut(); 2];
        if sys::napi_create_string_utf8(env, arg.as_ptr().cast(), arg.len() as isize, &mut args[0])
            != sys::Status::napi_ok
            || sys::napi_create_uint32(env, id, &mut args[1]) != sys::Status::napi_ok
        {
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

fn take_reply(env: sys::napi_env, id: u32) -> Option<oneshot::Sender<Reply>> {
    LOCAL
        .try_with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            slot.as_mut().filter(|l| l.env == env)?.replies.remove(&id)
        })
        .ok()
        .flatten()
}

/// `reply(id, json)` from JS: a callback's late answer.
pub fn reply(env: &Env, id: u32, answer: Reply) {
    if let Some(tx) = take_reply(env.raw(), id) {
        let _ = tx.send(answer);
    }
}

/// A Promise the JS caller gets now and the core settles later.
pub struct JsPromise(sys::napi_value);

impl ToNapiValue for JsPromise {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        Ok(val.0)
    }
}

/// Settles the Promise even if the work is dropped without finishing (a panic, a runtime
/// shutting down): the caller gets a rejection, never a Promise that hangs forever.
struct Pending {
    shared: Arc<Shared>,
    deferred: Option<Raw<sys::napi_deferred>>,
}

impl Pending {
    fn settle(mut self, settle: Settler) {
        if let Some(deferred) = self.deferred.take() {
            let _ = self.shared.post(Msg::Settle { deferred, settle });
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(deferred) = self.deferred.take() {
            let settle: Settler =
                Box::new(|_| Err(Error::from_reason("toolnexus: the operation ended without an answer")));
            let _ = self.shared.post(Msg::Settle { deferred, settle });
        }
    }
}

/// Run `work` on the core's runtime and hand JS a Promise of its outcome.
pub fn promise<T, F>(env: &Env, work: F) -> Result<JsPromise>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let raw = env.raw();
    let runtime = runtime().ok_or_else(|| Error::from_reason("toolnexus: the async runtime is not available"))?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the environment's thread with valid out-pointers.
    check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "creating a Promise")?;
    let shared = with_local(raw, |l| {
        l.outstanding += 1;
        if l.outstanding == 1 {
            // SAFETY: on the environment's thread.
            unsafe { sys::napi_ref_threadsafe_function(raw, l.tsfn) };
        }
        l.shared.clone()
    })?;
    let pending = Pending { shared, deferred: Some(Raw(deferred)) };
    runtime.spawn(async move {
        let outcome = work.await;
        pending.settle(Box::new(move |env| match outcome {
            // SAFETY: runs on the environment's thread, inside the dispatcher's callback.
            Ok(value) => unsafe { T::to_napi_value(env, value) },
            Err(e) => Err(e),
        }));
    });
    Ok(JsPromise(promise))
}

/// A JS function held for the core: callable from any thread, released when dropped.
pub struct JsFn {
    f: u32,
    shared: Arc<Shared>,
}

impl JsFn {
    /// Call with a JSON argument; resolves with the callback's answer.
    pub async fn call(&self, arg: String) -> Reply {
        let (tx, rx) = oneshot::channel();
        if self.shared.post(Msg::Call { f: self.f, arg, reply: Some(tx) }).is_err() {
            return Err(gone());
        }
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// Call without waiting for an answer.
    pub fn notify(&self, arg: String) {
        let _ = self.shared.post(Msg::Call { f: self.f, arg, reply: None });
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
