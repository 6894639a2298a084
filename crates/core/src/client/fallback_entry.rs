//! A `fallback` entry (model fallback, an addition): the connection fields it overrides of the
//! primary's, read from the option as given. How a call moves from entry to entry is in
//! `fallback`.

use serde_json::Value;

use super::style::Style;
use crate::json::js_string;

/// One `fallback` entry: what it overrides of the primary's connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fallback {
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub style: Option<Style>,
    pub headers: Option<Vec<(String, String)>>,
}

impl Fallback {
    /// The `fallback` option as given: an array of entries. The reference has no such option
    /// and ignores whatever it is, so nothing here throws: a value that is not an array, or an
    /// entry that is not an object, is left out with a warning. Text fields take any value but
    /// null as JavaScript's `String(x)` would; `style` selects Anthropic only as "anthropic".
    pub fn list_of(v: &Value) -> Vec<Fallback> {
        let items = match v {
            Value::Null => return Vec::new(),
            Value::Array(items) => items,
            _ => {
                crate::warn::warn("[toolnexus] createClient: `fallback` must be an array of { model, baseUrl, apiKey, style, headers } — ignored");
                return Vec::new();
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Value::Object(m) = item else {
                crate::warn::warn(&format!("[toolnexus] createClient: `fallback[{i}]` is not an object — ignored"));
                continue;
            };
            let text = |k: &str| m.get(k).filter(|v| !v.is_null()).map(js_string);
            let headers = match m.get("headers") {
                Some(Value::Object(h)) => Some(h.iter().map(|(k, v)| (k.clone(), js_string(v))).collect()),
                _ => None,
            };
            out.push(Fallback {
                model: text("model"),
                base_url: text("baseUrl"),
                api_key: text("apiKey").filter(|k| !k.is_empty()),
                style: m.get("style").filter(|v| !v.is_null()).map(|s| Style::of_option(s.as_str())),
                headers,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_are_read_leniently_and_nothing_throws() {
        let list = Fallback::list_of(&json!([
            { "model": "m2", "baseUrl": "http://b", "apiKey": "k2", "style": "anthropic", "headers": { "x-a": 1 } },
            { "model": null, "style": "other" },
            5,
        ]));
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].model.as_deref(), Some("m2"));
        assert_eq!(list[0].style, Some(Style::Anthropic));
        assert_eq!(list[0].headers, Some(vec![("x-a".to_string(), "1".to_string())]));
        assert_eq!((list[1].model.clone(), list[1].style), (None, Some(Style::OpenAI)));
        assert!(Fallback::list_of(&json!({ "model": "x" })).is_empty());
        assert!(Fallback::list_of(&Value::Null).is_empty());
    }
}
