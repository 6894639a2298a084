//! The rules every way back into a parked run shares (SPEC §10): which call an Answer may
//! reach, when a Request has expired, and the claim that lets a parked Request be taken up
//! once. The client's `runWithAnswer`/`askWithAnswer`, its inline `waitFor`, the agent
//! runtime's `resume` and served Tasks all decide through here.
//!
//! A claim is made before the parked call runs again: whoever makes it first runs the call,
//! every other attempt is refused at once. Durable stores make the claim a record written only
//! if none is there (one winner across processes); anything else claims in this process.

use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

use crate::error::Error;
use crate::json::js_string;
use crate::lru::Lru;

/// The `code` of a refused Answer: it answers no Request that is parked here.
pub const UNKNOWN: &str = "EUNKNOWNREQUEST";
/// The `code` of an Answer that came after its Request's `expiresAt`.
pub const EXPIRED: &str = "EREQUESTEXPIRED";
/// The `code` of an Answer to a Request already taken up (here or by another process): a
/// store's write conflict, as a durable store reports any lost race.
pub const TAKEN: &str = "ESTORECONFLICT";
/// The `code` of a resume whose parked call's tool is no longer there.
pub const TOOL_GONE: &str = "ETOOLMISSING";
/// The `code` of a resume whose `pending`, or whose transcript's parked call (its tool, its
/// arguments, its id, the turn it belongs to), is not what the library recorded at the park.
pub const MISMATCH: &str = "EREQUESTMISMATCH";

/// A refusal: nothing was changed.
pub fn refused(code: &'static str, message: impl Into<String>) -> Error {
    Error::Refused { code, message: message.into() }
}

/// The id a Request or an Answer carries, as text (`None` when it has none).
pub fn id_of(v: &Value) -> Option<String> {
    match v.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(js_string(other)),
    }
}

/// How an Answer stands to a Request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Echo {
    /// It names the Request's id.
    Same,
    /// It names no id at all.
    Silent,
    /// It names another id.
    Other(String),
}

/// Whether `answer` echoes `request`'s id.
pub fn echo(request: &Map<String, Value>, answer: &Value) -> Echo {
    let want = request.get("id").map(js_string);
    match id_of(answer) {
        None => Echo::Silent,
        Some(id) if Some(&id) == want.as_ref() => Echo::Same,
        Some(id) => Echo::Other(id),
    }
}

/// The Request's `expiresAt` as milliseconds since the epoch: `None` when it has none, or
/// when it is not an RFC 3339 time (then it cannot be held against an Answer; a warning says
/// so once per Request read).
pub fn expires_at_ms(request: &Map<String, Value>) -> Option<i64> {
    let raw = match request.get("expiresAt") {
        None | Some(Value::Null) => return None,
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            crate::warn::warn(&format!(
                "[toolnexus] request {}: expiresAt {} is not an RFC 3339 time; it is not enforced",
                request_label(request),
                other
            ));
            return None;
        }
    };
    match time::OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339) {
        Ok(t) => Some((t.unix_timestamp_nanos() / 1_000_000) as i64),
        Err(_) => {
            crate::warn::warn(&format!(
                "[toolnexus] request {}: expiresAt {raw:?} is not an RFC 3339 time; it is not enforced",
                request_label(request)
            ));
            None
        }
    }
}

/// `"<id>"` for messages.
pub fn request_label(request: &Map<String, Value>) -> String {
    match request.get("id") {
        Some(Value::String(s)) => format!("{s:?}"),
        Some(other) => format!("{:?}", js_string(other)),
        None => "(no id)".into(),
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// What JavaScript's `typeof` says of a JSON value, for messages.
fn type_word(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An Answer a resume may use: an object whose `ok` is `true` or `false`. Anything else is a
/// `TypeError` naming what was wrong, before anything is looked up or used up (a string, a
/// number or `null` read as a decline, and `ok: "false"` as truthy, would spend the Request on
/// an answer nobody gave).
pub fn answer_shape(verb: &str, answer: &Value) -> crate::error::Result<()> {
    let Some(m) = answer.as_object() else {
        return Err(Error::Type(format!(
            "{verb}: the answer must be an object ({{ id, ok, data? }}), got {}",
            type_word(answer)
        )));
    };
    match m.get("ok") {
        Some(Value::Bool(_)) => Ok(()),
        None => Err(Error::Type(format!("{verb}: the answer's ok must be true or false, and it has none"))),
        Some(other) => Err(Error::Type(format!(
            "{verb}: the answer's ok must be true or false, got {} ({})",
            crate::json::to_string(other),
            type_word(other)
        ))),
    }
}

/// A digest of a JSON value that reads the same wherever the value went and came back as
/// JSON: object keys in sorted order, numbers as JavaScript writes them (so a database that
/// reorders keys, or writes `1.0` as `1`, hands back the same value). Hex SHA-256.
pub fn digest(v: &Value) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    feed(&mut ctx, v);
    hex(ctx.finish().as_ref())
}

/// [`digest`] of an array holding `items`, without copying them into one.
pub fn digest_items(items: &[Value]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    feed_items(&mut ctx, items);
    hex(ctx.finish().as_ref())
}

fn feed_items(ctx: &mut ring::digest::Context, items: &[Value]) {
    ctx.update(format!("[{}:", items.len()).as_bytes());
    for x in items {
        feed(ctx, x);
    }
    ctx.update(b"]");
}

fn feed(ctx: &mut ring::digest::Context, v: &Value) {
    crate::json::grow(|| match v {
        Value::Null => ctx.update(b"n"),
        Value::Bool(true) => ctx.update(b"t"),
        Value::Bool(false) => ctx.update(b"f"),
        Value::Number(n) => {
            ctx.update(b"#");
            ctx.update(crate::json::js_number_text(n).as_bytes());
            ctx.update(b";");
        }
        Value::String(s) => feed_str(ctx, s),
        Value::Array(items) => feed_items(ctx, items),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            ctx.update(format!("{{{}:", keys.len()).as_bytes());
            for k in keys {
                feed_str(ctx, k);
                if let Some(x) = m.get(k) {
                    feed(ctx, x);
                }
            }
            ctx.update(b"}");
        }
    })
}

fn feed_str(ctx: &mut ring::digest::Context, s: &str) {
    ctx.update(format!("s{}:", s.len()).as_bytes());
    ctx.update(s.as_bytes());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The seal of a parking under `key`: `tn1.<who>.<payload>.<tag>`. `who` is an HMAC-SHA256 tag
/// over `who` (the Request's id and where it parked); `payload` is what the seal vouches for
/// beyond what the caller hands back anyway (base64url JSON); `tag` covers `bound` (what the
/// caller hands back: the scope and the Request) and the payload. Telling the parts apart lets a
/// check say whether the Request was one of this key's at all, whether what came back with it
/// was changed, or which part of the rest differs.
pub fn seal(key: &[u8], who: &str, bound: &Value, payload: &Value) -> String {
    use base64::Engine as _;
    let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let id_tag = ring::hmac::sign(&k, format!("who\u{0}{who}").as_bytes());
    let text = crate::json::to_string(payload);
    let tag = ring::hmac::sign(&k, sealed_digest(bound, &text).as_bytes());
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text.as_bytes());
    format!("tn1.{}.{b64}.{}", hex(id_tag.as_ref()), hex(tag.as_ref()))
}

fn sealed_digest(bound: &Value, payload_text: &str) -> String {
    let mut m = Map::new();
    m.insert("bound".into(), bound.clone());
    m.insert("payload".into(), Value::String(payload_text.to_string()));
    digest(&Value::Object(m))
}

/// What a seal says of a copy handed back.
#[derive(Debug, Clone, PartialEq)]
pub enum Sealed {
    /// It vouches for `bound` as it is, and for this payload.
    Holds(Value),
    /// It was not made under this key for `who` (another Request's seal, another key's, or none
    /// that reads as one).
    NotThisRequest,
    /// It was made for `who` under this key, and what came back with it is not what it vouched for.
    Altered,
}

/// Check `seal` against `who` and `bound` under `key` (tags checked by `ring`, in constant time).
pub fn seal_check(key: &[u8], who: &str, bound: &Value, seal: &str) -> Sealed {
    use base64::Engine as _;
    let mut parts = seal.strip_prefix("tn1.").unwrap_or_default().split('.');
    let (Some(id_tag), Some(b64), Some(tag), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Sealed::NotThisRequest;
    };
    let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let Some(id_tag) = unhex(id_tag) else { return Sealed::NotThisRequest };
    if ring::hmac::verify(&k, format!("who\u{0}{who}").as_bytes(), &id_tag).is_err() {
        return Sealed::NotThisRequest;
    }
    let text =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(b64).ok().and_then(|b| String::from_utf8(b).ok());
    let (Some(text), Some(tag)) = (text, unhex(tag)) else { return Sealed::Altered };
    if ring::hmac::verify(&k, sealed_digest(bound, &text).as_bytes(), &tag).is_err() {
        return Sealed::Altered;
    }
    match crate::json::parse_str::<Value>(&text) {
        Ok(payload) => Sealed::Holds(payload),
        Err(_) => Sealed::Altered,
    }
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

/// Refuse `answer` unless it may be applied to `request` at `now`: its id must be the
/// Request's (an Answer without an id is refused too when `id_required`), and the Request must
/// not have expired. `verb` starts each message.
pub fn check(
    verb: &str,
    request: &Map<String, Value>,
    answer: &Value,
    now: i64,
    id_required: bool,
) -> crate::error::Result<()> {
    echoes(verb, request, answer, id_required)?;
    if let Some(at) = expires_at_ms(request) {
        if now > at {
            let when = request.get("expiresAt").map(js_string).unwrap_or_default();
            return Err(refused(
                EXPIRED,
                format!("{verb}: request {} expired at {when}; nothing was resumed", request_label(request)),
            ));
        }
    }
    Ok(())
}

/// Refuse `answer` unless it is an object that echoes `request`'s id (or names none, unless
/// `id_required`).
pub fn echoes(verb: &str, request: &Map<String, Value>, answer: &Value, id_required: bool) -> crate::error::Result<()> {
    if !answer.is_object() {
        return Err(Error::Type(format!("{verb}: the answer must be an object ({{ id, ok, data? }})")));
    }
    match echo(request, answer) {
        Echo::Same => {}
        Echo::Silent if !id_required => {}
        Echo::Silent => {
            return Err(refused(
                UNKNOWN,
                format!(
                    "{verb}: the answer has no id; it must echo the id of the request it answers ({})",
                    request_label(request)
                ),
            ))
        }
        Echo::Other(id) => {
            return Err(refused(
                UNKNOWN,
                format!(
                    "{verb}: the answer's id {id:?} is not the pending request's id {}; nothing was resumed",
                    request_label(request)
                ),
            ))
        }
    }
    Ok(())
}

/// The refusal of an Answer to a Request that was already taken up.
pub fn taken(verb: &str, request: &Map<String, Value>) -> Error {
    refused(
        TAKEN,
        format!(
            "{verb}: request {} was already resumed (an answer is applied once); nothing was run again",
            request_label(request)
        ),
    )
}

/// How many claims this process remembers; beyond it the oldest is forgotten.
pub const LOCAL_CLAIMS: usize = 65_536;

static LOCAL: Mutex<Option<Lru<()>>> = Mutex::new(None);

/// Claim `key` in this process: `true` the first time, `false` after.
pub fn claim_locally(key: &str) -> bool {
    let mut guard = LOCAL.lock().unwrap_or_else(PoisonError::into_inner);
    let claims = guard.get_or_insert_with(|| Lru::new(LOCAL_CLAIMS));
    if claims.get(key).is_some() {
        return false;
    }
    let gone = claims.insert(key.to_string(), (), |_| false);
    drop(guard);
    drop(gone);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn an_answer_is_checked_against_the_id_it_echoes() {
        let r = req(json!({"id": "pnd-1", "kind": "approval", "prompt": "ok?"}));
        assert!(check("resume", &r, &json!({"id": "pnd-1", "ok": true}), 0, true).is_ok());
        assert!(check("resume", &r, &json!({"ok": true}), 0, false).is_ok());
        let e = check("resume", &r, &json!({"ok": true}), 0, true).unwrap_err();
        assert!(matches!(e, Error::Refused { code: UNKNOWN, .. }), "{e}");
        let e = check("resume", &r, &json!({"id": "pnd-2", "ok": true}), 0, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resume: the answer's id \"pnd-2\" is not the pending request's id \"pnd-1\"; nothing was resumed"
        );
        let e = check("resume", &r, &json!("yes"), 0, false).unwrap_err();
        assert!(matches!(e, Error::Type(_)));
    }

    #[test]
    fn an_expired_request_refuses_its_answer() {
        let r = req(json!({"id": "p", "prompt": "ok?", "expiresAt": "2026-01-01T00:00:00Z"}));
        let at = expires_at_ms(&r).unwrap();
        assert_eq!(at, 1_767_225_600_000);
        assert!(check("x", &r, &json!({"id": "p", "ok": true}), at, true).is_ok());
        let e = check("x", &r, &json!({"id": "p", "ok": true}), at + 1, true).unwrap_err();
        assert!(matches!(e, Error::Refused { code: EXPIRED, .. }));
        assert_eq!(e.to_string(), "x: request \"p\" expired at 2026-01-01T00:00:00Z; nothing was resumed");
        // JavaScript's toISOString() and offsets are RFC 3339 too.
        let js = req(json!({"id": "p", "expiresAt": "2026-01-01T01:00:00.000+01:00"}));
        assert_eq!(expires_at_ms(&js), Some(at));
        // Not a time: not enforced.
        assert_eq!(expires_at_ms(&req(json!({"expiresAt": "tomorrow"}))), None);
        assert_eq!(expires_at_ms(&req(json!({"expiresAt": 5}))), None);
    }

    #[test]
    fn an_answer_must_be_an_object_with_a_boolean_ok() {
        assert!(answer_shape("resume", &json!({"id": "p", "ok": false})).is_ok());
        let msg = |v: Value| answer_shape("resume", &v).unwrap_err().to_string();
        assert_eq!(msg(json!("yes")), "resume: the answer must be an object ({ id, ok, data? }), got string");
        assert_eq!(msg(json!(42)), "resume: the answer must be an object ({ id, ok, data? }), got number");
        assert_eq!(msg(Value::Null), "resume: the answer must be an object ({ id, ok, data? }), got null");
        assert_eq!(msg(json!([])), "resume: the answer must be an object ({ id, ok, data? }), got array");
        assert_eq!(msg(json!({"id": "p"})), "resume: the answer's ok must be true or false, and it has none");
        assert_eq!(
            msg(json!({"ok": "false"})),
            "resume: the answer's ok must be true or false, got \"false\" (string)"
        );
        assert_eq!(msg(json!({"ok": 1})), "resume: the answer's ok must be true or false, got 1 (number)");
        assert!(matches!(answer_shape("x", &json!({"ok": null})), Err(Error::Type(_))));
    }

    #[test]
    fn a_digest_ignores_key_order_and_number_spelling_and_nothing_else() {
        let a = digest(&json!({"b": [1.0, "x", null], "a": {"y": true, "x": 2}}));
        assert_eq!(a, digest(&serde_json::from_str::<Value>(r#"{"a":{"x":2,"y":true},"b":[1,"x",null]}"#).unwrap()));
        assert_eq!(a.len(), 64);
        let items = [json!(1), json!({"b": 2, "a": 1})];
        assert_eq!(digest_items(&items), digest(&json!([1, {"a": 1, "b": 2}])));
        for other in [
            json!({"b": [1, "x", null], "a": {"y": true, "x": 3}}),
            json!({"b": [1, "x"], "a": {"y": true, "x": 2}}),
            json!({"b": [1, "x", null], "a": {"y": "true", "x": 2}}),
            json!({"b": [1, "x", null], "a": {"y": true, "x": 2}, "c": null}),
            json!({"b": [1, "x", null], "a": {"yx": true, "": 2}}),
        ] {
            assert_ne!(a, digest(&other), "{other}");
        }
        // Strings cannot run into each other.
        assert_ne!(digest(&json!(["ab", "c"])), digest(&json!(["a", "bc"])));
        // Deep values do not overflow the stack (a tokio worker's: 2 MiB).
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let n = 20_000;
                let deep: Value = crate::json::parse_str(&format!("{}{}", "[".repeat(n), "]".repeat(n))).unwrap();
                let d = digest(&deep);
                crate::json::release(deep);
                assert_eq!(d.len(), 64);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_seal_holds_only_for_its_request_what_came_back_and_key() {
        let key = b"0123456789abcdef-key";
        let bound = json!({"scope": "run", "request": {"id": "p", "prompt": "ok?"}});
        let payload = json!({"t": "abc", "c": {"n": "deploy"}});
        let s = seal(key, "run/p", &bound, &payload);
        assert!(s.starts_with("tn1.") && s.split('.').count() == 4, "{s}");
        assert_eq!(seal_check(key, "run/p", &bound, &s), Sealed::Holds(payload.clone()));
        assert_eq!(seal_check(b"0123456789abcdef-kez", "run/p", &bound, &s), Sealed::NotThisRequest);
        assert_eq!(seal_check(key, "run/q", &bound, &s), Sealed::NotThisRequest);
        let edited = json!({"scope": "run", "request": {"id": "p", "prompt": "ok?", "expiresAt": null}});
        assert_eq!(seal_check(key, "run/p", &edited, &s), Sealed::Altered);
        // Another payload under the same tags: altered.
        let parts: Vec<&str> = s.split('.').collect();
        use base64::Engine as _;
        let other = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"t":"xyz"}"#);
        let swapped = format!("tn1.{}.{other}.{}", parts[1], parts[3]);
        assert_eq!(seal_check(key, "run/p", &bound, &swapped), Sealed::Altered);
        assert_eq!(seal_check(key, "run/p", &bound, &s[..s.len() - 2]), Sealed::Altered);
        for bad in ["", "tn1.", "tn1.zz", "tn2.00.00.00", "tn1.00.00.00", "tn1.a.b.c.d"] {
            assert_eq!(seal_check(key, "run/p", &bound, bad), Sealed::NotThisRequest, "{bad}");
        }
    }

    #[test]
    fn a_claim_is_made_once() {
        let a = format!("test-claim-{}", now_ms());
        assert!(claim_locally(&a));
        assert!(!claim_locally(&a));
        assert!(claim_locally(&format!("{a}-other")));
    }
}
