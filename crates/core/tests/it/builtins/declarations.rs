//! The ten tools' declarations, as the contract pins them, and how they are built and selected.

use serde_json::{json, Value};
use toolnexus_core::builtins::{create_builtin_tools, select, BuiltinsConfig};
use toolnexus_core::ToolResult;

use super::*;

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
