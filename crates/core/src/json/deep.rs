//! JSON of any depth: parsing, writing, cloning and dropping values nested deeper than the
//! native stack would take, on stack segments grown as needed.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

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
pub(super) fn write_scalar<T: Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
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
