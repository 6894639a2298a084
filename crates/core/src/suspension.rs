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

/// The key a parked Request is claimed under: its id and a digest of where it parked (the
/// scope, e.g. a conversation, and the transcript up to the parked call), so a tool that
/// reuses one id for every Request it makes parks under a new key each time.
pub fn claim_key(scope: &str, request_id: &str, transcript: &[Value]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(scope.as_bytes());
    ctx.update(&[0]);
    ctx.update(crate::json::to_string(&Value::Array(transcript.to_vec())).as_bytes());
    let digest = ctx.finish();
    let hex: String = digest.as_ref().iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("{request_id}#{hex}")
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
    fn a_claim_is_made_once_and_keys_tell_parkings_apart() {
        let a = claim_key("run", "login", &[json!({"role": "user", "content": "hi"})]);
        let b = claim_key("run", "login", &[json!({"role": "user", "content": "hello"})]);
        let c = claim_key("ask:t", "login", &[json!({"role": "user", "content": "hi"})]);
        assert!(a.starts_with("login#") && a != b && a != c);
        assert!(claim_locally(&a));
        assert!(!claim_locally(&a));
        assert!(claim_locally(&b));
    }
}
