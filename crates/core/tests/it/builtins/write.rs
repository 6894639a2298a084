//! `write`: parents made, bytes counted, any content written as text, failures named.

use serde_json::json;
use toolnexus_core::ToolResult;

use super::*;

#[tokio::test]
async fn write_creates_parents_and_counts_utf8_bytes() {
    let d = tmp();
    let f = p(d.path(), "n/e/w.txt");
    assert_eq!(
        call("write", json!({"path": f, "content": "héllo"})).await,
        ok(&format!("Wrote 6 bytes to {f}"), json!({"bytes": 6}))
    );
    assert_eq!(text(&f), "héllo");
    assert_eq!(call("write", json!({"path": f, "content": ""})).await.output, format!("Wrote 0 bytes to {f}"));
    assert_eq!(text(&f), "");
}

#[tokio::test]
async fn write_turns_other_content_into_text() {
    let d = tmp();
    let f = p(d.path(), "a");
    for (content, expect) in [
        (json!(42), "42"),
        (json!(null), ""),
        (json!({"a": 1}), "[object Object]"),
        (json!([1, null, "x"]), "1,,x"),
        (json!(true), "true"),
    ] {
        let r = call("write", json!({"path": f, "content": content})).await;
        assert!(!r.is_error, "{r:?}");
        assert_eq!(text(&f), expect);
    }
    call("write", json!({"path": f})).await;
    assert_eq!(text(&f), "");
}

#[tokio::test]
async fn write_failures_name_the_call_that_failed() {
    let d = tmp();
    assert_eq!(call("write", json!({"content": "x"})).await, ToolResult::error("write: path is required"));
    let dir = p(d.path(), "");
    let dir = dir.trim_end_matches('/');
    assert_eq!(
        call("write", json!({"path": dir, "content": "x"})).await,
        ToolResult::error(format!("write: EISDIR: illegal operation on a directory, open '{dir}'"))
    );
    put(d.path(), "f", "1");
    assert_eq!(
        call("write", json!({"path": p(d.path(), "f/x/y"), "content": "x"})).await,
        ToolResult::error(format!("write: ENOTDIR: not a directory, mkdir '{}'", p(d.path(), "f/x")))
    );
    assert_eq!(
        call("write", json!({"path": p(d.path(), "f/y"), "content": "x"})).await,
        ToolResult::error(format!("write: EEXIST: file already exists, mkdir '{}'", p(d.path(), "f")))
    );
    assert_eq!(text(d.path().join("f")), "1");
}
