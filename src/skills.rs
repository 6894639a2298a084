//! `loadSkills` / `listSkills`: the core's skill source behind JSON options.

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::skills::{self, LoadSkillsOptions, SkillDef, SkillSource, SkillsFilter};

use crate::nativetool::NativeTool;
use crate::parse_json;

#[napi]
pub const SKILL_TOOL_DESCRIPTION: &str = skills::SKILL_TOOL_DESCRIPTION;

#[napi]
pub const SKILLS_PROMPT_PREAMBLE: &str = skills::SKILLS_PROMPT_PREAMBLE;

/// `dirs` as given: one path or a list of them (absent or null: none).
pub(crate) fn dirs_of(v: Option<&Value>, what: &str) -> Result<Vec<PathBuf>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![PathBuf::from(s)]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(PathBuf::from(s)),
                _ => Err(Error::from_reason(format!("{what} must be a string or an array of strings"))),
            })
            .collect(),
        Some(_) => Err(Error::from_reason(format!("{what} must be a string or an array of strings"))),
    }
}

/// A `SkillDef[]` (absent or null: none).
pub(crate) fn defs_of(v: Option<&Value>, what: &str) -> Result<Vec<SkillDef>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.iter().map(SkillDef::from_value).collect()),
        Some(_) => Err(Error::from_reason(format!("{what} must be an array of SkillDef objects"))),
    }
}

fn options(json: &str) -> Result<LoadSkillsOptions> {
    let o = parse_json(json, "loadSkills options")?;
    Ok(LoadSkillsOptions {
        dirs: dirs_of(o.get("dirs"), "loadSkills: `dirs`")?,
        skills: defs_of(o.get("skills"), "loadSkills: `skills`")?,
        filter: o.get("filter").and_then(SkillsFilter::from_value),
        sample_limit: o.get("sampleLimit").and_then(Value::as_f64),
    })
}

/// A loaded skill source: its skills, the one `skill` tool, the catalog.
#[napi]
pub struct NativeSkillSource {
    inner: SkillSource,
}

#[napi]
impl NativeSkillSource {
    /// The skills keyed by name, as JSON.
    #[napi]
    pub fn skills(&self) -> String {
        self.inner.skills_value().to_string()
    }

    #[napi]
    pub fn tool(&self) -> NativeTool {
        NativeTool::new(self.inner.tool())
    }

    #[napi]
    pub fn prompt(&self) -> String {
        self.inner.prompt()
    }
}

/// `loadSkills(options)` with the options as JSON (`{ dirs?, skills?, filter?, sampleLimit? }`).
#[napi(js_name = "skillsLoad")]
pub fn skills_load(options_json: String) -> Result<NativeSkillSource> {
    Ok(NativeSkillSource { inner: skills::load_skills(&options(&options_json)?) })
}

/// `listSkills(options)`: the inventory as JSON.
#[napi(js_name = "skillsList")]
pub fn skills_list(options_json: String) -> Result<String> {
    Ok(skills::list_skills(&options(&options_json)?).to_value().to_string())
}
