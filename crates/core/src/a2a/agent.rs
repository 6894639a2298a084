//! The Agent descriptor and the config file's `agents` block.

use serde_json::{Map, Value};

use crate::json::js_string;

/// The whole-call budget when neither the call nor the descriptor gives one, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: f64 = 300_000.0;
/// The wait between two `GetTask` polls by default, in milliseconds.
pub const DEFAULT_POLL_EVERY_MS: f64 = 1_000.0;

/// A remote agent: where its card is, and how to talk to it. The optional fields are kept as
/// the host gave them (the descriptor is data the host may read back); the readers below
/// apply the defaults.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Agent {
    /// The Agent Card URL (`String(card)` of what was given; "undefined" when absent).
    pub card: String,
    /// Header name → value; values may hold `${ENV}` references.
    pub headers: Option<Value>,
    pub timeout: Option<Value>,
    pub poll_every: Option<Value>,
    /// Origins besides the card's own that may receive `headers` (an endpoint the card names
    /// on another origin gets none of them otherwise). This package's own field.
    pub trusted_origins: Option<Value>,
}

/// A value that is set: present and not `null` (JavaScript's `??` test).
fn given(v: Option<&Value>) -> Option<Value> {
    v.filter(|v| !v.is_null()).cloned()
}

/// A number as the reference's timers and comparisons read it: a number, or a string that
/// is one; anything else leaves the default.
fn millis(v: Option<&Value>, default: f64) -> f64 {
    let n = match v {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    n.filter(|n| !n.is_nan()).unwrap_or(default)
}

impl Agent {
    /// A descriptor for a card URL with the defaults.
    pub fn new(card: impl Into<String>) -> Self {
        Agent { card: card.into(), ..Default::default() }
    }

    /// A descriptor from a host value `{ card, headers?, timeout?, pollEvery? }`. Anything
    /// that is not an object has no card (its `card` reads "undefined").
    pub fn from_value(v: &Value) -> Agent {
        let o = v.as_object();
        let get = |k: &str| o.and_then(|o| o.get(k));
        Agent {
            card: match get("card") {
                None => "undefined".into(),
                Some(c) => js_string(c),
            },
            headers: given(get("headers")),
            timeout: given(get("timeout")),
            poll_every: given(get("pollEvery")),
            trusted_origins: given(get("trustedOrigins")),
        }
    }

    /// The `agents` option: an array of descriptors (anything else is none).
    pub fn list_from_value(v: Option<&Value>) -> Vec<Agent> {
        match v {
            Some(Value::Array(items)) => items.iter().map(Agent::from_value).collect(),
            _ => Vec::new(),
        }
    }

    /// The whole-call budget in milliseconds.
    pub fn timeout_ms(&self) -> f64 {
        millis(self.timeout.as_ref(), DEFAULT_TIMEOUT_MS)
    }

    /// The wait between polls in milliseconds.
    pub fn poll_every_ms(&self) -> f64 {
        millis(self.poll_every.as_ref(), DEFAULT_POLL_EVERY_MS)
    }

    /// The origins (`scheme://host:port`) that may receive the headers: the card's own and
    /// each `trustedOrigins` entry (a URL or an origin; entries that are neither are ignored).
    pub fn header_origins(&self) -> Vec<String> {
        let origin = |u: &str| url::Url::parse(u).ok().map(|u| u.origin().ascii_serialization());
        let mut out: Vec<String> = origin(&self.card).into_iter().collect();
        if let Some(Value::Array(items)) = &self.trusted_origins {
            out.extend(items.iter().filter_map(Value::as_str).filter_map(origin));
        } else if let Some(Value::String(one)) = &self.trusted_origins {
            out.extend(origin(one));
        }
        out.retain(|o| o != "null");
        out
    }

    /// `{ card, headers?, timeout?, pollEvery?, trustedOrigins? }`: the fields that are set,
    /// in that order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(4);
        m.insert("card".into(), Value::String(self.card.clone()));
        for (k, v) in [
            ("headers", &self.headers),
            ("timeout", &self.timeout),
            ("pollEvery", &self.poll_every),
            ("trustedOrigins", &self.trusted_origins),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), v.clone());
            }
        }
        Value::Object(m)
    }
}

/// The `isEnabled` rule of `mcpServers`: `disabled: true` wins, then `enabled: false`.
fn is_enabled(cfg: &Map<String, Value>) -> bool {
    cfg.get("disabled") != Some(&Value::Bool(true)) && cfg.get("enabled") != Some(&Value::Bool(false))
}

/// An `agents` block (`{ "<id>": { card, headers?, timeout?, pollEvery?, enabled?, disabled? } }`)
/// as descriptors, in the block's order. The key is only a name for people; entries that are
/// not objects, have no string `card` or are disabled are skipped. An array counts as its
/// items; any other value is an empty block.
pub fn parse_agents_config(block: Option<&Value>) -> Vec<Agent> {
    let entries: Vec<&Value> = match block {
        Some(Value::Object(m)) => m.values().collect(),
        Some(Value::Array(items)) => items.iter().collect(),
        _ => return Vec::new(),
    };
    entries
        .into_iter()
        .filter_map(|cfg| {
            let cfg = cfg.as_object()?;
            let Some(Value::String(card)) = cfg.get("card") else { return None };
            if !is_enabled(cfg) {
                return None;
            }
            Some(Agent {
                card: card.clone(),
                headers: given(cfg.get("headers")),
                timeout: given(cfg.get("timeout")),
                poll_every: given(cfg.get("pollEvery")),
                trusted_origins: given(cfg.get("trustedOrigins")),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_block_keeps_enabled_entries_with_a_string_card_in_order() {
        let block = json!({
            "a": {"card": "http://x/1", "timeout": 5, "pollEvery": "7", "headers": {"A": "b"}},
            "b": {"card": "http://x/2", "disabled": true},
            "c": {"card": "http://x/3", "enabled": false},
            "d": {"card": "http://x/4", "enabled": true, "disabled": true},
            "e": {"headers": {"x": "y"}},
            "f": {"card": 5},
            "g": "http://x/7",
            "h": null,
            "i": {"card": "http://x/9", "enabled": 0, "disabled": "yes"},
        });
        let parsed = parse_agents_config(Some(&block));
        let cards: Vec<_> = parsed.iter().map(|a| a.card.as_str()).collect();
        assert_eq!(cards, ["http://x/1", "http://x/9"]);
        assert_eq!(parsed[0].timeout_ms(), 5.0);
        assert_eq!(parsed[0].poll_every_ms(), 7.0);
        assert_eq!(
            parsed[0].to_value(),
            json!({"card": "http://x/1", "headers": {"A": "b"}, "timeout": 5, "pollEvery": "7"})
        );
        assert_eq!(parsed[1].timeout_ms(), DEFAULT_TIMEOUT_MS);
        assert_eq!(parsed[1].poll_every_ms(), DEFAULT_POLL_EVERY_MS);
        for none in [None, Some(json!(null)), Some(json!(3)), Some(json!("ab"))] {
            assert!(parse_agents_config(none.as_ref()).is_empty());
        }
        let arr = parse_agents_config(Some(&json!([{"card": "u"}, 1])));
        assert_eq!(arr, [Agent::new("u")]);
    }

    #[test]
    fn descriptors_from_host_values() {
        let a = Agent::from_value(&json!({"card": "u", "headers": null, "timeout": "x", "pollEvery": 10}));
        assert_eq!(
            (a.card.as_str(), a.headers.is_none(), a.timeout_ms(), a.poll_every_ms()),
            ("u", true, DEFAULT_TIMEOUT_MS, 10.0)
        );
        assert_eq!(Agent::from_value(&json!(null)).card, "undefined");
        assert_eq!(Agent::from_value(&json!({"card": 9})).card, "9");
        assert_eq!(Agent::list_from_value(Some(&json!({"card": "u"}))), []);
        assert_eq!(Agent::list_from_value(Some(&json!([{"card": "u"}]))), [Agent::new("u")]);
    }

    #[test]
    fn headers_may_go_to_the_cards_origin_and_the_trusted_ones() {
        let a = Agent::from_value(&json!({"card": "https://a.example/.well-known/agent-card.json",
            "trustedOrigins": ["https://b.example:8443/x", "not a url", 5, "http://c.example"]}));
        assert_eq!(a.header_origins(), ["https://a.example", "https://b.example:8443", "http://c.example"]);
        assert_eq!(Agent::new("nope").header_origins(), Vec::<String>::new());
        let one = Agent::from_value(&json!({"card": "http://h:1/c", "trustedOrigins": "http://k"}));
        assert_eq!(one.header_origins(), ["http://h:1", "http://k"]);
        assert_eq!(one.to_value()["trustedOrigins"], "http://k");
    }
}
