//! `read`, `write` and `edit`: plain file access with exact texts.

use serde_json::{json, Value};

use super::{arg, arg_number, arg_text, node_rules, ok_with, BoxFut, Builtin};
use crate::tool::{SharedTool, ToolContext};
use crate::types::ToolResult;

pub fn read_tool() -> SharedTool {
    Builtin::shared(
        "read",
        "Read a UTF-8 text file. With offset/limit, return only that line window.",
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Path to the file to read" },
                "offset": { "type": "number", "description": "1-based line to start from" },
                "limit": { "type": "number", "description": "Maximum number of lines to read" }
            },
            "required": ["path"],
            "additionalProperties": false
        }),
        run_read,
    )
}

fn run_read(args: Value, ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let p = arg_text(&args, "path");
        if p.is_empty() {
            return Ok(ToolResult::error("read: path is required"));
        }
        let window = (arg(&args, "offset").is_some() || arg(&args, "limit").is_some())
            .then(|| node_rules::LineWindow::new(arg_number(&args, "offset"), arg_number(&args, "limit")));
        match node_rules::read_text_window(&p, window, ctx.cancel).await {
            Ok(text) => Ok(ToolResult::ok(text)),
            Err(e) => Ok(ToolResult::error(format!("read: {e}"))),
        }
    })
}

pub fn write_tool() -> SharedTool {
    Builtin::shared(
        "write",
        "Write content to a file (create/overwrite), creating parent directories.",
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Path to write to" },
                "content": { "type": "string", "description": "Content to write" }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
        run_write,
    )
}

fn run_write(args: Value, _ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let p = arg_text(&args, "path");
        if p.is_empty() {
            return Ok(ToolResult::error("write: path is required"));
        }
        let content = arg_text(&args, "content");
        node_rules::make_parent_dirs(&p).await?;
        node_rules::write_text(&p, &content).await?;
        let bytes = content.len();
        Ok(ok_with(format!("Wrote {bytes} bytes to {p}"), json!({ "bytes": bytes })))
    })
}

pub fn edit_tool() -> SharedTool {
    Builtin::shared(
        "edit",
        "Exact-string replace in a file. Default replaces a single unique occurrence; replaceAll replaces all.",
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Path to the file to edit" },
                "oldString": { "type": "string", "description": "Exact string to replace" },
                "newString": { "type": "string", "description": "Replacement string" },
                "replaceAll": { "type": "boolean", "description": "Replace all occurrences" }
            },
            "required": ["path", "oldString", "newString"],
            "additionalProperties": false
        }),
        run_edit,
    )
}

fn run_edit(args: Value, _ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let p = arg_text(&args, "path");
        if p.is_empty() {
            return Ok(ToolResult::error("edit: path is required"));
        }
        let old = match arg(&args, "oldString") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Ok(ToolResult::error("edit: oldString is required")),
        };
        let new = arg_text(&args, "newString");
        let content = match node_rules::read_text(&p).await {
            Ok(c) => c,
            Err(e) => return Ok(ToolResult::error(format!("edit: {e}"))),
        };
        let count = content.matches(old.as_str()).count();
        if count == 0 {
            return Ok(ToolResult::error(format!("edit: oldString not found in {p}")));
        }
        let all = arg(&args, "replaceAll") == Some(&Value::Bool(true));
        let next = if all {
            content.replace(old.as_str(), &new)
        } else {
            if count > 1 {
                return Ok(ToolResult::error(format!(
                    "edit: oldString is not unique in {p} ({count} occurrences); use replaceAll"
                )));
            }
            node_rules::replace_first(&content, &old, &new)
        };
        node_rules::write_text(&p, &next).await?;
        let n = if all { count } else { 1 };
        let plural = if n == 1 { "" } else { "s" };
        Ok(ok_with(format!("Edited {p} ({n} replacement{plural})"), json!({ "replacements": n })))
    })
}
