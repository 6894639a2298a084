//! Small helpers for reading loosely-typed JSON the way JavaScript would, and for JSON of any
//! depth (see [`parse_str`] and [`on_deep_stack`]).

mod deep;
mod js_text;
mod pieces;

pub use deep::*;
pub use js_text::*;
pub use pieces::*;

use serde_json::{Map, Value};

/// JavaScript truthiness of a JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `obj?.[key]` when it is truthy, else `None`.
pub fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|o| o.get(key)).filter(|x| truthy(x))
}

/// A number field read as an integer count (tokens), `0` when absent or not numeric.
pub fn count(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or_else(|| n.as_f64().map_or(0, |f| f as i64)),
        _ => 0,
    }
}

/// Build an object from ordered pairs.
pub fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    let mut m = Map::with_capacity(N);
    for (k, v) in pairs {
        m.insert(k.to_string(), v);
    }
    Value::Object(m)
}
