//! A persona's home directory (SPEC §7E): the soul composed from its files, and the
//! file-backed `memory` tool.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::fn_tool::FnTool;
use crate::json::js_string;
use crate::tool::SharedTool;
use crate::types::ToolResult;

/// The files a soul is composed from, in the order they appear in it.
pub const BOOTSTRAP_ORDER: [&str; 7] =
    ["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md"];

/// The most bytes of one file that go into a soul.
pub const MAX_FILE_BYTES: usize = 2 * 1024 * 1024;

/// What follows a file cut at [`MAX_FILE_BYTES`] in a soul.
pub const TRUNCATION_NOTICE: &str = "\n[truncated: exceeds 2 MB bootstrap cap]";

/// A heartbeat reply containing this is silent.
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";

/// The prompt a heartbeat wakes a persona with.
pub const HEARTBEAT_PROMPT: &str =
    "Heartbeat. Read your HEARTBEAT.md section and follow it. If nothing needs attention, reply HEARTBEAT_OK.";

const MEMORY_DESCRIPTION: &str = "Persist durable memory. action=add appends an entry; replace swaps an existing substring (with); remove deletes one. target=self (MEMORY.md, default) or user (USER.md). Writes persist to disk and load at the START of your NEXT session — they do NOT change your current context.";

/// A composed soul and the files it was made from, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Soul {
    pub soul: String,
    pub found: Vec<String>,
}

/// Text of bytes as Node's `Buffer.toString("utf8")` gives it (bad sequences become U+FFFD).
fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A file's text for a soul: at most [`MAX_FILE_BYTES`] bytes of it (then the notice);
/// `None` when it cannot be read.
fn read_capped(file: &Path) -> Option<String> {
    let bytes = std::fs::read(file).ok()?;
    Some(if bytes.len() > MAX_FILE_BYTES { utf8(&bytes[..MAX_FILE_BYTES]) + TRUNCATION_NOTICE } else { utf8(&bytes) })
}

/// JavaScript's white space and line terminators (what `String.prototype.trim` removes).
fn js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// The soul of the persona in `dir`: each present bootstrap file as a `## <name>` section,
/// in [`BOOTSTRAP_ORDER`]; absent files are skipped.
pub fn compose_soul(dir: &Path) -> Soul {
    let mut sections = Vec::new();
    let mut found = Vec::new();
    for name in BOOTSTRAP_ORDER {
        if let Some(body) = read_capped(&dir.join(name)) {
            sections.push(format!("## {name}\n\n{}", body.trim_matches(js_space)));
            found.push(name.to_string());
        }
    }
    Soul { soul: sections.join("\n\n"), found }
}

/// The `memory` tool over `dir`: `add`, `replace` and `remove` on `MEMORY.md` (`self`, the
/// default) or `USER.md` (`user`). Every change is written to a temporary file in the same
/// directory, then renamed over the file, so the file is always either the old or the new text.
pub fn memory_tool(dir: impl Into<PathBuf>) -> SharedTool {
    let dir: PathBuf = dir.into();
    let schema = json!({
        "type": "object",
        "properties": {
            "action": { "type": "string", "enum": ["add", "replace", "remove"] },
            "target": { "type": "string", "enum": ["self", "user"], "description": "self=MEMORY.md (default), user=USER.md" },
            "text": { "type": "string", "description": "For add: the entry. For replace/remove: the existing text." },
            "with": { "type": "string", "description": "For replace: the replacement text." },
        },
        "required": ["action", "text"],
    });
    Arc::new(FnTool::new("memory", MEMORY_DESCRIPTION, Some(schema), move |args, _| {
        let dir = dir.clone();
        async move {
            match crate::host_thread::offload(async move { Ok(remember(&dir, &args)) }).await {
                Ok(r) => r,
                Err(e) => ToolResult::error(e.to_string()),
            }
        }
    }))
}

/// `String(v)` of an argument, `"undefined"` when it is absent.
fn arg_text(args: &Value, key: &str) -> String {
    match args.get(key) {
        None => "undefined".into(),
        Some(v) => js_string(v),
    }
}

/// One memory action, start to end.
fn remember(dir: &Path, args: &Value) -> ToolResult {
    let file_name = if args.get("target").and_then(Value::as_str) == Some("user") { "USER.md" } else { "MEMORY.md" };
    let file = dir.join(file_name);
    let action = arg_text(args, "action");
    let text = arg_text(args, "text");
    // The whole file, whatever its size: a change rewrites all of it.
    let current = match std::fs::read(&file) {
        Ok(bytes) => utf8(&bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return ToolResult::error(format!("cannot read {}: {e}", file.display())),
    };
    let next = match action.as_str() {
        "add" => format!("{}\n- {text}\n", current.trim_end_matches(js_space)).trim_start_matches(js_space).to_string(),
        "replace" | "remove" => {
            if !current.contains(text.as_str()) {
                return ToolResult::error(format!("not found: {text}"));
            }
            let with = if action == "replace" {
                match args.get("with") {
                    None | Some(Value::Null) => String::new(),
                    Some(v) => js_string(v),
                }
            } else {
                String::new()
            };
            // Literal: `$&` and the like in `with` stay as written.
            current.replacen(text.as_str(), &with, 1)
        }
        _ => return ToolResult::error(format!("unknown action: {action}")),
    };
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| write_atomic(&file, next.as_bytes())) {
        return ToolResult::error(format!("cannot write {}: {e}", file.display()));
    }
    ToolResult::ok(format!("ok ({action} → {file_name}); loads next session"))
}

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Write `bytes` to `file` through a temporary file in the same directory and a rename; on
/// any failure the temporary file is removed and `file` is as it was.
pub fn write_atomic(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), NEXT_TEMP.fetch_add(1, Ordering::Relaxed)));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&temp, file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
