//! Small helpers for reading loosely-typed JSON the way JavaScript would, and for JSON of any
//! depth (see [`parse_str`] and [`on_deep_stack`]).

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;
use serde::Serialize;
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

// ---- JavaScript value semantics --------------------------------------------------------------

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

// ---- JSON of any depth -----------------------------------------------------------------------
//
// JavaScript's JSON.parse takes any depth; serde_json stops at 128 unless told otherwise, and
// everything that walks a `Value` (parsing, printing, Clone, Drop, PartialEq, Debug) recurses
// once per level on the native stack. Two measures keep that from failing or overflowing:
//
// - Parsing and printing at the boundary go through [`parse_str`] / [`parse_slice`] /
//   [`from_value`] and [`to_string`], which lift the recursion limit and move to a fresh stack
//   segment whenever less than [`RED_ZONE`] is left, so their depth is bounded by memory only.
// - Every parse notes the depth of what it produced. Work that handles such values without
//   knowing it (the client loop's clones and drops, a hook's event) runs under
//   [`on_deep_stack`] (or as a [`DeepStack`] future), which gives it a stack segment sized for
//   the deepest value seen so far when the current stack is too short for it.

/// Stack left below which a walk moves on to a fresh segment: well above what one level of
/// any recursion over a `Value` takes, in unoptimized builds too.
pub const RED_ZONE: usize = 256 * 1024;

/// The size of each fresh segment a walk moves on to.
const SEGMENT: usize = 4 * 1024 * 1024;

/// Values up to this deep are handled on whatever stack there is.
const SHALLOW: usize = 200;

/// Native stack one level of a derived recursion over a `Value` (Clone of an object being the
/// largest) may take, with room to spare. Unoptimized frames are several times larger.
const PER_LEVEL: usize = if cfg!(debug_assertions) { 4096 } else { 1024 };

/// The deepest value any parse has produced in this process.
static DEEPEST: AtomicUsize = AtomicUsize::new(0);

/// Run one level of a recursive walk, on a fresh stack segment when this one is nearly used up.
pub fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// `JSON.parse` of text: any depth, trailing whitespace only. `T` is usually [`Value`]; a typed
/// `T` (options holding `Value`s) has the depth of its text noted, as a `Value` has its own.
pub fn parse_str<T: DeserializeOwned + 'static>(text: &str) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    finish_parse(&mut de, text.as_bytes())
}

/// [`parse_str`] of bytes (UTF-8 JSON).
pub fn parse_slice<T: DeserializeOwned + 'static>(bytes: &[u8]) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    finish_parse(&mut de, bytes)
}

fn finish_parse<'de, R: serde_json::de::Read<'de>, T: DeserializeOwned + 'static>(
    de: &mut serde_json::Deserializer<R>,
    text: &[u8],
) -> serde_json::Result<T> {
    de.disable_recursion_limit();
    let stacked = serde_stacker::Deserializer { de: &mut *de, red_zone: RED_ZONE, stack_size: SEGMENT };
    let value = T::deserialize(stacked)?;
    de.end()?;
    // A value `d` deep takes at least `2d` characters: short text needs no measuring.
    if text.len() > 2 * SHALLOW {
        note_depth_of(&value, text);
    }
    Ok(value)
}

/// A typed value read out of a [`Value`], at any depth.
pub fn from_value<T: DeserializeOwned>(v: Value) -> serde_json::Result<T> {
    note_depth(depth(&v));
    let out = T::deserialize(serde_stacker::Deserializer { de: &v, red_zone: RED_ZONE, stack_size: SEGMENT });
    on_deep_stack(move || drop(v));
    out
}

/// The JSON text of a value (serde_json's compact form), at any depth.
pub fn to_string(v: &Value) -> String {
    let mut out = Vec::with_capacity(128);
    write_compact(v, &mut out);
    // Everything written is JSON text, which is UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

fn write_compact(v: &Value, out: &mut Vec<u8>) {
    grow(|| match v {
        Value::Array(items) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_compact(x, out);
            }
            out.push(b']');
        }
        Value::Object(m) => {
            out.push(b'{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(k.as_str(), out);
                out.push(b':');
                write_compact(x, out);
            }
            out.push(b'}');
        }
        scalar => write_scalar(scalar, out),
    })
}

/// A scalar or a key, as serde_json writes it: no recursion, and writing into memory cannot fail.
fn write_scalar<T: Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(out, v);
}

/// How deep `v` nests: 0 for a scalar, 1 for a container of scalars. Walks without recursing.
pub fn depth(v: &Value) -> usize {
    if !(v.is_array() || v.is_object()) {
        return 0;
    }
    let mut deepest = 0;
    let mut todo: Vec<(&Value, usize)> = vec![(v, 1)];
    while let Some((v, d)) = todo.pop() {
        deepest = deepest.max(d);
        let nested = |c: &&Value| c.is_array() || c.is_object();
        match v {
            Value::Array(items) => todo.extend(items.iter().filter(nested).map(|c| (c, d + 1))),
            Value::Object(m) => todo.extend(m.values().filter(nested).map(|c| (c, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// Note how deep a parsed value is: a `Value` by walking it, anything else (a typed value that
/// may hold `Value`s anywhere inside) by the nesting of the text it came from.
fn note_depth_of<T: 'static>(value: &T, text: &[u8]) {
    match (value as &dyn std::any::Any).downcast_ref::<Value>() {
        Some(v) => note_depth(depth(v)),
        None => note_depth(bytes_depth(text)),
    }
}

/// Record that a value this deep exists, so [`on_deep_stack`] plans for it.
pub fn note_depth(d: usize) {
    if d > SHALLOW {
        DEEPEST.fetch_max(d, Ordering::Relaxed);
    }
}

/// The deepest value noted so far.
pub fn deepest() -> usize {
    DEEPEST.load(Ordering::Relaxed)
}

/// Run `f` with enough stack for a derived recursion (Clone, Drop, PartialEq, serde) over the
/// deepest value seen so far: on the current stack when it has room, else on a fresh segment
/// of the size needed. Nothing but one relaxed load while no deep value has been seen.
///
/// Code running on such a segment must not call into JavaScript in place (V8 checks its own
/// idea of the thread's stack): a host asks [`on_grown_stack`] and defers such calls.
pub fn on_deep_stack<R>(f: impl FnOnce() -> R) -> R {
    let d = deepest();
    if d <= SHALLOW {
        return f();
    }
    // Some levels on top of the deepest value: the structures that carry it (a message in
    // a list in a request body, a hook's event).
    let need = (d + 64).saturating_mul(PER_LEVEL).saturating_add(RED_ZONE);
    if stacker::remaining_stack().is_some_and(|left| left >= need) {
        return f();
    }
    let _grown = Grown::enter();
    stacker::grow(need, f)
}

thread_local! {
    /// This thread is running on a segment [`on_deep_stack`] allocated.
    static GROWN: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread as on a grown segment until dropped (a panic included).
struct Grown(bool);

impl Grown {
    fn enter() -> Grown {
        Grown(GROWN.try_with(|g| g.replace(true)).unwrap_or(false))
    }
}

impl Drop for Grown {
    fn drop(&mut self) {
        let _ = GROWN.try_with(|g| g.set(self.0));
    }
}

/// Whether this thread is running on a segment [`on_deep_stack`] allocated: anything that
/// would run JavaScript in place must be deferred to the host's own stack instead.
pub fn on_grown_stack() -> bool {
    GROWN.try_with(Cell::get).unwrap_or(false)
}

/// Give the executor a turn when a value deeper than `before` has appeared since: work that
/// follows in the same poll would otherwise handle it on a stack sized for shallower ones,
/// while the next poll of a [`DeepStack`] plans for it.
pub async fn settle_depth(before: usize) {
    if deepest() > before {
        YieldOnce(false).await;
    }
}

struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// An LLM reply body parsed ([`parse_str`]); the depth of the tool-call arguments it carries as
/// text (OpenAI's `function.arguments`, parsed later in the same step) is noted with it, and the
/// executor gets a turn when either is deeper than anything seen before.
pub async fn parse_reply(body: &str) -> serde_json::Result<Value> {
    let before = deepest();
    let data: Value = parse_str(body)?;
    let calls = data
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("message").and_then(|m| m.get("tool_calls")).and_then(Value::as_array));
    for call in calls.flatten() {
        if let Some(Value::String(args)) = call.get("function").and_then(|f| f.get("arguments")) {
            if args.len() > 2 * SHALLOW {
                note_depth(text_depth(args));
            }
        }
    }
    settle_depth(before).await;
    Ok(data)
}

/// How deep the brackets of JSON text nest (string contents skipped): the depth its value
/// would have, when it parses.
pub fn text_depth(text: &str) -> usize {
    bytes_depth(text.as_bytes())
}

fn bytes_depth(text: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A future polled (and dropped) under [`on_deep_stack`].
pub struct DeepStack<F> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future> DeepStack<F> {
    pub fn new(inner: F) -> Self {
        DeepStack { inner: Some(Box::pin(inner)) }
    }
}

impl<F: Future> Future for DeepStack<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else { return Poll::Pending };
        let out = on_deep_stack(|| inner.as_mut().poll(cx));
        if out.is_ready() {
            // What the finished future still holds goes on the same terms.
            if let Some(done) = this.inner.take() {
                on_deep_stack(move || drop(done));
            }
        }
        out
    }
}

impl<F> Drop for DeepStack<F> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            on_deep_stack(move || drop(inner));
        }
    }
}

/// A deep copy of `v` at any depth (Clone recurses once per level).
pub fn deep_clone(v: &Value) -> Value {
    grow(|| match v {
        Value::Array(items) => Value::Array(items.iter().map(deep_clone).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), deep_clone(x))).collect()),
        other => other.clone(),
    })
}

/// Drop `v` at any depth without recursing (Drop recurses once per level).
pub fn release(v: Value) {
    let mut todo = vec![v];
    while let Some(v) = todo.pop() {
        match v {
            Value::Array(items) => todo.extend(items.into_iter().filter(|x| x.is_array() || x.is_object())),
            Value::Object(m) => todo.extend(m.into_iter().map(|(_, x)| x).filter(|x| x.is_array() || x.is_object())),
            _ => {}
        }
    }
}

// ---- values with long strings ----------------------------------------------------------------

/// A value on its way to JavaScript with its long strings apart: `json` is its JSON with each
/// long string written as `""`, `places` the JSON of `[[index, key or position, ...], ...]`
/// saying where each goes back (the path from the root), and `strings` the long strings
/// themselves, each text once however often it occurs. A host turns `json` and `places` into
/// values as usual and each long string into a string of its own, without JSON's escapes and
/// never inside one string larger than a JavaScript string may be.
#[derive(Debug, Default)]
pub struct Pieces {
    pub json: String,
    pub places: String,
    pub strings: Vec<String>,
}

/// One step of a path into a value.
enum Step {
    Key(String),
    At(usize),
}

/// Split `v` into [`Pieces`], moving out (never copying) every string longer than `above`
/// bytes. With none that long, `places` is empty and `strings` too.
pub fn split_long_strings(v: Value, above: usize) -> Pieces {
    let mut w =
        Splitter { out: Vec::with_capacity(256), path: Vec::new(), places: Vec::new(), strings: Vec::new(), above };
    w.write(v);
    let places = if w.places.is_empty() { String::new() } else { to_string(&Value::Array(w.places)) };
    // Everything written is JSON text, which is UTF-8.
    Pieces { json: String::from_utf8(w.out).unwrap_or_default(), places, strings: w.strings }
}

struct Splitter {
    out: Vec<u8>,
    path: Vec<Step>,
    places: Vec<Value>,
    strings: Vec<String>,
    above: usize,
}

impl Splitter {
    fn write(&mut self, v: Value) {
        grow(|| self.write_level(v))
    }

    fn write_level(&mut self, v: Value) {
        match v {
            Value::String(s) if s.len() > self.above => {
                let index = match self.strings.iter().position(|t| t.len() == s.len() && *t == s) {
                    Some(i) => i,
                    None => {
                        self.strings.push(s);
                        self.strings.len() - 1
                    }
                };
                let mut place = Vec::with_capacity(self.path.len() + 1);
                place.push(Value::from(index));
                place.extend(self.path.iter().map(|step| match step {
                    Step::Key(k) => Value::String(k.clone()),
                    Step::At(i) => Value::from(*i),
                }));
                self.places.push(Value::Array(place));
                self.out.extend_from_slice(b"\"\"");
            }
            Value::Array(items) => {
                self.out.push(b'[');
                for (i, x) in items.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.path.push(Step::At(i));
                    self.write(x);
                    self.path.pop();
                }
                self.out.push(b']');
            }
            Value::Object(m) => {
                self.out.push(b'{');
                for (i, (k, x)) in m.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    write_scalar(k.as_str(), &mut self.out);
                    self.out.push(b':');
                    self.path.push(Step::Key(k));
                    self.write(x);
                    self.path.pop();
                }
                self.out.push(b'}');
            }
            scalar => write_scalar(&scalar, &mut self.out),
        }
    }
}
