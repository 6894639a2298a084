//! Relative paths: every built-in resolves them against the process working directory.

use serde_json::{json, Value};
use toolnexus_core::builtins::create_builtin_tools;
use toolnexus_core::{ToolContext, ToolResult};

async fn call(name: &str, args: Value) -> ToolResult {
    let t = create_builtin_tools().into_iter().find(|t| t.name() == name).unwrap();
    t.execute(args, ToolContext::default()).await.unwrap()
}

#[tokio::test]
async fn relative_paths_are_taken_from_the_process_working_directory() {
    // The working directory is the process's: run in a process of its own, started in a
    // fresh directory.
    crate::alone!(relative_paths_are_taken_from_the_process_working_directory, |cmd| {
        let dir = tempfile::tempdir().unwrap();
        cmd.current_dir(dir.path());
        dir
    });
    let root = std::env::current_dir().unwrap().canonicalize().unwrap();
    assert!(root.starts_with(std::env::temp_dir().canonicalize().unwrap()), "{root:?}");
    let cwd = root.to_string_lossy().into_owned();

    assert_eq!(
        call("write", json!({"path": "sub/a.txt", "content": "needle\n"})).await.output,
        "Wrote 7 bytes to sub/a.txt"
    );
    assert_eq!(call("read", json!({"path": "sub/a.txt"})).await.output, "needle\n");
    // The parent is made from the lexically resolved path, the file opened through the
    // path as given: `q` does not exist, so neither does `q/..`.
    assert_eq!(
        call("write", json!({"path": "q/../b.txt", "content": "x"})).await.output,
        "write: ENOENT: no such file or directory, open 'q/../b.txt'"
    );
    assert_eq!(call("write", json!({"path": "b.txt", "content": "x"})).await.output, "Wrote 1 bytes to b.txt");
    assert_eq!(
        call("edit", json!({"path": "sub/a.txt", "oldString": "needle", "newString": "needle!"})).await.output,
        "Edited sub/a.txt (1 replacement)"
    );
    assert_eq!(
        call("read", json!({"path": "missing"})).await.output,
        "read: ENOENT: no such file or directory, open 'missing'"
    );

    // grep prints paths joined to the root it was given (normalised), or to the cwd.
    assert_eq!(call("grep", json!({"pattern": "needle"})).await.output, format!("{cwd}/sub/a.txt:1:needle!"));
    assert_eq!(call("grep", json!({"pattern": "needle", "path": "."})).await.output, "sub/a.txt:1:needle!");
    assert_eq!(call("grep", json!({"pattern": "needle", "path": "./sub/../sub/"})).await.output, "sub/a.txt:1:needle!");
    assert_eq!(call("glob", json!({"pattern": "*.txt"})).await.output, "b.txt\nsub/a.txt");
    assert_eq!(call("glob", json!({"pattern": "*.txt", "path": "sub"})).await.output, "a.txt");

    assert_eq!(call("bash", json!({"command": "pwd"})).await.output, format!("{cwd}\n"));
    assert_eq!(call("bash", json!({"command": "pwd", "workdir": "sub"})).await.output, format!("{cwd}/sub\n"));

    let patch = "*** Begin Patch\n*** Add File: p/new.txt\n+made\n*** Update File: b.txt\n-x\n+y\n*** End Patch";
    assert_eq!(call("apply_patch", json!({"patchText": patch})).await.output, "Applied patch: 2 file operations");
    assert_eq!(std::fs::read_to_string(root.join("p/new.txt")).unwrap(), "made");
    assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "y");
}
