//! Personas (SPEC §7E): the soul composed from a directory, and the `memory` tool's edits,
//! written whole or not at all.

use std::fs;

use serde_json::{json, Value};
use toolnexus_core::agents::home::{
    compose_soul, memory_tool, write_atomic, BOOTSTRAP_ORDER, MAX_FILE_BYTES, TRUNCATION_NOTICE,
};
use toolnexus_core::{ToolContext, ToolResult};

async fn remember(dir: &std::path::Path, args: Value) -> ToolResult {
    memory_tool(dir).execute(args, ToolContext::default()).await.unwrap()
}

fn temp_files(dir: &std::path::Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn the_soul_holds_present_files_in_bootstrap_order() {
    let dir = tempfile::tempdir().unwrap();
    // Written out of order; only three of the seven.
    fs::write(dir.path().join("MEMORY.md"), "  remembered\n\n").unwrap();
    fs::write(dir.path().join("AGENTS.md"), "\nrules\n").unwrap();
    fs::write(dir.path().join("USER.md"), "the user").unwrap();
    let s = compose_soul(dir.path());
    assert_eq!(s.found, vec!["AGENTS.md", "USER.md", "MEMORY.md"]);
    assert_eq!(s.soul, "## AGENTS.md\n\nrules\n\n## USER.md\n\nthe user\n\n## MEMORY.md\n\nremembered");
    assert_eq!(BOOTSTRAP_ORDER.len(), 7);
    let empty = tempfile::tempdir().unwrap();
    let s = compose_soul(empty.path());
    assert_eq!((s.soul.as_str(), s.found.len()), ("", 0));
}

#[test]
fn a_file_over_the_cap_is_cut_with_the_notice_and_left_alone_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let big = "a".repeat(MAX_FILE_BYTES) + "TAIL";
    fs::write(dir.path().join("SOUL.md"), &big).unwrap();
    let s = compose_soul(dir.path());
    let expected = format!("## SOUL.md\n\n{}{}", "a".repeat(MAX_FILE_BYTES), TRUNCATION_NOTICE.trim_end());
    assert_eq!(s.soul, expected);
    assert_eq!(fs::read_to_string(dir.path().join("SOUL.md")).unwrap(), big);
    // Exactly at the cap: whole, no notice.
    fs::write(dir.path().join("SOUL.md"), "b".repeat(MAX_FILE_BYTES)).unwrap();
    assert!(!compose_soul(dir.path()).soul.contains("truncated"));
}

#[tokio::test]
async fn memory_add_replace_remove_with_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let r = remember(&home, json!({ "action": "add", "text": "likes tea" })).await;
    assert_eq!((r.output.as_str(), r.is_error), ("ok (add → MEMORY.md); loads next session", false));
    remember(&home, json!({ "action": "add", "text": "lives in Oslo" })).await;
    assert_eq!(fs::read_to_string(home.join("MEMORY.md")).unwrap(), "- likes tea\n- lives in Oslo\n");

    let r = remember(&home, json!({ "action": "replace", "text": "tea", "with": "coffee" })).await;
    assert_eq!(r.output, "ok (replace → MEMORY.md); loads next session");
    let r = remember(&home, json!({ "action": "remove", "text": "- lives in Oslo\n" })).await;
    assert_eq!(r.output, "ok (remove → MEMORY.md); loads next session");
    assert_eq!(fs::read_to_string(home.join("MEMORY.md")).unwrap(), "- likes coffee\n");

    let r = remember(&home, json!({ "action": "add", "target": "user", "text": "is a nurse" })).await;
    assert_eq!(r.output, "ok (add → USER.md); loads next session");
    assert_eq!(fs::read_to_string(home.join("USER.md")).unwrap(), "- is a nurse\n");

    let r = remember(&home, json!({ "action": "remove", "text": "absent" })).await;
    assert_eq!((r.output.as_str(), r.is_error), ("not found: absent", true));
    let r = remember(&home, json!({ "action": "replace", "target": "user", "text": "absent", "with": "x" })).await;
    assert_eq!((r.output.as_str(), r.is_error), ("not found: absent", true));
    let r = remember(&home, json!({ "action": "forget", "text": "x" })).await;
    assert_eq!((r.output.as_str(), r.is_error), ("unknown action: forget", true));
    assert!(temp_files(&home).is_empty());
}

#[tokio::test]
async fn replace_is_literal() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("MEMORY.md"), "price: X\n").unwrap();
    remember(dir.path(), json!({ "action": "replace", "text": "X", "with": "$& and $$ and $1 and $'" })).await;
    assert_eq!(fs::read_to_string(dir.path().join("MEMORY.md")).unwrap(), "price: $& and $$ and $1 and $'\n");
}

#[tokio::test]
async fn a_file_over_two_megabytes_is_edited_whole() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(MAX_FILE_BYTES + 10) + "END\n";
    fs::write(dir.path().join("MEMORY.md"), &big).unwrap();
    let r = remember(dir.path(), json!({ "action": "add", "text": "new" })).await;
    assert!(!r.is_error);
    let after = fs::read_to_string(dir.path().join("MEMORY.md")).unwrap();
    assert_eq!(after, format!("{}END\n- new\n", "x".repeat(MAX_FILE_BYTES + 10)));
    assert!(!after.contains("truncated"));
    // A miss leaves it byte for byte.
    let r = remember(dir.path(), json!({ "action": "remove", "text": "absent" })).await;
    assert!(r.is_error);
    assert_eq!(fs::read_to_string(dir.path().join("MEMORY.md")).unwrap(), after);
}

#[test]
fn a_failed_write_leaves_the_old_file_and_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    fs::write(&file, "old").unwrap();
    write_atomic(&file, b"new").unwrap();
    assert_eq!(fs::read_to_string(&file).unwrap(), "new");
    assert!(temp_files(dir.path()).is_empty());
    // The rename cannot replace a directory: the write fails, the directory stays, no temp file.
    let blocked = dir.path().join("USER.md");
    fs::create_dir(&blocked).unwrap();
    fs::write(blocked.join("inside"), "kept").unwrap();
    assert!(write_atomic(&blocked, b"new").is_err());
    assert_eq!(fs::read_to_string(blocked.join("inside")).unwrap(), "kept");
    assert!(temp_files(dir.path()).is_empty());
}

#[cfg(unix)]
#[tokio::test]
async fn a_read_only_home_fails_loudly_and_keeps_the_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("MEMORY.md");
    fs::write(&file, "- kept\n").unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o555)).unwrap();
    let r = remember(dir.path(), json!({ "action": "add", "text": "new" })).await;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    // Root may write anyway; then the write is whole.
    if r.is_error {
        assert_eq!(fs::read_to_string(&file).unwrap(), "- kept\n");
    } else {
        assert_eq!(fs::read_to_string(&file).unwrap(), "- kept\n- new\n");
    }
    assert!(temp_files(dir.path()).is_empty());
}
