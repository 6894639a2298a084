//! Reading the option objects a host hands over as JSON, with the reference's leniency.
//!
//! Each option type keeps its JSON shape next to it (`client::options`, `toolkit`,
//! `skills::options`, `http_tool`, `tool`) as a serde struct built from the helpers here:
//!
//! - unknown keys are ignored, and so is a value of a type the reference ignores;
//! - a text option is JavaScript's `${v}` of any value but `null` ([`text`]);
//! - a number option takes a number or a numeric string ([`number`]) where the reference
//!   compares or does arithmetic with it, a number only ([`number_only`]) where it passes
//!   the value on;
//! - a value that must have a shape is kept as it came (`Option<Value>`) and checked by the
//!   type's own `from_json` ([`array`], [`string_or_null`]), so failures come in a fixed order
//!   whatever order the keys were written in, with the message that names the field.
//!
//! Text is parsed with [`json::parse_str`]: any depth, as `JSON.parse` takes.

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::json::{self, js_string};

/// The options in `text` when it is a JSON object, `None` when it is any other JSON value.
/// Text that is not JSON fails as `"<what>: invalid JSON (<why>)"`.
pub fn parse_object<T: DeserializeOwned + 'static>(text: &str, what: &str) -> Result<Option<T>> {
    let invalid = |e: serde_json::Error| Error::Invalid(format!("{what}: invalid JSON ({e})"));
    // JSON text that starts with `{` (after whitespace) can only be an object.
    if text.trim_start_matches([' ', '\t', '\n', '\r']).starts_with('{') {
        json::parse_str::<T>(text).map(Some).map_err(invalid)
    } else {
        json::parse_str::<IgnoredAny>(text).map(|_| None).map_err(invalid)
    }
}

/// The value as it came; inside a document that holds host functions, without them (a
/// function in plain data is left out, as `JSON.stringify` leaves it out).
fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    let mut v = Value::deserialize(d)?;
    if crate::fn_markers::reading() {
        crate::fn_markers::strip(&mut v);
    }
    Ok(v)
}

/// Drop a value that is not used, without recursing (it may be deep).
fn discard(v: Value) {
    json::release(v)
}

/// A text option: `null` is unset, anything else is the text JavaScript makes of it in a
/// template string (`String(v)`).
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = value(d)?;
    let out = if v.is_null() { None } else { Some(js_string(&v)) };
    discard(v);
    Ok(out)
}

/// [`text`], with the empty text for `null`.
pub fn text_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(text(d)?.unwrap_or_default())
}

/// [`text`] of a truthy value; the empty text for a falsy one (`null`, `false`, `0`, `""`).
pub fn truthy_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let v = value(d)?;
    let out = if json::truthy(&v) { js_string(&v) } else { String::new() };
    discard(v);
    Ok(out)
}

/// The [`text`] of every item of an array (`null` items as "null"); none for anything else.
pub fn texts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = value(d)?;
    let out = match &v {
        Value::Array(items) => items.iter().map(js_string).collect(),
        _ => Vec::new(),
    };
    discard(v);
    Ok(out)
}

/// A string, or nothing for a value of any other type.
pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match value(d)? {
        Value::String(s) => Some(s),
        other => {
            discard(other);
            None
        }
    })
}

/// A number read as the reference's comparisons read it: a finite number or a numeric string
/// counts, anything else is unset.
pub fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let n = match value(d)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        other => {
            discard(other);
            None
        }
    };
    Ok(n.filter(|n| n.is_finite()))
}

/// A JSON number, or nothing for a value of any other type (a numeric string included).
pub fn number_only<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(match value(d)? {
        Value::Number(n) => n.as_f64(),
        other => {
            discard(other);
            None
        }
    })
}

/// A count ([`number`]): negative is 0, a fraction rounds up, past `u32::MAX` is `u32::MAX`.
pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    Ok(number(d)?.map(|n| n.max(0.0).ceil().min(u32::MAX as f64) as u32))
}

/// A [`number`] that is at least 0 (a negative one is 0).
pub fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(number(d)?.map(|n| n.max(0.0)))
}

/// Milliseconds that bound something ([`number`]): 0 or less is unset (no bound), a fraction
/// is cut to whole milliseconds.
pub fn positive_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(number(d)?.filter(|n| *n > 0.0).map(|n| n.min(u64::MAX as f64) as u64))
}

/// [`positive_ms`] of a value on its own (its JSON): a timeout a verb takes (`wait`'s
/// `timeoutMs`), read by the same rule as the client's `timeoutMs`.
pub fn timeout_ms(text: &str) -> Option<u64> {
    let v: Value = json::parse_str(text).ok()?;
    positive_ms(v).ok().flatten()
}

/// The `maxEntries` of a store's options (their JSON): how many entries an in-memory store
/// keeps. `None` when not given (or the options are not an object); a value that is not a
/// positive integer is refused with a `TypeError` naming `owner`.
pub fn max_entries(text: Option<&str>, owner: &str) -> Result<Option<usize>> {
    let Some(text) = text else { return Ok(None) };
    let v: Value = json::parse_str(text).map_err(|e| Error::Type(format!("{owner}: options are not JSON ({e})")))?;
    // Anything but an object is ignored, as the reference's constructors ignore their arguments.
    let given = match &v {
        Value::Object(o) => o.get("maxEntries"),
        _ => None,
    };
    match given {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => {
            Ok(n.as_u64().map(|n| n.min(usize::MAX as u64) as usize))
        }
        Some(other) => Err(Error::Type(format!(
            "{owner}: maxEntries must be a positive integer (got {})",
            json::js_stringify(other)
        ))),
    }
}

/// A list of strings: the string items of an array (others skipped); no list for anything else.
pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match value(d)? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|x| match x {
                Value::String(s) => Some(s),
                other => {
                    discard(other);
                    None
                }
            })
            .collect(),
        other => {
            discard(other);
            Vec::new()
        }
    })
}

/// An object's entries as text pairs in their order, `null` values skipped and every other
/// value as its [`text`]; no pairs for anything but an object.
pub fn text_pairs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    Ok(match value(d)? {
        Value::Object(map) => {
            let pairs = map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), js_string(v))).collect();
            discard(Value::Object(map));
            pairs
        }
        other => {
            discard(other);
            Vec::new()
        }
    })
}

/// An object, or nothing for a value of any other type.
pub fn object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Map<String, Value>>, D::Error> {
    Ok(match value(d)? {
        Value::Object(map) => Some(map),
        other => {
            discard(other);
            None
        }
    })
}

/// An object kept as a value, or nothing for a value of any other type.
pub fn object_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(object(d)?.map(Value::Object))
}

/// A value that counts as given when its key is present: `null` included (`Some(Null)`).
/// Only a key that is absent leaves the field `None` (with `#[serde(default)]`).
pub fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    value(d).map(Some)
}

/// A list option that must be an array: absent or `null` is empty, anything else fails with
/// `message`.
pub fn array(v: Option<Value>, message: impl FnOnce() -> String) -> Result<Vec<Value>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => {
            discard(other);
            Err(Error::Invalid(message()))
        }
    }
}

/// A text option that must be a string: absent or `null` is unset, anything else fails with
/// `message`.
pub fn string_or_null(v: Option<Value>, message: impl FnOnce() -> String) -> Result<Option<String>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => {
            discard(other);
            Err(Error::Invalid(message()))
        }
    }
}

/// The field names an option type reads, in the host's spelling (`rename_all` applied), as
/// serde's derive lists them: what a declared type of the same options must name (see
/// `tests/it/declared.rs`).
pub fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    /// A deserializer that only listens for the field list a derived struct hands it.
    struct Listen<'a>(&'a mut &'static [&'static str]);
    #[derive(Debug)]
    struct Heard;
    impl std::fmt::Display for Heard {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("field list heard")
        }
    }
    impl std::error::Error for Heard {}
    impl serde::de::Error for Heard {
        fn custom<M: std::fmt::Display>(_msg: M) -> Self {
            Heard
        }
    }
    impl<'de> Deserializer<'de> for Listen<'_> {
        type Error = Heard;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _v: V) -> std::result::Result<V::Value, Heard> {
            Err(Heard)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _v: V,
        ) -> std::result::Result<V::Value, Heard> {
            *self.0 = fields;
            Err(Heard)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Listen(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn max_entries_is_a_positive_integer_or_absent() {
        assert_eq!(max_entries(None, "S").unwrap(), None);
        assert_eq!(max_entries(Some("null"), "S").unwrap(), None);
        assert_eq!(max_entries(Some("{}"), "S").unwrap(), None);
        assert_eq!(max_entries(Some(r#"{"maxEntries": 5}"#), "S").unwrap(), Some(5));
        for bad in [r#"{"maxEntries": 0}"#, r#"{"maxEntries": -1}"#, r#"{"maxEntries": 1.5}"#, r#"{"maxEntries": "5"}"#]
        {
            let e = max_entries(Some(bad), "InMemoryTaskStore").unwrap_err();
            assert_eq!(e.js_class(), "TypeError", "{bad}");
            assert!(e.to_string().starts_with("InMemoryTaskStore: maxEntries must be a positive integer (got "), "{e}");
        }
        assert_eq!(max_entries(Some("7"), "S").unwrap(), None);
    }

    #[test]
    fn a_timeout_on_its_own_reads_as_the_clients_timeout_ms() {
        for (text, want) in [
            ("150", Some(150)),
            ("\"150\"", Some(150)),
            ("12.9", Some(12)),
            ("0", None),
            ("-5", None),
            ("\"x\"", None),
            ("null", None),
            ("{", None),
        ] {
            assert_eq!(timeout_ms(text), want, "{text}");
        }
    }

    #[derive(Deserialize, Default, Debug)]
    #[serde(rename_all = "camelCase")]
    struct Probe {
        #[serde(default, deserialize_with = "text")]
        text: Option<String>,
        #[serde(default, deserialize_with = "text_or_empty")]
        text_or_empty: String,
        #[serde(default, deserialize_with = "truthy_text")]
        truthy_text: String,
        #[serde(default, deserialize_with = "texts")]
        texts: Vec<String>,
        #[serde(default, deserialize_with = "string")]
        string: Option<String>,
        #[serde(default, deserialize_with = "number")]
        number: Option<f64>,
        #[serde(default, deserialize_with = "number_only")]
        number_only: Option<f64>,
        #[serde(default, deserialize_with = "count")]
        count: Option<u32>,
        #[serde(default, deserialize_with = "non_negative")]
        non_negative: Option<f64>,
        #[serde(default, deserialize_with = "positive_ms")]
        positive_ms: Option<u64>,
        #[serde(default, deserialize_with = "strings")]
        strings: Vec<String>,
        #[serde(default, deserialize_with = "text_pairs")]
        text_pairs: Vec<(String, String)>,
        #[serde(default, deserialize_with = "object")]
        object: Option<Map<String, Value>>,
        #[serde(default, deserialize_with = "present")]
        present: Option<Value>,
    }

    fn probe(v: Value) -> Probe {
        parse_object(&v.to_string(), "probe").unwrap().unwrap()
    }

    fn one(key: &str, v: Value) -> Probe {
        probe(json!({ key: v }))
    }

    #[test]
    fn only_an_object_is_read_and_invalid_json_names_the_options() {
        assert!(parse_object::<Probe>("[1]", "x").unwrap().is_none());
        assert!(parse_object::<Probe>(" null ", "x").unwrap().is_none());
        assert!(parse_object::<Probe>("\"s\"", "x").unwrap().is_none());
        assert!(parse_object::<Probe>(" \n{}", "x").unwrap().is_some());
        let e = parse_object::<Probe>("{", "createClient options").unwrap_err().to_string();
        assert!(e.starts_with("createClient options: invalid JSON ("), "{e}");
        let e = parse_object::<Probe>("[", "x").unwrap_err().to_string();
        assert!(e.starts_with("x: invalid JSON ("), "{e}");
    }

    #[test]
    fn unknown_keys_are_ignored_and_absent_keys_are_unset() {
        let p = probe(json!({"nope": [1, {"a": 2}], "other": null}));
        assert_eq!((p.text, p.number, p.count, p.present), (None, None, None, None));
        assert!(p.strings.is_empty() && p.text_pairs.is_empty() && p.object.is_none());
    }

    #[test]
    fn text_is_what_a_template_string_makes_of_any_value_but_null() {
        assert_eq!(one("text", json!("a")).text.as_deref(), Some("a"));
        assert_eq!(one("text", json!(1.5)).text.as_deref(), Some("1.5"));
        assert_eq!(one("text", json!(1e21)).text.as_deref(), Some("1e+21"));
        assert_eq!(one("text", json!(false)).text.as_deref(), Some("false"));
        assert_eq!(one("text", json!(["a", null, 2])).text.as_deref(), Some("a,,2"));
        assert_eq!(one("text", json!({"k": 1})).text.as_deref(), Some("[object Object]"));
        assert_eq!(one("text", json!("")).text.as_deref(), Some(""));
        assert_eq!(one("text", json!(null)).text, None);
    }

    #[test]
    fn text_variants() {
        assert_eq!(one("textOrEmpty", json!(null)).text_or_empty, "");
        assert_eq!(one("textOrEmpty", json!(5)).text_or_empty, "5");
        assert_eq!(one("truthyText", json!("n")).truthy_text, "n");
        assert_eq!(one("truthyText", json!(7)).truthy_text, "7");
        for falsy in [json!(null), json!(false), json!(0), json!("")] {
            assert_eq!(one("truthyText", falsy).truthy_text, "");
        }
        assert_eq!(one("texts", json!(["a", 1, null, {}])).texts, ["a", "1", "null", "[object Object]"]);
        assert!(one("texts", json!("a")).texts.is_empty());
    }

    #[test]
    fn string_takes_strings_only() {
        assert_eq!(one("string", json!("anthropic")).string.as_deref(), Some("anthropic"));
        assert_eq!(one("string", json!(["anthropic"])).string, None);
        assert_eq!(one("string", json!(1)).string, None);
        assert_eq!(one("string", json!(null)).string, None);
    }

    #[test]
    fn numbers_take_numbers_and_numeric_strings() {
        assert_eq!(one("number", json!(3)).number, Some(3.0));
        assert_eq!(one("number", json!(" 2.5 ")).number, Some(2.5));
        assert_eq!(one("number", json!("1e3")).number, Some(1000.0));
        for ignored in [json!("abc"), json!(""), json!("NaN"), json!("Infinity"), json!(true), json!([1]), json!(null)]
        {
            assert_eq!(one("number", ignored.clone()).number, None, "{ignored}");
        }
        assert_eq!(one("numberOnly", json!(7)).number_only, Some(7.0));
        assert_eq!(one("numberOnly", json!("7")).number_only, None);
        assert_eq!(one("numberOnly", json!(true)).number_only, None);
    }

    #[test]
    fn counts_round_up_and_clamp() {
        assert_eq!(one("count", json!(2.1)).count, Some(3));
        assert_eq!(one("count", json!(-4)).count, Some(0));
        assert_eq!(one("count", json!("5")).count, Some(5));
        assert_eq!(one("count", json!(1e300)).count, Some(u32::MAX));
        assert_eq!(one("count", json!("x")).count, None);
        assert_eq!(one("nonNegative", json!(-1)).non_negative, Some(0.0));
        assert_eq!(one("nonNegative", json!("12.5")).non_negative, Some(12.5));
    }

    #[test]
    fn bounds_in_ms_must_be_positive() {
        assert_eq!(one("positiveMs", json!(150)).positive_ms, Some(150));
        assert_eq!(one("positiveMs", json!(1.9)).positive_ms, Some(1));
        assert_eq!(one("positiveMs", json!("200")).positive_ms, Some(200));
        assert_eq!(one("positiveMs", json!(0)).positive_ms, None);
        assert_eq!(one("positiveMs", json!(-5)).positive_ms, None);
        assert_eq!(one("positiveMs", json!(1e300)).positive_ms, Some(u64::MAX));
    }

    #[test]
    fn lists_keep_their_strings() {
        assert_eq!(one("strings", json!(["a", 1, null, "b", ["c"]])).strings, ["a", "b"]);
        assert!(one("strings", json!("a")).strings.is_empty());
        assert!(one("strings", json!({"0": "a"})).strings.is_empty());
    }

    #[test]
    fn text_pairs_skip_null_and_stringify_the_rest_in_order() {
        let p = one("textPairs", json!({"b": "1", "a": 2, "n": null, "t": true, "o": {}}));
        let pairs: Vec<(&str, &str)> = p.text_pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(pairs, [("b", "1"), ("a", "2"), ("t", "true"), ("o", "[object Object]")]);
        assert!(one("textPairs", json!(["a"])).text_pairs.is_empty());
    }

    #[test]
    fn objects_and_present_values() {
        assert_eq!(one("object", json!({"a": 1})).object.unwrap()["a"], 1);
        assert!(one("object", json!([1])).object.is_none());
        assert!(one("object", json!(null)).object.is_none());
        assert_eq!(one("present", json!(null)).present, Some(Value::Null));
        assert_eq!(one("present", json!(0)).present, Some(json!(0)));
        assert_eq!(probe(json!({})).present, None);
    }

    #[test]
    fn shaped_values_fail_with_their_message() {
        assert_eq!(array(None, || "m".into()).unwrap(), Vec::<Value>::new());
        assert_eq!(array(Some(Value::Null), || "m".into()).unwrap(), Vec::<Value>::new());
        assert_eq!(array(Some(json!([1, 2])), || "m".into()).unwrap(), [json!(1), json!(2)]);
        assert_eq!(
            array(Some(json!({})), || "`x` must be an array".into()).unwrap_err().to_string(),
            "`x` must be an array"
        );
        assert_eq!(string_or_null(Some(json!("s")), || "m".into()).unwrap().as_deref(), Some("s"));
        assert_eq!(string_or_null(Some(Value::Null), || "m".into()).unwrap(), None);
        assert_eq!(string_or_null(Some(json!(1)), || "bad".into()).unwrap_err().to_string(), "bad");
    }

    #[test]
    fn deep_values_are_read() {
        let deep = format!("{{\"present\":{}1{}}}", "[".repeat(50_000), "]".repeat(50_000));
        let p: Probe = parse_object(&deep, "x").unwrap().unwrap();
        assert_eq!(json::depth(p.present.as_ref().unwrap()), 50_000);
        json::on_deep_stack(move || drop(p));
        let deep_text = format!("{{\"text\":{}1{}}}", "[".repeat(50_000), "]".repeat(50_000));
        let p: Probe = parse_object(&deep_text, "x").unwrap().unwrap();
        assert_eq!(p.text.as_deref(), Some("1"));
    }
}
