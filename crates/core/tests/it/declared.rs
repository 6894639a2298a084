//! The public types name what the core reads: each options type's fields, as serde's derive
//! lists them (`options::fields_of`), against the members of its interface in index.d.ts at the
//! repository root. An option added to one and not the other fails here.

use std::collections::BTreeSet;

use toolnexus_core::agents::runtime::RuntimeOptions;
use toolnexus_core::agents::Compactor;
use toolnexus_core::client::ClientOptions;
use toolnexus_core::http_tool::HttpToolOptions;
use toolnexus_core::options::fields_of;
use toolnexus_core::serve::mcp::McpServeConfig;
use toolnexus_core::serve::options::{A2AConfig, ServeSecurity};
use toolnexus_core::skills::LoadSkillsOptions;
use toolnexus_core::ToolkitOptions;

fn index_d_ts() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../index.d.ts");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The member names of the interface that opens with `header` (its first-level members only:
/// lines indented one step deeper than the header).
fn members(text: &str, header: &str) -> BTreeSet<String> {
    let start = text.find(header).unwrap_or_else(|| panic!("index.d.ts has no `{header}`"));
    let indent = text[..start].rsplit('\n').next().unwrap_or("").len() + header.len() - header.trim_start().len();
    let inner = " ".repeat(indent + 2);
    let mut names = BTreeSet::new();
    for line in text[start..].lines().skip(1) {
        if line.trim_start().starts_with('}') && line.len() - line.trim_start().len() == indent {
            break;
        }
        let Some(rest) = line.strip_prefix(&inner) else { continue };
        if rest.starts_with(' ') || rest.starts_with('/') || rest.starts_with('*') {
            continue;
        }
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
        if !name.is_empty() && rest[name.len()..].trim_start().starts_with(['?', ':']) {
            names.insert(name);
        }
    }
    names
}

/// The members of an inline object type: `name?: { a?: T; b: U }`.
fn inline_members(text: &str, header: &str, member: &str) -> BTreeSet<String> {
    let start = text.find(header).unwrap_or_else(|| panic!("index.d.ts has no `{header}`"));
    let at = text[start..].find(&format!("{member}?: {{")).map(|i| start + i).expect("the inline type");
    let body = &text[at..];
    let open = body.find('{').unwrap_or(0);
    let close = body.find('}').unwrap_or(body.len());
    body[open + 1..close]
        .split(';')
        .filter_map(|m| m.split(['?', ':']).next().map(|n| n.trim().to_string()))
        .filter(|n| !n.is_empty())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn create_client_options_are_the_declared_ones() {
    let text = index_d_ts();
    let declared = members(&text, "export interface ClientOptions {");
    assert!(declared.len() > 15, "{declared:?}");
    // `generate` is createInProcessClient's (its options are ClientOptions and the model function).
    let mut read = set(ClientOptions::option_names());
    assert!(read.remove("generate"));
    assert!(members(
        &text,
        "export type InProcessOptions = Omit<ClientOptions, \"baseUrl\" | \"apiKey\" | \"style\" | \"fetch\"> & {"
    )
    .contains("generate"));
    assert_eq!(read, declared);
}

#[test]
fn agent_runtime_options_are_the_declared_ones() {
    let text = index_d_ts();
    let declared = members(&text, "  interface RuntimeOptions {");
    assert!(declared.len() > 10, "{declared:?}");
    let (runtime, llm) = RuntimeOptions::option_names();
    assert_eq!(set(runtime), declared);
    assert_eq!(set(llm), inline_members(&text, "  interface RuntimeOptions {", "llm"));
}

#[test]
fn the_reader_of_index_d_ts_finds_members_and_nothing_else() {
    let text = "export interface A {\n  a: string\n  /** doc b: no */\n  b?: { x: 1 }\n    nested: 2\n  c(): void\n}\nexport interface B {\n  z: 1\n}\nexport namespace N {\n  interface C {\n    y?: 1\n  }\n  w: 2\n}\n";
    assert_eq!(members(text, "export interface A {"), set(&["a", "b"]));
    assert_eq!(inline_members(text, "export interface A {", "b"), set(&["x"]));
    assert_eq!(members(text, "  interface C {"), set(&["y"]));
}

#[test]
fn create_toolkit_options_are_the_declared_ones() {
    let declared = members(&index_d_ts(), "export interface ToolkitOptions {");
    // The caller's Tool objects and the signal cross beside the document.
    let mut read = set(ToolkitOptions::option_names());
    read.extend(set(&["extraTools", "signal"]));
    assert_eq!(read, declared);
}

#[test]
fn compactor_options_are_the_declared_ones() {
    let declared = members(&index_d_ts(), "  interface CompactorOptions {");
    assert_eq!(set(Compactor::option_names()), declared);
}

#[test]
fn http_tool_options_are_the_declared_ones() {
    let declared = members(&index_d_ts(), "export interface HttpToolOptions {");
    assert_eq!(set(HttpToolOptions::option_names()), declared);
}

#[test]
fn load_skills_options_are_the_declared_ones() {
    let declared = members(&index_d_ts(), "export interface LoadSkillsOptions {");
    assert_eq!(set(LoadSkillsOptions::option_names()), declared);
}

#[test]
fn serve_profiles_and_guards_are_the_declared_ones() {
    let text = index_d_ts();
    assert_eq!(set(fields_of::<ServeSecurity>()), members(&text, "export interface ServeSecurityOptions {"));
    assert_eq!(set(fields_of::<A2AConfig>()), members(&text, "export interface A2AConfig {"));
    assert_eq!(set(fields_of::<McpServeConfig>()), members(&text, "export interface MCPServeConfig {"));
}
