//! JavaScript's view of JSON values: `JSON.stringify`'s text and key order, `String(v)`, how
//! JavaScript writes a number.

use serde_json::{Map, Value};

use super::deep::grow;

/// What `JSON.stringify` gives for a JSON value: no whitespace, numbers written the way
/// JavaScript writes them (`1e+21`, `0.0000015`, `1` for `1.0`), and object keys in
/// JavaScript's own order — array-index keys (`"0"`, `"17"`…) first in ascending numeric
/// order, then the rest in insertion order.
pub fn js_stringify(v: &Value) -> String {
    let mut out = String::new();
    write_js(v, &mut out);
    out
}

fn write_js(v: &Value, out: &mut String) {
    grow(|| write_js_level(v, out))
}

fn write_js_level(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number_text(n)),
        Value::String(s) => write_js_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_js(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in js_key_order(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_js_string(k, out);
                out.push(':');
                write_js(x, out);
            }
            out.push('}');
        }
    }
}

fn write_js_string(s: &str, out: &mut String) {
    // serde_json escapes exactly what JSON.stringify escapes for well-formed text: `"`, `\`,
    // and the C0 controls (`\b \t \n \f \r` by name, the rest as lowercase `\u00xx`).
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// An object's entries in the order a JavaScript object enumerates them.
fn js_key_order(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut index: Vec<(u32, (&String, &Value))> = Vec::new();
    let mut named: Vec<(&String, &Value)> = Vec::new();
    for (k, v) in m {
        match array_index(k) {
            Some(i) => index.push((i, (k, v))),
            None => named.push((k, v)),
        }
    }
    if index.is_empty() {
        return named;
    }
    index.sort_by_key(|(i, _)| *i);
    index.into_iter().map(|(_, kv)| kv).chain(named).collect()
}

/// The numeric value of a key JavaScript treats as an array index: the canonical decimal text
/// of an integer in `0..=2^32-2`.
pub fn array_index(k: &str) -> Option<u32> {
    if k.is_empty() || k.len() > 10 || !k.bytes().all(|b| b.is_ascii_digit()) || (k.len() > 1 && k.starts_with('0')) {
        return None;
    }
    k.parse::<u64>().ok().filter(|&i| i < u64::from(u32::MAX)).map(|i| i as u32)
}

/// A value as JavaScript holds it after `JSON.parse`: object keys in JavaScript's order and
/// every number a double (an integral one in the safe range stored as an integer).
pub fn js_normalize(v: Value) -> Value {
    grow(|| js_normalize_level(v))
}

fn js_normalize_level(v: Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.into_iter().map(js_normalize).collect()),
        Value::Object(m) => {
            let reordered = js_key_order(&m).into_iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
            let mut m = m;
            let mut out = Map::with_capacity(m.len());
            for k in reordered {
                if let Some(x) = m.remove(&k) {
                    out.insert(k, js_normalize(x));
                }
            }
            Value::Object(out)
        }
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() <= MAX_SAFE && !(f == 0.0 && f.is_sign_negative()) {
                Value::from(f as i64)
            } else {
                serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
            }
        }
        other => other,
    }
}

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// What `String(v)` gives for a JSON value (an array joins its items with commas, null items
/// as empty; an object is `[object Object]`).
pub fn js_string(v: &Value) -> String {
    grow(|| js_string_level(v))
}

fn js_string_level(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => js_number_text(n),
        Value::Array(items) => {
            items.iter().map(|x| if x.is_null() { String::new() } else { js_string(x) }).collect::<Vec<_>>().join(",")
        }
        Value::Object(_) => "[object Object]".into(),
    }
}

/// A JSON number as JavaScript writes it: the number is a double, printed with the shortest
/// digits that read back to it, in plain notation for exponents up to 21 and down to -7 and
/// as `d.ddde±x` beyond.
pub fn js_number_text(n: &serde_json::Number) -> String {
    js_double_text(n.as_f64().unwrap_or(0.0))
}

pub fn js_double_text(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sign = if f < 0.0 { "-" } else { "" };
    let (digits, n) = shortest_digits(f.abs());
    let k = digits.len() as i32;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e_sign = if e < 0 { '-' } else { '+' };
        if k == 1 {
            format!("{digits}e{e_sign}{}", e.abs())
        } else {
            format!("{}.{}e{e_sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    format!("{sign}{body}")
}

/// The shortest decimal digits that read back to `f` (finite, positive) — ties between two
/// equally short candidates going to the even one, as ECMAScript requires — and the position
/// `n` of the decimal point relative to them (`f = 0.digits × 10^n`).
fn shortest_digits(f: f64) -> (String, i32) {
    // serde_json writes doubles with Ryu, which yields exactly those digits (Rust's own `{}`
    // rounds such ties up), in plain ("0.001", "12.5") or exponent ("1.5e-7") layout.
    let text = serde_json::to_string(&f).unwrap_or_default();
    let (mantissa, exp) = text.split_once(['e', 'E']).unwrap_or((&text, "0"));
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut n = int.len() as i32 + exp.parse::<i32>().unwrap_or(0);
    let all = format!("{int}{frac}");
    let trimmed = all.trim_start_matches('0');
    n -= (all.len() - trimmed.len()) as i32;
    (trimmed.trim_end_matches('0').to_string(), n)
}
