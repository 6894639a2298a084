//! Sockets watched by the Node event loop.
//!
//! The LLM transport's connections are plain non-blocking sockets whose readiness comes from
//! a libuv poll handle on the environment's own loop, so the run that waits on one is woken
//! by that loop, on the JS thread, with nothing else in between. libuv's functions are looked
//! up in the running process (Node exports them); where they are missing the client keeps to
//! the core's runtime and its own HTTP client.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void, CStr};
use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use async_trait::async_trait;
use napi::{sys, Env};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use toolnexus_core::fetch::{BoxIo, Connect, Io};

use crate::dispatch::Home;

const UV_POLL: c_int = 8;
const UV_READABLE: c_int = 1;
const UV_WRITABLE: c_int = 2;

type PollCb = unsafe extern "C" fn(*mut c_void, c_int, c_int);
type CloseCb = unsafe extern "C" fn(*mut c_void);

type HandleSizeFn = unsafe extern "C" fn(c_int) -> usize;
type PollInitFn = unsafe extern "C" fn(*mut c_void, *mut c_void, c_int) -> c_int;
type PollStartFn = unsafe extern "C" fn(*mut c_void, c_int, PollCb) -> c_int;
type PollStopFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CloseFn = unsafe extern "C" fn(*mut c_void, CloseCb);
type RefFn = unsafe extern "C" fn(*mut c_void);
type StrerrorFn = unsafe extern "C" fn(c_int) -> *const std::ffi::c_char;

/// The libuv entry points used here.
struct Uv {
    handle_size: HandleSizeFn,
    poll_init_socket: PollInitFn,
    poll_start: PollStartFn,
    poll_stop: PollStopFn,
    close: CloseFn,
    strerror: StrerrorFn,
    /// `uv_ref` / `uv_unref`: whether a started handle keeps the loop alive.
    hold: RefFn,
    release: RefFn,
}

fn uv() -> Option<&'static Uv> {
    static UV: OnceLock<Option<Uv>> = OnceLock::new();
    UV.get_or_init(|| {
        fn sym(name: &CStr) -> Option<*mut c_void> {
            // SAFETY: looking a symbol up in the process; a null answer means it is absent.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            (!p.is_null()).then_some(p)
        }
        // SAFETY: each symbol is libuv's own function of that name, with the C signature
        // declared in `uv.h` that the field's type spells out.
        unsafe {
            Some(Uv {
                handle_size: std::mem::transmute::<*mut c_void, HandleSizeFn>(sym(c"uv_handle_size")?),
                poll_init_socket: std::mem::transmute::<*mut c_void, PollInitFn>(sym(c"uv_poll_init_socket")?),
                poll_start: std::mem::transmute::<*mut c_void, PollStartFn>(sym(c"uv_poll_start")?),
                poll_stop: std::mem::transmute::<*mut c_void, PollStopFn>(sym(c"uv_poll_stop")?),
                close: std::mem::transmute::<*mut c_void, CloseFn>(sym(c"uv_close")?),
                strerror: std::mem::transmute::<*mut c_void, StrerrorFn>(sym(c"uv_strerror")?),
                hold: std::mem::transmute::<*mut c_void, RefFn>(sym(c"uv_ref")?),
                release: std::mem::transmute::<*mut c_void, RefFn>(sym(c"uv_unref")?),
            })
        }
    })
    .as_ref()
}

fn uv_error(uv: &Uv, code: c_int) -> io::Error {
    // SAFETY: uv_strerror returns a NUL-terminated string for any code, and never frees it
    // (a static one, or for a code it does not know, one it allocates and leaks).
    let text = unsafe { CStr::from_ptr((uv.strerror)(code)) }.to_string_lossy().into_owned();
    io::Error::other(text)
}

fn off_thread() -> io::Error {
    io::Error::other("toolnexus: a connection was used off its JavaScript thread")
}

thread_local! {
    /// The poll handles open on this thread's loop, so an environment going away (a worker
    /// thread ending) can close them before its loop closes.
    static OPEN: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// The environment whose cleanup hook is in place on this thread.
    static HOOKED: Cell<sys::napi_env> = const { Cell::new(std::ptr::null_mut()) };
}

/// Close every handle still open on this thread: the environment is being torn down.
///
/// # Safety
///
/// Only napi calls this, as the environment cleanup hook `UvSocket::new` adds, on the
/// environment's thread (the thread whose `OPEN` lists that environment's handles).
unsafe extern "C" fn close_all(_arg: *mut c_void) {
    let open = OPEN.with(|o| std::mem::take(&mut *o.borrow_mut()));
    for raw in open {
        close_now(raw as *mut c_void);
    }
    HOOKED.with(|h| h.set(std::ptr::null_mut()));
}

/// What a poll handle's callback reaches: the wakers waiting on the socket.
struct Watch {
    env: sys::napi_env,
    read: RefCell<Option<Waker>>,
    write: RefCell<Option<Waker>>,
    /// The events the handle is started for (0: stopped).
    events: Cell<c_int>,
    /// Events whose last attempt would have blocked (or, for reading, drained the socket) and
    /// that the loop has not reported since: trying them again before it does is a system call
    /// that can only say `EAGAIN`.
    blocked: Cell<c_int>,
    /// Whether the handle counts for the loop's life (libuv's `ref`): only while someone
    /// waits on the socket.
    held: Cell<bool>,
}

/// The handle's memory and its `Watch`, freed together when libuv has closed the handle.
struct Handle {
    raw: *mut c_void,
    watch: *mut Watch,
}

/// `uv_handle_t.data` is the first field of every handle (`UV_HANDLE_FIELDS`).
///
/// # Safety
///
/// `handle` points to a libuv handle that libuv has initialised and not yet freed.
unsafe fn set_data(handle: *mut c_void, data: *mut c_void) {
    // SAFETY: the caller passes a live, initialised libuv handle, whose first field is `data`.
    unsafe { *(handle as *mut *mut c_void) = data };
}

/// # Safety
///
/// As for `set_data`.
unsafe fn get_data(handle: *mut c_void) -> *mut c_void {
    // SAFETY: as in `set_data`.
    unsafe { *(handle as *mut *mut c_void) }
}

/// # Safety
///
/// Only libuv calls this, on the loop's thread, for a poll handle `UvSocket::new` made (whose
/// `data` it set to the handle's `Watch`).
unsafe extern "C" fn on_poll(handle: *mut c_void, status: c_int, events: c_int) {
    // SAFETY: `data` is the `Watch` of this live handle. The `Watch` is freed only in
    // `on_close`, which libuv runs on a later turn of the loop than any poll callback, even
    // when the drain below begins the handle's close.
    let watch = unsafe { &*(get_data(handle) as *const Watch) };
    // What the loop reports is worth trying again (an error: everything, so it surfaces).
    let reported = if status < 0 { UV_READABLE | UV_WRITABLE } else { events };
    watch.blocked.set(watch.blocked.get() & !reported);
    let mut reader = false;
    crate::dispatch::wake_from_loop(watch.env, || {
        let mut woke = false;
        if reported & UV_READABLE != 0 {
            if let Some(w) = watch.read.borrow_mut().take() {
                w.wake();
                woke = true;
                reader = true;
            }
        }
        if reported & UV_WRITABLE != 0 {
            if let Some(w) = watch.write.borrow_mut().take() {
                w.wake();
                woke = true;
            }
        }
        woke
    });
    // The handle is level-triggered, so what is reported and not taken is reported again on
    // every turn. Writing is watched only while a writer waits (a socket is nearly always
    // writable). Reading stays watched after a reader was woken, as it most likely comes back
    // for the next response (so its first read need not ask the socket first); reported with
    // nobody to take it (the peer closed an idle connection), it stops, and the next read
    // asks the socket.
    let now = watch.events.get();
    if now == CLOSING {
        return;
    }
    let mut want = now;
    if watch.write.borrow().is_none() {
        want &= !UV_WRITABLE;
    }
    if watch.read.borrow().is_none() && (status < 0 || (reported & UV_READABLE != 0 && !reader)) {
        want &= !UV_READABLE;
    }
    if let Some(uv) = uv() {
        // SAFETY: a live handle on its loop's thread, whose close has not begun (`events` is not
        // `CLOSING`, checked above).
        unsafe {
            if want != now {
                rewatch(uv, watch, handle, want);
            }
            hold_while_awaited(uv, watch, handle);
        }
    }
}

/// Watch the handle for exactly `want` from now on (none: stop it), and record that.
///
/// # Safety
///
/// `handle` is the live handle whose `Watch` this is, on its loop's thread, and its close has
/// not begun.
unsafe fn rewatch(uv: &Uv, watch: &Watch, handle: *mut c_void, want: c_int) {
    // SAFETY: the caller's contract.
    unsafe {
        if want == 0 {
            (uv.poll_stop)(handle);
        } else {
            (uv.poll_start)(handle, want, on_poll);
        }
    }
    watch.events.set(want);
}

/// Let the handle keep the loop alive only while someone waits on the socket (as a socket of
/// Node's own does while a request is in flight): an idle pooled connection, still watched for
/// reading, keeps nothing alive.
///
/// # Safety
///
/// `handle` is the live handle whose `Watch` this is, on its loop's thread, and its close has
/// not begun.
unsafe fn hold_while_awaited(uv: &Uv, watch: &Watch, handle: *mut c_void) {
    let awaited = watch.read.borrow().is_some() || watch.write.borrow().is_some();
    if awaited != watch.held.get() {
        // SAFETY: the caller's contract.
        unsafe {
            if awaited {
                (uv.hold)(handle);
            } else {
                (uv.release)(handle);
            }
        }
        watch.held.set(awaited);
    }
}

/// Marks a handle whose close has begun: nothing may start or stop it any more.
const CLOSING: c_int = -1;

/// # Safety
///
/// Only libuv calls this, once, when a handle `close_now` began to close has closed.
unsafe extern "C" fn on_close(handle: *mut c_void) {
    // SAFETY: both were allocated in `UvSocket::new` and libuv is done with the handle.
    unsafe {
        drop(Box::from_raw(get_data(handle) as *mut Watch));
        libc::free(handle);
    }
}

/// A connected non-blocking TCP socket whose readiness comes from the event loop.
struct UvSocket {
    /// Closed only after the handle stops watching it (see `Drop`).
    stream: ManuallyDrop<TcpStream>,
    handle: Handle,
    home: Home,
    /// The loop's thread (still known while its environment is being torn down).
    thread: std::thread::ThreadId,
}

// SAFETY: the raw handle is touched only on the environment's thread: every method checks
// `home.here()` first, and a drop elsewhere sends the close to that thread.
unsafe impl Send for UvSocket {}
// SAFETY: as above: shared references reach the handle only on the environment's thread.
unsafe impl Sync for UvSocket {}

impl UvSocket {
    fn new(stream: TcpStream, home: Home, event_loop: *mut c_void) -> io::Result<Self> {
        use std::os::fd::AsRawFd;
        let uv = uv().ok_or_else(|| io::Error::other("libuv is not available"))?;
        // SAFETY: on the environment's thread (`UvConnect::connect` checks `home.here()` before
        // it gets here, in the same poll), where `event_loop` is that environment's loop and
        // napi may be called. `raw` is a fresh allocation of the size libuv asks for,
        // initialised by libuv before any other use (and freed here if that fails); the Watch
        // is leaked into it and reclaimed in `on_close`.
        unsafe {
            let raw = libc::calloc(1, (uv.handle_size)(UV_POLL));
            if raw.is_null() {
                return Err(io::Error::from(io::ErrorKind::OutOfMemory));
            }
            let rc = (uv.poll_init_socket)(event_loop, raw, stream.as_raw_fd());
            if rc < 0 {
                libc::free(raw);
                return Err(uv_error(uv, rc));
            }
            let watch = Box::into_raw(Box::new(Watch {
                env: home.env(),
                read: RefCell::new(None),
                write: RefCell::new(None),
                events: Cell::new(0),
                blocked: Cell::new(0),
                // libuv's default for a new handle.
                held: Cell::new(true),
            }));
            set_data(raw, watch.cast());
            // What keeps the loop alive: `hold_while_awaited`.
            OPEN.with(|o| o.borrow_mut().push(raw as usize));
            let env = home.env();
            if HOOKED.with(|h| h.replace(env)) != env {
                sys::napi_add_env_cleanup_hook(env, Some(close_all), std::ptr::null_mut());
            }
            Ok(UvSocket {
                stream: ManuallyDrop::new(stream),
                handle: Handle { raw, watch },
                home,
                thread: std::thread::current().id(),
            })
        }
    }

    fn watch(&self) -> &Watch {
        // SAFETY: the Watch lives until libuv has closed the handle (`on_close`). Its close
        // begins on this socket's drop, or in `close_all` at the environment's teardown. The
        // callers (`arm`, `park`) check `home.here()` first, and after `close_all` they are
        // not reached while that holds: the environment runs no more drains (so no run is
        // polled), and the runs it still holds are dropped only in `dispatch`'s finalizer,
        // once this thread no longer counts as its home.
        unsafe { &*self.handle.watch }
    }

    /// Wait for `event` with `waker`.
    fn arm(&self, event: c_int, waker: &Waker) -> io::Result<()> {
        let watch = self.watch();
        let slot = if event == UV_READABLE { &watch.read } else { &watch.write };
        {
            let mut slot = slot.borrow_mut();
            if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
                *slot = Some(waker.clone());
            }
        }
        let now = watch.events.get();
        if now & event == 0 {
            let uv = uv().ok_or_else(off_thread)?;
            // SAFETY: a live handle, on its loop's thread (checked by the callers), whose close
            // has not begun (`CLOSING` has every bit set, so `now & event` would not be 0).
            let rc = unsafe { (uv.poll_start)(self.handle.raw, now | event, on_poll) };
            if rc < 0 {
                return Err(uv_error(uv, rc));
            }
            watch.events.set(now | event);
        }
        if let Some(uv) = uv() {
            // SAFETY: as above: live, on its loop's thread, not closing.
            unsafe { hold_while_awaited(uv, watch, self.handle.raw) };
        }
        Ok(())
    }
}

/// Close a handle unless the environment's teardown already did.
fn close_handle(raw: *mut c_void) {
    let registered = OPEN
        .try_with(|o| {
            let mut o = o.borrow_mut();
            let at = o.iter().position(|&h| h == raw as usize);
            at.map(|at| o.swap_remove(at)).is_some()
        })
        .unwrap_or(false);
    if registered {
        close_now(raw);
    }
}

fn close_now(raw: *mut c_void) {
    if let Some(uv) = uv() {
        // SAFETY: the callers have just taken `raw` out of this thread's `OPEN`, which lists
        // only handles initialised on this thread's loop whose close has not begun; so it is
        // live, this is its loop's thread, and its close begins once. Its memory (and its
        // Watch) is freed only in `on_close`.
        unsafe {
            let watch = &*(get_data(raw) as *const Watch);
            watch.events.set(CLOSING);
            (uv.poll_stop)(raw);
            (uv.close)(raw, on_close);
        }
    }
}

struct RawHandle(*mut c_void);
// SAFETY: only handed to the environment's thread, where it is closed.
unsafe impl Send for RawHandle {}

impl Drop for UvSocket {
    fn drop(&mut self) {
        let raw = self.handle.raw;
        // SAFETY: taken once, here; the field is not used again.
        let stream = unsafe { ManuallyDrop::take(&mut self.stream) };
        if std::thread::current().id() == self.thread {
            close_handle(raw);
            drop(stream);
            return;
        }
        // Stop watching before the descriptor closes: both happen on the loop's thread.
        let handle = RawHandle(raw);
        let _ = self.home.run_there(Box::new(move || {
            let handle = handle;
            close_handle(handle.0);
            drop(stream);
        }));
    }
}

impl UvSocket {
    /// Retry `op` while interrupted; wait for `event` when it would block.
    fn attempt<T>(
        &self,
        cx: &mut Context<'_>,
        event: c_int,
        mut op: impl FnMut() -> io::Result<T>,
    ) -> Poll<io::Result<T>> {
        if !self.home.here() {
            return Poll::Ready(Err(off_thread()));
        }
        let watch = self.watch();
        // Still blocked and still watched: only the waker may have changed.
        if watch.blocked.get() & event != 0 && watch.events.get() & event != 0 {
            return match self.arm(event, cx.waker()) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            };
        }
        loop {
            match op() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    watch.blocked.set(watch.blocked.get() | event);
                    return match self.arm(event, cx.waker()) {
                        Ok(()) => Poll::Pending,
                        Err(e) => Poll::Ready(Err(e)),
                    };
                }
                done => return Poll::Ready(done),
            }
        }
    }
}

impl Io for UvSocket {
    /// Idle in the pool: nobody waits on it, so its handle keeps the loop free. It still
    /// watches for reading, when it did, so the next request's first read is answered by the
    /// loop rather than by an `EAGAIN`, and a peer that closes the idle connection is noticed.
    fn park(&mut self) {
        if !self.home.here() {
            return;
        }
        let watch = self.watch();
        watch.read.borrow_mut().take();
        watch.write.borrow_mut().take();
        let events = watch.events.get();
        if events == CLOSING {
            return;
        }
        if let Some(uv) = uv() {
            // SAFETY: on its loop's thread (checked above), and its close has not begun
            // (`events` is not `CLOSING`), so the handle is live.
            unsafe {
                if events & UV_WRITABLE != 0 {
                    rewatch(uv, watch, self.handle.raw, events & UV_READABLE);
                }
                hold_while_awaited(uv, watch, self.handle.raw);
            }
        }
    }
}

impl AsyncRead for UvSocket {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let room = buf.remaining();
        let n = std::task::ready!(self.attempt(cx, UV_READABLE, || (&*self.stream).read(buf.initialize_unfilled())))?;
        buf.advance(n);
        if n > 0 && n < room {
            // Less than there was room for: the socket is drained for now (tokio's rule too),
            // so the next read waits for the loop instead of asking it for an `EAGAIN`.
            let watch = self.watch();
            watch.blocked.set(watch.blocked.get() | UV_READABLE);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for UvSocket {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.attempt(cx, UV_WRITABLE, || (&*self.stream).write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.stream.shutdown(std::net::Shutdown::Write))
    }
}

/// Opens connections whose readiness the environment's event loop reports.
pub struct UvConnect {
    home: Home,
    event_loop: LoopPtr,
}

#[derive(Clone, Copy)]
struct LoopPtr(*mut c_void);
// SAFETY: the loop pointer is only used on the environment's thread (`UvSocket::new` is
// reached only after `home.here()` was checked).
unsafe impl Send for LoopPtr {}
// SAFETY: as for `Send`: shared references only copy the pointer out.
unsafe impl Sync for LoopPtr {}

impl UvConnect {
    /// For the calling environment, when libuv can be reached.
    pub fn new(env: &Env) -> Option<Self> {
        uv()?;
        let mut event_loop = std::ptr::null_mut();
        // SAFETY: on the environment's thread with a valid out-pointer.
        let status = unsafe { sys::napi_get_uv_event_loop(env.raw(), &mut event_loop) };
        if status != sys::Status::napi_ok || event_loop.is_null() {
            return None;
        }
        let home = Home::of(env).ok()?;
        Some(UvConnect { home, event_loop: LoopPtr(event_loop.cast()) })
    }

    async fn connect_to(&self, addr: SocketAddr) -> io::Result<UvSocket> {
        use socket2::{Domain, Protocol, Socket, Type};
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_nonblocking(true)?;
        socket.set_tcp_nodelay(true)?;
        let in_progress = match socket.connect(&addr.into()) {
            Ok(()) => false,
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) || e.kind() == io::ErrorKind::WouldBlock => true,
            Err(e) => return Err(e),
        };
        let sock = UvSocket::new(socket.into(), self.home.clone(), self.event_loop.0)?;
        if in_progress {
            // Connected once there is a peer; failed once the socket holds an error; until
            // then, waiting to become writable.
            let connected = || match sock.stream.peer_addr() {
                Ok(_) => Ok(()),
                Err(_) => match sock.stream.take_error()? {
                    Some(e) => Err(e),
                    None => Err(io::ErrorKind::WouldBlock.into()),
                },
            };
            std::future::poll_fn(|cx| sock.attempt(cx, UV_WRITABLE, connected)).await?;
        }
        Ok(sock)
    }
}

#[async_trait]
impl Connect for UvConnect {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        // Name resolution blocks, so it runs on the runtime's blocking pool; the process
        // stays alive meanwhile, as it does for Node's own lookups.
        let _hold = crate::dispatch::KeepAlive::here();
        toolnexus_core::fetch::connect::lookup(host, port).await
    }

    async fn connect(&self, addr: SocketAddr) -> io::Result<BoxIo> {
        if !self.home.here() {
            return Err(off_thread());
        }
        Ok(Box::new(self.connect_to(addr).await?))
    }
}
