//! Sources without a useful end: devices, pipes, sparse files larger than any string, endless
//! HTTP bodies, procfs. Each must end in an error result (the text Node gives at the same
//! point) instead of reading on without bound. Sparse files take no disk.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Response;
use serde_json::{json, Value};
use tempfile::TempDir;
#[cfg(unix)]
use tokio_util::sync::CancellationToken;
use toolnexus_core::builtins::create_builtin_tools;
use toolnexus_core::http_tool::{http_tool, HttpToolOptions};
use toolnexus_core::jsstr::{MAX_LENGTH, TOO_LONG};
use toolnexus_core::{ToolContext, ToolResult};

use crate::util::serve::{serve, streamed};

async fn call_ctx(name: &str, args: Value, ctx: ToolContext) -> ToolResult {
    let tool = create_builtin_tools().into_iter().find(|t| t.name() == name).expect("a built-in of that name");
    tool.execute(args, ctx).await.expect("built-ins answer with results")
}

async fn call(name: &str, args: Value) -> ToolResult {
    call_ctx(name, args, ToolContext::default()).await
}

fn tmp() -> TempDir {
    tempfile::Builder::new().prefix("toolnexus-bounds-").tempdir().unwrap()
}

/// A file of `size` bytes that holds next to no disk: NULs, but for `writes` (offset, bytes).
fn sparse_with(dir: &Path, name: &str, size: u64, writes: &[(u64, &[u8])]) -> String {
    use std::io::{Seek, SeekFrom};
    let path = dir.join(name);
    let mut f = File::create(&path).unwrap();
    f.set_len(size).unwrap();
    for (at, bytes) in writes {
        f.seek(SeekFrom::Start(*at)).unwrap();
        f.write_all(bytes).unwrap();
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    path.to_string_lossy().into_owned()
}

/// A sparse file of `size` bytes: NULs, then `tail` at its very end.
fn sparse(dir: &Path, name: &str, size: u64, tail: &[u8]) -> String {
    sparse_with(dir, name, size, &[(size - tail.len() as u64, tail)])
}

fn err(output: &str) -> ToolResult {
    ToolResult::error(output)
}

// ---- read --------------------------------------------------------------------------------

#[tokio::test]
async fn read_refuses_a_file_above_2_gib_from_its_size_alone() {
    let dir = tmp();
    let big = sparse(dir.path(), "big", 3 << 30, b"");
    let started = Instant::now();
    for args in [json!({"path": big}), json!({"path": big, "limit": 1}), json!({"path": big, "offset": 2})] {
        assert_eq!(call("read", args).await, err("read: File size (3221225472) is greater than 2 GiB"));
    }
    // Node's bound is 2 GiB - 1: one byte more is refused...
    let over = sparse(dir.path(), "over", 1 << 31, b"");
    assert_eq!(call("read", json!({"path": over})).await, err("read: File size (2147483648) is greater than 2 GiB"));
    assert!(started.elapsed() < Duration::from_secs(2), "refused from the size: {:?}", started.elapsed());
    // ...and the same refusal ends `edit`, which reads the same way.
    let r = call("edit", json!({"path": big, "oldString": "a", "newString": "b"})).await;
    assert_eq!(r, err("edit: File size (3221225472) is greater than 2 GiB"));
}

#[tokio::test]
async fn read_fails_like_node_once_a_file_passes_the_string_limit() {
    let dir = tmp();
    // At 2 GiB - 1 the size is accepted; the text is too long for one string.
    let top = sparse(dir.path(), "top", (1 << 31) - 1, b"");
    let mid = sparse(dir.path(), "mid", 600 << 20, b"");
    for path in [top, mid] {
        for args in [json!({"path": path}), json!({"path": path, "limit": 1}), json!({"offset": 3, "path": path})] {
            assert_eq!(call("read", args).await, err("read: Invalid string length"));
        }
    }
}

#[tokio::test]
async fn the_limit_counts_utf16_units_not_bytes() {
    let dir = tmp();
    // MAX_LENGTH + 2 bytes: NULs and a final three-byte "€" make exactly MAX_LENGTH units,
    // which fit; one NUL more does not. A window past the only line keeps the output empty.
    let euro = "€".as_bytes();
    let fits = sparse(dir.path(), "fits", MAX_LENGTH as u64 + 2, euro);
    let over = sparse(dir.path(), "over", MAX_LENGTH as u64 + 3, euro);
    assert_eq!(call("read", json!({"path": fits, "offset": 2})).await, ToolResult::ok(""));
    assert_eq!(call("read", json!({"path": over, "offset": 2})).await, err("read: Invalid string length"));
}

#[cfg(unix)]
#[tokio::test]
async fn read_of_dev_zero_with_a_limit_ends_at_the_string_limit() {
    let started = Instant::now();
    let r = call("read", json!({"path": "/dev/zero", "limit": 1})).await;
    assert_eq!(r, err("read: Invalid string length"));
    let r = call("read", json!({"path": "/dev/zero", "offset": 5, "limit": 1})).await;
    assert_eq!(r, err("read: Invalid string length"));
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
}

#[cfg(unix)]
#[tokio::test]
async fn cancelling_a_read_of_dev_zero_ends_it_at_once() {
    let token = CancellationToken::new();
    let ctx = ToolContext { cancel: Some(token.clone()), ..Default::default() };
    let stopper = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stopper.cancel();
    });
    let started = Instant::now();
    let r = call_ctx("read", json!({"path": "/dev/zero"}), ctx).await;
    assert_eq!(r, err("read: The operation was aborted"));
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    // A signal that fired before the call aborts it before anything is opened.
    let ctx = ToolContext { cancel: Some(token), ..Default::default() };
    let r = call_ctx("read", json!({"path": "/no/such/file"}), ctx).await;
    assert_eq!(r, err("read: The operation was aborted"));
}

#[cfg(unix)]
#[tokio::test]
async fn read_takes_a_pipe_to_its_end_and_windows_it() {
    let dir = tmp();
    for (args, want) in
        [(json!({}), "one\ntwo\nthree\n"), (json!({"offset": 2, "limit": 1}), "two"), (json!({"offset": 3}), "three\n")]
    {
        let fifo = dir.path().join("fifo");
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let writer_path = fifo.clone();
        let writer = std::thread::spawn(move || {
            let mut w = std::fs::OpenOptions::new().write(true).open(writer_path).unwrap();
            // In pieces that split the lines and the characters.
            for piece in [&b"on"[..], b"e\ntw", b"o\nthr", b"ee\n"] {
                w.write_all(piece).unwrap();
                w.flush().unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let mut args = args;
        args["path"] = json!(fifo.to_string_lossy());
        assert_eq!(call("read", args).await, ToolResult::ok(want));
        writer.join().unwrap();
    }
}

#[tokio::test]
async fn ordinary_reads_are_unchanged() {
    let dir = tmp();
    let f = dir.path().join("a.txt");
    std::fs::write(&f, b"\xEF\xBB\xBFx\n\xff\xc3\ny\n").unwrap();
    let path = f.to_string_lossy().into_owned();
    assert_eq!(call("read", json!({"path": path})).await, ToolResult::ok("\u{FEFF}x\n\u{FFFD}\u{FFFD}\ny\n"));
    assert_eq!(
        call("read", json!({"path": path, "offset": 2, "limit": 2})).await,
        ToolResult::ok("\u{FFFD}\u{FFFD}\ny")
    );
    let dir_path = dir.path().to_string_lossy().into_owned();
    assert_eq!(
        call("read", json!({"path": dir_path})).await,
        err("read: EISDIR: illegal operation on a directory, read")
    );
}

// ---- grep --------------------------------------------------------------------------------

#[cfg(unix)]
#[tokio::test]
async fn grep_skips_what_node_could_not_read_and_never_reads_without_bound() {
    let dir = tmp();
    let root = dir.path();
    std::fs::write(root.join("a.txt"), "needle one\nhay\n").unwrap();
    // Not listed by the walk: a symbolic link to an endless device, a pipe nobody writes.
    std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
    let c = std::ffi::CString::new(root.join("fifo").to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Regular files readFile refuses, by their size or by the length of their text: both
    // match on their first line, and neither is listed, as the reference's failed read skips
    // the whole file. The second has short lines all through (a line feed every 16 MiB).
    sparse_with(root, "huge.bin", 3 << 30, &[(0, b"needle\n")]);
    let mut feeds: Vec<(u64, &[u8])> = vec![(0, b"needle\n")];
    feeds.extend((1..38u64).map(|i| (i << 24, &b"\n"[..])));
    sparse_with(root, "long.bin", 600 << 20, &feeds);
    // A line longer than grep holds (a deliberate bound: the reference would list it).
    sparse(root, "wide.bin", 40 << 20, b"needle\n");
    let started = Instant::now();
    let r = call("grep", json!({"pattern": "needle", "path": root.to_string_lossy()})).await;
    let a = root.join("a.txt").to_string_lossy().into_owned();
    assert_eq!(
        r,
        ToolResult {
            output: format!("{a}:1:needle one"),
            is_error: false,
            metadata: Some(json!({"count": 1})),
            rich: None
        }
    );
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn grep_over_proc_self_ends_and_finds_what_is_there() {
    let started = Instant::now();
    let r = call("grep", json!({"pattern": "^Name:", "path": "/proc/self", "limit": 1000})).await;
    assert!(!r.is_error, "{}", r.output);
    assert!(r.output.lines().any(|l| l.starts_with("/proc/self/status:1:Name:")), "{}", r.output);
    assert!(started.elapsed() < Duration::from_secs(120), "{:?}", started.elapsed());
}

// ---- endless HTTP bodies -------------------------------------------------------------------

/// An HTTP/1.1 server on 127.0.0.1 whose every answer is 200 with a body that never ends
/// (chunked, no last chunk ever): it stops writing when the client goes away.
async fn endless_server() -> String {
    let addr = serve(|_| async {
        let chunk = Bytes::from(vec![b'a'; 1 << 20]);
        let body = streamed(futures::stream::repeat(chunk));
        Some(Response::builder().header("content-type", "text/html").header("connection", "close").body(body).unwrap())
    })
    .await;
    format!("http://{addr}/")
}

#[tokio::test]
async fn webfetch_of_an_endless_body_fails_at_the_string_limit() {
    let url = endless_server().await;
    let r = call("webfetch", json!({"url": url, "format": "html", "timeout": 600})).await;
    assert_eq!(r, err(&format!("webfetch: {TOO_LONG}")));
}

#[tokio::test]
async fn an_http_tool_on_an_endless_body_fails_at_the_string_limit() {
    let url = endless_server().await;
    let mut o = HttpToolOptions::new("t", "endless", "GET", url);
    o.timeout = Some(600_000.0);
    let r = http_tool(o).execute(json!({}), ToolContext::default()).await.unwrap();
    assert_eq!(r, err(TOO_LONG));
}
