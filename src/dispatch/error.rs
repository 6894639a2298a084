//! Errors as JavaScript gets them: each made with its own class (`Error`, `TypeError`,
//! `SyntaxError`, …, looked up on the global object, so `instanceof` and the stack are
//! JavaScript's own), its `cause`, and its own fields (`status`, `code`, `errno`, …), and none
//! with the `code` napi-rs gives the errors it makes.
//!
//! An error is described by its shape, `{ name, message, fields?, cause? }` (the cause has the
//! same shape). On the environment's thread, inside a scope, the error is made at once and
//! carried as a reference to it; elsewhere the shape rides in the error's reason, behind a
//! marker no JavaScript message starts with, until the Promise it rejects is settled on that
//! thread ([`value_of`]).

use std::cell::Cell;
use std::ptr;

use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi::{sys, Error};
use serde_json::{json, Map, Value};

use super::queue::HERE;

/// Marks a reason that carries a shape, not a message.
const SHAPE: &str = "\u{1}toolnexus:shape:";

/// The error JavaScript gets for `shape`: made now when this is the environment's thread,
/// else carried to where it is thrown.
pub fn shaped(shape: Value) -> Error {
    if let Some(env) = here() {
        // SAFETY: `here` found this thread's environment, on the thread's own stack; the addon
        // only runs on that thread inside a call from JavaScript, a drain or the dispatcher's
        // callback, each inside a handle scope.
        if let Some(value) = unsafe { make(env, &shape) } {
            // SAFETY: `value` is a live value of `env`, made just above in the current scope.
            return Error::from_unknown_without_coercion(unsafe { Unknown::from_raw_unchecked(env, value) });
        }
    }
    Error::from_reason(format!("{SHAPE}{shape}"))
}

/// A plain `Error` with `message`.
pub fn plain(message: impl Into<String>) -> Error {
    shaped(json!({ "name": "Error", "message": message.into() }))
}

/// This thread's environment, when JavaScript values may be made here now.
fn here() -> Option<sys::napi_env> {
    let (env, _) = HERE.try_with(Cell::get).ok()?;
    (!env.is_null() && !toolnexus_core::json::on_grown_stack()).then_some(env)
}

/// The value a Promise rejects with for `e`: the error it refers to, the error its shape
/// describes, or else napi-rs's own making of it.
///
/// # Safety
///
/// On `env`'s thread, inside a handle scope of it.
pub(super) unsafe fn value_of(env: sys::napi_env, e: Error) -> Option<sys::napi_value> {
    if let Some(text) = e.reason.strip_prefix(SHAPE) {
        let shape = serde_json::from_str(text).unwrap_or_else(|_| json!({ "message": text }));
        // SAFETY: the caller's contract.
        if let Some(v) = unsafe { make(env, &shape) } {
            return Some(v);
        }
    }
    // SAFETY: the caller's contract is `to_napi_value`'s.
    unsafe { <Error as ToNapiValue>::to_napi_value(env, e) }.ok()
}

/// Make the error `shape` describes; `None` when napi refuses a step (an exception pending,
/// the environment going away).
///
/// # Safety
///
/// On `env`'s thread, inside a handle scope of it.
pub unsafe fn make(env: sys::napi_env, shape: &Value) -> Option<sys::napi_value> {
    let name = shape.get("name").and_then(Value::as_str).unwrap_or("Error");
    let message = shape.get("message").and_then(Value::as_str).unwrap_or_default();
    // SAFETY: on the environment's thread inside a scope (the caller's contract), with local
    // out-pointers read only once napi has filled them.
    unsafe {
        let mut global = ptr::null_mut();
        ok(sys::napi_get_global(env, &mut global))?;
        let class = match named(env, global, name) {
            Some(c) if is_function(env, c) => c,
            _ => named(env, global, "Error")?,
        };
        let mut args = vec![string(env, message)?];
        if let Some(cause) = shape.get("cause").filter(|c| c.is_object()) {
            let cause = make(env, cause)?;
            let mut options = ptr::null_mut();
            ok(sys::napi_create_object(env, &mut options))?;
            ok(sys::napi_set_named_property(env, options, c"cause".as_ptr(), cause))?;
            args.push(options);
        }
        let mut error = ptr::null_mut();
        ok(sys::napi_new_instance(env, class, args.len(), args.as_ptr(), &mut error))?;
        if let Some(Value::Object(fields)) = shape.get("fields") {
            set_fields(env, error, fields)?;
        }
        Some(error)
    }
}

/// Own properties of `target`, each a JSON value made a JavaScript one.
///
/// # Safety
///
/// On `env`'s thread, inside a handle scope of it; `target` a live object of `env`.
unsafe fn set_fields(env: sys::napi_env, target: sys::napi_value, fields: &Map<String, Value>) -> Option<()> {
    for (key, value) in fields {
        // SAFETY: the caller's contract.
        unsafe {
            let key = string(env, key)?;
            let value = js_value(env, value)?;
            ok(sys::napi_set_property(env, target, key, value))?;
        }
    }
    Some(())
}

/// A JSON value as a JavaScript one (objects and arrays through `JSON.parse`'s rules: plain).
///
/// # Safety
///
/// On `env`'s thread, inside a handle scope of it.
unsafe fn js_value(env: sys::napi_env, value: &Value) -> Option<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: the caller's contract, with a local out-pointer.
    unsafe {
        match value {
            Value::Null => ok(sys::napi_get_null(env, &mut out))?,
            Value::Bool(b) => ok(sys::napi_get_boolean(env, *b, &mut out))?,
            Value::Number(n) => ok(sys::napi_create_double(env, n.as_f64().unwrap_or(f64::NAN), &mut out))?,
            Value::String(s) => return string(env, s),
            Value::Array(items) => {
                ok(sys::napi_create_array_with_length(env, items.len(), &mut out))?;
                for (i, item) in items.iter().enumerate() {
                    let v = js_value(env, item)?;
                    ok(sys::napi_set_element(env, out, i as u32, v))?;
                }
            }
            Value::Object(m) => {
                ok(sys::napi_create_object(env, &mut out))?;
                set_fields(env, out, m)?;
            }
        }
    }
    Some(out)
}

/// # Safety
///
/// On `env`'s thread, inside a handle scope of it.
unsafe fn string(env: sys::napi_env, s: &str) -> Option<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: the caller's contract; `s` outlives the call that copies it.
    ok(unsafe { sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out) })?;
    Some(out)
}

/// `target[name]`.
///
/// # Safety
///
/// On `env`'s thread, inside a handle scope of it; `target` a live object of `env`.
unsafe fn named(env: sys::napi_env, target: sys::napi_value, name: &str) -> Option<sys::napi_value> {
    // SAFETY: the caller's contract.
    unsafe {
        let key = string(env, name)?;
        let mut out = ptr::null_mut();
        ok(sys::napi_get_property(env, target, key, &mut out))?;
        Some(out)
    }
}

/// # Safety
///
/// On `env`'s thread, inside a handle scope of it; `value` a live value of `env`.
unsafe fn is_function(env: sys::napi_env, value: sys::napi_value) -> bool {
    let mut kind = 0;
    // SAFETY: the caller's contract, with a local out-pointer.
    unsafe { sys::napi_typeof(env, value, &mut kind) == sys::Status::napi_ok && kind == sys::ValueType::napi_function }
}

fn ok(status: sys::napi_status) -> Option<()> {
    (status == sys::Status::napi_ok).then_some(())
}
