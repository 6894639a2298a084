//! `read`: whole files, line windows, decoding, and Node's failure messages.

use serde_json::json;
use toolnexus_core::ToolResult;

use super::*;

#[tokio::test]
async fn read_returns_the_whole_file_or_a_line_window() {
    let d = tmp();
    let f = p(d.path(), "a.txt");
    put(d.path(), "a.txt", "one\ntwo\nthree\n");
    assert_eq!(call("read", json!({"path": f})).await, ToolResult::ok("one\ntwo\nthree\n"));
    assert_eq!(call("read", json!({"path": f, "offset": 2, "limit": 1})).await.output, "two");
    assert_eq!(call("read", json!({"path": f, "offset": 2})).await.output, "two\nthree\n");
    assert_eq!(call("read", json!({"path": f, "limit": 2})).await.output, "one\ntwo");
    assert_eq!(call("read", json!({"path": f, "offset": -3, "limit": 1.9})).await.output, "one");
    assert_eq!(call("read", json!({"path": f, "offset": 40})).await.output, "");
    assert_eq!(call("read", json!({"path": f, "offset": "2", "limit": "1"})).await.output, "one\ntwo\nthree\n");
    assert_eq!(call("read", json!({"path": f, "offset": null})).await.output, "one\ntwo\nthree\n");
}

#[tokio::test]
async fn read_decodes_like_node_and_keeps_a_bom() {
    let d = tmp();
    std::fs::write(d.path().join("b"), b"\xEF\xBB\xBFa\xFFb\xE2\x82").unwrap();
    assert_eq!(call("read", json!({"path": p(d.path(), "b")})).await.output, "\u{FEFF}a\u{FFFD}b\u{FFFD}");
}

#[tokio::test]
async fn read_failures_carry_nodes_messages() {
    let d = tmp();
    let missing = p(d.path(), "nope.txt");
    assert_eq!(
        call("read", json!({"path": missing})).await,
        ToolResult::error(format!("read: ENOENT: no such file or directory, open '{missing}'"))
    );
    assert_eq!(
        call("read", json!({"path": p(d.path(), "")})).await,
        ToolResult::error("read: EISDIR: illegal operation on a directory, read")
    );
    put(d.path(), "f", "x");
    let under = p(d.path(), "f/x");
    assert_eq!(
        call("read", json!({"path": under})).await.output,
        format!("read: ENOTDIR: not a directory, open '{under}'")
    );
    assert_eq!(call("read", json!({})).await, ToolResult::error("read: path is required"));
    assert_eq!(call("read", json!({"path": ""})).await, ToolResult::error("read: path is required"));
    assert_eq!(
        call("read", json!({"path": "a\u{0}b"})).await,
        ToolResult::error(
            "read: The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received 'a\\x00b'"
        )
    );
}
