//! `loadSkills` / `listSkills` options from their JSON, and the skills options' shapes the
//! toolkit's `skillsDir` / `skills` / `skillProvider` / `skillsFilter` share.

use std::path::PathBuf;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{LoadSkillsOptions, SkillDef, SkillsFilter};
use crate::error::{Error, Result};
use crate::json;
use crate::options::{self, parse_object};

/// The JSON of `loadSkills` / `listSkills` options: `{ dirs?, skills?, filter?, sampleLimit? }`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LoadJson {
    #[serde(default)]
    dirs: Option<Value>,
    #[serde(default)]
    skills: Option<Value>,
    #[serde(default, deserialize_with = "filter")]
    filter: Option<SkillsFilter>,
    #[serde(default, deserialize_with = "options::number_only")]
    sample_limit: Option<f64>,
}

impl LoadSkillsOptions {
    /// The option names `loadSkills` and `listSkills` read (see `options::fields_of`).
    pub fn option_names() -> &'static [&'static str] {
        options::fields_of::<LoadJson>()
    }

    /// The options from their JSON. Anything but an object is no options; `dirs` must be a
    /// path or a list of paths and `skills` a list when given (absent or `null` is none).
    /// `listSkills` reads the same options, with the same messages.
    pub fn from_json(text: &str) -> Result<LoadSkillsOptions> {
        let o: LoadJson = parse_object(text, "loadSkills options")?.unwrap_or_default();
        Ok(LoadSkillsOptions {
            dirs: dirs(o.dirs.unwrap_or(Value::Null), "loadSkills: `dirs`")?,
            skills: defs(o.skills.unwrap_or(Value::Null), "loadSkills: `skills`")?,
            filter: o.filter,
            sample_limit: o.sample_limit,
        })
    }
}

/// Skill roots as given: one path or a list of them (`null`: none). `what` names the option
/// in the failure.
pub(crate) fn dirs(v: Value, what: &str) -> Result<Vec<PathBuf>> {
    let wrong = || Error::Invalid(format!("{what} must be a string or an array of strings"));
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![PathBuf::from(s)]),
        Value::Array(items) => items
            .into_iter()
            .map(|x| match x {
                Value::String(s) => Ok(PathBuf::from(s)),
                _ => Err(wrong()),
            })
            .collect(),
        other => {
            json::release(other);
            Err(wrong())
        }
    }
}

/// A `SkillDef[]` (`null`: none); an item that is not an object is a def with nothing in it.
/// `what` names the option in the failure.
pub(crate) fn defs(v: Value, what: &str) -> Result<Vec<SkillDef>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => Ok(items.into_iter().map(SkillDef::from_owned).collect()),
        other => {
            json::release(other);
            Err(Error::Invalid(format!("{what} must be an array of SkillDef objects")))
        }
    }
}

/// A name → on/off filter from an object; anything else is no filter.
pub(crate) fn filter<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<SkillsFilter>, D::Error> {
    Ok(options::object(d)?.as_ref().map(SkillsFilter::from_map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(v: Value) -> Result<LoadSkillsOptions> {
        LoadSkillsOptions::from_json(&v.to_string())
    }

    fn err(r: Result<impl Sized>) -> String {
        r.err().expect("fails").to_string()
    }

    #[test]
    fn defaults_and_non_objects() {
        for text in ["{}", "null", "[1]", "\"dir\""] {
            let o = LoadSkillsOptions::from_json(text).unwrap();
            assert!(o.dirs.is_empty() && o.skills.is_empty() && o.filter.is_none() && o.sample_limit.is_none());
        }
        let o = load(json!({"dirs": null, "skills": null, "filter": null, "sampleLimit": null})).unwrap();
        assert!(o.dirs.is_empty() && o.skills.is_empty() && o.filter.is_none() && o.sample_limit.is_none());
        assert!(err(LoadSkillsOptions::from_json("{")).starts_with("loadSkills options: invalid JSON ("));
    }

    #[test]
    fn dirs_are_a_path_or_a_list_of_paths() {
        assert_eq!(load(json!({"dirs": "a"})).unwrap().dirs, [PathBuf::from("a")]);
        assert_eq!(load(json!({"dirs": ["a", "b"]})).unwrap().dirs, [PathBuf::from("a"), PathBuf::from("b")]);
        for bad in [json!(1), json!({}), json!(["a", 1]), json!([null])] {
            assert_eq!(err(load(json!({ "dirs": bad }))), "loadSkills: `dirs` must be a string or an array of strings");
        }
    }

    #[test]
    fn skills_are_a_list_of_defs() {
        let o = load(json!({"skills": [{"name": "n", "content": 5, "resources": ["a", 1]}, 7, ["x"], {"name": 0}]}))
            .unwrap();
        let names: Vec<&str> = o.skills.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["n", "", "", ""]);
        assert_eq!((o.skills[0].content.as_str(), o.skills[0].resources.clone()), ("5", vec!["a".into(), "1".into()]));
        assert_eq!(o.skills[1], SkillDef::default());
        for bad in [json!("s"), json!({"name": "n"}), json!(1)] {
            assert_eq!(
                err(load(json!({ "skills": bad }))),
                "loadSkills: `skills` must be an array of SkillDef objects"
            );
        }
        // `dirs` is checked first, whatever the order of the keys.
        assert_eq!(
            err(load(json!({"skills": 1, "dirs": 1}))),
            "loadSkills: `dirs` must be a string or an array of strings"
        );
    }

    #[test]
    fn filter_and_sample_limit() {
        let o = load(json!({"filter": {"a": true, "b": false, "c": 1}, "sampleLimit": -1})).unwrap();
        assert_eq!(o.filter.unwrap().entries(), [("a", Some(true)), ("b", Some(false)), ("c", None)]);
        assert_eq!(o.sample_limit, Some(-1.0));
        let o = load(json!({"filter": ["a"], "sampleLimit": "5"})).unwrap();
        assert_eq!((o.filter, o.sample_limit), (None, None));
    }
}
