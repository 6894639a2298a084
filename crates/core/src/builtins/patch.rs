//! `apply_patch`: opencode's `*** Begin Patch` grammar (Add / Update / Delete File).
//!
//! Every operation is checked and every new content computed before the file system is
//! touched; a hunk that does not match aborts with nothing written. Should writing itself
//! fail part-way, what was already written is put back.

use std::path::Path;

use serde_json::{json, Value};

use super::{arg_text, node_rules, ok_with, BoxFut, Builtin};
use crate::tool::{SharedTool, ToolContext};
use crate::types::ToolResult;

pub fn tool() -> SharedTool {
    Builtin::shared(
        "apply_patch",
        "Apply a patch (Begin/End Patch grammar: Add/Update/Delete File). Atomic — a non-matching hunk aborts with no writes.",
        json!({
            "type": "object",
            "properties": {
                "patchText": { "type": "string", "description": "The patch text in Begin/End Patch format" }
            },
            "required": ["patchText"],
            "additionalProperties": false
        }),
        run,
    )
}

#[derive(Debug, PartialEq)]
enum Op {
    Add { path: String, content: String },
    Delete { path: String },
    Update { path: String, body: Vec<String> },
}

/// `*** Add File: p` / `*** Update File: p` / `*** Delete File: p`: the kind and the raw path
/// text (one or more characters, none a line terminator).
fn file_marker(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("*** ")?;
    let (kind, rest) = ["Add", "Update", "Delete"].iter().find_map(|k| Some((*k, rest.strip_prefix(k)?)))?;
    let p = rest.strip_prefix(" File: ")?;
    if p.is_empty() || p.contains(['\r', '\u{2028}', '\u{2029}']) {
        return None;
    }
    Some((kind, p))
}

fn is_end(line: &str) -> bool {
    node_rules::trim(line) == "*** End Patch"
}

fn parse(text: &str) -> Result<Vec<Op>, String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    while i < lines.len() && node_rules::trim(lines[i]).is_empty() {
        i += 1;
    }
    if lines.get(i).map(|l| node_rules::trim(l)) != Some("*** Begin Patch") {
        return Err("missing '*** Begin Patch'".into());
    }
    i += 1;
    let mut ops = Vec::new();
    while i < lines.len() {
        let line = lines[i];
        if is_end(line) {
            return Ok(ops);
        }
        if node_rules::trim(line).is_empty() {
            i += 1;
            continue;
        }
        let Some((kind, raw_path)) = file_marker(line) else {
            return Err(format!("unexpected line: {line}"));
        };
        let path = node_rules::trim(raw_path).to_string();
        i += 1;
        let mut body = Vec::new();
        while i < lines.len() && !is_end(lines[i]) && file_marker(lines[i]).is_none() {
            body.push(lines[i].to_string());
            i += 1;
        }
        ops.push(match kind {
            "Add" => {
                let content = body.iter().map(|l| l.strip_prefix('+').unwrap_or(l)).collect::<Vec<_>>().join("\n");
                Op::Add { path, content }
            }
            "Delete" => Op::Delete { path },
            _ => Op::Update { path, body },
        });
    }
    Err("missing '*** End Patch'".into())
}

/// Apply an Update body to a file's content: hunks split at `@@` lines, each one's old
/// block (context and `-` lines) replaced by its new block (context and `+` lines); a hunk
/// with no old block appends.
fn apply_update(content: &str, body: &[String]) -> Result<String, String> {
    let mut hunks: Vec<Vec<&str>> = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    for l in body {
        if l.starts_with("@@") {
            if !cur.is_empty() {
                hunks.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(l);
        }
    }
    if !cur.is_empty() {
        hunks.push(cur);
    }
    let mut result = content.to_string();
    for hunk in hunks {
        let mut old = Vec::with_capacity(hunk.len());
        let mut new = Vec::with_capacity(hunk.len());
        for l in hunk {
            if let Some(r) = l.strip_prefix('-') {
                old.push(r);
            } else if let Some(r) = l.strip_prefix('+') {
                new.push(r);
            } else {
                let r = l.strip_prefix(' ').unwrap_or(l);
                old.push(r);
                new.push(r);
            }
        }
        let old_block = old.join("\n");
        let new_block = new.join("\n");
        if !old_block.is_empty() {
            if !result.contains(&old_block) {
                return Err("hunk does not match file contents".into());
            }
            result = node_rules::replace_first(&result, &old_block, &new_block);
        } else {
            if !(result.is_empty() || result.ends_with('\n')) {
                result.push('\n');
            }
            result.push_str(&new_block);
        }
    }
    Ok(result)
}

fn exists(p: &str) -> bool {
    !p.contains('\0') && Path::new(p).exists()
}

fn run(args: Value, _ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let text = arg_text(&args, "patchText");
        if text.is_empty() {
            return Ok(ToolResult::error("apply_patch: patchText is required"));
        }
        let ops = match parse(&text) {
            Ok(ops) => ops,
            Err(e) => return Ok(ToolResult::error(format!("apply_patch: {e}"))),
        };
        let mut writes: Vec<(String, String)> = Vec::new();
        let mut deletes: Vec<String> = Vec::new();
        for op in &ops {
            let staged = match op {
                Op::Add { path, content } => {
                    if exists(path) {
                        Err(format!("file already exists: {path}"))
                    } else {
                        writes.push((path.clone(), content.clone()));
                        Ok(())
                    }
                }
                Op::Delete { path } => {
                    if exists(path) {
                        deletes.push(path.clone());
                        Ok(())
                    } else {
                        Err(format!("file not found: {path}"))
                    }
                }
                Op::Update { path, body } => match node_rules::read_text(path).await {
                    Ok(content) => apply_update(&content, body).map(|next| writes.push((path.clone(), next))),
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = staged {
                return Ok(ToolResult::error(format!("apply_patch: {e}")));
            }
        }
        // A directory cannot be removed as a file: say so before anything is written.
        for d in &deletes {
            if std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()) {
                return Err(format!("Path is a directory: rm returned EISDIR (is a directory) {d}"));
            }
        }
        commit(&writes, &deletes).await?;
        let count = |f: fn(&Op) -> bool| ops.iter().filter(|o| f(o)).count();
        let n = ops.len();
        Ok(ok_with(
            format!("Applied patch: {n} file operation{}", if n == 1 { "" } else { "s" }),
            json!({
                "added": count(|o| matches!(o, Op::Add { .. })),
                "updated": count(|o| matches!(o, Op::Update { .. })),
                "deleted": count(|o| matches!(o, Op::Delete { .. })),
            }),
        ))
    })
}

/// What a path held before the commit touched it.
struct Saved {
    path: String,
    before: Option<Vec<u8>>,
}

/// Write, then delete; on a failure put back everything already changed.
async fn commit(writes: &[(String, String)], deletes: &[String]) -> Result<(), String> {
    let mut undo: Vec<Saved> = Vec::new();
    let outcome = async {
        for (path, content) in writes {
            let before = tokio::fs::read(path).await.ok();
            node_rules::make_parent_dirs(path).await?;
            undo.push(Saved { path: path.clone(), before });
            node_rules::write_text(path, content).await?;
        }
        for path in deletes {
            let before = tokio::fs::read(path).await.ok();
            match tokio::fs::remove_file(path).await {
                Ok(()) => undo.push(Saved { path: path.clone(), before }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(node_rules::fs_error(&e, "unlink", Some(path))),
            }
        }
        Ok(())
    }
    .await;
    if outcome.is_err() {
        for s in undo.into_iter().rev() {
            let _ = match s.before {
                Some(bytes) => tokio::fs::write(&s.path, bytes).await,
                None => tokio::fs::remove_file(&s.path).await,
            };
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_parses_like_the_reference() {
        let ops = parse("\n*** Begin Patch\n*** Add File: a.txt\n+hello\n+world\n\n*** Delete File:  b.txt \n*** Update File: c.txt\n@@\n-x\n+y\n*** End Patch").unwrap();
        assert_eq!(
            ops,
            vec![
                Op::Add { path: "a.txt".into(), content: "hello\nworld\n".into() },
                Op::Delete { path: "b.txt".into() },
                Op::Update { path: "c.txt".into(), body: vec!["@@".into(), "-x".into(), "+y".into()] },
            ]
        );
        assert_eq!(parse("nothing").unwrap_err(), "missing '*** Begin Patch'");
        assert_eq!(parse("*** Begin Patch\n*** Add File: a\n+x").unwrap_err(), "missing '*** End Patch'");
        assert_eq!(parse("*** Begin Patch\nstray\n*** End Patch").unwrap_err(), "unexpected line: stray");
        assert_eq!(
            parse("*** Begin Patch\r\n*** Add File: a\r\n*** End Patch").unwrap_err(),
            "unexpected line: *** Add File: a\r"
        );
    }

    #[test]
    fn updates_replace_blocks_and_append_insertions() {
        let body = |ls: &[&str]| ls.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(apply_update("a\nb\nc\n", &body(&[" a", "-b", "+B"])).unwrap(), "a\nB\nc\n");
        assert_eq!(apply_update("a\nb\n", &body(&["@@ one", "-a", "+A", "@@ two", "-b", "+B"])).unwrap(), "A\nB\n");
        assert_eq!(apply_update("a", &body(&["+z"])).unwrap(), "a\nz");
        assert_eq!(apply_update("a\n", &body(&["+z"])).unwrap(), "a\nz");
        assert_eq!(apply_update("price", &body(&["-price", "+$$5"])).unwrap(), "$5");
        assert_eq!(apply_update("a\n", &body(&["-q"])).unwrap_err(), "hunk does not match file contents");
    }
}
