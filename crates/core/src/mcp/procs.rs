//! Local servers outlive nothing: however the host process ends, its servers end with it.
//!
//! A server runs as the leader of its own process group (so `close()` can end the whole tree),
//! which also takes it out of the terminal's foreground group: a Ctrl-C no longer reaches it.
//! Three layers make up for that, on Unix:
//!
//! - **Exit** (`process.exit`, the end of the event loop, any `exit()`): an `atexit` handler sends
//!   SIGTERM to every live server group, waits briefly for them to go, then SIGKILLs what is left.
//! - **Death by a signal** (Ctrl-C without a handler, SIGTERM, SIGKILL, a crash), where no exit
//!   handler runs: on Linux the server is started with a parent-death signal (SIGTERM), and on
//!   every Unix a watcher joins the server's group. The watcher is `/bin/sh` reading a pipe whose
//!   only write end the host holds; the kernel closes it when the host dies, however it dies, and
//!   the watcher then sends SIGTERM to its group (the server and all its descendants), waits a
//!   second and sends SIGKILL. That is what reaches the grandchildren (`npx`, `sh -c`, …
//!   wrapping the real server), which a parent-death signal never does.
//! - **`close()` and drop**: the group is killed (see `conn::ChildGroup`), the watcher included.
//!
//! A parent-death signal fires when the *thread* that forked the child ends, not the process.
//! Every server is therefore forked on one dedicated thread that lives as long as the process,
//! never on the thread that asked for it (which may be a short-lived runtime or Node worker).

use tokio::process::Child;

/// A spawned server and the watcher of its group.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) watcher: Option<Child>,
    /// The server's entry in the exit registry, to be released once its group is killed.
    pub(crate) slot: Option<usize>,
    /// On Windows, the job the server runs in.
    pub(crate) tree: Tree,
}

/// What holds a server's whole tree besides its process group: on Windows a job that the system
/// ends when its last handle closes (when the server is closed, or the host ends however it
/// ends).
#[cfg(windows)]
pub(crate) type Tree = Option<crate::proc::tree::Job>;
#[cfg(not(windows))]
pub(crate) type Tree = ();

#[cfg(unix)]
pub(crate) use unix::{release, spawn};

#[cfg(windows)]
pub(crate) fn spawn(mut cmd: tokio::process::Command) -> std::io::Result<Spawned> {
    let (child, tree) = crate::proc::tree::spawn(&mut cmd, true)?;
    Ok(Spawned { child, watcher: None, slot: None, tree })
}

#[cfg(not(any(unix, windows)))]
pub(crate) fn spawn(mut cmd: tokio::process::Command) -> std::io::Result<Spawned> {
    Ok(Spawned { child: cmd.spawn()?, watcher: None, slot: None, tree: () })
}

#[cfg(not(unix))]
pub(crate) fn release(_slot: Option<usize>) {}

#[cfg(unix)]
mod unix {
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::process::Stdio;
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::{mpsc, Once, OnceLock};
    use std::time::Duration;

    use tokio::process::Command;

    use super::Spawned;

    /// What the watcher runs: wait for the host's end of the pipe to close, then end the group,
    /// politely first. It ignores SIGTERM only after it has been woken, so an earlier SIGTERM to
    /// the group (from the exit handler) ends it as well.
    const WATCHER: &str = "read _; trap '' TERM; kill -s TERM 0; sleep 1; kill -s KILL 0";

    /// How long the exit handler waits for the groups to go after SIGTERM, in steps.
    const EXIT_GRACE_STEPS: u32 = 40;
    const EXIT_GRACE_STEP: Duration = Duration::from_millis(5);

    // ---------------------------------------------------------------------------------------
    // The spawning thread
    // ---------------------------------------------------------------------------------------

    type Job = Box<dyn FnOnce() + Send>;

    /// The queue of the thread every server is forked on; `None` if it could not be started.
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();

    fn spawner() -> Option<&'static mpsc::Sender<Job>> {
        SPAWNER
            .get_or_init(|| {
                let (tx, rx) = mpsc::channel::<Job>();
                std::thread::Builder::new()
                    .name("toolnexus-spawn".into())
                    .spawn(move || {
                        // The sender lives in a static: this loop, and the thread, last as long
                        // as the process. A job that panics must not end the thread either.
                        for job in rx {
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                        }
                    })
                    .ok()
                    .map(|_| tx)
            })
            .as_ref()
    }

    /// Run `f` on the spawning thread and wait for its result (a fork and exec take a
    /// millisecond or two). Without that thread, run it here.
    fn on_spawner<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> io::Result<T> {
        let Some(queue) = spawner() else { return Ok(f()) };
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        queue.send(job).map_err(|_| io::Error::other("the spawning thread is gone"))?;
        rx.recv().map_err(|_| io::Error::other("spawning failed"))
    }

    // ---------------------------------------------------------------------------------------
    // The host's lifeline
    // ---------------------------------------------------------------------------------------

    /// The read end handed to every watcher as its stdin, and the write end only this process
    /// holds (both close-on-exec, so no other child keeps the write end open).
    static LIFELINE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();

    fn lifeline() -> Option<&'static OwnedFd> {
        LIFELINE
            .get_or_init(|| std::io::pipe().ok().map(|(r, w)| (OwnedFd::from(r), OwnedFd::from(w))))
            .as_ref()
            .map(|(r, _)| r)
    }

    /// Start the watcher of group `pgid`; `None` when it cannot be started (the other layers
    /// still apply).
    fn spawn_watcher(pgid: i32) -> Option<tokio::process::Child> {
        let stdin = lifeline()?.as_fd().try_clone_to_owned().ok()?;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(WATCHER)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(pgid)
            .kill_on_drop(true);
        cmd.spawn().ok()
    }

    // ---------------------------------------------------------------------------------------
    // The exit registry
    // ---------------------------------------------------------------------------------------

    const SLOTS: usize = 256;
    /// Live server groups (their leader's pid); 0 is a free slot.
    static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
    /// Each group's watcher, to be reaped while waiting.
    static WATCHERS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
    /// The process that registered the handler: a forked copy that calls `exit()` must not
    /// end the servers of its parent.
    static OWNER: AtomicI32 = AtomicI32::new(0);
    static HANDLER: Once = Once::new();

    fn register(pgid: i32, watcher: i32) -> Option<usize> {
        HANDLER.call_once(|| {
            // SAFETY: getpid has no preconditions; `at_exit` is an `extern "C" fn()` that
            // never unwinds.
            unsafe {
                OWNER.store(libc::getpid(), Ordering::SeqCst);
                libc::atexit(at_exit);
            }
        });
        let slot =
            GROUPS.iter().position(|g| g.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst).is_ok())?;
        WATCHERS[slot].store(watcher, Ordering::SeqCst);
        Some(slot)
    }

    /// Forget a group once it has been killed.
    pub(crate) fn release(slot: Option<usize>) {
        if let Some(slot) = slot.filter(|s| *s < SLOTS) {
            WATCHERS[slot].store(0, Ordering::SeqCst);
            GROUPS[slot].store(0, Ordering::SeqCst);
        }
    }

    /// Reap `pid` if it is a child of ours that has exited; true when it is gone.
    fn reaped(pid: i32) -> bool {
        if pid <= 0 {
            return true;
        }
        let mut status = 0;
        // SAFETY: waitpid with WNOHANG only inspects our own children.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        r == pid || r < 0
    }

    /// Whether any process is left in group `pgid` (after reaping our own exited children).
    fn group_left(slot: usize, pgid: i32) -> bool {
        reaped(pgid);
        reaped(WATCHERS[slot].load(Ordering::SeqCst));
        // SAFETY: signal 0 only checks that the group still has members.
        unsafe { libc::kill(-pgid, 0) == 0 }
    }

    /// Runs during process teardown: only atomics, signals, waitpid and nanosleep; no
    /// allocation, no locks, no thread-locals, no runtime.
    extern "C" fn at_exit() {
        // SAFETY: getpid has no preconditions.
        if unsafe { libc::getpid() } != OWNER.load(Ordering::SeqCst) {
            return;
        }
        let mut any = false;
        for g in &GROUPS {
            let pgid = g.load(Ordering::SeqCst);
            if pgid > 1 {
                any = true;
                // SAFETY: only sends a signal; a group that is gone gives ESRCH.
                unsafe { libc::killpg(pgid, libc::SIGTERM) };
            }
        }
        if !any {
            return;
        }
        for _ in 0..EXIT_GRACE_STEPS {
            let left = (0..SLOTS).any(|i| {
                let pgid = GROUPS[i].load(Ordering::SeqCst);
                pgid > 1 && group_left(i, pgid)
            });
            if !left {
                return;
            }
            let pause = libc::timespec { tv_sec: 0, tv_nsec: EXIT_GRACE_STEP.as_nanos() as libc::c_long };
            // SAFETY: a plain sleep with a valid timespec.
            unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
        }
        for g in &GROUPS {
            let pgid = g.load(Ordering::SeqCst);
            if pgid > 1 {
                // SAFETY: as above.
                unsafe { libc::killpg(pgid, libc::SIGKILL) };
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Spawning
    // ---------------------------------------------------------------------------------------

    /// Fork `cmd` (already set up as a group leader) on the spawning thread, within the calling
    /// runtime, then start the watcher of its group and register the group for the exit handler.
    pub(crate) fn spawn(mut cmd: Command) -> io::Result<Spawned> {
        let runtime = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        #[cfg(target_os = "linux")]
        {
            // SAFETY: getpid has no preconditions.
            let host = unsafe { libc::getpid() };
            // SAFETY: runs in the forked child before exec and only makes async-signal-safe
            // calls (prctl, getppid, _exit), without allocating.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // The host died between the fork and the prctl: the signal will never come.
                    if libc::getppid() != host {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
        }
        on_spawner(move || {
            let _enter = runtime.enter();
            let child = cmd.spawn()?;
            let pgid = child.id().and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1);
            let watcher = pgid.and_then(spawn_watcher);
            let watcher_pid = watcher.as_ref().and_then(|w| w.id()).and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
            let slot = pgid.and_then(|p| register(p, watcher_pid));
            Ok(Spawned { child, watcher, slot, tree: () })
        })?
    }
}
