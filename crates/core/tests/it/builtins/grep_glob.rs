//! `grep` and `glob`: walk order, filters, limits, patterns, failures.

use serde_json::json;
use tempfile::TempDir;
use toolnexus_core::ToolResult;

use super::*;

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
