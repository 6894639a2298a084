//! Values for JavaScript that may hold long strings: what a callback is called with (`Arg`)
//! and what a native method returns (`Crossed`). A string over `SPLIT_ABOVE` crosses as a
//! string of its own (see `json::Pieces`); one longer than JavaScript allows becomes V8's own
//! RangeError.

use std::ptr;

use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi::{sys, Error, Result};
use toolnexus_core::json::{self, Pieces};
use toolnexus_core::jsstr;

use super::raw::check;

/// Strings longer than this (in bytes) cross as strings of their own (see `json::Pieces`).
pub const SPLIT_ABOVE: usize = 1 << 20;

/// What a callback is called with: JSON text, or a value in pieces; or either, as a value the
/// callback may change in place (it is then told so, and answers with the value as it left
/// it when it returns nothing: see `Callback::call_in_place`).
pub enum Arg {
    Text(String),
    Pieces(Pieces),
    InPlace(Box<Arg>),
}

impl From<String> for Arg {
    fn from(text: String) -> Arg {
        Arg::Text(text)
    }
}

impl Arg {
    /// A value to hand JavaScript: one JSON text when it has no long string, else in pieces.
    pub fn of(v: serde_json::Value) -> Arg {
        let p = json::split_long_strings(v, SPLIT_ABOVE);
        if p.strings.is_empty() {
            Arg::Text(p.json)
        } else {
            Arg::Pieces(p)
        }
    }
}

/// A value for JavaScript as `index.js` reads it (`fromCore`): its JSON text, or
/// `[json, places, ...long strings]`. A string longer than JavaScript allows rejects with V8's
/// own RangeError for it, never a failed conversion.
pub struct Crossed(pub Arg);

impl Crossed {
    pub fn of(v: serde_json::Value) -> Crossed {
        Crossed(Arg::of(v))
    }
}

impl ToNapiValue for Crossed {
    /// # Safety
    ///
    /// `ToNapiValue`'s contract: `env` is the calling environment, on its thread, inside the
    /// scope of the napi call whose value this becomes.
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        // SAFETY: napi-rs converts return values on the environment's thread, inside the
        // call's scope (this function's contract, which is `arg_value`'s).
        unsafe { arg_value(env, &val.0) }
    }
}

/// A JavaScript string of `s`; V8's RangeError when it is longer than a string may be.
///
/// # Safety
///
/// On `env`'s thread, inside a handle scope of it.
unsafe fn js_string(env: sys::napi_env, s: &str) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: on the environment's thread (the caller's contract); `s` (or `units`) outlives
    // the call that copies it, and its length is passed with it.
    let status = unsafe {
        if s.len() <= jsstr::MAX_LENGTH {
            sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out)
        } else if jsstr::fits(s) {
            // More UTF-8 bytes than V8 takes at once, but few enough UTF-16 units.
            let units: Vec<u16> = s.encode_utf16().collect();
            sys::napi_create_string_utf16(env, units.as_ptr(), units.len() as isize, &mut out)
        } else {
            return Err(range_error(env, jsstr::INVALID_LENGTH));
        }
    };
    check(status, "creating a string")?;
    Ok(out)
}

/// V8's `RangeError` with `message`, as the value a Promise rejects with or a call fails with.
///
/// # Safety
///
/// On `env`'s thread, inside a handle scope of it.
unsafe fn range_error(env: sys::napi_env, message: &str) -> Error {
    let mut msg = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: on the environment's thread (the caller's contract), with local out-pointers;
    // `err` is read as a value only once napi has created it.
    unsafe {
        if sys::napi_create_string_utf8(env, message.as_ptr().cast(), message.len() as isize, &mut msg)
            != sys::Status::napi_ok
            || sys::napi_create_range_error(env, ptr::null_mut(), msg, &mut err) != sys::Status::napi_ok
        {
            return Error::from_reason(message.to_string());
        }
        Error::from_unknown_without_coercion(Unknown::from_raw_unchecked(env, err))
    }
}

/// `arg` as JavaScript values: a string, or an array of the pieces.
///
/// # Safety
///
/// On `env`'s thread, inside a handle scope of it.
pub(super) unsafe fn arg_value(env: sys::napi_env, arg: &Arg) -> Result<sys::napi_value> {
    // SAFETY: on the environment's thread inside a handle scope (the caller's contract), with
    // local out-pointers; `list` is used only once napi has created it.
    unsafe {
        match arg {
            Arg::InPlace(inner) => arg_value(env, inner),
            Arg::Text(text) => js_string(env, text),
            Arg::Pieces(p) => {
                let mut list = ptr::null_mut();
                check(sys::napi_create_array_with_length(env, p.strings.len() + 2, &mut list), "creating an array")?;
                let parts =
                    [p.json.as_str(), p.places.as_str()].into_iter().chain(p.strings.iter().map(String::as_str));
                for (i, part) in parts.enumerate() {
                    let v = js_string(env, part)?;
                    check(sys::napi_set_element(env, list, i as u32, v), "filling an array")?;
                }
                Ok(list)
            }
        }
    }
}
