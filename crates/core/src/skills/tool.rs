//! The `skill` tool: loads one skill's instructions and resources on demand.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::catalog::{utf16_compare, Catalog, SkillOrigin, SKILL_TOOL_DESCRIPTION};
use super::frontmatter::js_trim;
use super::{discover, paths};
use crate::error::Result;
use crate::json::js_string;
use crate::tool::{Tool, ToolContext, ToolDecl};
use crate::types::ToolResult;

/// The sample size when the limit is `0`.
const DEFAULT_SAMPLE: f64 = 10.0;

pub struct SkillTool {
    catalog: Arc<Catalog>,
    decl: ToolDecl,
}

impl SkillTool {
    pub(crate) fn new(catalog: Arc<Catalog>) -> Self {
        let schema = json!({
            "type": "object",
            "properties": { "name": { "type": "string", "description": "The name of the skill to load" } },
            "required": ["name"],
            "additionalProperties": false
        });
        SkillTool { catalog, decl: ToolDecl::new("skill", SKILL_TOOL_DESCRIPTION, schema, "skill") }
    }
}

fn not_found(catalog: &Catalog, name: &str) -> ToolResult {
    let mut names: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
    names.sort_by(|a, b| utf16_compare(a, b));
    let available = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    ToolResult::error(format!("Skill \"{name}\" not found. Available skills: {available}"))
}

/// The progressive-disclosure block for one skill.
fn load(catalog: &Catalog, name: &str) -> ToolResult {
    let Some(info) = catalog.get(name) else { return not_found(catalog, name) };
    let limit = catalog.sample_limit;
    let limit = if limit == 0.0 { DEFAULT_SAMPLE } else { limit };
    let mut emit_files = limit != -1.0;
    let (base, files, dir) = match &info.origin {
        SkillOrigin::Logical { resources, base } => {
            if resources.is_empty() {
                emit_files = false;
            }
            let files = if limit > 0.0 {
                // `slice(0, limit)`: the limit truncated toward zero.
                let n = if limit >= resources.len() as f64 { resources.len() } else { limit as usize };
                resources[..n].to_vec()
            } else {
                resources.clone()
            };
            (base.clone(), files, base.clone())
        }
        SkillOrigin::Fs => {
            let dir = paths::dirname(&info.location);
            let files = if limit == -1.0 { Vec::new() } else { discover::sample_siblings(&dir, limit) };
            (paths::file_url(&dir), files, dir)
        }
    };
    let mut lines = vec![
        format!("<skill_content name=\"{}\">", info.name),
        format!("# Skill: {}", info.name),
        String::new(),
        js_trim(&info.content).to_string(),
        String::new(),
        format!("Base directory for this skill: {base}"),
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.".to_string(),
    ];
    if emit_files {
        lines.push("Note: file list is sampled.".into());
        lines.push(String::new());
        lines.push("<skill_files>".into());
        lines.push(files.iter().map(|f| format!("<file>{f}</file>")).collect::<Vec<_>>().join("\n"));
        lines.push("</skill_files>".into());
    }
    lines.push("</skill_content>".into());
    let mut meta = Map::with_capacity(2);
    meta.insert("name".into(), Value::String(info.name.clone()));
    meta.insert("dir".into(), Value::String(dir));
    ToolResult { output: lines.join("\n"), is_error: false, metadata: Some(Value::Object(meta)), rich: None }
}

#[async_trait]
impl Tool for SkillTool {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    async fn execute(&self, args: Value, _ctx: ToolContext) -> Result<ToolResult> {
        let name = match args.get("name") {
            None | Some(Value::Null) => String::new(),
            Some(v) => js_string(v),
        };
        // Sampling reads directories: keep it off the async workers.
        let catalog = self.catalog.clone();
        let out = tokio::task::spawn_blocking(move || load(&catalog, &name)).await;
        Ok(out.unwrap_or_else(|e| ToolResult::error(format!("skill: {e}"))))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
