//! The built-in tool source (SPEC §4A): ten tools an agent can act with out of the box,
//! each `source: "builtin"`, and the `builtins` toggle that selects them.
//!
//! Every tool answers with a [`ToolResult`]; nothing a caller or a model sends makes one
//! fail any other way. Paths are taken relative to the process working directory unless
//! they are absolute, and the texts (names, descriptions, schemas, outputs, errors) are the
//! ones the contract pins.

mod bash;
mod files;
mod jsregex;
mod node_rules;
mod patch;
mod question_todo;
mod search;
mod webfetch;

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::tool::{SharedTool, Tool, ToolContext, ToolDecl};
use crate::types::ToolResult;

/// The parsed `builtins` option.
#[derive(Debug, Clone, Default)]
pub struct BuiltinsConfig {
    pub enabled: bool,
    /// Per-tool overrides on the all-on baseline; `false` drops a tool.
    pub tools: Vec<(String, bool)>,
}

impl BuiltinsConfig {
    /// `undefined` ⇒ on; a boolean; or `{ enabled?, disabled?, tools? }` where
    /// `disabled: true` wins, else `enabled: false` turns the source off.
    pub fn parse(v: Option<&Value>) -> Result<Self> {
        match v {
            None | Some(Value::Null) | Some(Value::Bool(_)) | Some(Value::Object(_)) => Ok(Self::lenient(v)),
            _ => Err(Error::Invalid(
                "createToolkit: `builtins` must be a boolean or an object { enabled?, disabled?, tools? }".into(),
            )),
        }
    }

    /// The configuration as `selectBuiltins` / `builtinsEnabled` read any value: a boolean is the
    /// switch, an object is read for `enabled` / `disabled` / `tools`, anything else leaves every
    /// tool on (a number or a string has none of those fields).
    pub fn lenient(v: Option<&Value>) -> Self {
        match v {
            Some(Value::Bool(b)) => BuiltinsConfig { enabled: *b, tools: vec![] },
            Some(Value::Object(o)) => {
                let enabled =
                    !(o.get("disabled") == Some(&Value::Bool(true)) || o.get("enabled") == Some(&Value::Bool(false)));
                let tools = match o.get("tools") {
                    Some(Value::Object(map)) => {
                        map.iter().map(|(k, v)| (k.clone(), v != &Value::Bool(false))).collect()
                    }
                    _ => vec![],
                };
                BuiltinsConfig { enabled, tools }
            }
            _ => BuiltinsConfig { enabled: true, tools: vec![] },
        }
    }

    pub fn allows(&self, name: &str) -> bool {
        self.enabled && !self.tools.iter().any(|(n, on)| n == name && !on)
    }
}

/// Whether the built-in source is on for a configuration.
pub fn builtins_enabled(cfg: &BuiltinsConfig) -> bool {
    cfg.enabled
}

/// All ten built-in tools, fresh, in their fixed order: bash, read, write, edit, grep, glob,
/// webfetch, question, apply_patch, todowrite.
pub fn create_builtin_tools() -> Vec<SharedTool> {
    vec![
        bash::tool(),
        files::read_tool(),
        files::write_tool(),
        files::edit_tool(),
        search::grep_tool(),
        search::glob_tool(),
        webfetch::tool(),
        question_todo::question_tool(),
        patch::tool(),
        question_todo::todowrite_tool(),
    ]
}

/// The active built-in tools for a configuration: none when the source is off, else every
/// tool the `tools` map does not turn off.
pub fn select(cfg: &BuiltinsConfig) -> Vec<SharedTool> {
    if !cfg.enabled {
        return Vec::new();
    }
    create_builtin_tools().into_iter().filter(|t| cfg.allows(t.name())).collect()
}

// ---- the shared tool shape ---------------------------------------------------------------

/// What a tool body gives back: a result, or the message of a failure it did not expect,
/// which the wrapper reports as `"<tool name>: <message>"`.
type Outcome = std::result::Result<ToolResult, String>;
type BoxFut = Pin<Box<dyn Future<Output = Outcome> + Send>>;
type RunFn = fn(Value, ToolContext) -> BoxFut;

/// One built-in tool: its declaration and its body.
pub struct Builtin {
    decl: ToolDecl,
    run: RunFn,
}

impl Builtin {
    fn shared(name: &'static str, description: &'static str, input_schema: Value, run: RunFn) -> SharedTool {
        Arc::new(Builtin { decl: ToolDecl::new(name, description, input_schema, "builtin"), run })
    }
}

#[async_trait]
impl Tool for Builtin {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        let args = if args.is_null() { Value::Object(Map::new()) } else { args };
        Ok(match (self.run)(args, ctx).await {
            // An output no JavaScript string can hold fails as the reference's string
            // building would.
            Ok(r) if !crate::jsstr::fits(&r.output) => {
                ToolResult::error(format!("{}: {}", self.decl.name, crate::jsstr::INVALID_LENGTH))
            }
            Ok(r) => r,
            Err(message) => ToolResult::error(format!("{}: {message}", self.decl.name)),
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ---- small helpers shared by the tools ---------------------------------------------------

/// A successful result with metadata.
fn ok_with(output: impl Into<String>, metadata: Value) -> ToolResult {
    ToolResult { output: output.into(), is_error: false, metadata: Some(metadata), rich: None }
}

/// An error result with metadata.
fn err_with(output: impl Into<String>, metadata: Value) -> ToolResult {
    ToolResult { output: output.into(), is_error: true, metadata: Some(metadata), rich: None }
}

/// `args[key]`, when the arguments are an object holding it.
fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a Value> {
    args.as_object().and_then(|o| o.get(key))
}

/// `String(args[key] ?? "")`.
fn arg_text(args: &Value, key: &str) -> String {
    match arg(args, key) {
        None | Some(Value::Null) => String::new(),
        Some(v) => crate::json::js_string(v),
    }
}

/// `args[key] ? String(args[key]) : undefined`.
fn arg_text_if_truthy(args: &Value, key: &str) -> Option<String> {
    arg(args, key).filter(|v| crate::json::truthy(v)).map(crate::json::js_string)
}

/// `typeof args[key] === "number" ? args[key] : undefined`.
fn arg_number(args: &Value, key: &str) -> Option<f64> {
    arg(args, key).and_then(Value::as_f64)
}

/// A JSON number the way JavaScript holds it: integral values as integers.
fn number_value(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn toggle_precedence() {
        assert!(BuiltinsConfig::parse(None).unwrap().enabled);
        assert!(!BuiltinsConfig::parse(Some(&json!(false))).unwrap().enabled);
        assert!(!BuiltinsConfig::parse(Some(&json!({"disabled": true, "enabled": true}))).unwrap().enabled);
        assert!(!BuiltinsConfig::parse(Some(&json!({"enabled": false}))).unwrap().enabled);
        let c = BuiltinsConfig::parse(Some(&json!({"tools": {"bash": false, "read": true}}))).unwrap();
        assert!(c.enabled && !c.allows("bash") && c.allows("read") && c.allows("grep"));
        assert!(BuiltinsConfig::parse(Some(&json!("yes"))).is_err());
    }

    #[test]
    fn lenient_reading_leaves_everything_on_for_odd_values() {
        assert!(BuiltinsConfig::lenient(Some(&json!("yes"))).enabled);
        assert!(BuiltinsConfig::lenient(Some(&json!(0))).enabled);
        assert!(BuiltinsConfig::lenient(Some(&json!([]))).enabled);
        assert!(!BuiltinsConfig::lenient(Some(&json!({"disabled": true}))).enabled);
        assert!(builtins_enabled(&BuiltinsConfig::lenient(None)));
    }

    #[test]
    fn select_filters_by_name_and_keeps_the_order() {
        let names = |v: Vec<SharedTool>| v.iter().map(|t| t.name().to_string()).collect::<Vec<_>>();
        let all = names(create_builtin_tools());
        assert_eq!(
            all,
            ["bash", "read", "write", "edit", "grep", "glob", "webfetch", "question", "apply_patch", "todowrite"]
        );
        assert_eq!(names(select(&BuiltinsConfig::lenient(None))), all);
        assert!(select(&BuiltinsConfig::lenient(Some(&json!(false)))).is_empty());
        let cfg = BuiltinsConfig::lenient(Some(&json!({"tools": {"bash": false, "nope": false, "read": true}})));
        assert_eq!(names(select(&cfg)).len(), 9);
        assert!(!names(select(&cfg)).contains(&"bash".to_string()));
        let off = BuiltinsConfig::lenient(Some(&json!({"disabled": true, "tools": {"bash": true}})));
        assert!(select(&off).is_empty());
    }

    #[test]
    fn numbers_keep_their_javascript_shape() {
        assert_eq!(number_value(3.0), json!(3));
        assert_eq!(number_value(2.5), json!(2.5));
        assert_eq!(number_value(-0.0), json!(0));
    }
}
