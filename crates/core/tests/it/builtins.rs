//! The built-in tools (SPEC §4A) against real files, real child processes and a real HTTP
//! server on 127.0.0.1. Paths are absolute here: the relative-path rules live in
//! `builtins_cwd.rs`, which owns the process working directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hyper::Response;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use toolnexus_core::builtins::{create_builtin_tools, select, BuiltinsConfig};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::types::pending_of;
use toolnexus_core::{ToolContext, ToolResult};

use crate::util::serve::{full, serve};

/// name, description, input schema as JSON text: as the contract pins them.
const DECLARATIONS: [(&str, &str, &str); 10] = [
    (
        "bash",
        r#"Run a shell command and return its combined stdout+stderr. Non-zero exit is an error."#,
        r#"{"type":"object","properties":{"command":{"type":"string","description":"The shell command to run"},"workdir":{"type":"string","description":"Working directory (default: process cwd)"},"timeout":{"type":"number","description":"Timeout in milliseconds (default 60000)"},"description":{"type":"string","description":"Human-readable description of the command"}},"required":["command"],"additionalProperties":false}"#,
    ),
    (
        "read",
        r#"Read a UTF-8 text file. With offset/limit, return only that line window."#,
        r#"{"type":"object","properties":{"path":{"type":"string","description":"Path to the file to read"},"offset":{"type":"number","description":"1-based line to start from"},"limit":{"type":"number","description":"Maximum number of lines to read"}},"required":["path"],"additionalProperties":false}"#,
    ),
    (
        "write",
        r#"Write content to a file (create/overwrite), creating parent directories."#,
        r#"{"type":"object","properties":{"path":{"type":"string","description":"Path to write to"},"content":{"type":"string","description":"Content to write"}},"required":["path","content"],"additionalProperties":false}"#,
    ),
    (
        "edit",
        r#"Exact-string replace in a file. Default replaces a single unique occurrence; replaceAll replaces all."#,
        r#"{"type":"object","properties":{"path":{"type":"string","description":"Path to the file to edit"},"oldString":{"type":"string","description":"Exact string to replace"},"newString":{"type":"string","description":"Replacement string"},"replaceAll":{"type":"boolean","description":"Replace all occurrences"}},"required":["path","oldString","newString"],"additionalProperties":false}"#,
    ),
    (
        "grep",
        r#"Search file contents by regex under a directory. Output is file:line:text matches."#,
        r#"{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression to search for"},"path":{"type":"string","description":"Directory to search (default: process cwd)"},"include":{"type":"string","description":"Glob filter for file names"},"limit":{"type":"number","description":"Maximum number of matches (default 100)"}},"required":["pattern"],"additionalProperties":false}"#,
    ),
    (
        "glob",
        r#"List files matching a glob under a directory. Output is newline-joined relative paths."#,
        r#"{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern to match"},"path":{"type":"string","description":"Directory to search (default: process cwd)"},"limit":{"type":"number","description":"Maximum number of results (default 100)"}},"required":["pattern"],"additionalProperties":false}"#,
    ),
    (
        "webfetch",
        r#"HTTP GET a URL and return its body as text, markdown, or html."#,
        r#"{"type":"object","properties":{"url":{"type":"string","description":"URL to fetch"},"format":{"type":"string","enum":["text","markdown","html"],"description":"Response format (default markdown)"},"timeout":{"type":"number","description":"Timeout in seconds (default 30)"}},"required":["url"],"additionalProperties":false}"#,
    ),
    (
        "question",
        r#"Ask the host one or more questions. Suspends via a kind:"question" Request (§10); the host's waitFor resolves it and the answer is returned to the model."#,
        r#"{"type":"object","properties":{"questions":{"type":"array","description":"Questions to ask","items":{"type":"object","properties":{"question":{"type":"string"},"header":{"type":"string"},"options":{"type":"array","items":{"type":"string"}},"multiple":{"type":"boolean"}},"required":["question"]}}},"required":["questions"],"additionalProperties":false}"#,
    ),
    (
        "apply_patch",
        r#"Apply a patch (Begin/End Patch grammar: Add/Update/Delete File). Atomic — a non-matching hunk aborts with no writes."#,
        r#"{"type":"object","properties":{"patchText":{"type":"string","description":"The patch text in Begin/End Patch format"}},"required":["patchText"],"additionalProperties":false}"#,
    ),
    (
        "todowrite",
        r#"Replace the session todo list. Returns the rendered list."#,
        r#"{"type":"object","properties":{"todos":{"type":"array","description":"The full todo list to store","items":{"type":"object","properties":{"id":{"type":"string"},"text":{"type":"string"},"completed":{"type":"boolean"}},"required":["id","text","completed"]}}},"required":["todos"],"additionalProperties":false}"#,
    ),
];

fn tool(name: &str) -> SharedTool {
    create_builtin_tools().into_iter().find(|t| t.name() == name).expect("a built-in of that name")
}

async fn call(name: &str, args: Value) -> ToolResult {
    tool(name).execute(args, ToolContext::default()).await.expect("built-ins answer with results")
}

async fn call_ctx(name: &str, args: Value, ctx: ToolContext) -> ToolResult {
    tool(name).execute(args, ctx).await.expect("built-ins answer with results")
}

fn tmp() -> TempDir {
    tempfile::Builder::new().prefix("toolnexus-builtins-").tempdir().unwrap()
}

fn p(dir: &Path, rel: &str) -> String {
    dir.join(rel).to_string_lossy().into_owned()
}

fn put(dir: &Path, rel: &str, content: &str) -> PathBuf {
    let f = dir.join(rel);
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(&f, content).unwrap();
    f
}

fn text(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn ok(output: &str, metadata: Value) -> ToolResult {
    ToolResult { output: output.into(), is_error: false, metadata: Some(metadata) }
}

fn err_meta(output: &str, metadata: Value) -> ToolResult {
    ToolResult { output: output.into(), is_error: true, metadata: Some(metadata) }
}

// ---- declarations ------------------------------------------------------------------------

#[test]
fn the_ten_tools_declare_exactly_the_pinned_names_descriptions_and_schemas() {
    let tools = create_builtin_tools();
    assert_eq!(tools.len(), 10);
    for (t, (name, description, schema)) in tools.iter().zip(DECLARATIONS) {
        assert_eq!(t.name(), name);
        assert_eq!(t.description(), description, "{name}");
        assert_eq!(serde_json::to_string(t.input_schema()).unwrap(), schema, "{name}");
        assert_eq!(t.source(), "builtin");
    }
}

#[test]
fn the_openai_declarations_keep_the_schema_key_order() {
    let tools = create_builtin_tools();
    let decls = toolnexus_core::adapters::to_openai(tools.iter().map(|t| t.as_ref()));
    let bash = serde_json::to_string(&decls[0]).unwrap();
    assert!(bash.starts_with(r#"{"type":"function","function":{"name":"bash","#), "{bash}");
    assert!(bash.contains(DECLARATIONS[0].2), "{bash}");
}

#[test]
fn each_call_builds_fresh_tools_and_select_filters_them() {
    let a = create_builtin_tools();
    let b = create_builtin_tools();
    assert!(!std::sync::Arc::ptr_eq(&a[0], &b[0]));
    let cfg = BuiltinsConfig::lenient(Some(&json!({"enabled": true, "tools": {
        "bash": false, "webfetch": false, "question": false, "apply_patch": false, "todowrite": false
    }})));
    let names: Vec<_> = select(&cfg).iter().map(|t| t.name().to_string()).collect();
    assert_eq!(names, ["read", "write", "edit", "grep", "glob"]);
}

#[tokio::test]
async fn null_arguments_read_as_an_empty_object() {
    assert_eq!(call("todowrite", Value::Null).await, ok("(no todos)", json!({"todos": []})));
    assert_eq!(call("read", json!("odd")).await, ToolResult::error("read: path is required"));
}

// ---- read ---------------------------------------------------------------------------------

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

// ---- write --------------------------------------------------------------------------------

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

// ---- edit ---------------------------------------------------------------------------------

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

// ---- grep and glob ------------------------------------------------------------------------

/// A tree with the cases the walk must get right.
fn tree() -> TempDir {
    let d = tmp();
    let r = d.path();
    put(r, "a.txt", "needle here\nnothing\n");
    put(r, "b.md", "needle in markdown\n");
    put(r, "z.txt", "needle\n");
    put(r, "src/x.ts", "const needle = 1\n\nneedle()");
    put(r, "src/deep/y.ts", "needle\r\nfoo\n");
    put(r, "src/b/q.ts", "needle q");
    put(r, "node_modules/m/i.ts", "needle");
    put(r, "src/node_modules/i.ts", "needle");
    put(r, ".git/config", "needle");
    put(r, ".hidden", "needle hidden\n");
    put(r, ".gitignore", "ignored.txt\n*.md\n");
    put(r, ".ignore", "z.txt\n");
    put(r, "ignored.txt", "needle ignored\n");
    put(r, "lib/node_modules", "needle in a file named node_modules\n");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(r.join("a.txt"), r.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(r.join("src"), r.join("linkdir")).unwrap();
    }
    d
}

#[tokio::test]
async fn grep_lists_matches_in_walk_order_reading_no_ignore_file() {
    let d = tree();
    let root = p(d.path(), "");
    let root = root.trim_end_matches('/');
    let r = call("grep", json!({"pattern": "needle", "path": root})).await;
    let expected = [
        ".gitignore:1:needle",
        ".hidden:1:needle hidden",
        "a.txt:1:needle here",
        "b.md:1:needle in markdown",
        "ignored.txt:1:needle ignored",
        "z.txt:1:needle",
        "src/x.ts:1:const needle = 1",
        "src/x.ts:3:needle()",
        "src/deep/y.ts:1:needle\r",
        "src/b/q.ts:1:needle q",
        "lib/node_modules:1:needle in a file named node_modules",
    ]
    .iter()
    .filter(|l| !l.starts_with(".gitignore"))
    .map(|l| format!("{root}/{l}"))
    .collect::<Vec<_>>();
    assert_eq!(r, ok(&expected.join("\n"), json!({"count": expected.len()})));
}

#[tokio::test]
async fn grep_filters_by_include_and_stops_at_the_limit() {
    let d = tree();
    let root = p(d.path(), "src");
    let r = call("grep", json!({"pattern": "needle", "path": root, "include": "*.ts"})).await;
    assert_eq!(r.metadata, Some(json!({"count": 4})));
    let r = call("grep", json!({"pattern": "needle", "path": p(d.path(), ""), "include": "src/**/*.ts"})).await;
    assert_eq!(r.metadata, Some(json!({"count": 4})), "{}", r.output);
    let r = call("grep", json!({"pattern": "needle", "path": root, "limit": 2})).await;
    assert_eq!(r.output, format!("{root}/x.ts:1:const needle = 1\n{root}/x.ts:3:needle()"));
    let r = call("grep", json!({"pattern": "needle", "path": root, "limit": 2.5})).await;
    assert_eq!(r.metadata, Some(json!({"count": 3})));
    for limit in [json!(0), json!(-1)] {
        assert_eq!(
            call("grep", json!({"pattern": "needle", "path": root, "limit": limit})).await,
            ok("", json!({"count": 0}))
        );
    }
}

#[tokio::test]
async fn grep_sees_the_empty_line_after_a_final_newline() {
    let d = tmp();
    put(d.path(), "a", "x\n\ny\n");
    put(d.path(), "b", "");
    put(d.path(), "c", "q");
    let root = p(d.path(), "");
    let root = root.trim_end_matches('/');
    let r = call("grep", json!({"pattern": "^$", "path": root})).await;
    assert_eq!(r.output, format!("{root}/a:2:\n{root}/a:4:\n{root}/b:1:"));
}

#[tokio::test]
async fn grep_reads_javascript_patterns() {
    let d = tmp();
    put(d.path(), "t", "a1 b\nfoo{2}\nxx\nA.B\nné\r\n");
    let root = d.path().to_string_lossy().into_owned();
    let lines = |r: ToolResult| -> Vec<String> {
        r.output.lines().filter(|l| !l.is_empty()).map(|l| l.rsplit_once(':').unwrap().1.to_string()).collect()
    };
    assert_eq!(lines(call("grep", json!({"pattern": "\\d\\s\\w", "path": root})).await), ["a1 b"]);
    assert_eq!(lines(call("grep", json!({"pattern": "o{2}", "path": root})).await), ["foo{2}"]);
    assert_eq!(lines(call("grep", json!({"pattern": "x{2}$", "path": root})).await), ["xx"]);
    assert_eq!(lines(call("grep", json!({"pattern": "^A\\.B$", "path": root})).await), ["A.B"]);
    assert_eq!(lines(call("grep", json!({"pattern": "né.$", "path": root})).await), Vec::<String>::new());
    assert_eq!(lines(call("grep", json!({"pattern": "\\u00e9", "path": root})).await), ["né\r"]);
}

#[tokio::test]
async fn grep_failures() {
    assert_eq!(call("grep", json!({})).await, ToolResult::error("grep: pattern is required"));
    assert_eq!(
        call("grep", json!({"pattern": "("})).await,
        ToolResult::error("grep: invalid regex: Invalid regular expression: /(/: Unterminated group")
    );
    let d = tree();
    let nowhere = p(d.path(), "nope");
    assert_eq!(call("grep", json!({"pattern": "x", "path": nowhere})).await, ok("", json!({"count": 0})));
    let file = p(d.path(), "a.txt");
    assert_eq!(call("grep", json!({"pattern": "needle", "path": file})).await, ok("", json!({"count": 0})));
}

#[tokio::test]
async fn glob_lists_sorted_relative_paths_reading_no_ignore_file() {
    let d = tree();
    let root = p(d.path(), "");
    let r = call("glob", json!({"pattern": "*.txt", "path": root})).await;
    assert_eq!(r, ok("a.txt\nignored.txt\nz.txt", json!({"count": 3})));
    let r = call("glob", json!({"pattern": "*", "path": root})).await;
    assert_eq!(
        r.output,
        [
            ".gitignore",
            ".hidden",
            ".ignore",
            "a.txt",
            "b.md",
            "ignored.txt",
            "lib/node_modules",
            "src/b/q.ts",
            "src/deep/y.ts",
            "src/x.ts",
            "z.txt"
        ]
        .join("\n")
    );
    let r = call("glob", json!({"pattern": "src/**/*.ts", "path": root})).await;
    assert_eq!(r.output, "src/b/q.ts\nsrc/deep/y.ts\nsrc/x.ts");
    let r = call("glob", json!({"pattern": "**/y.ts", "path": root})).await;
    assert_eq!(r.output, "src/deep/y.ts");
    let r = call("glob", json!({"pattern": "?.md", "path": root})).await;
    assert_eq!(r.output, "b.md");
}

#[tokio::test]
async fn glob_applies_the_limit_in_walk_order_then_sorts() {
    let d = tmp();
    for f in ["b/1", "a/1", "c", "B/1", "a/b/1", "a/a/1", "a/2", "_"] {
        put(d.path(), f, "x");
    }
    let root = p(d.path(), "");
    let r = call("glob", json!({"pattern": "*", "path": root})).await;
    assert_eq!(r.output, "B/1\n_\na/1\na/2\na/a/1\na/b/1\nb/1\nc");
    // The walk meets the root's files, then b/, then a/ (a/1, a/2, a/b/1, a/a/1), then B/.
    let r = call("glob", json!({"pattern": "*", "path": root, "limit": 4})).await;
    assert_eq!(r, ok("_\na/1\nb/1\nc", json!({"count": 4})));
    let r = call("glob", json!({"pattern": "*", "path": root, "limit": 2.5})).await;
    assert_eq!(r, ok("_\nb/1", json!({"count": 2.5})), "_, c and b/1 were found; two are shown");
    assert_eq!(call("glob", json!({"pattern": "*", "path": root, "limit": 0})).await, ok("", json!({"count": 0})));
}

#[tokio::test]
async fn glob_takes_braces_and_brackets_literally() {
    let d = tmp();
    for f in ["{a,b}.txt", "a.txt", "[ab].txt"] {
        put(d.path(), f, "");
    }
    let root = p(d.path(), "");
    assert_eq!(call("glob", json!({"pattern": "{a,b}.txt", "path": root})).await.output, "{a,b}.txt");
    assert_eq!(call("glob", json!({"pattern": "[ab].txt", "path": root})).await.output, "[ab].txt");
}

#[tokio::test]
async fn glob_failures() {
    assert_eq!(call("glob", json!({"pattern": ""})).await, ToolResult::error("glob: pattern is required"));
    let d = tmp();
    assert_eq!(call("glob", json!({"pattern": "*", "path": p(d.path(), "nope")})).await, ok("", json!({"count": 0})));
}

// ---- bash ---------------------------------------------------------------------------------

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
fn read_pid(file: &Path) -> i32 {
    text(file).trim().parse().unwrap()
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

// ---- question and todowrite ---------------------------------------------------------------

#[tokio::test]
async fn question_suspends_with_a_rendered_prompt() {
    let questions = json!([
        {"question": "Which env?", "header": "Env", "options": ["dev", "prod"]},
        {"question": "Why?", "options": []},
        {"question": "Count?", "options": [1, null, true]}
    ]);
    let r = call("question", json!({"questions": questions})).await;
    assert!(r.is_error);
    assert_eq!(r.output, "Which env? (options: dev, prod)\nWhy?\nCount? (options: 1, , true)");
    let req = pending_of(&r).unwrap();
    assert_eq!(req.keys().collect::<Vec<_>>(), ["kind", "prompt", "data", "id"]);
    assert_eq!(req["kind"], "question");
    assert_eq!(req["prompt"], r.output.as_str());
    assert_eq!(req["data"], json!({"questions": questions}));
    assert!(req["id"].as_str().unwrap().starts_with("pnd-"));
    let r = call("question", json!({"questions": "not a list"})).await;
    assert_eq!(r.output, "");
    assert_eq!(pending_of(&r).unwrap()["data"], json!({"questions": []}));
}

#[tokio::test]
async fn question_returns_the_answers_data_on_the_retry() {
    let ask = |answer: Value| {
        call_ctx("question", json!({"questions": []}), ToolContext { answer: Some(answer), ..Default::default() })
    };
    let r = ask(json!({"id": "x", "ok": true, "data": {"answers": ["a.txt"], "n": 2.5, "2": 0, "1": 1}})).await;
    assert_eq!(r, ToolResult::ok(r#"{"1":1,"2":0,"answers":["a.txt"],"n":2.5}"#));
    assert_eq!(ask(json!({"id": "x", "ok": true})).await, ToolResult::ok("{}"));
    assert_eq!(ask(json!({"id": "x", "ok": true, "data": null})).await, ToolResult::ok("{}"));
    assert_eq!(ask(json!("yes")).await, ToolResult::ok("{}"));
    assert!(pending_of(&ask(json!("")).await).is_some(), "a falsy answer asks again");
}

#[tokio::test]
async fn todowrite_renders_the_list_it_is_given() {
    let todos = json!([{"id": "1", "text": "a", "completed": true}, {"id": "2", "text": "b", "completed": false}]);
    assert_eq!(call("todowrite", json!({"todos": todos})).await, ok("[x] a\n[ ] b", json!({"todos": todos})));
    let odd = json!([5, "s", {"text": null, "completed": 1}, {"text": [1, 2]}]);
    assert_eq!(call("todowrite", json!({"todos": odd})).await, ok("[ ] \n[ ] \n[x] \n[ ] 1,2", json!({"todos": odd})));
    assert_eq!(call("todowrite", json!({"todos": "x"})).await, ok("(no todos)", json!({"todos": []})));
    assert_eq!(
        call("todowrite", json!({"todos": [{"text": "a"}, null]})).await,
        ToolResult::error("todowrite: Cannot read properties of null (reading 'completed')")
    );
}

// ---- apply_patch --------------------------------------------------------------------------

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

// ---- webfetch -----------------------------------------------------------------------------

/// A one-route-per-path HTTP/1.1 server on 127.0.0.1.
async fn web_server() -> String {
    let addr = serve(|req| async move {
        let path = req.uri().path().to_string();
        let (status, extra, body): (u16, Option<(&str, &str)>, Vec<u8>) = match path.as_str() {
            "/html" => (
                200,
                Some(("content-type", "text/html; charset=iso-8859-1")),
                "\u{FEFF}<html><head><style>x{}</style><SCRIPT>a<b</script></head><body><h1>Hi</h1>  \n\n\n\n<p>café &amp;</p>\n</body></html>\n".into(),
            ),
            "/404" => (404, None, b"nope".to_vec()),
            "/redirect" => (302, Some(("location", "/html")), Vec::new()),
            "/slow" => {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                (200, None, b"late".to_vec())
            }
            "/bytes" => (200, None, vec![b'a', 0xFF, b'b']),
            // The request head as it arrived (names as hyper gives them: lower-case).
            "/headers" => {
                let mut head = format!("{} {} {:?}\r\n", req.method(), req.uri(), req.version());
                for (k, v) in req.headers() {
                    head.push_str(&format!("{k}: {}\r\n", String::from_utf8_lossy(v.as_bytes())));
                }
                (200, None, head.into_bytes())
            }
            _ => (200, None, b"plain <b>text</b>".to_vec()),
        };
        let mut res = Response::builder().status(status).header("connection", "close");
        if let Some((k, v)) = extra {
            res = res.header(k, v);
        }
        Some(res.body(full(body)).unwrap())
    })
    .await;
    format!("http://{addr}")
}

#[tokio::test]
async fn webfetch_strips_markup_unless_html_is_asked_for() {
    let base = web_server().await;
    let url = format!("{base}/html");
    let md = call("webfetch", json!({"url": url})).await;
    assert_eq!(md, ok("Hi\n\ncafé &amp;", json!({"status": 200, "format": "markdown"})));
    let t = call("webfetch", json!({"url": url, "format": "text"})).await;
    assert_eq!(t, ok("Hi\n\ncafé &amp;", json!({"status": 200, "format": "text"})));
    let h = call("webfetch", json!({"url": url, "format": "html"})).await;
    assert!(h.output.starts_with("<html><head><style>"), "the BOM is dropped: {:?}", h.output);
    assert_eq!(h.metadata, Some(json!({"status": 200, "format": "html"})));
    let odd = call("webfetch", json!({"url": url, "format": "pdf"})).await;
    assert_eq!(odd.metadata, Some(json!({"status": 200, "format": "markdown"})));
    let r = call("webfetch", json!({"url": format!("{base}/redirect")})).await;
    assert_eq!(r.output, "Hi\n\ncafé &amp;");
    let r = call("webfetch", json!({"url": format!("{base}/bytes")})).await;
    assert_eq!(r.output, "a\u{FFFD}b");
    let r = call("webfetch", json!({"url": format!("{base}/headers"), "format": "html"})).await;
    assert!(r.output.starts_with("GET /headers HTTP/1.1\r\n"), "{}", r.output);
    assert!(r.output.contains("user-agent: node\r\n"), "{}", r.output);
}

#[tokio::test]
async fn webfetch_failures() {
    let base = web_server().await;
    assert_eq!(
        call("webfetch", json!({"url": format!("{base}/404")})).await,
        err_meta("HTTP 404", json!({"status": 404}))
    );
    assert_eq!(call("webfetch", json!({})).await, ToolResult::error("webfetch: url is required"));
    assert_eq!(
        call("webfetch", json!({"url": "not a url"})).await,
        ToolResult::error("webfetch: Failed to parse URL from not a url")
    );
    assert_eq!(
        call("webfetch", json!({"url": "http://127.0.0.1:1/"})).await,
        ToolResult::error("webfetch: fetch failed")
    );
    assert_eq!(call("webfetch", json!({"url": "ftp://127.0.0.1/"})).await, ToolResult::error("webfetch: fetch failed"));
    let t0 = Instant::now();
    assert_eq!(
        call("webfetch", json!({"url": format!("{base}/slow"), "timeout": 0.2})).await,
        ToolResult::error("webfetch: This operation was aborted")
    );
    assert!(t0.elapsed() < Duration::from_millis(1200));
}

#[tokio::test]
async fn webfetch_stops_when_the_caller_cancels() {
    let base = web_server().await;
    let token = CancellationToken::new();
    let ctx = ToolContext { cancel: Some(token.clone()), ..Default::default() };
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let r = call_ctx("webfetch", json!({"url": format!("{base}/slow")}), ctx).await;
    assert_eq!(r, ToolResult::error("webfetch: This operation was aborted"));
}
