//! Provider adapters (SPEC §4): the uniform tool list in each provider's schema.

use serde_json::{Map, Value};

/// The declaration half of a tool: what a provider needs to advertise it.
pub trait Declared {
    fn decl_name(&self) -> &str;
    fn decl_description(&self) -> &str;
    fn decl_schema(&self) -> &Value;
}

impl<T: crate::tool::Tool + ?Sized> Declared for T {
    fn decl_name(&self) -> &str {
        self.name()
    }
    fn decl_description(&self) -> &str {
        self.description()
    }
    fn decl_schema(&self) -> &Value {
        self.input_schema()
    }
}

/// A declaration read from plain data (a host object).
#[derive(Debug, Clone)]
pub struct Decl {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

impl Declared for Decl {
    fn decl_name(&self) -> &str {
        &self.name
    }
    fn decl_description(&self) -> &str {
        &self.description
    }
    fn decl_schema(&self) -> &Value {
        &self.input_schema
    }
}

fn entry(pairs: [(&str, Value); 3]) -> Value {
    let mut m = Map::with_capacity(3);
    for (k, v) in pairs {
        m.insert(k.into(), v);
    }
    Value::Object(m)
}

fn named<D: Declared + ?Sized>(t: &D, schema_key: &str) -> Value {
    entry([
        ("name", Value::String(t.decl_name().into())),
        ("description", Value::String(t.decl_description().into())),
        (schema_key, t.decl_schema().clone()),
    ])
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decls() -> Vec<Decl> {
        vec![Decl {
            name: "get_weather".into(),
            description: "Weather".into(),
            input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
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
    fn empty_lists() {
        let none: Vec<Decl> = vec![];
        assert!(to_openai(&none).is_empty());
        assert!(to_anthropic(&none).is_empty());
        assert_eq!(to_gemini(&none), vec![json!({"functionDeclarations": []})]);
    }
}
