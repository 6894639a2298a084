//! What a run parked on, as the library recorded it: the authority a resume checks the caller's
//! copy against (SPEC §10's durable resume, where `pending` and the transcript come back from
//! wherever the caller kept them).
//!
//! When a run parks, the library records the Request with what it parks: the whole Request as
//! handed out, where it parked, the parked call (its id, its tool, a digest of its arguments),
//! a digest of the transcript handed out, and when. The record lives in the client's durable
//! store (kind `park`), or, for a store kept in memory or a host's own, in this process. With a
//! `resumeKey`, the Request handed out also carries a seal (an HMAC over the record under that
//! key), so a process that holds no record can still tell a parking of its own making.
//!
//! A resume finds the record under its scope (a run, or a conversation) and the caller's Request
//! id, and goes on only with what the record says: an id nothing parked is unknown; a `pending`
//! or a transcript that differs from the record is a mismatch, named; expiry is the record's; the
//! claim marks the record answered, once (a compare-and-set on a durable store). A refusal
//! changes nothing. Records go after a retention (from when they parked, were answered, or their
//! Request expires, whichever is last), and with their conversation.

use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

use super::result::HaltSite;
use super::wire::{calls_of, Call, Style};
use crate::error::{Error, Result};
use crate::json::js_string;
use crate::lru::Lru;
use crate::store::{Expect, Records};
use crate::suspension::{digest, now_ms, refused, request_label, seal, seal_check, taken, Sealed, MISMATCH, UNKNOWN};
use crate::types::request_prompt;

/// How long a park record is kept by default: 30 days after it parked, was answered, or its
/// Request expired, whichever is last.
pub const RETENTION_MS: i64 = 30 * 24 * 3_600_000;
/// The key a Request handed out carries its seal under.
pub const SEAL_KEY: &str = "seal";
/// How many parkings one record (one scope and Request id) keeps: a tool that asks under one id
/// every time parks many times under it.
const PER_RECORD: usize = 256;
/// How many records this process keeps for stores that are not durable.
const IN_MEMORY: usize = 65_536;
/// How many times a write that lost a race to another writer is tried again.
const ATTEMPTS: usize = 32;

/// Where a run parked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// A run whose transcript the caller keeps (`run`, `stream`, `runWithAnswer`).
    Run,
    /// A conversation the store keeps (`ask`, `stream` with an id, `askWithAnswer`).
    Conversation(String),
}

impl Scope {
    /// The start of every record id of this scope (a conversation's id is written with its
    /// length, so no conversation's prefix is another's).
    pub fn prefix(&self) -> String {
        match self {
            Scope::Run => "run:".into(),
            Scope::Conversation(id) => format!("ask:{}:{id}:", id.chars().count()),
        }
    }

    fn record_id(&self, request_id: &str) -> String {
        format!("{}{request_id}", self.prefix())
    }

    fn as_value(&self) -> Value {
        match self {
            Scope::Run => Value::String("run".into()),
            Scope::Conversation(id) => Value::String(format!("ask:{id}")),
        }
    }
}

/// The parked call as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ParkedCall {
    id: Option<String>,
    name: String,
    /// The digest of its arguments.
    args: String,
}

impl ParkedCall {
    fn of(call: &Call) -> ParkedCall {
        ParkedCall { id: call.id.as_ref().map(js_string), name: call.name.clone(), args: digest(&call.args) }
    }
}

/// One parking.
#[derive(Debug, Clone)]
pub struct Parking {
    /// The Request as handed out (without its seal).
    pub request: Map<String, Value>,
    pub site: HaltSite,
    call: Option<ParkedCall>,
    /// The digest of the transcript handed out.
    transcript: String,
    parked_at: i64,
    answered_at: Option<i64>,
}

impl Parking {
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("request".into(), Value::Object(self.request.clone()));
        m.insert("site".into(), self.site.as_str().into());
        if let Some(c) = &self.call {
            let mut call = Map::new();
            call.insert("id".into(), c.id.clone().map(Value::String).unwrap_or(Value::Null));
            call.insert("name".into(), c.name.clone().into());
            call.insert("args".into(), c.args.clone().into());
            m.insert("call".into(), Value::Object(call));
        }
        m.insert("transcript".into(), self.transcript.clone().into());
        m.insert("parkedAt".into(), self.parked_at.into());
        if let Some(at) = self.answered_at {
            m.insert("answeredAt".into(), at.into());
        }
        Value::Object(m)
    }

    fn from_value(v: &Value) -> Option<Parking> {
        let call = match v.get("call") {
            Some(c) if c.is_object() => Some(ParkedCall {
                id: c.get("id").and_then(Value::as_str).map(str::to_string),
                name: c.get("name")?.as_str()?.to_string(),
                args: c.get("args")?.as_str()?.to_string(),
            }),
            _ => None,
        };
        Some(Parking {
            request: v.get("request")?.as_object()?.clone(),
            site: HaltSite::parse(v.get("site")?.as_str()?)?,
            call,
            transcript: v.get("transcript")?.as_str()?.to_string(),
            parked_at: v.get("parkedAt")?.as_i64()?,
            answered_at: v.get("answeredAt").and_then(Value::as_i64),
        })
    }

    /// When the record of this parking may go: a retention after it was answered, or after it
    /// parked or its Request expires, whichever is later.
    fn until(&self, retention: i64) -> i64 {
        let from = match self.answered_at {
            Some(at) => at,
            None => self.parked_at.max(expires_at_quiet(&self.request).unwrap_or(i64::MIN)),
        };
        from.saturating_add(retention)
    }

    fn same(&self, other: &Parking) -> bool {
        self.transcript == other.transcript && self.parked_at == other.parked_at
    }

    /// What a seal binds to what the caller hands back anyway: the scope and the Request.
    fn bound(&self, scope: &Scope) -> Value {
        let mut m = Map::new();
        m.insert("v".into(), 1.into());
        m.insert("scope".into(), scope.as_value());
        m.insert("request".into(), Value::Object(self.request.clone()));
        Value::Object(m)
    }

    /// What a seal carries besides: where it parked, the parked call and the transcript's digest.
    fn payload(&self) -> Value {
        let mut m = Map::new();
        m.insert("site".into(), self.site.as_str().into());
        if let Some(c) = &self.call {
            let mut call = Map::new();
            call.insert("id".into(), c.id.clone().map(Value::String).unwrap_or(Value::Null));
            call.insert("name".into(), c.name.clone().into());
            call.insert("args".into(), c.args.clone().into());
            m.insert("call".into(), Value::Object(call));
        }
        m.insert("transcript".into(), self.transcript.clone().into());
        Value::Object(m)
    }

    /// The parking a seal vouched for: the caller's Request (which the seal bound) and the
    /// seal's payload.
    fn from_seal(request: Map<String, Value>, payload: &Value) -> Option<Parking> {
        let mut v = payload.clone();
        if let Value::Object(m) = &mut v {
            m.insert("request".into(), Value::Object(request));
            m.insert("parkedAt".into(), 0.into());
        }
        Parking::from_value(&v)
    }
}

/// `expiresAt` as ms, without the warning a resume gives for one that is not a time.
fn expires_at_quiet(request: &Map<String, Value>) -> Option<i64> {
    let s = request.get("expiresAt")?.as_str()?;
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some((t.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// The parkings under one record id, as stored.
fn parkings_of(v: Option<&Value>) -> Vec<Parking> {
    v.and_then(|v| v.get("parks"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Parking::from_value).collect())
        .unwrap_or_default()
}

fn record_of(parkings: &[Parking]) -> Value {
    let mut m = Map::new();
    m.insert("parks".into(), Value::Array(parkings.iter().map(Parking::to_value).collect()));
    Value::Object(m)
}

/// The parking a resume found, checked against the caller's copy.
pub struct Found {
    pub parking: Parking,
}

/// The records of stores that are not durable, for this process.
static IN_PROCESS: Mutex<Option<Lru<Vec<Parking>>>> = Mutex::new(None);

fn in_process<R>(f: impl FnOnce(&mut Lru<Vec<Parking>>) -> R) -> R {
    let mut guard = IN_PROCESS.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(|| Lru::new(IN_MEMORY)))
}

/// A client's park records: on its durable store, or in this process; sealed with its key.
pub struct Parks<'a> {
    pub durable: Option<&'a Records>,
    pub key: Option<&'a [u8]>,
    pub retention_ms: i64,
}

impl Parks<'_> {
    /// Record the park a run ended with (`request`, at the end of `messages`), in `scope`: the
    /// seal the Request handed out carries, when there is a key. A record that cannot be written
    /// fails the run: a `pending` nobody could resume is never handed out.
    pub async fn record(
        &self,
        scope: &Scope,
        style: Style,
        request: &Map<String, Value>,
        site: HaltSite,
        messages: &[Value],
    ) -> Result<Option<String>> {
        let mut clean = request.clone();
        clean.remove(SEAL_KEY);
        let call = match site {
            HaltSite::BudgetLlm => None,
            _ => locate(style, messages, &request_prompt(&clean)).map(|l| ParkedCall::of(&l.call)),
        };
        let parking = Parking {
            request: clean,
            site,
            call,
            transcript: digest_items(messages),
            parked_at: now_ms(),
            answered_at: None,
        };
        let id = scope.record_id(&js_string(parking.request.get("id").unwrap_or(&Value::Null)));
        let sealed = self.key.map(|k| seal(k, &id, &parking.bound(scope), &parking.payload()));
        match self.durable {
            Some(records) => {
                self.update(records, &id, |list| {
                    list.retain(|p| !p.same(&parking));
                    list.push(parking.clone());
                    Ok(())
                })
                .await
                .map_err(|e| match e {
                    // The store's own code stays (ESTOREUNAVAILABLE, ESTORECONFLICT...).
                    Error::Store { code, message } => {
                        Error::Store { code, message: format!("the suspension could not be saved: {message}") }
                    }
                    other => Error::Invalid(format!("the suspension could not be saved: {other}")),
                })?;
                records.sweep_now_and_then().await;
            }
            None => in_process(|book| {
                let mut list = book.get(&id).cloned().unwrap_or_default();
                self.prune(&mut list);
                list.retain(|p| !p.same(&parking));
                list.push(parking);
                cap(&mut list);
                drop(book.insert(id, list, |_| false));
            }),
        }
        Ok(sealed)
    }

    /// The parking a resume in `scope` takes up with the caller's `pending` and `history`, or
    /// why it may not (nothing is changed): see the module.
    pub async fn find(
        &self,
        verb: &str,
        scope: &Scope,
        style: Style,
        pending: &Map<String, Value>,
        history: &[Value],
    ) -> Result<Found> {
        let request_id = js_string(pending.get("id").unwrap_or(&Value::Null));
        let id = scope.record_id(&request_id);
        let mut list = match self.durable {
            Some(records) => parkings_of(records.get(&id).await?.as_ref()),
            None => in_process(|book| book.get(&id).cloned().unwrap_or_default()),
        };
        self.prune(&mut list);
        let transcript = digest_items(history);
        let mut theirs = pending.clone();
        let their_seal = theirs.remove(SEAL_KEY);
        if let Some(p) = list.iter().find(|p| p.transcript == transcript) {
            if p.answered_at.is_some() {
                return Err(taken(verb, &p.request));
            }
            same_request(verb, &p.request, &theirs)?;
            return Ok(Found { parking: p.clone() });
        }
        // Every parking on this id answered: whatever copy came back, it was answered.
        if let Some(p) = list.last().filter(|_| list.iter().all(|p| p.answered_at.is_some())) {
            return Err(taken(verb, &p.request));
        }
        // A parking of another process's, told by its seal (stores that are not durable).
        let mut bad_seal = false;
        if let (None, Some(key), Some(Value::String(s))) = (self.durable, self.key, their_seal.as_ref()) {
            let probe = Parking {
                request: theirs.clone(),
                site: HaltSite::Tool,
                call: None,
                transcript: String::new(),
                parked_at: 0,
                answered_at: None,
            };
            match seal_check(key, &id, &probe.bound(scope), s) {
                Sealed::Holds(payload) => {
                    let Some(parking) = Parking::from_seal(theirs.clone(), &payload) else {
                        return Err(sealed_mismatch(verb, &request_id));
                    };
                    if parking.transcript != transcript {
                        return Err(history_mismatch(verb, scope, style, &parking, history));
                    }
                    let kept = parking.clone();
                    in_process(|book| {
                        let mut list = book.get(&id).cloned().unwrap_or_default();
                        list.push(kept);
                        cap(&mut list);
                        drop(book.insert(id.clone(), list, |_| false));
                    });
                    return Ok(Found { parking });
                }
                Sealed::Altered => bad_seal = true,
                Sealed::NotThisRequest => {}
            }
        }
        let Some(p) = list.iter().rev().find(|p| p.answered_at.is_none()) else {
            if bad_seal {
                return Err(sealed_mismatch(verb, &request_id));
            }
            return Err(unknown(verb, scope, &request_id, self.durable.is_some(), self.key.is_some()));
        };
        same_request(verb, &p.request, &theirs)?;
        Err(history_mismatch(verb, scope, style, p, history))
    }

    /// Mark the parking answered, once: `ESTORECONFLICT` when another resume did first.
    pub async fn claim(&self, verb: &str, scope: &Scope, found: &Found) -> Result<()> {
        let p = &found.parking;
        let id = scope.record_id(&js_string(p.request.get("id").unwrap_or(&Value::Null)));
        let now = now_ms();
        let mark = |list: &mut Vec<Parking>| -> Result<()> {
            match list.iter_mut().find(|x| x.same(p)) {
                Some(x) if x.answered_at.is_none() => {
                    x.answered_at = Some(now);
                    Ok(())
                }
                Some(_) => Err(taken(verb, &p.request)),
                None => Err(refused(
                    UNKNOWN,
                    format!(
                        "{verb}: request {} is no longer parked (its record went: its conversation was deleted, or it was kept past its retention); nothing was resumed",
                        request_label(&p.request)
                    ),
                )),
            }
        };
        match self.durable {
            Some(records) => self.update(records, &id, mark).await,
            None => in_process(|book| {
                let mut list = book.get(&id).cloned().unwrap_or_default();
                mark(&mut list)?;
                drop(book.insert(id.clone(), list, |_| false));
                Ok(())
            }),
        }
    }

    /// Forget what conversation `id` parked in this process (it is being deleted; a durable
    /// store deletes its records with the conversation).
    pub fn forget(&self, id: &str) {
        if self.durable.is_some() {
            return;
        }
        let prefix = Scope::Conversation(id.to_string()).prefix();
        in_process(|book| {
            for k in book.keys_with_prefix(&prefix) {
                drop(book.remove(&k));
            }
        });
    }

    /// Drop the parkings past their retention.
    fn prune(&self, list: &mut Vec<Parking>) {
        let now = now_ms();
        list.retain(|p| p.until(self.retention_ms) > now);
    }

    /// Read record `id`, change its list with `change`, and write it back unless another writer
    /// changed it meanwhile (then again, from what that writer left).
    async fn update(
        &self,
        records: &Records,
        id: &str,
        change: impl Fn(&mut Vec<Parking>) -> Result<()>,
    ) -> Result<()> {
        for _ in 0..ATTEMPTS {
            let found = records.get_versioned(id).await?;
            let expect = match &found {
                Some((v, _)) => Expect::Version(*v),
                None => Expect::Absent,
            };
            let mut list = parkings_of(found.as_ref().map(|(_, v)| v));
            self.prune(&mut list);
            change(&mut list)?;
            cap(&mut list);
            let expires = list.iter().map(|p| p.until(self.retention_ms)).max();
            if records.save_at(id, &record_of(&list), expect, expires).await?.is_some() {
                return Ok(());
            }
        }
        Err(crate::store::engine::conflict(records.label(), crate::store::Kind::Park, id))
    }
}

/// At most [`PER_RECORD`] parkings: the oldest answered ones go first, then the oldest.
fn cap(list: &mut Vec<Parking>) {
    while list.len() > PER_RECORD {
        let at = list.iter().position(|p| p.answered_at.is_some()).unwrap_or(0);
        list.remove(at);
    }
}

/// The digest of a transcript, as the array it is.
fn digest_items(items: &[Value]) -> String {
    crate::suspension::digest_items(items)
}

fn label(id: &str) -> String {
    format!("{id:?}")
}

/// The refusal of a Request id nothing in this scope parked.
fn unknown(verb: &str, scope: &Scope, id: &str, durable: bool, keyed: bool) -> Error {
    let where_ = match scope {
        Scope::Run => "no run parked on request".to_string(),
        Scope::Conversation(c) => format!("conversation {c:?} is not parked on request"),
    };
    let hint = match (durable, keyed) {
        (true, _) => " in this store",
        (false, true) => " in this process, and its pending carries no seal of this client's resumeKey for it",
        (false, false) => {
            " in this process (a run parked in another process is resumed through a durable store, or with a resumeKey shared by both)"
        }
    };
    refused(UNKNOWN, format!("{verb}: {where_} {}{hint}; nothing was resumed", label(id)))
}

/// The refusal of a `pending` its own seal does not hold for (it was changed after the park).
fn sealed_mismatch(verb: &str, id: &str) -> Error {
    refused(
        MISMATCH,
        format!(
            "{verb}: the pending handed back is not the Request that parked as {} (its seal does not hold for it); nothing was resumed",
            label(id)
        ),
    )
}

/// The caller's `pending` must be the Request recorded, field for field.
fn same_request(verb: &str, ours: &Map<String, Value>, theirs: &Map<String, Value>) -> Result<()> {
    let mut differ: Vec<&str> = Vec::new();
    for k in ours.keys().chain(theirs.keys().filter(|k| !ours.contains_key(*k))) {
        let a = ours.get(k).map(digest);
        let b = theirs.get(k).map(digest);
        if a != b {
            differ.push(k);
        }
    }
    if differ.is_empty() {
        return Ok(());
    }
    let fields = differ.join(", ");
    Err(refused(
        MISMATCH,
        format!(
            "{verb}: the pending handed back is not the Request that parked as {}: its {fields} {} from the one recorded; nothing was resumed",
            request_label(ours),
            if differ.len() == 1 { "differs" } else { "differ" }
        ),
    ))
}

/// Why `history` is not the transcript parking `p` handed out, named.
fn history_mismatch(verb: &str, scope: &Scope, style: Style, p: &Parking, history: &[Value]) -> Error {
    let on = request_label(&p.request);
    let Some(found) = locate(style, history, &request_prompt(&p.request)) else {
        return match scope {
            Scope::Conversation(c) => refused(
                UNKNOWN,
                format!("{verb}: conversation {c:?} is no longer parked on request {on} (it went on without it); nothing was resumed"),
            ),
            Scope::Run => refused(
                MISMATCH,
                format!("{verb}: the history handed back does not end with the turn parked on request {on}; nothing was resumed"),
            ),
        };
    };
    let call = ParkedCall::of(&found.call);
    let what = match &p.call {
        Some(c) if c.name != call.name => {
            format!("its parked call is to the tool {:?}, and the call parked was to {:?}", call.name, c.name)
        }
        Some(c) if c.id != call.id => format!(
            "its parked call's id is {}, and the call parked had {}",
            call.id.as_deref().map(label).unwrap_or_else(|| "none".into()),
            c.id.as_deref().map(label).unwrap_or_else(|| "none".into())
        ),
        Some(c) if c.args != call.args => {
            "its parked call's arguments are not the ones the call parked with".to_string()
        }
        _ => "the messages of the parked turn or before it are not the ones that parked".to_string(),
    };
    refused(
        MISMATCH,
        format!("{verb}: the history handed back is not the one request {on} parked: {what}; nothing was resumed"),
    )
}

/// Where a transcript parked on the call whose placeholder reads `prompt`: the assistant message
/// asking for the turn's calls, how many of them have results (the placeholder is the last),
/// and the parked call.
pub(super) struct Located {
    pub assistant_at: usize,
    pub answered: usize,
    pub call: Call,
}

/// The parked turn at the end of `history`, if it ends with one parked on a call whose
/// placeholder reads `prompt`.
pub(super) fn locate(style: Style, history: &[Value], prompt: &str) -> Option<Located> {
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_string);
    let n = history.len();
    let (answered, assistant_at, ids): (usize, usize, Vec<Option<Value>>) = match style {
        Style::OpenAI => {
            let k = history.iter().rev().take_while(|m| role(m).as_deref() == Some("tool")).count();
            if k == 0 || k >= n {
                return None;
            }
            if history[n - 1].get("content").map(js_string).as_deref() != Some(prompt) {
                return None;
            }
            (k, n - k - 1, history[n - k..].iter().map(|m| m.get("tool_call_id").cloned()).collect())
        }
        Style::Anthropic => {
            if n < 2 || role(&history[n - 1]).as_deref() != Some("user") {
                return None;
            }
            let blocks = history[n - 1].get("content").and_then(Value::as_array)?;
            let all_results = blocks.iter().all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
            let last_is_placeholder =
                blocks.last().and_then(|b| b.get("content")).map(js_string).as_deref() == Some(prompt);
            if blocks.is_empty() || !all_results || !last_is_placeholder {
                return None;
            }
            (blocks.len(), n - 2, blocks.iter().map(|b| b.get("tool_use_id").cloned()).collect())
        }
    };
    // The model's message as it came (an OpenAI-style reply may leave its role out).
    if !matches!(role(&history[assistant_at]).as_deref(), Some("assistant") | None) {
        return None;
    }
    let mut calls = calls_of(style, &history[assistant_at]);
    if calls.len() < answered || calls.iter().zip(&ids).any(|(c, id)| id.is_some() && c.id.is_some() && &c.id != id) {
        return None;
    }
    let call = calls.swap_remove(answered - 1);
    Some(Located { assistant_at, answered, call })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_never_share_a_prefix() {
        let a = Scope::Conversation("a".into()).prefix();
        let ab = Scope::Conversation("a:1:b".into()).prefix();
        assert_eq!(a, "ask:1:a:");
        assert!(!ab.starts_with(&a) && !a.starts_with(&ab));
        assert!(!Scope::Conversation("run".into()).prefix().starts_with(&Scope::Run.prefix()));
    }

    #[test]
    fn a_parking_reads_back_as_written() {
        let p = Parking {
            request: json!({"id": "p", "kind": "approval", "prompt": "ok?"}).as_object().cloned().unwrap(),
            site: HaltSite::Tool,
            call: Some(ParkedCall {
                id: Some("c1".into()),
                name: "deploy".into(),
                args: digest(&json!({"env": "prod"})),
            }),
            transcript: "t".into(),
            parked_at: 5,
            answered_at: Some(7),
        };
        let back = Parking::from_value(&p.to_value()).unwrap();
        assert_eq!(back.to_value(), p.to_value());
        assert_eq!(back.until(10), 17);
        let open = Parking { answered_at: None, ..p.clone() };
        assert_eq!(open.until(10), 15);
        let mut later = open.clone();
        later.request.insert("expiresAt".into(), "1970-01-01T00:00:01Z".into());
        assert_eq!(later.until(10), 1_010);
    }
}
