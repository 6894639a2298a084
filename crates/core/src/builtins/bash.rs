//! `bash`: one command through `/bin/sh -c`, stdout and stderr combined in arrival order.
//!
//! The shell leads a process group of its own (on Windows, a job of its own), so a timeout, a
//! cancellation or the caller dropping the call ends everything the command started, not only
//! the shell. Output is
//! handed to the caller and never logged.

use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::task::JoinHandle;

use super::{arg_number, arg_text, arg_text_if_truthy, err_with, node_rules, ok_with, BoxFut, Builtin};
use crate::json::js_double_text;
use crate::tool::{SharedTool, ToolContext};
use crate::types::ToolResult;

#[cfg(not(windows))]
const SHELL: &str = "/bin/sh";
#[cfg(windows)]
const SHELL: &str = "cmd.exe";

/// How long the pipes may stay open once the command's process group has been killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

pub fn tool() -> SharedTool {
    Builtin::shared(
        "bash",
        "Run a shell command and return its combined stdout+stderr. Non-zero exit is an error.",
        json!({
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The shell command to run" },
                "workdir": { "type": "string", "description": "Working directory (default: process cwd)" },
                "timeout": { "type": "number", "description": "Timeout in milliseconds (default 60000)" },
                "description": { "type": "string", "description": "Human-readable description of the command" }
            },
            "required": ["command"],
            "additionalProperties": false
        }),
        run,
    )
}

fn run(args: Value, ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let command = arg_text(&args, "command");
        if command.is_empty() {
            return Ok(ToolResult::error("bash: command is required"));
        }
        let workdir = arg_text_if_truthy(&args, "workdir").unwrap_or_else(node_rules::cwd);
        let timeout = arg_number(&args, "timeout").unwrap_or(60_000.0);
        if command.contains('\0') {
            return Err(node_rules::invalid_arg_value("file", "must be a string without null bytes", &command));
        }
        if workdir.contains('\0') {
            return Err(node_rules::null_byte_error("options.cwd", &workdir));
        }
        Ok(execute(&command, &workdir, timeout, ctx).await)
    })
}

/// How a run ended.
enum End {
    Exited(Option<i32>),
    TimedOut,
    Aborted,
}

async fn execute(command: &str, workdir: &str, timeout: f64, ctx: ToolContext) -> ToolResult {
    let mut cmd = shell_command(command);
    cmd.current_dir(workdir).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let child = match spawn(&mut cmd) {
        Ok(c) => c,
        Err(e) => {
            // Node reports these few as an `error` event naming the file; the rest are thrown
            // without it.
            let code = node_rules::error_code(&e);
            let named = matches!(code.as_str(), "EACCES" | "EAGAIN" | "EMFILE" | "ENFILE" | "ENOENT");
            let what = if named { format!("spawn {SHELL}") } else { "spawn".to_string() };
            return ToolResult::error(format!("bash: {what} {code}"));
        }
    };
    // Whatever happens to this future from here on, the group goes with it.
    let (mut child, tree) = child;
    let mut group = GroupGuard::new(child.id(), tree);
    // The command reads an empty, closed stdin.
    drop(child.stdin.take());
    let out = Arc::new(Mutex::new(Vec::<u8>::new()));
    let mut readers = Readers(Vec::with_capacity(2));
    if let Some(s) = child.stdout.take() {
        readers.0.push(tokio::spawn(collect(s, out.clone())));
    }
    if let Some(s) = child.stderr.take() {
        readers.0.push(tokio::spawn(collect(s, out.clone())));
    }

    let cancelled = async {
        match &ctx.cancel {
            Some(t) => t.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let end = tokio::select! {
        status = async {
            let status = child.wait().await;
            for r in readers.0.iter_mut() {
                let _ = r.await;
            }
            status
        } => End::Exited(status.ok().and_then(|s| s.code())),
        _ = tokio::time::sleep(node_rules::timer_delay(timeout)) => End::TimedOut,
        _ = cancelled => End::Aborted,
    };
    if !matches!(end, End::Exited(_)) {
        group.kill();
        let _ = child.start_kill();
        let _ = child.wait().await;
        let drained = async {
            for r in readers.0.iter_mut() {
                let _ = r.await;
            }
        };
        let _ = tokio::time::timeout(DRAIN_GRACE, drained).await;
        drop(readers);
    }
    group.disarm();
    let bytes = std::mem::take(&mut *out.lock().unwrap_or_else(PoisonError::into_inner));
    let text = String::from_utf8_lossy(&bytes).into_owned();
    match end {
        End::TimedOut => {
            ToolResult::error(format!("bash: command timed out after {}ms\n{text}", js_double_text(timeout)))
        }
        End::Aborted => ToolResult::error(format!("bash: command aborted\n{text}")),
        End::Exited(Some(0)) => ok_with(text, json!({ "exitCode": 0 })),
        End::Exited(code) => {
            let shown = code.map_or_else(|| "null".to_string(), |c| c.to_string());
            err_with(format!("{text}\nbash: command exited with code {shown}"), json!({ "exitCode": code }))
        }
    }
}

#[cfg(not(windows))]
fn shell_command(command: &str) -> Command {
    let mut c = Command::new(SHELL);
    c.arg("-c").arg(command);
    c
}

#[cfg(windows)]
fn shell_command(command: &str) -> Command {
    let mut c = Command::new(std::env::var("ComSpec").unwrap_or_else(|_| SHELL.into()));
    c.raw_arg(format!("/d /s /c \"{command}\""));
    c
}

/// Start the shell, on Windows in a job of its own (the tree a Unix process group is).
#[cfg(not(windows))]
fn spawn(cmd: &mut Command) -> std::io::Result<(tokio::process::Child, Tree)> {
    Ok((cmd.spawn()?, ()))
}

#[cfg(windows)]
fn spawn(cmd: &mut Command) -> std::io::Result<(tokio::process::Child, Tree)> {
    crate::proc::tree::spawn(cmd, false)
}

#[cfg(not(windows))]
type Tree = ();
#[cfg(windows)]
type Tree = Option<crate::proc::tree::Job>;

/// Append everything a pipe yields to the shared buffer, chunk by chunk.
async fn collect<R: AsyncRead + Unpin>(mut r: R, out: Arc<Mutex<Vec<u8>>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => out.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(&buf[..n]),
        }
    }
}

/// The pipe readers; stopped when dropped, so a process that escaped the group and still
/// holds a pipe keeps nothing of this call alive.
struct Readers(Vec<JoinHandle<()>>);

impl Drop for Readers {
    fn drop(&mut self) {
        self.0.iter().for_each(JoinHandle::abort);
    }
}

/// Kills the command's whole process group unless disarmed (a normal end).
struct GroupGuard {
    #[cfg_attr(not(unix), allow(dead_code))]
    pgid: Option<u32>,
    #[cfg_attr(not(windows), allow(dead_code))]
    tree: Tree,
    armed: bool,
}

impl GroupGuard {
    fn new(pid: Option<u32>, tree: Tree) -> Self {
        GroupGuard { pgid: pid, tree, armed: true }
    }

    fn kill(&self) {
        #[cfg(windows)]
        if let Some(job) = &self.tree {
            job.terminate();
        }
        #[cfg(unix)]
        if let Some(pgid) = self.pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
            // SAFETY: kill(2) has no memory-safety preconditions; a negative pid names the group.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}
