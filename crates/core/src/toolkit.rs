//! The toolkit (SPEC §4): every source aggregated into one uniform, de-duplicated list.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde::Deserialize;
use serde_json::Value;

use crate::a2a::{self, Agent};
use crate::adapters;
use crate::builtins::{self, BuiltinsConfig};
use crate::callback::SharedCallback;
use crate::cancel::Abort;
use crate::error::{Error, Result};
use crate::fn_markers::HostFn;
use crate::mcp::{self, McpSource, McpStatus};
use crate::options;
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
    /// The raw `builtins` option, if given (`null` included). When absent, a parsed `mcpConfig`
    /// object's top-level `builtins` key is used, if it has one.
    pub builtins: Option<Value>,
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
    /// Where remote MCP servers' sign-ins are kept (a store URL; memory when none).
    pub store: Option<String>,
    /// The host's own tokens for remote MCP servers (`mcpToken`).
    pub mcp_token: Option<SharedCallback>,
    /// Remote A2A agents; a parsed `mcpConfig` object's `agents` block adds its own after them.
    pub agents: Vec<Agent>,
    /// Where the toolkit's warnings go (its assembly, its tools, its MCP servers, its
    /// serving); `None`: wherever the caller's go (see `warn`).
    pub logger: Option<crate::warn::Sink>,
}

impl ToolkitOptions {
    /// Whether any skills option was given (`null` included), so skills are discovered.
    fn wants_skills(&self) -> bool {
        self.skills_dir.is_some() || self.skills.is_some() || self.skill_provider.is_some()
    }

    /// Whether [`Toolkit::create`] waits on nothing for these options (no MCP servers, skills or
    /// agents): it is then made in its first poll, so a host may make it in place, as a plain
    /// `createToolkit` of the reference settles within microtasks.
    pub fn waits_on_nothing(&self) -> bool {
        self.mcp_config.is_none() && !self.wants_skills() && self.agents.is_empty()
    }

    /// The skill source these options ask for (called only when [`Self::wants_skills`]).
    fn skill_source(&mut self) -> SkillSource {
        let mut defs = self.skills.take().unwrap_or_default();
        defs.extend(self.skill_provider.take().unwrap_or_default());
        let filter = SkillsFilter::fold_disabled(&self.disable_skills, self.skills_filter.take());
        skills::load_skills(&LoadSkillsOptions {
            dirs: self.skills_dir.take().unwrap_or_default(),
            skills: defs,
            filter,
            sample_limit: self.skill_sample_limit,
        })
    }
}

/// The JSON-borne part of `createToolkit`'s options (everything but the tools, `waitFor`
/// and the signal).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ToolkitJson {
    #[serde(default, deserialize_with = "options::strings")]
    disable_tools: Vec<String>,
    #[serde(default, deserialize_with = "options::present")]
    builtins: Option<Value>,
    #[serde(default, deserialize_with = "options::present")]
    mcp_config: Option<Value>,
    // A skills option counts as given when its key is present (`null` included).
    #[serde(default, deserialize_with = "options::present")]
    skills_dir: Option<Value>,
    #[serde(default, deserialize_with = "options::present")]
    skills: Option<Value>,
    /// What the host's provider resolved to (the host calls it).
    #[serde(default, deserialize_with = "options::present")]
    skill_provider: Option<Value>,
    #[serde(default, deserialize_with = "skills::options::filter")]
    skills_filter: Option<SkillsFilter>,
    #[serde(default, deserialize_with = "options::strings")]
    disable_skills: Vec<String>,
    #[serde(default, deserialize_with = "options::number_only")]
    skill_sample_limit: Option<f64>,
    #[serde(default)]
    agents: Option<Value>,
    /// The host's `waitFor` (an MCP server's elicitations).
    #[serde(default)]
    wait_for: HostFn,
    /// The host's logger: a function told each warning's text.
    #[serde(default)]
    logger: HostFn,
    /// Where MCP sign-ins are kept: "memory" or a store URL (a store object crosses as its URL).
    #[serde(default)]
    store: Option<Value>,
    /// The host's own tokens for remote MCP servers.
    #[serde(default)]
    mcp_token: HostFn,
}

impl ToolkitOptions {
    /// The option names `createToolkit` reads from its document (its `ToolkitOptions` in
    /// index.d.ts names them, and the two the host hands over apart: `extraTools`, `signal`).
    pub fn option_names() -> &'static [&'static str] {
        options::fields_of::<ToolkitJson>()
    }

    /// `createToolkit`'s options as one document (functions as `fn_markers` markers), with
    /// `skillProvider` as the list of defs the provider resolved to. `null` is refused with a
    /// `TypeError`, where the reference fails reading a field of it; any other value that is
    /// not an object is no options, as the reference reads its fields as undefined. A skills
    /// option must have its shape when given (`null` counts as given, and as empty); `builtins`
    /// is checked when the toolkit is created; `waitFor` set to something that is not a
    /// function fails when an MCP server asks for input. The host's tools and cancel handle
    /// are the host's to attach.
    pub fn from_json(text: &str) -> Result<ToolkitOptions> {
        const OWNER: &str = "createToolkit";
        let Some(o) = options::parse_object::<ToolkitJson>(text, "createToolkit options")? else {
            if text.trim_matches([' ', '\t', '\n', '\r']) == "null" {
                return Err(Error::Type("createToolkit: options must be an object".into()));
            }
            return Ok(ToolkitOptions::default());
        };
        let dirs = |v: Value| skills::options::dirs(v, "createToolkit: `skillsDir`");
        let defs = |v: Value, what: &str| skills::options::defs(v, &format!("createToolkit: `{what}`"));
        Ok(ToolkitOptions {
            extra_tools: Vec::new(),
            disable_tools: o.disable_tools,
            builtins: o.builtins,
            skills_dir: o.skills_dir.map(dirs).transpose()?,
            skills: o.skills.map(|v| defs(v, "skills")).transpose()?,
            skill_provider: o.skill_provider.map(|v| defs(v, "skillProvider")).transpose()?,
            skills_filter: o.skills_filter,
            disable_skills: o.disable_skills,
            skill_sample_limit: o.skill_sample_limit,
            mcp_config: o.mcp_config,
            wait_for: o.wait_for.named(OWNER, "waitFor"),
            cancel: None,
            store: mcp::store_option(o.store, OWNER),
            mcp_token: o.mcp_token.named(OWNER, "mcpToken"),
            agents: Agent::list_from_value(o.agents.as_ref()),
            logger: o.logger.named(OWNER, "logger").map(crate::warn::callback_sink),
        })
    }
}

/// A host tool's declaration as the host hands it over: `{ name, description, inputSchema,
/// source }`, each read only when it has its type.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDecl {
    pub name: String,
    /// Empty when not a string.
    pub description: String,
    /// The empty object schema when not an object.
    pub input_schema: Value,
    /// "custom" when not a string.
    pub source: String,
    /// `outputSchema` when it is an object.
    pub output_schema: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ToolDeclJson {
    #[serde(default, deserialize_with = "options::string")]
    name: Option<String>,
    #[serde(default, deserialize_with = "options::string")]
    description: Option<String>,
    #[serde(default, deserialize_with = "options::object_value")]
    input_schema: Option<Value>,
    #[serde(default, deserialize_with = "options::string")]
    source: Option<String>,
    #[serde(default, deserialize_with = "options::object_value")]
    output_schema: Option<Value>,
}

impl ToolDecl {
    /// The declaration of the host's tool `#slot` from its JSON; it needs a string `name`.
    pub fn from_json(text: &str, slot: u32) -> Result<ToolDecl> {
        let d: ToolDeclJson = options::parse_object(text, "tool")?.unwrap_or_default();
        let name = d.name.ok_or_else(|| Error::Invalid(format!("tool #{slot} has no string `name`")))?;
        Ok(ToolDecl {
            name,
            description: d.description.unwrap_or_default(),
            input_schema: d.input_schema.unwrap_or_else(crate::fn_tool::empty_schema),
            source: d.source.unwrap_or_else(|| "custom".into()),
            output_schema: d.output_schema,
        })
    }
}

#[derive(Default)]
struct Inner {
    tools: Vec<SharedTool>,
    index: HashMap<String, usize>,
    /// The tools' OpenAI and Anthropic declarations, made on first use and shared by every
    /// run until the list changes: a run need not build them again.
    openai: OnceLock<Arc<[Value]>>,
    anthropic: OnceLock<Arc<[Value]>>,
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
        self.openai = OnceLock::new();
        self.anthropic = OnceLock::new();
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
    /// The `a2a` and `mcpServer` blocks of an object `mcpConfig` (what `serve` falls back to).
    serve_blocks: (Option<Value>, Option<Value>),
    logger: Option<crate::warn::Sink>,
}

impl Toolkit {
    /// Assemble: drop builtins a host tool shadows, then MCP → skill → builtin → A2A → extras,
    /// skipping disabled names, first name wins.
    pub async fn create(opts: ToolkitOptions) -> Result<Toolkit> {
        let logger = opts.logger.clone();
        crate::warn::scope_with(logger.as_ref(), Self::assemble(opts)).await
    }

    async fn assemble(mut opts: ToolkitOptions) -> Result<Toolkit> {
        let mcp = match &opts.mcp_config {
            Some(config) => {
                let load = mcp::LoadOptions {
                    wait_for: opts.wait_for.clone(),
                    cancel: opts.cancel.clone(),
                    store: opts.store.clone(),
                    token: opts.mcp_token.clone(),
                };
                Some(mcp::load_mcp(config, load).await?)
            }
            None => None,
        };
        // Discovery reads the file system: keep it off the async workers. A toolkit that asks
        // for no skills has nothing to discover, and no thread to wait for.
        let skill = if opts.wants_skills() {
            let (returned, skill) = tokio::task::spawn_blocking(crate::warn::carry_blocking(move || {
                let skill = opts.skill_source();
                (opts, skill)
            }))
            .await
            .map_err(|e| crate::error::Error::Invalid(format!("createToolkit: loading skills failed: {e}")))?;
            opts = returned;
            Some(skill)
        } else {
            None
        };
        let config_builtins = opts.mcp_config.as_ref().and_then(|c| c.as_object()).and_then(|c| c.get("builtins"));
        let cfg_value = opts.builtins.as_ref().or(config_builtins);
        let cfg = BuiltinsConfig::parse(cfg_value)?;
        let extra_names: HashSet<&str> = opts.extra_tools.iter().map(|t| t.name()).collect();
        let builtins: Vec<SharedTool> =
            builtins::select(&cfg).into_iter().filter(|b| !extra_names.contains(b.name())).collect();
        let agent_tools = resolve_agents(&opts).await;
        let disabled: HashSet<&str> = opts.disable_tools.iter().map(String::as_str).collect();
        let mut inner = Inner::default();
        let skill_tool = skill.as_ref().map(SkillSource::tool);
        let mcp_tools = mcp.iter().flat_map(|m| m.tools.iter().cloned());
        let tools =
            mcp_tools.chain(skill_tool).chain(builtins).chain(agent_tools).chain(opts.extra_tools.iter().cloned());
        for t in tools {
            if disabled.contains(t.name()) {
                continue;
            }
            inner.add(t);
        }
        let block = |key: &str| opts.mcp_config.as_ref().and_then(|c| c.as_object()).and_then(|c| c.get(key)).cloned();
        let serve_blocks = (block("a2a"), block("mcpServer"));
        Ok(Toolkit { inner: RwLock::new(inner), skill, mcp, serve_blocks, logger: opts.logger.take() })
    }

    /// A toolkit of exactly `tools` (no builtins, skills, MCP or agents), first name wins:
    /// what `create` assembles from `extraTools` alone with builtins off, without its I/O.
    pub fn from_tools(tools: Vec<SharedTool>) -> Toolkit {
        let mut inner = Inner::default();
        for t in tools {
            inner.add(t);
        }
        Toolkit { inner: RwLock::new(inner), skill: None, mcp: None, serve_blocks: (None, None), logger: None }
    }

    /// Send this toolkit's warnings to `logger` from now on (`None`: wherever the caller's go).
    pub fn with_logger(mut self, logger: Option<crate::warn::Sink>) -> Toolkit {
        self.logger = logger;
        self
    }

    /// Where this toolkit's warnings go, when it was given a logger.
    pub fn logger(&self) -> Option<&crate::warn::Sink> {
        self.logger.as_ref()
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
        crate::warn::within(self.logger.as_ref(), || tools.into_iter().map(|t| inner.add(t)).collect())
    }

    /// Resolve a remote agent's card and register its skills' tools (first name wins). A card
    /// that cannot be resolved is an error here (unlike at creation, where it is a warning).
    pub async fn add_agent(&self, agent: &Agent) -> Result<Vec<(SharedTool, bool)>> {
        let tools = crate::warn::scope_with(self.logger.as_ref(), a2a::agent_tools(agent)).await?;
        let added = self.register(tools.clone());
        Ok(tools.into_iter().zip(added).collect())
    }

    /// Route a call; an unknown name is an error result, not a failure.
    pub async fn execute(&self, name: &str, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        crate::warn::scope_with(self.logger.as_ref(), self.route(name, args, ctx)).await
    }

    async fn route(&self, name: &str, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        match self.get(name) {
            None => Ok(unknown_tool(name)),
            Some(t) => {
                let args = if args.is_null() { Value::Object(Default::default()) } else { args };
                if t.light() || !crate::host_thread::on_host_thread() {
                    t.execute(args, ctx).await
                } else {
                    crate::host_thread::offload(async move { t.execute(args, ctx).await }).await
                }
            }
        }
    }

    /// The skill catalog for the system prompt ("" when no skills option was given).
    pub fn skills_prompt(&self) -> String {
        self.skill.as_ref().map(SkillSource::prompt).unwrap_or_default()
    }

    /// The top-level `a2a` block of an object `mcpConfig`, as given.
    pub fn a2a_block(&self) -> Option<&Value> {
        self.serve_blocks.0.as_ref()
    }

    /// The top-level `mcpServer` block of an object `mcpConfig`, as given.
    pub fn mcp_server_block(&self) -> Option<&Value> {
        self.serve_blocks.1.as_ref()
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

    /// [`to_openai`](Toolkit::to_openai), made once until the tool list changes, and shared.
    pub fn openai_declarations(&self) -> Arc<[Value]> {
        self.read(|i| i.openai.get_or_init(|| adapters::to_openai(i.tools.iter().map(|t| t.as_ref())).into()).clone())
    }

    /// [`to_anthropic`](Toolkit::to_anthropic), made once until the tool list changes, and shared.
    pub fn anthropic_declarations(&self) -> Arc<[Value]> {
        self.read(|i| {
            i.anthropic.get_or_init(|| adapters::to_anthropic(i.tools.iter().map(|t| t.as_ref())).into()).clone()
        })
    }

    /// The tools for the provider `style` names (see [`adapters::adapt`]).
    pub fn adapt(&self, style: &str) -> Result<Vec<Value>> {
        adapters::adapt(style, self.tools().iter().map(|t| t.as_ref()))
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

/// Every agent of the options (then of a parsed config's `agents` block) resolved to its
/// tools, all at once; one that fails is reported and contributes none.
async fn resolve_agents(opts: &ToolkitOptions) -> Vec<SharedTool> {
    let mut agents = opts.agents.clone();
    if let Some(block) = opts.mcp_config.as_ref().and_then(|c| c.as_object()).and_then(|c| c.get("agents")) {
        agents.extend(a2a::parse_agents_config(Some(block)));
    }
    let resolved = futures::future::join_all(agents.iter().map(a2a::agent_tools)).await;
    let mut out = Vec::new();
    for (agent, r) in agents.iter().zip(resolved) {
        match r {
            Ok(tools) => out.extend(tools),
            Err(e) => crate::warn::warn(&format!("[toolnexus] A2A agent \"{}\" failed: {e}", agent.card)),
        }
    }
    out
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

    #[test]
    fn declarations_are_made_once_and_again_when_a_tool_is_registered() {
        let tk = Toolkit::from_tools(vec![tool("a", "a")]);
        let (first, again) = (tk.openai_declarations(), tk.openai_declarations());
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(&first[..], &tk.to_openai()[..]);
        assert_eq!(&tk.anthropic_declarations()[..], &tk.to_anthropic()[..]);
        assert_eq!(tk.register(vec![tool("a", "dup")]), [false]);
        assert_eq!(tk.register(vec![tool("b", "b")]), [true]);
        let now = tk.openai_declarations();
        assert_eq!(now.len(), 2);
        assert_eq!(&now[..], &tk.to_openai()[..]);
        assert_eq!(tk.anthropic_declarations().len(), 2);
    }

    fn collector() -> (crate::warn::Sink, Arc<std::sync::Mutex<Vec<String>>>) {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = seen.clone();
        let sink: crate::warn::Sink =
            Arc::new(move |t: &str| into.lock().unwrap_or_else(PoisonError::into_inner).push(t.to_string()));
        (sink, seen)
    }

    fn taken(seen: &std::sync::Mutex<Vec<String>>) -> Vec<String> {
        std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A tool that warns `text` when it runs.
    fn warning(name: &str, text: &'static str) -> SharedTool {
        Arc::new(FnTool::new(name, "d", None, move |_, _| async move {
            crate::warn::warn(text);
            ToolResult::ok("ok")
        }))
    }

    #[tokio::test]
    async fn a_toolkits_logger_gets_its_assembly_its_registrations_and_its_tools_warnings() {
        let (logger, seen) = collector();
        let (caller, of_caller) = collector();
        let tk = crate::warn::scope(Some(caller.clone()), async {
            Toolkit::create(ToolkitOptions {
                extra_tools: vec![tool("a", "1"), tool("a", "2"), warning("w", "[toolnexus] from w")],
                skills_dir: Some(vec![PathBuf::from("/no/such/skills-dir-tn")]),
                builtins: Some(json!(false)),
                logger: Some(logger.clone()),
                ..Default::default()
            })
            .await
            .unwrap()
        })
        .await;
        let lines = taken(&seen);
        assert!(lines.contains(&"[toolnexus] duplicate tool name \"a\" — keeping first".to_string()), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("[toolnexus] skills dir not found: ")), "{lines:?}");
        tk.register(vec![tool("a", "3")]);
        assert_eq!(taken(&seen), ["[toolnexus] duplicate tool name \"a\" — keeping first"]);
        // Inside a caller's scope (a client's run), the toolkit's tool still warns to the toolkit's logger.
        crate::warn::scope(Some(caller.clone()), tk.execute("w", json!({}), ToolContext::default())).await.unwrap();
        assert_eq!(taken(&seen), ["[toolnexus] from w"]);
        assert!(taken(&of_caller).is_empty());
        // A toolkit without one leaves the caller's sink in place.
        let plain = Toolkit::from_tools(vec![warning("w", "[toolnexus] plain w")]);
        crate::warn::scope(Some(caller), plain.execute("w", json!({}), ToolContext::default())).await.unwrap();
        assert_eq!(taken(&of_caller), ["[toolnexus] plain w"]);
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

    fn toolkit(v: Value) -> Result<ToolkitOptions> {
        ToolkitOptions::from_json(&v.to_string())
    }

    fn err(r: Result<impl Sized>) -> String {
        r.err().expect("fails").to_string()
    }

    #[test]
    fn toolkit_options_defaults() {
        assert_eq!(err(ToolkitOptions::from_json("null")), "createToolkit: options must be an object");
        for text in ["{}", "[]", "3", "\"x\"", "true"] {
            let o = ToolkitOptions::from_json(text).unwrap();
            assert!(o.extra_tools.is_empty() && o.disable_tools.is_empty() && o.disable_skills.is_empty());
            assert!(o.builtins.is_none() && o.mcp_config.is_none() && o.skills_filter.is_none());
            assert!(o.skills_dir.is_none() && o.skills.is_none() && o.skill_provider.is_none());
            assert!(o.skill_sample_limit.is_none() && o.wait_for.is_none() && o.cancel.is_none());
        }
        assert!(err(ToolkitOptions::from_json("{")).starts_with("createToolkit options: invalid JSON ("));
    }

    /// A host table whose function at place n answers n.
    struct Host;

    impl crate::fn_markers::Table for Host {
        fn callback(&self, n: usize) -> Option<SharedCallback> {
            Some(crate::callback::callback(move |_| async move { Ok(json!(n)) }))
        }
        fn object(&self, _: usize) -> Option<crate::fn_markers::HostObject> {
            None
        }
    }

    #[tokio::test]
    async fn callbacks_cross_in_the_options_document() {
        let f = crate::fn_markers::FN;
        let text = json!({"waitFor": {f: 1}, "logger": {f: 0}, "disableTools": ["a"]}).to_string();
        let o = crate::fn_markers::read_with(std::rc::Rc::new(Host), || ToolkitOptions::from_json(&text)).unwrap();
        assert_eq!(o.wait_for.expect("waitFor").call(json!({})).await.unwrap(), json!(1));
        assert!(o.logger.is_some());
        assert_eq!(o.disable_tools, ["a"]);
        // Set to something that is not a function: it fails when called, naming the option.
        let o = toolkit(json!({"waitFor": "soon"})).unwrap();
        let e = o.wait_for.expect("a failing callback").call(json!({})).await.unwrap_err();
        assert_eq!(e.to_string(), "createToolkit: `waitFor` is not a function (got string)");
        // Falsy: unset.
        assert!(toolkit(json!({"waitFor": 0, "logger": null})).unwrap().wait_for.is_none());
    }

    #[test]
    fn toolkit_options_are_read_leniently() {
        let o = toolkit(json!({"disableTools": ["a", 1, "b"], "disableSkills": "x", "skillSampleLimit": "3",
            "skillsFilter": {"s": false}, "unknown": true}))
        .unwrap();
        assert_eq!((o.disable_tools, o.disable_skills), (vec!["a".to_string(), "b".into()], vec![]));
        assert_eq!(o.skill_sample_limit, None);
        assert_eq!(o.skills_filter.unwrap().entries(), [("s", Some(false))]);
        let o = toolkit(json!({"skillsFilter": "s", "skillSampleLimit": -1})).unwrap();
        assert_eq!((o.skills_filter, o.skill_sample_limit), (None, Some(-1.0)));
    }

    #[test]
    fn builtins_and_mcp_config_are_kept_as_given_null_included() {
        let o = toolkit(json!({"builtins": null, "mcpConfig": null})).unwrap();
        assert_eq!((o.builtins, o.mcp_config), (Some(Value::Null), Some(Value::Null)));
        // `builtins` is checked when the toolkit is created, after the MCP load.
        let o = toolkit(json!({"builtins": "yes", "mcpConfig": {"builtins": false, "mcpServers": {}}})).unwrap();
        assert_eq!((o.builtins, o.mcp_config.unwrap()["builtins"].clone()), (Some(json!("yes")), json!(false)));
    }

    #[test]
    fn skills_options_count_as_given_when_present_null_included() {
        let o = toolkit(json!({"skillsDir": null, "skills": null, "skillProvider": null})).unwrap();
        assert_eq!((o.skills_dir, o.skills, o.skill_provider), (Some(vec![]), Some(vec![]), Some(vec![])));
        let o =
            toolkit(json!({"skillsDir": ["a"], "skills": [{"name": "s"}], "skillProvider": [{"name": "p"}]})).unwrap();
        assert_eq!(o.skills_dir.unwrap(), [PathBuf::from("a")]);
        assert_eq!((o.skills.unwrap()[0].name.as_str(), o.skill_provider.unwrap()[0].name.as_str()), ("s", "p"));
    }

    #[test]
    fn skills_options_name_the_field_that_has_the_wrong_shape() {
        let e = err(toolkit(json!({"skillsDir": 1})));
        assert_eq!(e, "createToolkit: `skillsDir` must be a string or an array of strings");
        assert_eq!(err(toolkit(json!({"skills": {}}))), "createToolkit: `skills` must be an array of SkillDef objects");
        let e = err(toolkit(json!({"skillProvider": "p"})));
        assert_eq!(e, "createToolkit: `skillProvider` must be an array of SkillDef objects");
        let e = err(toolkit(json!({"skillProvider": 1, "skills": 1, "skillsDir": 1})));
        assert_eq!(e, "createToolkit: `skillsDir` must be a string or an array of strings");
    }

    #[tokio::test]
    async fn a_configs_builtins_apply_when_the_option_is_absent() {
        let names = |tk: &Toolkit| tk.tools().iter().map(|t| t.name().to_string()).collect::<Vec<_>>();
        let off = json!({"mcpConfig": {"builtins": false, "mcpServers": {}}});
        assert!(names(&Toolkit::create(toolkit(off).unwrap()).await.unwrap()).is_empty());
        let on = json!({"builtins": {"tools": {"bash": false}}, "mcpConfig": {"builtins": false, "mcpServers": {}}});
        let tk = Toolkit::create(toolkit(on).unwrap()).await.unwrap();
        assert!(!names(&tk).is_empty() && !names(&tk).contains(&"bash".to_string()));
        let e = Toolkit::create(toolkit(json!({"builtins": "yes"})).unwrap()).await.err().unwrap();
        assert!(e.to_string().starts_with("createToolkit: `builtins` must be a boolean"), "{e}");
    }

    #[test]
    fn tool_declarations() {
        let d =
            ToolDecl::from_json(r#"{"name":"t","description":"d","inputSchema":{"type":"object"},"source":"mine"}"#, 0);
        let d = d.unwrap();
        assert_eq!((d.name.as_str(), d.description.as_str(), d.source.as_str()), ("t", "d", "mine"));
        assert_eq!(d.input_schema, json!({"type": "object"}));
        // Each field counts only with its type.
        let d = ToolDecl::from_json(r#"{"name":"t","description":5,"inputSchema":[1],"source":null}"#, 0).unwrap();
        assert_eq!((d.description.as_str(), d.source.as_str()), ("", "custom"));
        assert_eq!(d.input_schema, crate::fn_tool::empty_schema());
        for bad in [r#"{"name":1}"#, "{}", "null", r#"["t"]"#] {
            assert_eq!(err(ToolDecl::from_json(bad, 3)), "tool #3 has no string `name`");
        }
        assert!(err(ToolDecl::from_json("{", 0)).starts_with("tool: invalid JSON ("));
    }

    #[test]
    fn deep_input_schemas_are_read() {
        let deep =
            format!("{{\"name\":\"t\",\"inputSchema\":{{\"x\":{}1{}}}}}", "[".repeat(50_000), "]".repeat(50_000));
        let d = ToolDecl::from_json(&deep, 0).unwrap();
        assert_eq!(crate::json::depth(&d.input_schema), 50_001);
        crate::json::on_deep_stack(move || drop(d));
    }
}
