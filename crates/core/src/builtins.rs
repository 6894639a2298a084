//! The built-in tool source (SPEC §4A): its on/off configuration.
//!
//! The ten tools themselves are not part of this build yet; the toggle is read and
//! validated so toolkits built with any accepted `builtins` value work today.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::tool::SharedTool;

/// The parsed `builtins` option.
#[derive(Debug, Clone, Default)]
pub struct BuiltinsConfig {
    pub enabled: bool,
    /// Per-tool overrides on the all-on baseline; `false` drops a tool.
    pub tools: Vec<(String, bool)>,
}

impl BuiltinsConfig {
    /// `undefined` ⇒ on; a boolean; or `{ enabled?, disabled?, tools? }` where
    /// `disabled: true` wins, else `enabled: false` turns the source off.
    pub fn parse(v: Option<&Value>) -> Result<Self> {
        let v = match v {
            None | Some(Value::Null) => return Ok(BuiltinsConfig { enabled: true, tools: vec![] }),
            Some(v) => v,
        };
        match v {
            Value::Bool(b) => Ok(BuiltinsConfig { enabled: *b, tools: vec![] }),
            Value::Object(o) => {
                let enabled =
                    !(o.get("disabled") == Some(&Value::Bool(true)) || o.get("enabled") == Some(&Value::Bool(false)));
                let tools = match o.get("tools") {
                    Some(Value::Object(map)) => {
                        map.iter().map(|(k, v)| (k.clone(), v != &Value::Bool(false))).collect()
                    }
                    _ => vec![],
                };
                Ok(BuiltinsConfig { enabled, tools })
            }
            _ => Err(Error::Invalid(
                "createToolkit: `builtins` must be a boolean or an object { enabled?, disabled?, tools? }".into(),
            )),
        }
    }

    pub fn allows(&self, name: &str) -> bool {
        self.enabled && !self.tools.iter().any(|(n, on)| n == name && !on)
    }
}

/// The active built-in tools for a configuration (none are shipped in this build).
pub fn select(cfg: &BuiltinsConfig) -> Vec<SharedTool> {
    let all: Vec<SharedTool> = Vec::new();
    all.into_iter().filter(|t| cfg.allows(t.name())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn toggle_precedence() {
        assert!(BuiltinsConfig::parse(None).unwrap().enabled);
        assert!(!BuiltinsConfig::parse(Some(&json!(false))).unwrap().enabled);
        assert!(!BuiltinsConfig::parse(Some(&json!({"disabled": true, "enabled": true}))).unwrap().enabled);
        assert!(!BuiltinsConfig::parse(Some(&json!({"enabled": false}))).unwrap().enabled);
        let c = BuiltinsConfig::parse(Some(&json!({"tools": {"bash": false, "read": true}}))).unwrap();
        assert!(c.enabled && !c.allows("bash") && c.allows("read") && c.allows("grep"));
        assert!(BuiltinsConfig::parse(Some(&json!("yes"))).is_err());
    }
}
