//! `serve`'s option types, read from JSON with the reference's leniency: the A2A profile
//! (`A2AConfig`) and the additions that guard the server (`auth`, `allowedOrigins`,
//! `maxBodyBytes`).

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::json::truthy;

/// The A2A profile (SPEC §7B). Card fields are kept as given (the reference puts them on the
/// card as they are); `null` is "not given".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct A2AConfig {
    #[serde(deserialize_with = "crate::options::present")]
    pub name: Option<Value>,
    #[serde(deserialize_with = "crate::options::present")]
    pub description: Option<Value>,
    #[serde(deserialize_with = "crate::options::present")]
    pub version: Option<Value>,
    #[serde(deserialize_with = "crate::options::present")]
    pub provider: Option<Value>,
    /// The skill names to advertise (an array); omitted ⇒ all.
    #[serde(deserialize_with = "crate::options::present")]
    pub skills: Option<Value>,
    /// `"memory"` | `"file:<dir>"` (a host's own store object is handed over separately).
    #[serde(deserialize_with = "crate::options::present")]
    pub store: Option<Value>,
    /// `true`: the served card says `capabilities.streaming: true`, so the SDKs' clients use
    /// `message/stream` / `SendStreamingMessage` (served either way). This package's own field.
    #[serde(deserialize_with = "crate::options::present")]
    pub streaming: Option<Value>,
}

impl A2AConfig {
    /// The profile a value turns on: any truthy value does (a non-object one with every field
    /// at its default), a falsy one does not.
    pub fn from_value(v: &Value) -> Result<Option<A2AConfig>> {
        if !truthy(v) {
            return Ok(None);
        }
        if !v.is_object() {
            return Ok(Some(A2AConfig::default()));
        }
        A2AConfig::deserialize(v).map(Some).map_err(|e| Error::Invalid(format!("serve: `a2a`: {e}")))
    }
}

/// The default cap on a request body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 4 * 1024 * 1024;

/// The server's guards (additions of this package; the reference has none).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServeSecurity {
    /// A bearer token every JSON-RPC and `/mcp` request must carry: `"<token>"` or `{ token }`.
    #[serde(deserialize_with = "auth")]
    pub auth: Option<String>,
    /// Origins `/mcp` and JSON-RPC POSTs accept besides loopback ones and the server's own
    /// (`"*"`: any). A request without `Origin` is always accepted.
    #[serde(deserialize_with = "crate::options::strings")]
    pub allowed_origins: Vec<String>,
    /// The largest request body read, in bytes (default 4 MiB).
    #[serde(deserialize_with = "crate::options::number")]
    pub max_body_bytes: Option<f64>,
}

impl ServeSecurity {
    /// The options in a JSON object; anything else is no options.
    pub fn from_value(v: &Value) -> Result<ServeSecurity> {
        if !v.is_object() {
            return Ok(ServeSecurity::default());
        }
        ServeSecurity::deserialize(v).map_err(|e| Error::Invalid(format!("serve: {e}")))
    }

    /// The body cap in bytes: a positive number, else the default.
    pub fn body_limit(&self) -> u64 {
        match self.max_body_bytes {
            Some(n) if n.is_finite() && n >= 1.0 => n.min(u64::MAX as f64) as u64,
            _ => DEFAULT_MAX_BODY_BYTES,
        }
    }
}

fn auth<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    let v = Value::deserialize(d)?;
    let token = match &v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("token").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    match (token, &v) {
        (Some(t), _) if !t.is_empty() => Ok(Some(t)),
        (_, Value::Null) => Ok(None),
        _ => Err(serde::de::Error::custom("`auth` must be a non-empty token string or { token: string }")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn auth_takes_a_string_or_an_object() {
        let s = ServeSecurity::from_value(&json!({"auth": "t1"})).unwrap();
        assert_eq!(s.auth.as_deref(), Some("t1"));
        let s = ServeSecurity::from_value(&json!({"auth": {"token": "t2"}})).unwrap();
        assert_eq!(s.auth.as_deref(), Some("t2"));
        assert!(ServeSecurity::from_value(&json!({"auth": ""})).is_err());
        assert!(ServeSecurity::from_value(&json!({"auth": 5})).is_err());
        assert_eq!(ServeSecurity::from_value(&json!({})).unwrap().body_limit(), DEFAULT_MAX_BODY_BYTES);
        assert_eq!(ServeSecurity::from_value(&json!({"maxBodyBytes": 10})).unwrap().body_limit(), 10);
    }
}
