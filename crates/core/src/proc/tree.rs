//! A process and everything it starts, in one Windows Job Object.
//!
//! The process is created suspended, assigned to a new job, and only then let run, so every
//! process it starts is in the job from its first instruction. Ending the job ends them all (a
//! `cmd.exe` and the program it ran, `npx` and the server it started). With `kill_on_close`, the
//! system also ends them when the job's last handle closes, which happens however the parent
//! process ends.

use std::io;

use tokio::process::{Child, Command};
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME};

/// A job holding a process tree; its handle is closed when this is dropped.
pub struct Job {
    handle: HANDLE,
}

// SAFETY: a job handle is a kernel object handle, usable from any thread.
unsafe impl Send for Job {}
// SAFETY: the only operations (terminate, close) are thread-safe system calls on the handle.
unsafe impl Sync for Job {}

impl Job {
    fn new(kill_on_close: bool) -> io::Result<Job> {
        // SAFETY: no security attributes and no name: an anonymous job this process owns.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return Err(io::Error::last_os_error());
        }
        let job = Job { handle };
        if kill_on_close {
            // SAFETY: a zeroed JOBOBJECT_EXTENDED_LIMIT_INFORMATION is a valid "no limits" value.
            let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
            info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            // SAFETY: the pointer and size describe `info`, which outlives the call.
            let ok = unsafe {
                SetInformationJobObject(
                    job.handle,
                    JobObjectExtendedLimitInformation,
                    std::ptr::from_ref(&info).cast(),
                    std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                )
            };
            if ok == 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(job)
    }

    /// End every process in the job.
    pub fn terminate(&self) {
        // SAFETY: the handle is open for as long as `self` lives.
        unsafe {
            TerminateJobObject(self.handle, 1);
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: the handle was opened by `Job::new` and is closed only here.
        unsafe {
            CloseHandle(self.handle);
        }
    }
}

/// Spawn `cmd` inside a new job. When the job cannot be made (a system that refuses nested jobs),
/// the process still starts, without one: callers then end the process alone.
pub fn spawn(cmd: &mut Command, kill_on_close: bool) -> io::Result<(Child, Option<Job>)> {
    let Ok(job) = Job::new(kill_on_close) else { return Ok((cmd.spawn()?, None)) };
    cmd.creation_flags(CREATE_SUSPENDED);
    let child = cmd.spawn()?;
    let Some(pid) = child.id() else { return Ok((child, Some(job))) };
    let assigned = child.raw_handle().is_some_and(|process| {
        // SAFETY: both handles are open: the job's by `job`, the process's by `child`.
        unsafe { AssignProcessToJobObject(job.handle, process as HANDLE) != 0 }
    });
    let resumed = resume(pid);
    if resumed.is_err() {
        // A process that cannot be let run would hang its caller: end it now.
        job.terminate();
        let mut child = child;
        let _ = child.start_kill();
        return Err(resumed.err().unwrap_or_else(|| io::Error::other("the process could not be resumed")));
    }
    Ok((child, assigned.then_some(job)))
}

/// Let every thread of a process created suspended run (there is one: its main thread).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of the system's threads; closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: THREADENTRY32 is plain data; dwSize is set as the API requires.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    let mut resumed = 0;
    // SAFETY: `entry` is valid and sized; the snapshot handle is open.
    let mut more = unsafe { Thread32First(snapshot, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opening a thread by id; the handle is closed right after use.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !thread.is_null() {
                // SAFETY: `thread` is an open handle with THREAD_SUSPEND_RESUME access.
                unsafe {
                    if ResumeThread(thread) != u32::MAX {
                        resumed += 1;
                    }
                    CloseHandle(thread);
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot, &mut entry) } != 0;
    }
    // SAFETY: the snapshot handle is open and closed once.
    unsafe {
        CloseHandle(snapshot);
    }
    if resumed == 0 {
        return Err(io::Error::other(format!("no thread of process {pid} could be resumed")));
    }
    Ok(())
}
