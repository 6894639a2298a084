//! The toolkit (SPEC §4): every source aggregated into one uniform, de-duplicated list.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{PoisonError, RwLock};

use serde_json::Value;

use crate::adapters;
use crate::builtins::{self, BuiltinsConfig};
use crate::callback::SharedCallback;
use crate::cancel::Abort;
use crate::error::Result;
use crate::mcp::{self, McpSource, McpStatus};
use crate::skills::{self, LoadSkillsOptions, SkillDef, SkillSource, SkillsFilter};
use crate::tool::{SharedTool, ToolContext};
use crate::types::ToolResult;

/// What `createToolkit` accepts (the sources of this build).
#[derive(Default)]
pub struct ToolkitOptions {
    /// The host's own tools; they shadow a builtin of the same name.
    pub extra_tools: Vec<SharedTool>,
    /// Final exposed names to drop, across every source.
    pub disable_tools: Vec<String>,
    /// The raw `builtins` option, if given.
    pub builtins: Option<Value>,
    /// A parsed config object's top-level `builtins` key, used when `builtins` is absent.
    pub config_builtins: Option<Value>,
    /// Skill roots (`skillsDir`); `Some` when the option was given, even empty.
    pub skills_dir: Option<Vec<PathBuf>>,
    /// Skills supplied as data (`skills`); `Some` when the option was given.
    pub skills: Option<Vec<SkillDef>>,
    /// What the host's skill provider resolved to; `Some` when a provider was given (a
    /// provider that failed contributes `Some(vec![])`).
    pub skill_provider: Option<Vec<SkillDef>>,
    /// The per-agent skill allowlist / drop-list.
    pub skills_filter: Option<SkillsFilter>,
    /// Skill names folded into the filter as `false` (explicit filter entries win).
    pub disable_skills: Vec<String>,
    /// Sibling-file sample cap for the `skill` tool (0 ⇒ 10, -1 ⇒ no file list).
    pub skill_sample_limit: Option<f64>,
    /// The `mcpConfig` option: a path to an MCP config file, or the parsed config.
    pub mcp_config: Option<Value>,
    /// The host's `waitFor`: MCP servers may elicit input through it.
    pub wait_for: Option<SharedCallback>,
    /// Bounds the MCP load.
    pub cancel: Option<Abort>,
}

impl ToolkitOptions {
    /// The skill source these options ask for: only when a skills option was given.
    fn skill_source(&mut self) -> Option<SkillSource> {
        if self.skills_dir.is_none() && self.skills.is_none() && self.skill_provider.is_none() {
            return None;
        }
        let mut defs = self.skills.take().unwrap_or_default();
        defs.extend(self.skill_provider.take().unwrap_or_default());
        let filter = SkillsFilter::fold_disabled(&self.disable_skills, self.skills_filter.take());
        Some(skills::load_skills(&LoadSkillsOptions {
            dirs: self.skills_dir.take().unwrap_or_default(),
            skills: defs,
            filter,
            sample_limit: self.skill_sample_limit,
        }))
    }
}

#[derive(Default)]
struct Inner {
    tools: Vec<SharedTool>,
    index: HashMap<String, usize>,
}

impl Inner {
    /// First name wins; a later duplicate is reported and dropped.
    fn add(&mut self, t: SharedTool) -> bool {
        if self.index.contains_key(t.name()) {
            warn_duplicate(t.name());
            return false;
        }
        self.index.insert(t.name().to_string(), self.tools.len());
        self.tools.push(t);
        true
    }
}

fn warn_duplicate(name: &str) {
    crate::warn::warn(&format!("[toolnexus] duplicate tool name \"{name}\" — keeping first"));
}

/// The aggregated tool list with its router and adapters.
pub struct Toolkit {
    inner: RwLock<Inner>,
    skill: Option<SkillSource>,
    mcp: Option<McpSource>,
}

impl Toolkit {
    /// Assemble: drop builtins a host tool shadows, then MCP → skill → builtin → extras,
    /// skipping disabled names, first name wins.
    pub async fn create(mut opts: ToolkitOptions) -> Result<Toolkit> {
        let mcp = match &opts.mcp_config {
            Some(config) => {
                let load = mcp::LoadOptions { wait_for: opts.wait_for.clone(), cancel: opts.cancel.clone() };
                Some(mcp::load_mcp(config, load).await?)
            }
            None => None,
        };
        // Discovery reads the file system: keep it off the async workers.
        let (returned, skill) = tokio::task::spawn_blocking(crate::warn::carry_blocking(move || {
            let skill = opts.skill_source();
            (opts, skill)
        }))
        .await
        .map_err(|e| crate::error::Error::Invalid(format!("createToolkit: loading skills failed: {e}")))?;
        opts = returned;
        let config_builtins = opts.mcp_config.as_ref().and_then(|c| c.as_object()).and_then(|c| c.get("builtins"));
        let cfg_value = opts.builtins.as_ref().or(opts.config_builtins.as_ref()).or(config_builtins);
        let cfg = BuiltinsConfig::parse(cfg_value)?;
        let extra_names: HashSet<&str> = opts.extra_tools.iter().map(|t| t.name()).collect();
        let builtins: Vec<SharedTool> =
            builtins::select(&cfg).into_iter().filter(|b| !extra_names.contains(b.name())).collect();
        let disabled: HashSet<&str> = opts.disable_tools.iter().map(String::as_str).collect();
        let mut inner = Inner::default();
        let skill_tool = skill.as_ref().map(SkillSource::tool);
        let mcp_tools = mcp.iter().flat_map(|m| m.tools.iter().cloned());
        for t in mcp_tools.chain(skill_tool).chain(builtins).chain(opts.extra_tools.iter().cloned()) {
            if disabled.contains(t.name()) {
                continue;
            }
            inner.add(t);
        }
        Ok(Toolkit { inner: RwLock::new(inner), skill, mcp })
    }

    fn read<R>(&self, f: impl FnOnce(&Inner) -> R) -> R {
        f(&self.inner.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The tools, in assembly order.
    pub fn tools(&self) -> Vec<SharedTool> {
        self.read(|i| i.tools.clone())
    }

    pub fn get(&self, name: &str) -> Option<SharedTool> {
        self.read(|i| i.index.get(name).map(|&ix| i.tools[ix].clone()))
    }

    /// Add tools at runtime; first name wins. Returns, per tool, whether it was added.
    pub fn register(&self, tools: Vec<SharedTool>) -> Vec<bool> {
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        tools.into_iter().map(|t| inner.add(t)).collect()
    }

    /// Route a call; an unknown name is an error result, not a failure.
    pub async fn execute(&self, name: &str, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        match self.get(name) {
            None => Ok(unknown_tool(name)),
            Some(t) => {
                let args = if args.is_null() { Value::Object(Default::default()) } else { args };
                if t.light() || !crate::host::on_host_thread() {
                    t.execute(args, ctx).await
                } else {
                    crate::host::offload(async move { t.execute(args, ctx).await }).await
                }
            }
        }
    }

    /// The skill catalog for the system prompt ("" when no skills option was given).
    pub fn skills_prompt(&self) -> String {
        self.skill.as_ref().map(SkillSource::prompt).unwrap_or_default()
    }

    /// The skill source, when a skills option was given.
    pub fn skill_source(&self) -> Option<&SkillSource> {
        self.skill.as_ref()
    }

    pub fn to_openai(&self) -> Vec<Value> {
        adapters::to_openai(self.tools().iter().map(|t| t.as_ref()))
    }

    pub fn to_anthropic(&self) -> Vec<Value> {
        adapters::to_anthropic(self.tools().iter().map(|t| t.as_ref()))
    }

    pub fn to_gemini(&self) -> Vec<Value> {
        adapters::to_gemini(self.tools().iter().map(|t| t.as_ref()))
    }

    /// Each configured MCP server's status, in config order (empty without `mcpConfig`).
    pub fn mcp_status(&self) -> Vec<(String, McpStatus)> {
        self.mcp.as_ref().map(|m| m.status.clone()).unwrap_or_default()
    }

    /// Release what the sources hold (child processes, connections). Idempotent.
    pub async fn close(&self) {
        if let Some(m) = &self.mcp {
            m.close().await;
        }
    }
}

/// The result for a name no tool answers to.
pub fn unknown_tool(name: &str) -> ToolResult {
    ToolResult::error(format!("Unknown tool: {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fn_tool::FnTool;
    use crate::types::ToolResult;
    use serde_json::json;
    use std::sync::Arc;

    fn tool(name: &str, out: &'static str) -> SharedTool {
        Arc::new(FnTool::new(name, "d", None, move |_, _| async move { ToolResult::ok(out) }))
    }

    #[tokio::test]
    async fn first_name_wins_and_disabled_names_are_dropped() {
        let tk = Toolkit::create(ToolkitOptions {
            extra_tools: vec![tool("a", "first"), tool("b", "b"), tool("a", "second"), tool("c", "c")],
            disable_tools: vec!["c".into()],
            builtins: Some(json!(false)),
            ..Default::default()
        })
        .await
        .unwrap();
        let names: Vec<_> = tk.tools().iter().map(|t| t.name().to_string()).collect();
        assert_eq!(names, ["a", "b"]);
        let r = tk.execute("a", json!({}), ToolContext::default()).await.unwrap();
        assert_eq!(r.output, "first");
    }

    #[tokio::test]
    async fn unknown_names_are_error_results() {
        let tk = Toolkit::create(ToolkitOptions { builtins: Some(json!(false)), ..Default::default() }).await.unwrap();
        let r = tk.execute("nope", json!({}), ToolContext::default()).await.unwrap();
        assert_eq!(r, ToolResult::error("Unknown tool: nope"));
        assert!(tk.to_openai().is_empty());
        assert_eq!(tk.to_gemini(), vec![json!({"functionDeclarations": []})]);
        assert_eq!(tk.skills_prompt(), "");
    }

    #[tokio::test]
    async fn register_keeps_the_first() {
        let tk = Toolkit::create(ToolkitOptions {
            extra_tools: vec![tool("a", "1")],
            builtins: Some(json!(false)),
            ..Default::default()
        })
        .await
        .unwrap();
        assert_eq!(tk.register(vec![tool("a", "2"), tool("z", "z")]), [false, true]);
        assert_eq!(tk.tools().len(), 2);
    }

    fn def(name: &str, description: Option<&str>) -> SkillDef {
        SkillDef {
            name: name.into(),
            description: description.map(Into::into),
            content: "c".into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn the_skill_tool_exists_only_when_a_skills_option_is_given() {
        let tk = Toolkit::create(ToolkitOptions::default()).await.unwrap();
        assert!(tk.get("skill").is_none());
        assert_eq!(tk.skills_prompt(), "");
        assert!(tk.skill_source().is_none());
        for opts in [
            ToolkitOptions { skills: Some(vec![]), ..Default::default() },
            ToolkitOptions { skill_provider: Some(vec![]), ..Default::default() },
            ToolkitOptions { skills_dir: Some(vec![]), ..Default::default() },
        ] {
            let tk = Toolkit::create(opts).await.unwrap();
            assert_eq!(tk.get("skill").unwrap().source(), "skill");
            assert_eq!(tk.skills_prompt(), "No skills are currently available.");
        }
    }

    #[tokio::test]
    async fn the_skill_tool_comes_before_extras_and_wins_a_name_clash() {
        let tk = Toolkit::create(ToolkitOptions {
            extra_tools: vec![tool("first_extra", "x"), tool("skill", "impostor")],
            skills: Some(vec![def("a", Some("A"))]),
            builtins: Some(json!(false)),
            ..Default::default()
        })
        .await
        .unwrap();
        let names: Vec<_> = tk.tools().iter().map(|t| t.name().to_string()).collect();
        assert_eq!(names, ["skill", "first_extra"]);
        let r = tk.execute("skill", json!({"name": "a"}), ToolContext::default()).await.unwrap();
        assert!(r.output.starts_with("<skill_content name=\"a\">"));
        assert!(tk.skills_prompt().ends_with("## Available Skills\n- **a**: A"));
        let dropped = Toolkit::create(ToolkitOptions {
            skills: Some(vec![def("a", None)]),
            disable_tools: vec!["skill".into()],
            ..Default::default()
        })
        .await
        .unwrap();
        assert!(dropped.get("skill").is_none());
        assert_eq!(dropped.skills_prompt(), "No skills are currently available.");
    }

    #[tokio::test]
    async fn provider_defs_follow_data_and_disable_skills_folds_into_the_filter() {
        let tk = Toolkit::create(ToolkitOptions {
            skills: Some(vec![def("a", Some("data")), def("b", Some("data"))]),
            skill_provider: Some(vec![def("a", Some("provider")), def("c", Some("provider"))]),
            disable_skills: vec!["b".into(), "c".into()],
            skills_filter: Some(SkillsFilter::new().with("c", true)),
            ..Default::default()
        })
        .await
        .unwrap();
        // {b:false, c:true} is an allowlist: only c survives.
        let names: Vec<_> = tk.skill_source().unwrap().skills().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["c"]);
        let tk = Toolkit::create(ToolkitOptions {
            skills: Some(vec![def("a", Some("data")), def("b", Some("data"))]),
            skill_provider: Some(vec![def("a", Some("provider")), def("c", Some("provider"))]),
            disable_skills: vec!["b".into()],
            ..Default::default()
        })
        .await
        .unwrap();
        let src = tk.skill_source().unwrap();
        let names: Vec<_> = src.skills().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(src.get("a").unwrap().description.as_deref(), Some("data"));
    }

    #[tokio::test]
    async fn builtins_come_first_and_a_host_tool_shadows_one() {
        let tk = Toolkit::create(ToolkitOptions {
            extra_tools: vec![tool("read", "mine"), tool("extra", "x")],
            disable_tools: vec!["bash".into()],
            builtins: Some(json!({"tools": {"webfetch": false}})),
            ..Default::default()
        })
        .await
        .unwrap();
        let names: Vec<_> = tk.tools().iter().map(|t| t.name().to_string()).collect();
        assert_eq!(names, ["write", "edit", "grep", "glob", "question", "apply_patch", "todowrite", "read", "extra"]);
        assert_eq!(tk.get("grep").unwrap().source(), "builtin");
        assert_eq!(tk.execute("read", json!({}), ToolContext::default()).await.unwrap().output, "mine");
        let all = Toolkit::create(ToolkitOptions::default()).await.unwrap();
        assert_eq!(all.tools().len(), 10);
    }

    #[tokio::test]
    async fn a_bad_builtins_value_is_named() {
        let e = Toolkit::create(ToolkitOptions { builtins: Some(json!(3)), ..Default::default() }).await;
        assert!(e.err().unwrap().to_string().contains("`builtins`"));
    }
}
