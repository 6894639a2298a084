//! `loadSkills` / `listSkills`: the core's skill source behind JSON options.

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use toolnexus_core::skills::{self, LoadSkillsOptions, SkillSource};

use crate::core_err;
use crate::coretool::NativeTool;

#[napi]
pub const SKILL_TOOL_DESCRIPTION: &str = skills::SKILL_TOOL_DESCRIPTION;

#[napi]
pub const SKILLS_PROMPT_PREAMBLE: &str = skills::SKILLS_PROMPT_PREAMBLE;

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
    let opts = LoadSkillsOptions::from_json(&options_json).map_err(core_err)?;
    Ok(NativeSkillSource { inner: skills::load_skills(&opts) })
}

/// `listSkills(options)`: the inventory as JSON.
#[napi(js_name = "skillsList")]
pub fn skills_list(options_json: String) -> Result<String> {
    let opts = LoadSkillsOptions::from_json(&options_json).map_err(core_err)?;
    Ok(skills::list_skills(&opts).to_value().to_string())
}
