//! `bash`: output, exit status, workdir and stdin, failures, and the process group ended on a
//! timeout, a drop or a cancel.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolnexus_core::{ToolContext, ToolResult};

use super::*;

#[tokio::test]
async fn bash_combines_both_streams_in_arrival_order() {
    assert_eq!(call("bash", json!({"command": "printf hello-bash"})).await, ok("hello-bash", json!({"exitCode": 0})));
    let r = call("bash", json!({"command": "echo out; sleep 0.1; echo err 1>&2; sleep 0.1; echo out2"})).await;
    assert_eq!(r, ok("out\nerr\nout2\n", json!({"exitCode": 0})));
}

#[tokio::test]
async fn bash_reports_a_non_zero_exit_or_a_signal() {
    assert_eq!(
        call("bash", json!({"command": "echo hi; exit 3"})).await,
        err_meta("hi\n\nbash: command exited with code 3", json!({"exitCode": 3}))
    );
    assert_eq!(
        call("bash", json!({"command": "echo hi; kill -9 $$"})).await,
        err_meta("hi\n\nbash: command exited with code null", json!({"exitCode": null}))
    );
}

#[tokio::test]
async fn bash_runs_in_the_workdir_with_a_closed_stdin() {
    let d = tmp();
    let wd = d.path().canonicalize().unwrap();
    let r = call("bash", json!({"command": "pwd", "workdir": wd})).await;
    assert_eq!(r.output, format!("{}\n", wd.display()));
    let r = call("bash", json!({"command": "cat; echo done", "timeout": 5000})).await;
    assert_eq!(r.output, "done\n");
}

#[tokio::test]
async fn bash_failures() {
    assert_eq!(call("bash", json!({})).await, ToolResult::error("bash: command is required"));
    assert_eq!(call("bash", json!({"command": ""})).await, ToolResult::error("bash: command is required"));
    let d = tmp();
    assert_eq!(
        call("bash", json!({"command": "pwd", "workdir": p(d.path(), "nope")})).await,
        ToolResult::error("bash: spawn /bin/sh ENOENT")
    );
    put(d.path(), "f", "x");
    assert_eq!(
        call("bash", json!({"command": "pwd", "workdir": p(d.path(), "f")})).await,
        ToolResult::error("bash: spawn ENOTDIR")
    );
    assert_eq!(
        call("bash", json!({"command": "echo a\u{0}b"})).await,
        ToolResult::error("bash: The argument 'file' must be a string without null bytes. Received 'echo a\\x00b'")
    );
}

/// Whether a process is still running (a zombie no longer counts).
#[cfg(target_os = "linux")]
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z') | Some('X'))
        }
    }
}

#[cfg(target_os = "linux")]
async fn wait_gone(pid: i32) -> bool {
    for _ in 0..50 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[cfg(target_os = "linux")]
/// The pid a command wrote to `file`. A process that left the group is not waited for by the
/// call, so on a loaded machine it may write its pid after the call returned: give it time.
fn read_pid(file: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(file).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let d = tmp();
    let pidfile = d.path().join("pid");
    let cmd = format!("sleep 30 & echo $! > '{}'; echo started; wait", pidfile.display());
    let t0 = Instant::now();
    let r = call("bash", json!({"command": cmd, "timeout": 400})).await;
    assert!(t0.elapsed() < Duration::from_secs(5), "the call returns promptly");
    assert_eq!(r, ToolResult::error("bash: command timed out after 400ms\nstarted\n"));
    assert!(wait_gone(read_pid(&pidfile)).await, "the background grandchild was killed");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_after_the_shell_exits_still_ends_what_holds_the_pipes() {
    let d = tmp();
    let pidfile = d.path().join("pid");
    let cmd = format!("sleep 30 & echo $! > '{}'; echo bye", pidfile.display());
    let t0 = Instant::now();
    let r = call("bash", json!({"command": cmd, "timeout": 300.5})).await;
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(r, ToolResult::error("bash: command timed out after 300.5ms\nbye\n"));
    assert!(wait_gone(read_pid(&pidfile)).await);
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_process_that_left_the_group_cannot_hold_the_call_open() {
    let d = tmp();
    let pidfile = d.path().join("pid");
    let cmd = format!("setsid sh -c 'echo $$ > \"{}\"; exec sleep 30' & sleep 0.2; echo out", pidfile.display());
    let t0 = Instant::now();
    let r = call("bash", json!({"command": cmd, "timeout": 500})).await;
    let escaped = read_pid(&pidfile);
    let _ = std::process::Command::new("kill").arg("-9").arg(escaped.to_string()).status();
    assert!(t0.elapsed() < Duration::from_secs(6), "the pipes are given a grace period, then let go");
    assert_eq!(r, ToolResult::error("bash: command timed out after 500ms\nout\n"));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let d = tmp();
    let pidfile = d.path().join("pid");
    let cmd = format!("sleep 30 & echo $! > '{}'; wait", pidfile.display());
    let fut = call("bash", json!({"command": cmd}));
    assert!(tokio::time::timeout(Duration::from_millis(400), fut).await.is_err());
    assert!(wait_gone(read_pid(&pidfile)).await, "dropping the future ended the grandchild");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_the_call_kills_the_process_group() {
    let d = tmp();
    let pidfile = d.path().join("pid");
    let cmd = format!("echo before; sleep 30 & echo $! > '{}'; wait", pidfile.display());
    let token = CancellationToken::new();
    let ctx = ToolContext { cancel: Some(token.clone()), ..Default::default() };
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    });
    let t0 = Instant::now();
    let r = call_ctx("bash", json!({"command": cmd}), ctx).await;
    canceller.await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(r, ToolResult::error("bash: command aborted\nbefore\n"));
    assert!(wait_gone(read_pid(&pidfile)).await);
}
