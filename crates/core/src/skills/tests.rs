use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::tool::ToolContext;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn skill_md(name: &str, description: Option<&str>, body: &str) -> String {
    match description {
        Some(d) => format!("---\nname: {name}\ndescription: {d}\n---\n{body}"),
        None => format!("---\nname: {name}\n---\n{body}"),
    }
}

/// The shared example tree: one skill with one script beside it.
fn hello_tree(root: &Path) {
    write(
        root,
        "hello-world/SKILL.md",
        &skill_md("hello-world", Some("A tiny example skill."), "\n# Hello World Skill\n\nBody.\n"),
    );
    write(root, "hello-world/scripts/greet.sh", "echo hi\n");
}

fn data(name: &str, description: Option<&str>, content: &str) -> SkillDef {
    SkillDef {
        name: name.into(),
        description: description.map(Into::into),
        content: content.into(),
        ..Default::default()
    }
}

async fn call(source: &SkillSource, args: Value) -> crate::types::ToolResult {
    source.tool().execute(args, ToolContext::default()).await.unwrap()
}

fn names(source: &SkillSource) -> Vec<&str> {
    source.skills().iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test]
async fn a_directory_skill_loads_byte_exact() {
    let tmp = tempfile::tempdir().unwrap();
    hello_tree(tmp.path());
    let root = tmp.path().to_string_lossy().into_owned();
    let source = load_skills(&LoadSkillsOptions::dirs([&root]));
    assert_eq!(names(&source), ["hello-world"]);
    let info = &source.skills()[0];
    assert_eq!(info.location, format!("{root}/hello-world/SKILL.md"));
    assert_eq!(info.content, "\n# Hello World Skill\n\nBody.\n");

    let tool = source.tool();
    assert_eq!(tool.name(), "skill");
    assert_eq!(tool.source(), "skill");
    assert_eq!(tool.description(), SKILL_TOOL_DESCRIPTION);
    assert_eq!(
        serde_json::to_string(tool.input_schema()).unwrap(),
        r#"{"type":"object","properties":{"name":{"type":"string","description":"The name of the skill to load"}},"required":["name"],"additionalProperties":false}"#
    );

    let r = call(&source, json!({"name": "hello-world"})).await;
    let dir = format!("{root}/hello-world");
    let want = format!(
        "<skill_content name=\"hello-world\">\n# Skill: hello-world\n\n# Hello World Skill\n\nBody.\n\nBase directory for this skill: {}\nRelative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\nNote: file list is sampled.\n\n<skill_files>\n<file>{dir}/scripts/greet.sh</file>\n</skill_files>\n</skill_content>",
        paths::file_url(&dir)
    );
    assert_eq!(r.output, want);
    assert!(!r.is_error);
    assert_eq!(r.metadata, Some(json!({"name": "hello-world", "dir": dir})));
}

#[test]
fn the_catalog_is_byte_exact_and_sorted_by_locale() {
    let source = load_skills(&LoadSkillsOptions {
        skills: vec![
            data("Zeta", Some("last by locale"), "z"),
            data("hello_world", Some("underscore"), "u"),
            data("alpha", Some("first"), "a"),
            data("hello-world", Some("hyphen"), "h"),
            data("quiet", None, "no description"),
            data("b", Some(""), "empty description still listed"),
        ],
        ..Default::default()
    });
    assert_eq!(
        source.prompt(),
        "Skills provide specialized instructions and workflows for specific tasks.\nUse the skill tool to load a skill when a task matches its description.\n\n## Available Skills\n- **alpha**: first\n- **b**: \n- **hello_world**: underscore\n- **hello-world**: hyphen\n- **Zeta**: last by locale"
    );
    let undescribed = load_skills(&LoadSkillsOptions { skills: vec![data("quiet", None, "x")], ..Default::default() });
    assert_eq!(undescribed.prompt(), "No skills are currently available.");
    assert_eq!(load_skills(&LoadSkillsOptions::default()).prompt(), NO_SKILLS_PROMPT);
}

#[tokio::test]
async fn unknown_names_list_what_is_available_in_code_unit_order() {
    let source = load_skills(&LoadSkillsOptions {
        skills: vec![data("beta", None, "b"), data("Alpha", None, "a"), data("alpha", None, "a")],
        ..Default::default()
    });
    let r = call(&source, json!({"name": "nope"})).await;
    assert!(r.is_error);
    assert_eq!(r.output, "Skill \"nope\" not found. Available skills: Alpha, alpha, beta");
    assert_eq!(r.metadata, None);
    let r = call(&source, json!({})).await;
    assert_eq!(r.output, "Skill \"\" not found. Available skills: Alpha, alpha, beta");
    let r = call(&source, json!({"name": 7})).await;
    assert!(r.output.starts_with("Skill \"7\" not found."));
    let empty = load_skills(&LoadSkillsOptions::default());
    assert_eq!(call(&empty, json!({"name": "x"})).await.output, "Skill \"x\" not found. Available skills: none");
}

#[tokio::test]
async fn data_skills_use_a_logical_base_and_their_resources() {
    let source = load_skills(&LoadSkillsOptions {
        skills: vec![
            SkillDef {
                resources: vec!["templates/refund-email.md".into(), "b.md".into(), "c.md".into()],
                ..data("refund-policy", Some("How to process a refund"), "  1. Verify.\n2. Refund.  \n")
            },
            SkillDef { base: Some("internal://deploy/".into()), ..data("deploy", None, "Run it.") },
        ],
        sample_limit: Some(2.0),
        ..Default::default()
    });
    let r = call(&source, json!({"name": "refund-policy"})).await;
    assert_eq!(
        r.output,
        "<skill_content name=\"refund-policy\">\n# Skill: refund-policy\n\n1. Verify.\n2. Refund.\n\nBase directory for this skill: skill://refund-policy/\nRelative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\nNote: file list is sampled.\n\n<skill_files>\n<file>templates/refund-email.md</file>\n<file>b.md</file>\n</skill_files>\n</skill_content>"
    );
    assert_eq!(r.metadata, Some(json!({"name": "refund-policy", "dir": "skill://refund-policy/"})));
    // No resources: instruction-only, the files block is left out.
    let r = call(&source, json!({"name": "deploy"})).await;
    assert_eq!(
        r.output,
        "<skill_content name=\"deploy\">\n# Skill: deploy\n\nRun it.\n\nBase directory for this skill: internal://deploy/\nRelative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\n</skill_content>"
    );
    assert_eq!(source.get("deploy").unwrap().location, "internal://deploy/");
}

#[tokio::test]
async fn sample_limits() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "s/SKILL.md", &skill_md("s", None, "body"));
    for f in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"] {
        write(tmp.path(), &format!("s/{f}.txt"), f);
    }
    let root = tmp.path().to_string_lossy().into_owned();
    let files = |out: &str| out.lines().filter(|l| l.starts_with("<file>")).count();
    let with = |limit: Option<f64>| {
        load_skills(&LoadSkillsOptions { dirs: vec![root.clone().into()], sample_limit: limit, ..Default::default() })
    };
    assert_eq!(files(&call(&with(None), json!({"name": "s"})).await.output), 10);
    assert_eq!(files(&call(&with(Some(0.0)), json!({"name": "s"})).await.output), 10);
    assert_eq!(files(&call(&with(Some(3.0)), json!({"name": "s"})).await.output), 3);
    let omitted = call(&with(Some(-1.0)), json!({"name": "s"})).await.output;
    assert!(!omitted.contains("<skill_files>") && !omitted.contains("Note: file list is sampled."));
    assert!(omitted.ends_with("relative to this base directory.\n</skill_content>"));
    // Another negative number samples nothing but keeps the (empty) block.
    let empty = call(&with(Some(-4.0)), json!({"name": "s"})).await.output;
    assert!(empty.ends_with("<skill_files>\n\n</skill_files>\n</skill_content>"), "{empty}");
    // Data skills: -1 omits, a negative number lists them all.
    let defs = vec![SkillDef { resources: vec!["a".into(), "b".into()], ..data("x", None, "") }];
    let d = |limit| {
        load_skills(&LoadSkillsOptions { skills: defs.clone(), sample_limit: Some(limit), ..Default::default() })
    };
    assert!(!call(&d(-1.0), json!({"name": "x"})).await.output.contains("<skill_files>"));
    assert_eq!(files(&call(&d(-3.0), json!({"name": "x"})).await.output), 2);
    assert_eq!(files(&call(&d(1.0), json!({"name": "x"})).await.output), 1);
}

#[tokio::test]
async fn an_empty_directory_skill_still_lists_an_empty_block() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "lonely/SKILL.md", &skill_md("lonely", Some("d"), "x"));
    let source = load_skills(&LoadSkillsOptions::dirs([tmp.path()]));
    let out = call(&source, json!({"name": "lonely"})).await.output;
    assert!(out.ends_with("Note: file list is sampled.\n\n<skill_files>\n\n</skill_files>\n</skill_content>"), "{out}");
}

#[test]
fn first_name_wins_across_roots_and_data_and_skips_are_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    write(&a, "one/SKILL.md", &skill_md("shared", Some("from a"), "a"));
    write(&a, "two/SKILL.md", "---\ndescription: no name\n---\nbody");
    write(&a, "three/SKILL.md", "---\nname: [broken\n---\nbody");
    write(&a, "four/SKILL.md", "no frontmatter at all");
    write(&b, "x/SKILL.md", &skill_md("shared", Some("from b"), "b"));
    write(&b, "y/SKILL.md", &skill_md("only-b", None, "b"));
    let opts = LoadSkillsOptions {
        dirs: vec![a.clone(), b.clone(), tmp.path().join("missing")],
        skills: vec![data("shared", None, "data"), data("", None, "orphan"), data("fresh", Some("d"), "f")],
        filter: Some(SkillsFilter::new().with("nothing", true)),
        sample_limit: None,
    };
    let inv = list_skills(&opts);
    let got: Vec<_> = inv.skills.iter().map(|s| (s.name.as_str(), s.description.as_deref())).collect();
    assert_eq!(got, [("shared", Some("from a")), ("only-b", None), ("fresh", Some("d"))]);
    let s = |p: &Path, rel: &str| format!("{}/{rel}", p.to_string_lossy());
    let skipped: Vec<_> = inv.skipped.iter().map(|s| (s.location.clone(), s.reason.as_str())).collect();
    assert_eq!(
        skipped,
        [
            (s(&a, "two/SKILL.md"), "missing-name"),
            (s(&a, "three/SKILL.md"), "malformed-frontmatter"),
            (s(&a, "four/SKILL.md"), "missing-name"),
            (s(&b, "x/SKILL.md"), "duplicate-name"),
            ("skill://shared/".to_string(), "duplicate-name"),
            ("skill://".to_string(), "missing-name"),
        ]
    );
    let v = inv.to_value();
    assert_eq!(v["skipped"][0], json!({"location": s(&a, "two/SKILL.md"), "reason": "missing-name"}));
    assert_eq!(
        v["skills"][2],
        json!({"name": "fresh", "description": "d", "location": "skill://fresh/", "content": "f", "origin": "logical", "resources": [], "base": "skill://fresh/"})
    );
    assert_eq!(v["skills"][1]["origin"], "fs");
    assert!(v["skills"][1].get("description").is_none());
}

#[test]
fn skills_enumerate_in_javascript_object_order() {
    let source = load_skills(&LoadSkillsOptions {
        skills: vec![data("b", None, ""), data("10", None, ""), data("a", None, ""), data("2", None, "")],
        ..Default::default()
    });
    assert_eq!(names(&source), ["2", "10", "b", "a"]);
    let keys: Vec<String> = source.skills_value().as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["2", "10", "b", "a"]);
}

#[test]
fn filters_allow_or_drop() {
    let defs = vec![data("a", None, ""), data("b", None, ""), data("c", None, "")];
    let with = |f: Option<SkillsFilter>| {
        let s = load_skills(&LoadSkillsOptions { skills: defs.clone(), filter: f, ..Default::default() });
        names(&s).iter().map(|n| n.to_string()).collect::<Vec<_>>()
    };
    assert_eq!(with(None), ["a", "b", "c"]);
    assert_eq!(with(Some(SkillsFilter::new())), ["a", "b", "c"]);
    assert_eq!(with(Some(SkillsFilter::new().with("b", true))), ["b"]);
    assert_eq!(with(Some(SkillsFilter::new().with("b", true).with("c", false))), ["b"]);
    assert_eq!(with(Some(SkillsFilter::new().with("b", false))), ["a", "c"]);
    assert_eq!(with(Some(SkillsFilter::new().with("ghost", true))), Vec::<String>::new());
    // A value that is neither true nor false neither allows nor drops.
    let odd = SkillsFilter::from_value(&json!({"a": 1, "b": false})).unwrap();
    assert_eq!(with(Some(odd)), ["a", "c"]);
    let odd = SkillsFilter::from_value(&json!({"a": "yes", "b": true})).unwrap();
    assert_eq!(with(Some(odd)), ["b"]);
    assert_eq!(SkillsFilter::from_value(&json!(null)), None);
}

#[test]
fn disabled_names_fold_in_without_overriding_explicit_entries() {
    let disabled = vec!["a".to_string(), "b".to_string()];
    let f = SkillsFilter::fold_disabled(&disabled, Some(SkillsFilter::new().with("b", true).with("c", true))).unwrap();
    assert_eq!(f.entries(), [("a", Some(false)), ("b", Some(true)), ("c", Some(true))]);
    let f = SkillsFilter::fold_disabled(&disabled, None).unwrap();
    assert_eq!(f.entries(), [("a", Some(false)), ("b", Some(false))]);
    assert_eq!(SkillsFilter::fold_disabled(&[], None), None);
    let explicit = SkillsFilter::new().with("x", false);
    assert_eq!(SkillsFilter::fold_disabled(&[], Some(explicit.clone())), Some(explicit));
}

#[test]
fn defs_read_leniently_from_json() {
    let d = SkillDef::from_value(
        &json!({"name": "n", "description": null, "content": 5, "resources": ["a", 1], "base": ""}),
    );
    assert_eq!(
        d,
        SkillDef {
            name: "n".into(),
            description: None,
            content: "5".into(),
            resources: vec!["a".into(), "1".into()],
            base: Some("".into())
        }
    );
    // A falsy name is missing; an empty base is kept for the skip location.
    let inv = list_skills(&LoadSkillsOptions {
        skills: vec![SkillDef::from_value(&json!({"name": 0, "base": ""}))],
        ..Default::default()
    });
    assert_eq!(inv.skipped, [SkillSkip { location: "".into(), reason: SkipReason::MissingName }]);
    // An empty base on a named def falls back to the default.
    let inv = list_skills(&LoadSkillsOptions { skills: vec![d], ..Default::default() });
    assert_eq!(inv.skills[0].location, "skill://n/");
}

#[tokio::test]
async fn relative_roots_report_relative_paths_and_an_absolute_base() {
    // The crate's own directory is the test's working directory; use a relative path into a
    // temp dir made inside it.
    let tmp = tempfile::tempdir_in(".").unwrap();
    hello_tree(tmp.path());
    let rel = format!("./{}", tmp.path().file_name().unwrap().to_string_lossy());
    let plain = rel.trim_start_matches("./").to_string();
    let source = load_skills(&LoadSkillsOptions::dirs([&rel]));
    assert_eq!(source.skills()[0].location, format!("{plain}/hello-world/SKILL.md"));
    let r = call(&source, json!({"name": "hello-world"})).await;
    assert!(r.output.contains(&format!("<file>{plain}/hello-world/scripts/greet.sh</file>")), "{}", r.output);
    let abs = std::env::current_dir().unwrap().join(&plain).join("hello-world");
    assert!(r.output.contains(&format!("Base directory for this skill: file://{}\n", abs.to_string_lossy())));
    assert_eq!(r.metadata.unwrap()["dir"], format!("{plain}/hello-world"));
}
