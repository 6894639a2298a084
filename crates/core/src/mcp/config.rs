//! Reading an MCP config: the accepted spellings, and each server entry read the way the
//! reference's JavaScript reads it.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::syserr::SystemError;

/// Connect, list and call budget of a server that names none.
pub const DEFAULT_TIMEOUT_MS: f64 = 30_000.0;
/// Most `tools/list` pages followed before a server is given up on.
pub const MAX_LIST_PAGES: usize = 1_000;

/// Top-level sibling sections of a config file that are never MCP servers.
const RESERVED_KEYS: [&str; 4] = ["builtins", "agents", "a2a", "mcpServer"];

/// Accept a path (read and parsed as JSON) or a parsed value, unwrap `mcpServers`, `servers`
/// or `mcp` (first one set wins), else take the value as a bare server map minus the reserved
/// sibling keys. Disabled servers are kept.
pub fn parse_mcp_config(input: &Value) -> Result<Value> {
    let raw = match input {
        Value::String(path) => read_config_file(path)?,
        other => other.clone(),
    };
    let map = match raw {
        Value::Null => return Err(Error::Invalid("Cannot read properties of null (reading 'mcpServers')".into())),
        Value::Object(m) => m,
        Value::Array(items) => items.into_iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect(),
        _ => return Ok(Value::Object(Map::new())),
    };
    // `mcpServers ?? servers ?? mcp`: a null wrapper falls through to the next spelling.
    let set = |k: &str| map.get(k).filter(|v| !v.is_null());
    if let Some(w) = set("mcpServers").or_else(|| set("servers")).or_else(|| map.get("mcp")) {
        return Ok(w.clone());
    }
    let servers = map.into_iter().filter(|(k, _)| !RESERVED_KEYS.contains(&k.as_str())).collect();
    Ok(Value::Object(servers))
}

fn read_config_file(path: &str) -> Result<Value> {
    // A URL given where a path belongs must not have its credentials quoted back.
    let shown = crate::redact::redact_urls(path);
    let bytes = std::fs::read(path).map_err(|e| Error::System(SystemError::fs(&e, "open", Some(&shown))))?;
    let text = String::from_utf8_lossy(&bytes);
    // `JSON.parse` of the file's text: a SyntaxError.
    crate::json::parse_str(&text).map_err(|e| Error::NotJson(format!("{shown}: invalid JSON ({e})")))
}

/// The servers of a parsed config, in order. Anything that is not an object has none, except
/// `null`, which JavaScript refuses to enumerate.
pub(crate) fn server_entries(config: &Value) -> Result<Vec<(String, Value)>> {
    match config {
        Value::Null => Err(Error::Invalid("Cannot convert undefined or null to object".into())),
        Value::Object(m) => Ok(m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        Value::Array(items) => Ok(items.iter().enumerate().map(|(i, v)| (i.to_string(), v.clone())).collect()),
        _ => Ok(Vec::new()),
    }
}

/// `disabled: true` or `enabled: false` turns a server off. A `null` entry cannot be read.
pub(crate) fn is_enabled(cfg: &Value) -> Result<bool> {
    if cfg.is_null() {
        return Err(Error::Invalid("Cannot read properties of null (reading 'disabled')".into()));
    }
    let get = |k: &str| cfg.as_object().and_then(|o| o.get(k));
    Ok(get("disabled") != Some(&Value::Bool(true)) && get("enabled") != Some(&Value::Bool(false)))
}

/// `type` decides; without one, a string `url` makes the server remote.
pub(crate) fn is_remote(cfg: &Value) -> std::result::Result<bool, String> {
    let Some(o) = cfg.as_object() else {
        return Err(format!("Cannot use 'in' operator to search for 'url' in {}", crate::json::js_string(cfg)));
    };
    Ok(match o.get("type").and_then(Value::as_str) {
        Some("remote") => true,
        Some("local") => false,
        _ => matches!(o.get("url"), Some(Value::String(_))),
    })
}

/// The server's `timeout ?? 30000`.
pub(crate) fn server_timeout(cfg: &Value) -> Duration {
    match cfg.get("timeout").filter(|v| !v.is_null()) {
        Some(v) => timer_delay(v),
        None => timer_delay_ms(DEFAULT_TIMEOUT_MS),
    }
}

/// A delay as a JavaScript timer takes it: the value coerced to a number, and anything
/// outside 1..=2147483647 ms (or not a number at all) becoming 1 ms.
pub(crate) fn timer_delay(v: &Value) -> Duration {
    let n = match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => {
            let t = s.trim();
            if t.is_empty() {
                0.0
            } else {
                t.parse::<f64>().unwrap_or(f64::NAN)
            }
        }
        Value::Null => 0.0,
        _ => f64::NAN,
    };
    timer_delay_ms(n)
}

pub(crate) fn timer_delay_ms(ms: f64) -> Duration {
    let ms = if (1.0..=2_147_483_647.0).contains(&ms) { ms } else { 1.0 };
    Duration::from_micros((ms * 1000.0) as u64)
}

/// The per-server tool allowlist (keyed on original names): no filter or an empty one keeps
/// all; any `true` keeps only the `true` names; otherwise `false` names are dropped. A name
/// that matches no listed tool is reported and ignored.
pub(crate) fn apply_tools_filter(server: &str, defs: Vec<Value>, filter: Option<&Value>) -> Vec<Value> {
    let entries: Vec<(String, &Value)> = match filter.filter(|f| crate::json::truthy(f)) {
        Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Some(Value::Array(items)) => items.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect(),
        _ => Vec::new(),
    };
    if entries.is_empty() {
        return defs;
    }
    let lookup = |name: &str| entries.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
    let has_true = entries.iter().any(|(_, v)| **v == Value::Bool(true));
    let names: Vec<&str> = defs.iter().filter_map(|d| d.get("name").and_then(Value::as_str)).collect();
    for (k, _) in &entries {
        if !names.contains(&k.as_str()) {
            crate::warn::warn(&format!("[toolnexus] server \"{server}\" tools filter name \"{k}\" matched no tool"));
        }
    }
    defs.into_iter()
        .filter(|d| {
            let entry = lookup(&def_name(d));
            if has_true {
                entry == Some(&Value::Bool(true))
            } else {
                entry != Some(&Value::Bool(false))
            }
        })
        .collect()
}

/// A listed definition's name as text.
pub(crate) fn def_name(def: &Value) -> String {
    match def.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => crate::json::js_string(v),
        None => "undefined".into(),
    }
}

/// Replace each `${NAME}` (letters, digits, `_`) in the header values with that environment
/// variable, empty when unset. Falsy input gives `None`; a non-string value cannot be expanded.
/// Values are never logged.
pub fn expand_env_headers(headers: Option<&Value>) -> Result<Option<Map<String, Value>>> {
    let Some(h) = headers.filter(|h| crate::json::truthy(h)) else { return Ok(None) };
    let mut out = Map::new();
    let entries: Vec<(String, &Value)> = match h {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect(),
        _ => Vec::new(),
    };
    for (k, v) in entries {
        let Value::String(s) = v else { return Err(Error::Invalid("v.replace is not a function".into())) };
        out.insert(k, Value::String(expand_env(s)));
    }
    Ok(Some(out))
}

/// `s.replace(/\$\{([A-Za-z0-9_]+)\}/g, (_, name) => process.env[name] ?? "")`
pub(crate) fn expand_env(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && bytes.get(i + 1) == Some(&b'{') {
            let start = i + 2;
            let mut j = start;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            if j > start && bytes.get(j) == Some(&b'}') {
                out.push_str(&s[copied..i]);
                let value = std::env::var_os(&s[start..j]).map(|v| v.to_string_lossy().into_owned());
                out.push_str(&value.unwrap_or_default());
                i = j + 1;
                copied = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&s[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(v: &Value) -> Vec<String> {
        v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
    }

    #[test]
    fn every_wrapper_spelling_and_the_bare_map() {
        let server = json!({"type": "local", "command": ["echo", "hi"]});
        for v in [
            json!({"mcpServers": {"a": server}}),
            json!({"servers": {"a": server}}),
            json!({"mcp": {"a": server}}),
            json!({"a": server}),
            json!({"a": server, "builtins": false, "agents": [], "a2a": {}, "mcpServer": {}}),
        ] {
            let c = parse_mcp_config(&v).unwrap();
            assert_eq!(keys(&c), ["a"]);
            assert_eq!(c["a"]["command"], json!(["echo", "hi"]));
        }
    }

    #[test]
    fn the_first_set_wrapper_wins_and_null_ones_fall_through() {
        let c = parse_mcp_config(&json!({"mcpServers": null, "servers": {"s": {}}, "mcp": {"m": {}}})).unwrap();
        assert_eq!(keys(&c), ["s"]);
        let c = parse_mcp_config(&json!({"mcpServers": {"x": {}}, "servers": {"s": {}}})).unwrap();
        assert_eq!(keys(&c), ["x"]);
        // `a ?? b ?? c` hands back c as it is, even a null one.
        assert_eq!(parse_mcp_config(&json!({"mcpServers": null, "mcp": null})).unwrap(), Value::Null);
        assert_eq!(parse_mcp_config(&json!(5)).unwrap(), json!({}));
        assert!(parse_mcp_config(&Value::Null).is_err());
    }

    #[test]
    fn a_path_is_read_and_a_missing_one_is_named() {
        let dir = std::env::temp_dir().join(format!("tn-mcp-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("mcp.json");
        std::fs::write(&p, r#"{"mcpServers":{"x":{"url":"http://h/mcp","enabled":false}}}"#).unwrap();
        let c = parse_mcp_config(&json!(p.to_string_lossy())).unwrap();
        assert_eq!(c["x"]["enabled"], false);
        let e = parse_mcp_config(&json!("does-not-exist.json")).unwrap_err();
        assert_eq!(e.to_string(), "ENOENT: no such file or directory, open 'does-not-exist.json'");
        // Node's fields, as `readFileSync` throws them.
        assert_eq!(
            e.js_shape()["fields"],
            json!({"errno": -2, "code": "ENOENT", "syscall": "open", "path": "does-not-exist.json"})
        );
        std::fs::write(&p, "{nope").unwrap();
        // A malformed file fails as `JSON.parse` does: a SyntaxError.
        let e = parse_mcp_config(&json!(p.to_string_lossy())).unwrap_err();
        assert_eq!(e.js_shape()["name"], "SyntaxError");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn enabled_remote_and_timeouts_read_like_javascript() {
        assert!(is_enabled(&json!({})).unwrap());
        assert!(!is_enabled(&json!({"disabled": true})).unwrap());
        assert!(!is_enabled(&json!({"enabled": false})).unwrap());
        assert!(is_enabled(&json!({"enabled": 0, "disabled": "yes"})).unwrap());
        assert!(is_enabled(&Value::Null).is_err());
        assert!(is_remote(&json!({"url": "http://x"})).unwrap());
        assert!(!is_remote(&json!({"type": "local", "url": "http://x"})).unwrap());
        assert!(is_remote(&json!({"type": "remote"})).unwrap());
        assert!(!is_remote(&json!({"command": ["x"], "url": 3})).unwrap());
        assert!(is_remote(&json!(5)).is_err());
        assert_eq!(server_timeout(&json!({})), Duration::from_secs(30));
        assert_eq!(server_timeout(&json!({"timeout": 400})), Duration::from_millis(400));
        assert_eq!(server_timeout(&json!({"timeout": "250"})), Duration::from_millis(250));
        assert_eq!(server_timeout(&json!({"timeout": 0})), Duration::from_millis(1));
        assert_eq!(server_timeout(&json!({"timeout": 1e12})), Duration::from_millis(1));
        assert_eq!(server_timeout(&json!({"timeout": null})), Duration::from_secs(30));
    }

    fn defs(names: &[&str]) -> Vec<Value> {
        names.iter().map(|n| json!({"name": n})).collect()
    }

    fn names(v: &[Value]) -> Vec<String> {
        v.iter().map(def_name).collect()
    }

    #[test]
    fn the_tools_filter_has_the_three_modes() {
        let all = defs(&["a", "b", "c"]);
        assert_eq!(names(&apply_tools_filter("s", all.clone(), None)), ["a", "b", "c"]);
        assert_eq!(names(&apply_tools_filter("s", all.clone(), Some(&json!({})))), ["a", "b", "c"]);
        assert_eq!(names(&apply_tools_filter("s", all.clone(), Some(&json!({"b": true})))), ["b"]);
        assert_eq!(names(&apply_tools_filter("s", all.clone(), Some(&json!({"b": true, "c": false})))), ["b"]);
        assert_eq!(names(&apply_tools_filter("s", all.clone(), Some(&json!({"b": false})))), ["a", "c"]);
        assert_eq!(names(&apply_tools_filter("s", all.clone(), Some(&json!({"zz": false})))), ["a", "b", "c"]);
        assert_eq!(names(&apply_tools_filter("s", all.clone(), Some(&json!({"zz": true})))), Vec::<String>::new());
        assert_eq!(names(&apply_tools_filter("s", all, Some(&json!({"a": 1})))), ["a", "b", "c"]);
    }

    #[test]
    fn env_placeholders_expand_from_the_environment() {
        std::env::set_var("TN_CFG_TEST_TOKEN", "s3cret");
        assert_eq!(expand_env("Bearer ${TN_CFG_TEST_TOKEN}"), "Bearer s3cret");
        assert_eq!(expand_env("${TN_CFG_TEST_UNSET_VAR}x"), "x");
        assert_eq!(expand_env("$${TN_CFG_TEST_TOKEN}"), "$s3cret");
        assert_eq!(expand_env("${} ${A-B} ${ok"), "${} ${A-B} ${ok");
        assert_eq!(expand_env("é${TN_CFG_TEST_TOKEN}é"), "és3creté");
        let h = expand_env_headers(Some(&json!({"Authorization": "Bearer ${TN_CFG_TEST_TOKEN}"}))).unwrap().unwrap();
        assert_eq!(h["Authorization"], "Bearer s3cret");
        assert_eq!(expand_env_headers(None).unwrap(), None);
        assert_eq!(expand_env_headers(Some(&json!(""))).unwrap(), None);
        assert!(expand_env_headers(Some(&json!({"n": 1}))).is_err());
    }
}
