//! `edit`: exact-string replacement, uniqueness, replacement patterns, failures.

use serde_json::json;
use toolnexus_core::ToolResult;

use super::*;

#[tokio::test]
async fn edit_replaces_a_unique_occurrence() {
    let d = tmp();
    let f = p(d.path(), "notes.txt");
    put(d.path(), "notes.txt", "alpha\nbeta\n");
    assert_eq!(
        call("edit", json!({"path": f, "oldString": "beta", "newString": "gamma"})).await,
        ok(&format!("Edited {f} (1 replacement)"), json!({"replacements": 1}))
    );
    assert_eq!(text(&f), "alpha\ngamma\n");
}

#[tokio::test]
async fn edit_insists_on_uniqueness_unless_told_to_replace_all() {
    let d = tmp();
    let f = p(d.path(), "a");
    put(d.path(), "a", "a a a");
    assert_eq!(
        call("edit", json!({"path": f, "oldString": "a", "newString": "b"})).await,
        ToolResult::error(format!("edit: oldString is not unique in {f} (3 occurrences); use replaceAll"))
    );
    assert!(
        call("edit", json!({"path": f, "oldString": "a", "newString": "b", "replaceAll": 1})).await.is_error,
        "only a boolean true replaces all"
    );
    assert_eq!(text(&f), "a a a");
    assert_eq!(
        call("edit", json!({"path": f, "oldString": "a", "newString": "$&$$", "replaceAll": true})).await,
        ok(&format!("Edited {f} (3 replacements)"), json!({"replacements": 3}))
    );
    assert_eq!(text(&f), "$&$$ $&$$ $&$$", "replaceAll inserts the text as it is");
    put(d.path(), "b", "aaa");
    let g = p(d.path(), "b");
    call("edit", json!({"path": g, "oldString": "aa", "newString": "b", "replaceAll": true})).await;
    assert_eq!(text(&g), "ba", "occurrences do not overlap");
}

#[tokio::test]
async fn edit_expands_replacement_patterns_for_a_single_replacement() {
    let d = tmp();
    let f = p(d.path(), "a");
    put(d.path(), "a", "a q b");
    call("edit", json!({"path": f, "oldString": "q", "newString": "[$&|$`|$'|$$|$1]"})).await;
    assert_eq!(text(&f), "a [q|a | b|$|$1] b");
}

#[tokio::test]
async fn edit_failures() {
    let d = tmp();
    let f = p(d.path(), "a");
    put(d.path(), "a", "xyz");
    assert_eq!(
        call("edit", json!({"path": f, "oldString": "zz", "newString": "b"})).await,
        ToolResult::error(format!("edit: oldString not found in {f}"))
    );
    for old in [json!(""), json!(1), json!(null)] {
        assert_eq!(
            call("edit", json!({"path": f, "oldString": old, "newString": "b"})).await,
            ToolResult::error("edit: oldString is required")
        );
    }
    assert_eq!(
        call("edit", json!({"oldString": "a", "newString": "b"})).await,
        ToolResult::error("edit: path is required")
    );
    let missing = p(d.path(), "none");
    assert_eq!(
        call("edit", json!({"path": missing, "oldString": "a", "newString": "b"})).await,
        ToolResult::error(format!("edit: ENOENT: no such file or directory, open '{missing}'"))
    );
    call("edit", json!({"path": f, "oldString": "y"})).await;
    assert_eq!(text(&f), "xz", "a missing newString is empty");
}
