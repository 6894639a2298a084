//! The skill source (SPEC §3): `SKILL.md` files found under roots, and skills given as data,
//! exposed as ONE `skill` tool that loads a skill's instructions on demand, plus the catalog
//! for the system prompt.

mod catalog;
mod discover;
mod frontmatter;
pub(crate) mod options;
mod paths;
mod tool;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::json::array_index;
use crate::tool::SharedTool;

use catalog::{locale_compare, Catalog};
pub use catalog::{SkillInfo, SkillOrigin, NO_SKILLS_PROMPT, SKILLS_PROMPT_PREAMBLE, SKILL_TOOL_DESCRIPTION};
pub use tool::SkillTool;

/// A skill supplied as data instead of a `SKILL.md`, read from JSON as leniently as
/// JavaScript reads it: a falsy `name` is missing, other values are their string form, `null`
/// counts as absent.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SkillDef {
    /// Empty means missing: the def is skipped.
    #[serde(deserialize_with = "crate::options::truthy_text")]
    pub name: String,
    #[serde(deserialize_with = "crate::options::text")]
    pub description: Option<String>,
    #[serde(deserialize_with = "crate::options::text_or_empty")]
    pub content: String,
    /// Logical names listed in `<skill_files>` when the skill is loaded.
    #[serde(deserialize_with = "crate::options::texts")]
    pub resources: Vec<String>,
    /// The logical base; `skill://<name>/` when absent or empty.
    #[serde(deserialize_with = "crate::options::text")]
    pub base: Option<String>,
}

impl SkillDef {
    /// A def from a JSON value; anything but an object is a def with nothing in it.
    pub fn from_value(v: &Value) -> SkillDef {
        SkillDef::from_owned(v.clone())
    }

    pub(crate) fn from_owned(v: Value) -> SkillDef {
        match v {
            // Every field reads any value, so an object always makes a def.
            Value::Object(_) => crate::json::from_value(v).unwrap_or_default(),
            other => {
                crate::json::release(other);
                SkillDef::default()
            }
        }
    }
}

/// Why a candidate did not become a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    MissingName,
    MalformedFrontmatter,
    DuplicateName,
    Unreadable,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::MissingName => "missing-name",
            SkipReason::MalformedFrontmatter => "malformed-frontmatter",
            SkipReason::DuplicateName => "duplicate-name",
            SkipReason::Unreadable => "unreadable",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SkillSkip {
    pub location: String,
    pub reason: SkipReason,
}

/// What `list_skills` finds: every skill (unfiltered) and every rejected candidate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillInventory {
    pub skills: Vec<SkillInfo>,
    pub skipped: Vec<SkillSkip>,
}

impl SkillInventory {
    /// `{ skills: SkillInfo[], skipped: { location, reason }[] }`.
    pub fn to_value(&self) -> Value {
        let skipped = self
            .skipped
            .iter()
            .map(|s| {
                let mut m = Map::with_capacity(2);
                m.insert("location".into(), Value::String(s.location.clone()));
                m.insert("reason".into(), s.reason.as_str().into());
                Value::Object(m)
            })
            .collect();
        let mut m = Map::with_capacity(2);
        m.insert("skills".into(), self.skills.iter().map(SkillInfo::to_value).collect());
        m.insert("skipped".into(), Value::Array(skipped));
        Value::Object(m)
    }
}

/// A name → on/off map selecting skills. A value that is neither `true` nor `false` is kept
/// (as `None`): it counts as a key but neither allows nor drops.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillsFilter {
    entries: Vec<(String, Option<bool>)>,
}

impl SkillsFilter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Set an entry; a name already present keeps its place and takes the new value.
    pub fn set(&mut self, name: impl Into<String>, on: Option<bool>) {
        let name = name.into();
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = on,
            None => self.entries.push((name, on)),
        }
    }

    pub fn with(mut self, name: impl Into<String>, on: bool) -> Self {
        self.set(name, Some(on));
        self
    }

    /// From a JSON object; anything else is no filter.
    pub fn from_value(v: &Value) -> Option<SkillsFilter> {
        v.as_object().map(SkillsFilter::from_map)
    }

    /// From a JSON object's entries, in their order.
    pub fn from_map(obj: &Map<String, Value>) -> SkillsFilter {
        let mut f = SkillsFilter::new();
        for (k, v) in obj {
            f.set(k.clone(), v.as_bool());
        }
        f
    }

    /// The entries in the order a JavaScript object enumerates them.
    pub fn entries(&self) -> Vec<(&str, Option<bool>)> {
        let mut out: Vec<(&str, Option<bool>)> = self.entries.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        js_key_sort(&mut out, |(k, _)| k);
        out
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn get(&self, name: &str) -> Option<Option<bool>> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// Fold a drop-list of names into a filter as `false` entries, without overriding an
    /// explicit entry (the toolkit's `disableSkills` over `skillsFilter`).
    pub fn fold_disabled(disabled: &[String], explicit: Option<SkillsFilter>) -> Option<SkillsFilter> {
        if disabled.is_empty() {
            return explicit;
        }
        let mut f = SkillsFilter::new();
        for name in disabled {
            f.set(name.clone(), Some(false));
        }
        for (name, on) in explicit.map(|e| e.entries).unwrap_or_default() {
            f.set(name, on);
        }
        Some(f)
    }
}

/// What `load_skills` / `list_skills` read.
#[derive(Debug, Clone, Default)]
pub struct LoadSkillsOptions {
    /// Roots walked for `**/SKILL.md`, in order.
    pub dirs: Vec<PathBuf>,
    /// Skills supplied as data; they come after every directory's.
    pub skills: Vec<SkillDef>,
    /// Applied by `load_skills` only.
    pub filter: Option<SkillsFilter>,
    /// Sibling-file sample cap: `0` (or `None`) ⇒ 10, `n > 0` ⇒ `n`, `-1` ⇒ no `<skill_files>`.
    pub sample_limit: Option<f64>,
}

impl LoadSkillsOptions {
    pub fn dirs<I, P>(dirs: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        LoadSkillsOptions { dirs: dirs.into_iter().map(Into::into).collect(), ..Default::default() }
    }
}

enum Candidate {
    Skill(SkillInfo),
    Skip(SkillSkip),
}

fn candidates_from_dir(root: &str) -> Vec<Candidate> {
    if !std::fs::metadata(root).is_ok_and(|m| m.is_dir()) {
        crate::warn::warn(&format!("[toolnexus] skills dir not found: {root}"));
        return Vec::new();
    }
    discover::skill_files(root)
        .into_iter()
        .map(|file| {
            let bytes = match std::fs::read(&file) {
                Ok(b) => b,
                Err(_) => return Candidate::Skip(SkillSkip { location: file, reason: SkipReason::Unreadable }),
            };
            let fm = frontmatter::parse(&String::from_utf8_lossy(&bytes));
            if fm.malformed {
                return Candidate::Skip(SkillSkip { location: file, reason: SkipReason::MalformedFrontmatter });
            }
            match fm.name.filter(|n| !n.is_empty()) {
                None => Candidate::Skip(SkillSkip { location: file, reason: SkipReason::MissingName }),
                Some(name) => Candidate::Skill(SkillInfo {
                    name,
                    description: fm.description,
                    location: file,
                    content: fm.content,
                    origin: SkillOrigin::Fs,
                }),
            }
        })
        .collect()
}

fn candidate_from_def(d: &SkillDef) -> Candidate {
    if d.name.is_empty() {
        let location = d.base.clone().unwrap_or_else(|| "skill://".into());
        return Candidate::Skip(SkillSkip { location, reason: SkipReason::MissingName });
    }
    let base = d.base.clone().filter(|b| !b.is_empty()).unwrap_or_else(|| format!("skill://{}/", d.name));
    Candidate::Skill(SkillInfo {
        name: d.name.clone(),
        description: d.description.clone(),
        location: base.clone(),
        content: d.content.clone(),
        origin: SkillOrigin::Logical { resources: d.resources.clone(), base },
    })
}

/// Directories first (each in walk order), then data defs; first name wins, later ones are
/// reported and skipped. The skills come back in JavaScript object order.
fn discover(opts: &LoadSkillsOptions) -> SkillInventory {
    let mut cands = Vec::new();
    for root in &opts.dirs {
        cands.extend(candidates_from_dir(&root.to_string_lossy()));
    }
    cands.extend(opts.skills.iter().map(candidate_from_def));
    let mut inv = SkillInventory::default();
    let mut names = HashSet::new();
    for c in cands {
        match c {
            Candidate::Skip(s) => inv.skipped.push(s),
            Candidate::Skill(info) => {
                if names.contains(&info.name) {
                    crate::warn::warn(&format!(
                        "[toolnexus] duplicate skill name \"{}\" ({}) — keeping first",
                        info.name, info.location
                    ));
                    inv.skipped.push(SkillSkip { location: info.location, reason: SkipReason::DuplicateName });
                    continue;
                }
                names.insert(info.name.clone());
                inv.skills.push(info);
            }
        }
    }
    js_key_sort(&mut inv.skills, |s| &s.name);
    inv
}

/// Empty or absent ⇒ all; any `true` ⇒ only the `true` names; else drop the `false` names.
/// Names that match no skill are reported.
fn apply_filter(skills: Vec<SkillInfo>, filter: Option<&SkillsFilter>) -> Vec<SkillInfo> {
    let Some(filter) = filter.filter(|f| !f.is_empty()) else { return skills };
    let entries = filter.entries();
    let allowlist = entries.iter().any(|(_, on)| *on == Some(true));
    for (name, _) in &entries {
        if !skills.iter().any(|s| s.name == *name) {
            crate::warn::warn(&format!("[toolnexus] skill filter name \"{name}\" matched no skill"));
        }
    }
    skills
        .into_iter()
        .filter(|s| {
            let on = filter.get(&s.name).flatten();
            if allowlist {
                on == Some(true)
            } else {
                on != Some(false)
            }
        })
        .collect()
}

/// Discover and validate without building anything: all skills (the filter is not applied)
/// and the typed reasons for every rejected candidate.
pub fn list_skills(opts: &LoadSkillsOptions) -> SkillInventory {
    discover(opts)
}

/// Discover skills, apply the filter, and build the `skill` tool and the catalog.
pub fn load_skills(opts: &LoadSkillsOptions) -> SkillSource {
    let found = discover(opts);
    let skills = apply_filter(found.skills, opts.filter.as_ref());
    SkillSource::new(skills, opts.sample_limit.unwrap_or(0.0))
}

/// The loaded skills, the one `skill` tool over them, and the prompt catalog.
pub struct SkillSource {
    catalog: Arc<Catalog>,
    tool: SharedTool,
}

impl SkillSource {
    fn new(skills: Vec<SkillInfo>, sample_limit: f64) -> Self {
        let catalog = Arc::new(Catalog { skills, sample_limit });
        let tool: SharedTool = Arc::new(SkillTool::new(catalog.clone()));
        SkillSource { catalog, tool }
    }

    /// The skills after the filter, in the order the reference's record enumerates them.
    pub fn skills(&self) -> &[SkillInfo] {
        &self.catalog.skills
    }

    pub fn get(&self, name: &str) -> Option<&SkillInfo> {
        self.catalog.get(name)
    }

    /// The skills as a JSON object keyed by name.
    pub fn skills_value(&self) -> Value {
        let mut m = Map::with_capacity(self.catalog.skills.len());
        for s in &self.catalog.skills {
            m.insert(s.name.clone(), s.to_value());
        }
        Value::Object(m)
    }

    /// The one `skill` tool.
    pub fn tool(&self) -> SharedTool {
        self.tool.clone()
    }

    /// The catalog for the system prompt: the preamble and the described skills sorted by
    /// name (locale order), or the "no skills" line.
    pub fn prompt(&self) -> String {
        let mut described: Vec<&SkillInfo> = self.catalog.skills.iter().filter(|s| s.description.is_some()).collect();
        if described.is_empty() {
            return NO_SKILLS_PROMPT.into();
        }
        described.sort_by(|a, b| locale_compare(&a.name, &b.name));
        let mut lines = vec![SKILLS_PROMPT_PREAMBLE.to_string(), String::new(), "## Available Skills".to_string()];
        for s in described {
            lines.push(format!("- **{}**: {}", s.name, s.description.as_deref().unwrap_or_default()));
        }
        lines.join("\n")
    }
}

/// Order items the way JavaScript enumerates an object's keys: array-index keys first, in
/// numeric order, then the rest as they were.
fn js_key_sort<T>(items: &mut [T], key: impl Fn(&T) -> &str) {
    items.sort_by_key(|x| array_index(key(x)).map_or((1, 0), |i| (0, i)));
}

#[cfg(test)]
mod tests;

/// What an MCP server offers of a skill: it as a prompt (its description, the arguments its
/// frontmatter's `arguments` names, comma-separated, its instructions) and its files as
/// resources.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillOffer {
    pub name: String,
    pub description: Option<String>,
    /// The instructions (the body after the frontmatter).
    pub content: String,
    pub arguments: Vec<String>,
    /// Its files: the path relative to the skill's folder, and where it is. A skill given as
    /// data has none.
    pub files: Vec<(String, String)>,
}

/// What an MCP server offers of `skills`, at most `file_limit` files of each (`SKILL.md`
/// first), read now.
pub fn offers(skills: &[SkillInfo], file_limit: usize) -> Vec<SkillOffer> {
    skills
        .iter()
        .map(|s| {
            let (arguments, files) = match s.origin {
                SkillOrigin::Fs => {
                    let header =
                        std::fs::read_to_string(&s.location).map(|t| frontmatter::parse(&t)).unwrap_or_default();
                    let arguments = header
                        .arguments
                        .map(|a| a.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect())
                        .unwrap_or_default();
                    let dir = paths::dirname(&s.location);
                    let mut files = vec![("SKILL.md".to_string(), s.location.clone())];
                    let prefix = format!("{}/", dir.trim_end_matches('/'));
                    for f in discover::sample_siblings(&dir, file_limit.saturating_sub(1) as f64) {
                        let rel = f.strip_prefix(&prefix).unwrap_or(&f).replace('\\', "/");
                        files.push((rel, f));
                    }
                    (arguments, files)
                }
                SkillOrigin::Logical { .. } => (Vec::new(), Vec::new()),
            };
            SkillOffer {
                name: s.name.clone(),
                description: s.description.clone(),
                content: s.content.clone(),
                arguments,
                files,
            }
        })
        .collect()
}
