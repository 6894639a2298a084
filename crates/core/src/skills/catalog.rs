//! What the skill source is made of, below both its loader and its tool: a skill as found,
//! the catalog the tool reads, the texts the reference pins, and JavaScript's string orders.

use std::cmp::Ordering;

use icu_collator::options::CollatorOptions;
use icu_collator::CollatorBorrowed;
use serde_json::{Map, Value};

/// The `skill` tool's description (the loader text, verbatim).
pub const SKILL_TOOL_DESCRIPTION: &str = "Load a specialized skill when the task at hand matches one of the skills listed in the system prompt.\n\nUse this tool to inject the skill's instructions and resources into current conversation. The output may contain detailed workflow guidance as well as references to scripts, files, etc in the same directory as the skill.\n\nThe skill name must match one of the skills listed in your system prompt.";

/// The lines that open the catalog when at least one described skill exists.
pub const SKILLS_PROMPT_PREAMBLE: &str = "Skills provide specialized instructions and workflows for specific tasks.\nUse the skill tool to load a skill when a task matches its description.";

/// The catalog when no skill has a description.
pub const NO_SKILLS_PROMPT: &str = "No skills are currently available.";

/// Where a skill came from.
#[derive(Debug, Clone, PartialEq)]
pub enum SkillOrigin {
    /// A `SKILL.md` on disk; `location` is its path.
    Fs,
    /// Supplied as data: a logical base and resource names, no file system.
    Logical { resources: Vec<String>, base: String },
}

/// One discovered skill.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillInfo {
    pub name: String,
    pub description: Option<String>,
    /// The `SKILL.md` path as discovered (relative when its root was), or the logical base.
    pub location: String,
    /// The body after the frontmatter.
    pub content: String,
    pub origin: SkillOrigin,
}

impl SkillInfo {
    /// `{ name, description?, location, content, origin, resources?, base? }`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(7);
        m.insert("name".into(), Value::String(self.name.clone()));
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::String(d.clone()));
        }
        m.insert("location".into(), Value::String(self.location.clone()));
        m.insert("content".into(), Value::String(self.content.clone()));
        match &self.origin {
            SkillOrigin::Fs => {
                m.insert("origin".into(), "fs".into());
            }
            SkillOrigin::Logical { resources, base } => {
                m.insert("origin".into(), "logical".into());
                m.insert("resources".into(), resources.iter().map(|r| Value::String(r.clone())).collect());
                m.insert("base".into(), Value::String(base.clone()));
            }
        }
        Value::Object(m)
    }
}

pub(crate) struct Catalog {
    /// In JavaScript object order, names unique.
    pub skills: Vec<SkillInfo>,
    pub sample_limit: f64,
}

impl Catalog {
    pub fn get(&self, name: &str) -> Option<&SkillInfo> {
        self.skills.iter().find(|s| s.name == name)
    }
}

/// `String.prototype.localeCompare` with the default locale: Unicode collation (CLDR root).
pub(crate) fn locale_compare(a: &str, b: &str) -> Ordering {
    static ROOT: CollatorBorrowed<'static> = CollatorBorrowed::new_root(CollatorOptions::default());
    ROOT.compare(a, b)
}

/// The default `Array.prototype.sort` order: UTF-16 code units.
pub(crate) fn utf16_compare(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod root_collator {
    /// The root collator built in is the one `try_new` with default preferences gives.
    #[test]
    fn orders_like_the_default_locale_collator() {
        let Ok(full) = icu_collator::CollatorBorrowed::try_new(Default::default(), Default::default()) else {
            panic!("the default collator must build");
        };
        let base = [
            "a", "A", "b", "á", "Á", "ä", "ae", "æ", "ß", "ss", "1", "10", "2", "-a", "_a", ".a", " a", "a-b", "a_b",
            "ab", "Ab", "é", "e", "E", "ñ", "ø", "ö", "œ", "č", "ç", "中", "日本", "한국", "ア", "あ", "ё", "я", "α",
            "Ω", "😀", "ﬁ", "fi", "Ⅸ", "ix", "𝔞", "my-skill", "my_skill", "mySkill", "skill2", "skill10",
        ];
        let mut words: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        for x in &base {
            for y in base.iter().take(12) {
                words.push(format!("{x}{y}"));
            }
        }
        for x in &words {
            for y in &words {
                assert_eq!(super::locale_compare(x, y), full.compare(x, y), "{x} vs {y}");
            }
        }
    }
}
