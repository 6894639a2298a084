//! `apply_patch`: the Begin/End Patch grammar, applied atomically.

use std::path::Path;

use serde_json::{json, Value};
use toolnexus_core::ToolResult;

use super::*;

fn patch(lines: &[&str]) -> Value {
    json!({ "patchText": lines.join("\n") })
}

#[tokio::test]
async fn apply_patch_adds_updates_and_deletes() {
    let d = tmp();
    let (a, gone, new) = (p(d.path(), "a.txt"), p(d.path(), "gone.txt"), p(d.path(), "n/new.txt"));
    put(d.path(), "a.txt", "a\nb\nc\nd\n");
    put(d.path(), "gone.txt", "bye");
    let add = format!("*** Add File: {new}");
    let upd = format!("*** Update File: {a}");
    let del = format!("*** Delete File: {gone}");
    let r = call(
        "apply_patch",
        patch(&[
            "*** Begin Patch",
            &add,
            "+hello",
            "+world",
            &upd,
            "@@",
            " a",
            "-b",
            "+B",
            "@@",
            "-d",
            "+D",
            &del,
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(r, ok("Applied patch: 3 file operations", json!({"added": 1, "updated": 1, "deleted": 1})));
    assert_eq!(text(&new), "hello\nworld");
    assert_eq!(text(&a), "a\nB\nc\nD\n");
    assert!(!Path::new(&gone).exists());
    let r = call("apply_patch", patch(&["*** Begin Patch", "*** End Patch"])).await;
    assert_eq!(r.output, "Applied patch: 0 file operations");
    let upd = format!("*** Update File: {a}");
    let r = call("apply_patch", patch(&["*** Begin Patch", &upd, "+tail", "*** End Patch"])).await;
    assert_eq!(r.output, "Applied patch: 1 file operation");
    assert_eq!(text(&a), "a\nB\nc\nD\ntail");
}

#[tokio::test]
async fn apply_patch_is_atomic_when_a_hunk_does_not_match() {
    let d = tmp();
    let (a, b, x) = (p(d.path(), "a.txt"), p(d.path(), "b.txt"), p(d.path(), "x.txt"));
    put(d.path(), "a.txt", "keep\n");
    put(d.path(), "b.txt", "also\n");
    let lines = [
        "*** Begin Patch".to_string(),
        format!("*** Add File: {x}"),
        "+new".into(),
        format!("*** Delete File: {b}"),
        format!("*** Update File: {a}"),
        "-absent".into(),
        "+y".into(),
        "*** End Patch".into(),
    ];
    let r = call("apply_patch", json!({"patchText": lines.join("\n")})).await;
    assert_eq!(r, ToolResult::error("apply_patch: hunk does not match file contents"));
    assert!(!Path::new(&x).exists());
    assert_eq!(text(&a), "keep\n");
    assert_eq!(text(&b), "also\n");
}

#[tokio::test]
async fn apply_patch_checks_every_operation_first() {
    let d = tmp();
    let a = p(d.path(), "a.txt");
    put(d.path(), "a.txt", "a");
    let dir = p(d.path(), "dir");
    put(d.path(), "dir/inner", "x");
    let add = format!("*** Add File: {a}");
    assert_eq!(
        call("apply_patch", patch(&["*** Begin Patch", &add, "+x", "*** End Patch"])).await,
        ToolResult::error(format!("apply_patch: file already exists: {a}"))
    );
    let missing = p(d.path(), "q.txt");
    let del = format!("*** Delete File: {missing}");
    assert_eq!(
        call("apply_patch", patch(&["*** Begin Patch", &del, "*** End Patch"])).await,
        ToolResult::error(format!("apply_patch: file not found: {missing}"))
    );
    let upd = format!("*** Update File: {missing}");
    assert_eq!(
        call("apply_patch", patch(&["*** Begin Patch", &upd, "-a", "*** End Patch"])).await,
        ToolResult::error(format!("apply_patch: ENOENT: no such file or directory, open '{missing}'"))
    );
    let new = p(d.path(), "new.txt");
    let (add, del) = (format!("*** Add File: {new}"), format!("*** Delete File: {dir}"));
    assert_eq!(
        call("apply_patch", patch(&["*** Begin Patch", &add, "+x", &del, "*** End Patch"])).await,
        ToolResult::error(format!("apply_patch: Path is a directory: rm returned EISDIR (is a directory) {dir}"))
    );
    assert!(!Path::new(&new).exists(), "nothing was written before the failure");
}

#[tokio::test]
async fn apply_patch_grammar_errors() {
    let e = |t: &'static str| call("apply_patch", json!({"patchText": t}));
    assert_eq!(call("apply_patch", json!({})).await, ToolResult::error("apply_patch: patchText is required"));
    assert_eq!(e("hello").await, ToolResult::error("apply_patch: missing '*** Begin Patch'"));
    assert_eq!(
        e("\n  *** Begin Patch  \n*** Add File: a\n+x").await,
        ToolResult::error("apply_patch: missing '*** End Patch'")
    );
    assert_eq!(
        e("*** Begin Patch\ngarbage\n*** End Patch").await,
        ToolResult::error("apply_patch: unexpected line: garbage")
    );
    assert_eq!(
        e("*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** End Patch\r\n").await,
        ToolResult::error("apply_patch: unexpected line: *** Add File: a\r")
    );
}
