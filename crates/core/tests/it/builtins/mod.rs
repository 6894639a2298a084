//! The built-in tools (SPEC §4A) against real files, real child processes and a real HTTP
//! server on 127.0.0.1, and inside the agent loop. Paths are absolute, but in `cwd`, which
//! runs in a process of its own to have a working directory of its own.

mod bash;
mod cwd;
mod declarations;
mod edit;
mod grep_glob;
mod in_the_loop;
mod patch;
mod question_todowrite;
mod read;
mod webfetch;
mod write;

use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;
use toolnexus_core::builtins::create_builtin_tools;
use toolnexus_core::tool::SharedTool;
use toolnexus_core::{ToolContext, ToolResult};

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
    ToolResult { output: output.into(), is_error: false, metadata: Some(metadata), rich: None }
}

fn err_meta(output: &str, metadata: Value) -> ToolResult {
    ToolResult { output: output.into(), is_error: true, metadata: Some(metadata), rich: None }
}
