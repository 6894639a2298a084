//! Provider adapters (SPEC §4): the uniform tool list in each provider's schema.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The declaration half of a tool: what a provider needs to advertise it.
pub trait Declared {
    fn decl_name(&self) -> &str;
    /// `None` where the declaration has none: the key is then left out, as JSON drops `undefined`.
    fn decl_description(&self) -> Option<&str>;
    fn decl_schema(&self) -> Option<&Value>;
}

impl<T: crate::tool::Tool + ?Sized> Declared for T {
    fn decl_name(&self) -> &str {
        self.name()
    }
    fn decl_description(&self) -> Option<&str> {
        Some(self.description())
    }
    fn decl_schema(&self) -> Option<&Value> {
        Some(self.input_schema())
    }
}

/// A declaration read from plain data (a host object).
#[derive(Debug, Clone)]
pub struct Decl {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Option<Value>,
}

impl Declared for Decl {
    fn decl_name(&self) -> &str {
        &self.name
    }
    fn decl_description(&self) -> Option<&str> {
        self.description.as_deref()
    }
    fn decl_schema(&self) -> Option<&Value> {
        self.input_schema.as_ref()
    }
}

fn named<D: Declared + ?Sized>(t: &D, schema_key: &str) -> Value {
    let mut m = Map::with_capacity(3);
    m.insert("name".into(), Value::String(t.decl_name().into()));
    if let Some(d) = t.decl_description() {
        m.insert("description".into(), Value::String(d.into()));
    }
    if let Some(schema) = t.decl_schema() {
        m.insert(schema_key.into(), schema.clone());
    }
    Value::Object(m)
}

/// `[{ type: "function", function: { name, description, parameters } }]`
pub fn to_openai<'a, D: Declared + ?Sized + 'a>(tools: impl IntoIterator<Item = &'a D>) -> Vec<Value> {
    tools
        .into_iter()
        .map(|t| {
            let mut m = Map::with_capacity(2);
            m.insert("type".into(), Value::String("function".into()));
            m.insert("function".into(), named(t, "parameters"));
            Value::Object(m)
        })
        .collect()
}

/// `[{ name, description, input_schema }]`
pub fn to_anthropic<'a, D: Declared + ?Sized + 'a>(tools: impl IntoIterator<Item = &'a D>) -> Vec<Value> {
    tools.into_iter().map(|t| named(t, "input_schema")).collect()
}

/// `[{ functionDeclarations: [{ name, description, parameters }] }]`: always one group.
pub fn to_gemini<'a, D: Declared + ?Sized + 'a>(tools: impl IntoIterator<Item = &'a D>) -> Vec<Value> {
    let decls: Vec<Value> = tools.into_iter().map(|t| named(t, "parameters")).collect();
    let mut m = Map::with_capacity(1);
    m.insert("functionDeclarations".into(), Value::Array(decls));
    vec![Value::Object(m)]
}

/// A provider's declarations for tools given as JSON values (`toOpenAI(tools)` and friends): the
/// list must be an array, each entry needs a string `name`, and `style` names the provider.
pub fn adapt_values(style: &str, tools: Value) -> Result<Vec<Value>> {
    let Value::Array(list) = tools else {
        return Err(Error::Invalid("tools must be an array of Tool objects".into()));
    };
    let decls: Vec<Decl> = list
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            Decl::from_value(t)
                .ok_or_else(|| Error::Invalid(format!("tools[{i}] is not a Tool (it needs a string `name`)")))
        })
        .collect::<Result<_>>()?;
    adapt(style, &decls)
}

/// The declarations of `tools` for the provider `style` names ("openai", "anthropic", "gemini").
pub fn adapt<'a, D: Declared + ?Sized + 'a>(style: &str, tools: impl IntoIterator<Item = &'a D>) -> Result<Vec<Value>> {
    match style {
        "openai" => Ok(to_openai(tools)),
        "anthropic" => Ok(to_anthropic(tools)),
        "gemini" => Ok(to_gemini(tools)),
        other => Err(Error::Invalid(format!("unknown adapter style {other:?}"))),
    }
}

impl Decl {
    /// A declaration from a tool object's JSON: `None` without a string `name`; a description
    /// that is not a string counts as none.
    pub fn from_value(t: Value) -> Option<Decl> {
        let Value::Object(mut m) = t else { return None };
        let name = match m.remove("name")? {
            Value::String(s) => s,
            _ => return None,
        };
        let description = match m.remove("description") {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        let input_schema = m.remove("inputSchema");
        Some(Decl { name, description, input_schema })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapting_json_values_checks_the_list_the_names_and_the_style() {
        let tools = serde_json::json!([{"name": "a", "description": 5, "inputSchema": {"type": "object"}}]);
        let out = adapt_values("openai", tools.clone()).unwrap();
        assert_eq!(out[0]["function"]["name"], "a");
        assert!(out[0]["function"].get("description").is_none());
        assert_eq!(adapt_values("gemini", tools.clone()).unwrap().len(), 1);
        let err = |r: Result<Vec<Value>>| r.unwrap_err().to_string();
        assert_eq!(err(adapt_values("openai", serde_json::json!({}))), "tools must be an array of Tool objects");
        assert_eq!(
            err(adapt_values("openai", serde_json::json!([{"name": "a"}, {"name": 1}]))),
            "tools[1] is not a Tool (it needs a string `name`)"
        );
        assert_eq!(err(adapt_values("cohere", tools)), "unknown adapter style \"cohere\"");
    }
    use serde_json::json;

    fn decls() -> Vec<Decl> {
        vec![Decl {
            name: "get_weather".into(),
            description: Some("Weather".into()),
            input_schema: Some(
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
        }]
    }

    #[test]
    fn shapes_are_byte_exact() {
        let d = decls();
        assert_eq!(
            serde_json::to_string(&to_openai(&d)).unwrap(),
            r#"[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]"#
        );
        assert_eq!(
            serde_json::to_string(&to_anthropic(&d)).unwrap(),
            r#"[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]"#
        );
        assert_eq!(
            serde_json::to_string(&to_gemini(&d)).unwrap(),
            r#"[{"functionDeclarations":[{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}]"#
        );
    }

    #[test]
    fn absent_fields_are_left_out() {
        let bare = [Decl { name: "t".into(), description: None, input_schema: None }];
        assert_eq!(
            serde_json::to_string(&to_openai(&bare)).unwrap(),
            r#"[{"type":"function","function":{"name":"t"}}]"#
        );
    }

    #[test]
    fn empty_lists() {
        let none: Vec<Decl> = vec![];
        assert!(to_openai(&none).is_empty());
        assert!(to_anthropic(&none).is_empty());
        assert_eq!(to_gemini(&none), vec![json!({"functionDeclarations": []})]);
    }
}
