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

/// A tree of `dirs` directories of `per` files each (plus two at the root), every file with a
/// match on its second line; the paths below the root in walk order: the root's files, then
/// the directories last-first, each one's files in byte order.
fn wide_tree(dirs: usize, per: usize) -> (TempDir, Vec<String>) {
    let d = tmp();
    let mut order = vec!["r0.txt".to_string(), "r1.txt".to_string()];
    for name in &order {
        put(d.path(), name, "hay\nneedle root\n");
    }
    for i in (0..dirs).rev() {
        for j in 0..per {
            let rel = format!("d{i:02}/f{j:04}.txt");
            put(d.path(), &rel, &format!("hay\nneedle {i} {j}\nhay"));
            order.push(rel);
        }
    }
    (d, order)
}

#[tokio::test]
async fn grep_over_many_files_keeps_walk_order_and_stops_exactly_at_the_limit() {
    let (d, order) = wide_tree(12, 250);
    let root = p(d.path(), "");
    let root = root.trim_end_matches('/');
    let expected: Vec<String> = order
        .iter()
        .map(|rel| {
            let text = match rel.trim_start_matches('d').trim_end_matches(".txt").split_once("/f") {
                Some((i, j)) => format!("needle {} {}", i.parse::<u32>().unwrap(), j.parse::<u32>().unwrap()),
                None => "needle root".to_string(),
            };
            format!("{root}/{rel}:2:{text}")
        })
        .collect();
    let r = call("grep", json!({"pattern": "needle", "path": root, "limit": 100000})).await;
    assert_eq!(r, ok(&expected.join("\n"), json!({"count": expected.len()})));
    for limit in [1usize, 100, 777, 2999] {
        let r = call("grep", json!({"pattern": "needle", "path": root, "limit": limit})).await;
        assert_eq!(r, ok(&expected[..limit].join("\n"), json!({"count": limit})), "limit {limit}");
    }
    // The default limit is 100.
    let r = call("grep", json!({"pattern": "needle", "path": root})).await;
    assert_eq!(r, ok(&expected[..100].join("\n"), json!({"count": 100})));
    // With a filter that keeps one directory.
    let r = call("grep", json!({"pattern": "needle \\d+ 7$", "path": root, "include": "d03/*"})).await;
    assert_eq!(r.output, format!("{root}/d03/f0007.txt:2:needle 3 7"));
    let r = call("glob", json!({"pattern": "**/f01*", "path": root, "limit": 100000})).await;
    let mut names: Vec<&String> = order.iter().filter(|r| r.contains("/f01")).collect();
    names.sort();
    assert_eq!(r.output, names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"));
}

#[tokio::test]
async fn grep_decodes_text_as_node_does_in_small_and_large_files() {
    let d = tmp();
    let root = p(d.path(), "");
    let root = root.trim_end_matches('/');
    // Invalid bytes become U+FFFD; a BOM stays.
    std::fs::write(d.path().join("small"), b"\xEF\xBB\xBFneedle a\nx \xff needle \xc3(\nneedle\xe2\x82").unwrap();
    // Several MiB: matches at the start, across read boundaries and at the end, invalid
    // sequences around them, no final newline.
    let mut big = b"needle first \xf0\x9f\x98\x80\n".to_vec();
    let mut n = 1;
    while big.len() < (5 << 20) {
        n += 1;
        if n % 9973 == 0 {
            big.extend_from_slice(format!("needle {n} \u{e9}").as_bytes());
            big.extend_from_slice(b"\xed\xa0\x80\n");
        } else {
            big.extend_from_slice(format!("line {n} of hay, \u{20ac}\n").as_bytes());
        }
    }
    big.extend_from_slice(b"needle last \xc3");
    n += 1;
    std::fs::write(d.path().join("big"), &big).unwrap();
    let r = call("grep", json!({"pattern": "needle", "path": root, "limit": 100000})).await;
    let mut expected = Vec::new();
    for (i, line) in String::from_utf8_lossy(&big).split('\n').enumerate() {
        if line.contains("needle") {
            expected.push(format!("{root}/big:{}:{line}", i + 1));
        }
    }
    assert!(expected.len() > 20, "{}", expected.len());
    assert!(expected.last().unwrap().ends_with(&format!(":{n}:needle last \u{FFFD}")));
    expected.push(format!("{root}/small:1:\u{FEFF}needle a"));
    expected.push(format!("{root}/small:2:x \u{FFFD} needle \u{FFFD}("));
    expected.push(format!("{root}/small:3:needle\u{FFFD}"));
    assert_eq!(r.output, expected.join("\n"));
    // The empty last line after a final newline, in a large file and a small one.
    big.extend_from_slice(b"\n");
    std::fs::write(d.path().join("big"), &big).unwrap();
    std::fs::write(d.path().join("small"), b"a\n\xff\n").unwrap();
    let r = call("grep", json!({"pattern": "^$", "path": root, "limit": 100000})).await;
    assert_eq!(r.output, format!("{root}/big:{}:\n{root}/small:3:", n + 1));
    let r = call("grep", json!({"pattern": "^\u{FFFD}$", "path": root})).await;
    assert_eq!(r.output, format!("{root}/small:2:\u{FFFD}"));
}

#[cfg(unix)]
#[tokio::test]
async fn grep_skips_a_file_whose_name_is_not_utf8_that_glob_lists() {
    use std::os::unix::ffi::OsStrExt;
    let d = tmp();
    put(d.path(), "sub/ok.txt", "needle\n");
    let bad = d.path().join(std::ffi::OsStr::from_bytes(b"b\xffd"));
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("in.txt"), "needle\n").unwrap();
    std::fs::write(d.path().join(std::ffi::OsStr::from_bytes(b"n\xff.txt")), "needle\n").unwrap();
    let root = p(d.path(), "");
    let root = root.trim_end_matches('/');
    let r = call("grep", json!({"pattern": "needle", "path": root})).await;
    assert_eq!(r, ok(&format!("{root}/sub/ok.txt:1:needle"), json!({"count": 1})));
    let r = call("glob", json!({"pattern": "*.txt", "path": root})).await;
    assert_eq!(r.output, "b\u{FFFD}d/in.txt\nn\u{FFFD}.txt\nsub/ok.txt");
}

#[tokio::test]
async fn grep_finds_the_same_around_the_size_it_holds_whole() {
    // Files of just under, exactly and just over 1 MiB (held whole up to it, streamed above),
    // each with a match on its first line and one on its last, unterminated line, which holds
    // an invalid byte and an "é" (in "d", its two bytes either side of the 1 MiB mark).
    let d = tmp();
    let root = p(d.path(), "");
    let root = root.trim_end_matches('/');
    let mib = 1usize << 20;
    let mut expected = Vec::new();
    for (name, size) in [("a", mib - 1), ("b", mib), ("c", mib + 1), ("d", mib + 6)] {
        let mut bytes = b"needle head\n".to_vec();
        let mut lines = 1;
        while bytes.len() + 40 < size {
            bytes.extend_from_slice(b"hay hay hay hay hay hay hay hay hay\n");
            lines += 1;
        }
        let tail = b"needle \xff \xc3\xa9 tail";
        bytes.resize(size - tail.len(), b'x');
        bytes.extend_from_slice(tail);
        assert_eq!(bytes.len(), size);
        std::fs::write(d.path().join(name), &bytes).unwrap();
        let last = String::from_utf8_lossy(&bytes).rsplit('\n').next().unwrap().to_string();
        assert!(last.ends_with("needle \u{FFFD} \u{e9} tail"));
        if name == "d" {
            assert_eq!(&bytes[mib - 1..mib + 1], "\u{e9}".as_bytes());
        }
        expected.push(format!("{root}/{name}:1:needle head"));
        expected.push(format!("{root}/{name}:{}:{last}", lines + 1));
    }
    let r = call("grep", json!({"pattern": "needle", "path": root})).await;
    assert_eq!(r, ok(&expected.join("\n"), json!({"count": 8})));
}

#[tokio::test]
async fn glob_sorts_by_utf16_code_units() {
    // By UTF-8 bytes U+E000 and U+FF61 sort before U+1F600; by UTF-16 units after it (its
    // units are a surrogate pair, D83D DE00).
    let d = tmp();
    for f in ["\u{FF61}.txt", "\u{1F600}.txt", "a.txt", "\u{E000}.txt", "z/\u{D7FF}.txt"] {
        put(d.path(), f, "");
    }
    let root = p(d.path(), "");
    let r = call("glob", json!({"pattern": "*.txt", "path": root})).await;
    assert_eq!(r.output, ["a.txt", "z/\u{D7FF}.txt", "\u{1F600}.txt", "\u{E000}.txt", "\u{FF61}.txt"].join("\n"));
    let r = call("glob", json!({"pattern": "*.txt", "path": root, "limit": 2})).await;
    assert_eq!(r.metadata, Some(json!({"count": 2})));
}
