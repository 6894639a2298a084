//! Functions and host objects inside an options document.
//!
//! A host whose options hold functions (JavaScript) hands an options object over whole, as JSON
//! in which each function is replaced by a marker, `{"\u0000fn": n}`, and each of the host's
//! own native objects (a store, a compactor the core already holds) by `{"\u0000obj": n}`;
//! `n` is a place in a table the host keeps. While the document is read ([`read_with`]), an
//! option type's fields resolve those markers through the table ([`HostFn`]), so the option
//! type owns every field, its default and its leniency, callbacks included, and adding an
//! option is a change to that type alone.
//!
//! Shared vocabulary: it imports nothing above `callback` and `error`.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::callback::{Callback, SharedCallback};
use crate::error::{Error, Result};

/// The key of a function's marker.
pub const FN: &str = "\u{0}fn";
/// The key of a host object's marker.
pub const OBJ: &str = "\u{0}obj";

/// A host object the core can take back: any `Send + Sync` value, read by the option type
/// that expects it (`downcast`).
pub type HostObject = Arc<dyn Any + Send + Sync>;

/// What the markers of one document stand for.
pub trait Table {
    /// The function at place `n`, as a callback.
    fn callback(&self, n: usize) -> Option<SharedCallback>;
    /// The host's object at place `n`.
    fn object(&self, n: usize) -> Option<HostObject>;
}

thread_local! {
    static TABLE: RefCell<Option<Rc<dyn Table>>> = const { RefCell::new(None) };
}

/// Read a document (`read`) with its markers standing for what `table` holds. Outside such a
/// read, a marker resolves to nothing.
pub fn read_with<R>(table: Rc<dyn Table>, read: impl FnOnce() -> R) -> R {
    let before = TABLE.with(|t| t.replace(Some(table)));
    let out = read();
    TABLE.with(|t| *t.borrow_mut() = before);
    out
}

/// Whether a document with markers is being read now (see [`read_with`]).
pub fn reading() -> bool {
    TABLE.with(|t| t.borrow().is_some())
}

/// What a marker stands for.
enum Marked {
    Fn(usize),
    Obj(usize),
}

fn marked(v: &Value) -> Option<Marked> {
    let Value::Object(m) = v else { return None };
    if m.len() != 1 {
        return None;
    }
    let place = |key: &str| m.get(key).and_then(Value::as_u64).map(|n| n as usize);
    place(FN).map(Marked::Fn).or_else(|| place(OBJ).map(Marked::Obj))
}

/// Whether `v` is a marker.
pub fn is_marker(v: &Value) -> bool {
    marked(v).is_some()
}

/// Take the markers out of a data value, as `JSON.stringify` leaves functions out: a member
/// holding one is dropped, an array item becomes `null`.
pub fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, item| !is_marker(item));
            m.values_mut().for_each(strip);
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                if is_marker(item) {
                    *item = Value::Null;
                } else {
                    strip(item);
                }
            }
        }
        _ => {}
    }
}

/// An option that holds a function: unset (absent), set to a falsy value (unset as
/// `opts.x ? … : …` reads it), the host's function, the host's own object standing in for one,
/// or a value that is set but is not a function. The last fails when it is called, as calling
/// it in JavaScript would, with a `TypeError` naming the option ([`HostFn::named`]).
#[derive(Clone, Default)]
pub enum HostFn {
    #[default]
    Unset,
    /// Set to a falsy value of this JavaScript type (`null` is an "object").
    Falsy(&'static str),
    Fn(SharedCallback),
    Object(HostObject),
    /// Set to a value of this JavaScript type.
    NotAFunction(&'static str),
}

impl std::fmt::Debug for HostFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostFn::Unset => f.write_str("Unset"),
            HostFn::Falsy(kind) => write!(f, "Falsy({kind})"),
            HostFn::Fn(_) => f.write_str("Fn"),
            HostFn::Object(_) => f.write_str("Object"),
            HostFn::NotAFunction(kind) => write!(f, "NotAFunction({kind})"),
        }
    }
}

impl HostFn {
    /// The callback it holds, if any; for a value that is not a function, a callback that
    /// fails with `TypeError: <owner>: \`<name>\` is not a function (got <type>)`. A host
    /// object is no callback: read it with [`HostFn::object`].
    pub fn named(self, owner: &str, name: &str) -> Option<SharedCallback> {
        match self {
            HostFn::Unset | HostFn::Falsy(_) | HostFn::Object(_) => None,
            HostFn::Fn(f) => Some(f),
            HostFn::NotAFunction(kind) => Some(not_a_function(owner, name, kind)),
        }
    }

    /// The callback, for an option that is always called: anything but a function fails when
    /// called, naming the type JavaScript would (`undefined` when it is absent).
    pub fn required(self, owner: &str, name: &str) -> SharedCallback {
        match self {
            HostFn::Fn(f) => f,
            HostFn::Unset => not_a_function(owner, name, "undefined"),
            HostFn::Object(_) => not_a_function(owner, name, "object"),
            HostFn::Falsy(kind) | HostFn::NotAFunction(kind) => not_a_function(owner, name, kind),
        }
    }

    /// The host object it holds, when it holds one of type `T`.
    pub fn object<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        match self {
            HostFn::Object(o) => o.clone().downcast::<T>().ok(),
            _ => None,
        }
    }

    /// Whether it is set to something truthy.
    pub fn is_set(&self) -> bool {
        !matches!(self, HostFn::Unset | HostFn::Falsy(_))
    }

    /// The function from a marker, a host object from its marker, `Falsy` for a falsy value,
    /// and `NotAFunction` for anything else.
    pub fn from_value(v: &Value) -> HostFn {
        match marked(v) {
            Some(Marked::Fn(n)) => TABLE
                .with(|t| t.borrow().as_ref().and_then(|t| t.callback(n)))
                .map_or(HostFn::NotAFunction("function"), HostFn::Fn),
            Some(Marked::Obj(n)) => TABLE
                .with(|t| t.borrow().as_ref().and_then(|t| t.object(n)))
                .map_or(HostFn::NotAFunction("object"), HostFn::Object),
            None if !crate::json::truthy(v) => HostFn::Falsy(js_typeof(v)),
            None => HostFn::NotAFunction(js_typeof(v)),
        }
    }
}

fn not_a_function(owner: &str, name: &str, kind: &str) -> SharedCallback {
    Arc::new(NotAFunction(format!("{owner}: `{name}` is not a function (got {kind})")))
}

impl<'de> Deserialize<'de> for HostFn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let out = HostFn::from_value(&v);
        crate::json::release(v);
        Ok(out)
    }
}

/// JavaScript's `typeof` of a JSON value.
pub fn js_typeof(v: &Value) -> &'static str {
    match v {
        Value::Null | Value::Object(_) | Value::Array(_) => "object",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

/// A value that was set where a function belongs: calling it fails.
struct NotAFunction(String);

#[async_trait]
impl Callback for NotAFunction {
    async fn call(&self, _arg: Value) -> Result<Value> {
        Err(Error::Type(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Two;

    impl Table for Two {
        fn callback(&self, n: usize) -> Option<SharedCallback> {
            (n < 2).then(|| crate::callback::callback(move |v| async move { Ok(json!([n, v])) }))
        }
        fn object(&self, n: usize) -> Option<HostObject> {
            (n == 0).then(|| Arc::new(7u32) as HostObject)
        }
    }

    #[derive(Deserialize)]
    struct Opts {
        #[serde(default)]
        a: HostFn,
        #[serde(default)]
        b: HostFn,
        #[serde(default)]
        c: HostFn,
        #[serde(default)]
        d: HostFn,
        #[serde(default)]
        e: HostFn,
    }

    #[tokio::test]
    async fn markers_resolve_through_the_table_while_a_document_is_read() {
        let doc = json!({"a": {FN: 1}, "b": "yes", "c": 0, "d": {OBJ: 0}, "e": {FN: 5}}).to_string();
        let o: Opts = read_with(Rc::new(Two), || serde_json::from_str(&doc).unwrap());
        let a = o.a.named("t", "a").unwrap();
        assert_eq!(a.call(json!("x")).await.unwrap(), json!([1, "x"]));
        let b = o.b.named("t", "b").unwrap();
        let e = b.call(Value::Null).await.unwrap_err();
        assert_eq!(e.to_string(), "t: `b` is not a function (got string)");
        assert_eq!(e.js_shape()["name"], "TypeError");
        assert!(!o.c.is_set() && o.c.clone().named("t", "c").is_none());
        // Always called: a falsy value names its own type, an absent one `undefined`.
        let e = o.c.required("t", "c").call(Value::Null).await.unwrap_err();
        assert_eq!(e.to_string(), "t: `c` is not a function (got number)");
        let absent: Opts = serde_json::from_str(r#"{"a": null}"#).unwrap();
        let e = absent.a.required("t", "a").call(Value::Null).await.unwrap_err();
        assert_eq!(e.to_string(), "t: `a` is not a function (got object)");
        let e = absent.b.required("t", "b").call(Value::Null).await.unwrap_err();
        assert_eq!(e.to_string(), "t: `b` is not a function (got undefined)");
        assert_eq!(*o.d.object::<u32>().unwrap(), 7);
        assert!(o.d.object::<String>().is_none());
        // A place the table does not have reads as a value that is no function.
        assert!(matches!(o.e, HostFn::NotAFunction("function")));
        // Outside a read, markers stand for nothing.
        let o: Opts = serde_json::from_str(&doc).unwrap();
        assert!(matches!(o.a, HostFn::NotAFunction(_)));
    }

    #[test]
    fn markers_leave_data_as_json_stringify_leaves_functions() {
        let mut v = json!({"k": 1, "f": {FN: 0}, "list": [1, {FN: 2}, {"g": {OBJ: 1}, "x": {"\u{0}fn": "no"}}]});
        strip(&mut v);
        assert_eq!(v, json!({"k": 1, "list": [1, null, {"x": {"\u{0}fn": "no"}}]}));
    }
}
