//! A `tools/call` of protocol 2026-07-28, whose server never sends requests: a `pending` the
//! tool returns goes back as an `input_required` result (its elicitation among the
//! `inputRequests`, and a `requestState`), and the client retries the call with the answer
//! (`inputResponses`) and that state. The state is sealed (HMAC-SHA256 under a key of this
//! process) over the tool, the arguments and the Request it asks about, is taken once, and
//! lapses after [`STATE_TTL_MS`]: a retry with an edited, invented, replayed or stale state, or
//! other arguments, is refused and runs nothing.

use std::sync::{Arc, LazyLock, PoisonError};

use rmcp::model::{CallToolRequestParams, CallToolResponse, ErrorData, InputRequiredResult};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::{json, Value};

use crate::serve::mcp::{answer_of, call_result, elicitation, offers_of, EventSink, PeerCaller, Served};
use crate::tool::{Caller, ToolEvent};

/// How long a client has to answer an elicitation of 2026-07-28.
pub const STATE_TTL_MS: i64 = 30 * 60 * 1000;

/// The key of this process's request states.
static KEY: LazyLock<[u8; 32]> = LazyLock::new(|| {
    let mut key = [0u8; 32];
    rand::Rng::fill(&mut rand::rng(), &mut key);
    key
});

/// The key under which the input request is listed.
const INPUT_KEY: &str = "elicitation";

/// A caller whose events go out and who is asked nothing during the call (2026-07-28 asks by
/// `input_required` instead); it still says what the client offers.
struct Quiet(Arc<PeerCaller>);

#[async_trait::async_trait]
impl Caller for Quiet {
    fn event(&self, event: ToolEvent) {
        self.0.event(event);
    }
    fn offers(&self, _what: &str) -> bool {
        false
    }
    async fn request(&self, method: &str, _params: Value) -> crate::error::Result<Value> {
        Err(crate::error::Error::Invalid(format!(
            "{method}: a client of protocol 2026-07-28 is not sent requests during a call"
        )))
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn refused(why: &str) -> ErrorData {
    ErrorData::invalid_params(format!("requestState: {why}; nothing was run"), None)
}

/// What a request state is bound to: the tool and its arguments.
fn bound(name: &str, args: &Value) -> Value {
    json!({ "tool": name, "args": crate::suspension::digest(args) })
}

/// The Answer a retry carries, checked against its state: `None` for a first call.
fn answer_of_retry(served: &Served, request: &CallToolRequestParams, args: &Value) -> Result<Option<Value>, ErrorData> {
    let Some(state) = request.request_state.as_deref() else {
        return Ok(None);
    };
    // The id the state is for is inside it; the seal's first tag binds it.
    let payload = state
        .split('.')
        .nth(2)
        .and_then(|b| {
            use base64::Engine as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(b).ok()
        })
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .ok_or_else(|| refused("not a state this server gave"))?;
    let id = payload.get("id").cloned().unwrap_or(Value::Null);
    let who = crate::json::js_string(&id);
    match crate::suspension::seal_check(KEY.as_slice(), &who, &bound(&request.name, args), state) {
        crate::suspension::Sealed::Holds(_) => {}
        crate::suspension::Sealed::NotThisRequest => return Err(refused("not a state this server gave")),
        crate::suspension::Sealed::Altered => {
            return Err(refused("it was given for another tool or other arguments, or it was changed"))
        }
    }
    if payload.get("exp").and_then(Value::as_i64).is_none_or(|exp| now_ms() > exp) {
        return Err(refused("it has expired"));
    }
    let reply = request
        .input_responses
        .as_ref()
        .and_then(|r| r.get(INPUT_KEY))
        .ok_or_else(|| refused(&format!("the retry has no inputResponses.{INPUT_KEY}")))?;
    // Taken once: a replayed state finds its nonce spent.
    let nonce = payload.get("nonce").and_then(Value::as_str).unwrap_or_default().to_string();
    {
        let mut spent = served.answered().lock().unwrap_or_else(PoisonError::into_inner);
        if spent.get(&nonce).is_some() {
            return Err(refused("it was answered already"));
        }
        spent.insert(nonce, (), |_| false);
    }
    Ok(Some(answer_of(id, reply, payload.get("schema"))))
}

/// One `tools/call` of protocol 2026-07-28: see the module's text.
pub async fn call(
    served: &Served,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let args = Value::Object(request.arguments.clone().unwrap_or_default());
    let answer = answer_of_retry(served, &request, &args)?;
    // What the client offers rides on each request at this revision.
    let offers_elicitation = request
        .meta
        .as_ref()
        .and_then(|m| m.client_capabilities())
        .or_else(|| context.meta.client_capabilities())
        .or_else(|| context.peer.peer_info().map(|i| i.capabilities.clone()))
        .and_then(|c| serde_json::to_value(c).ok())
        .is_some_and(|c| offers_of(&c)[0]);
    let (caller, sending) = PeerCaller::start(served, &context);
    let quiet: EventSink = Arc::new(Quiet(caller.clone()));
    let r = served
        .call_answered(&request.name, request.arguments.clone(), context.ct.clone(), Some(quiet.clone()), answer)
        .await;
    drop(quiet);
    drop(caller);
    let _ = sending.await;
    let r = r?;
    let Some(pending) = crate::types::pending_of(&r).filter(|_| offers_elicitation) else {
        return Ok(call_result(&request.name, r).into());
    };
    // The client offers elicitation: ask it, through the result.
    let asker = AsksAll;
    let Some(params) = elicitation(pending, &r.output, &asker) else {
        return Ok(call_result(&request.name, r).into());
    };
    let id = pending.get("id").cloned().unwrap_or(Value::Null);
    let mut nonce = [0u8; 16];
    rand::Rng::fill(&mut rand::rng(), &mut nonce);
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let payload =
        json!({ "id": id, "schema": params.get("requestedSchema"), "nonce": nonce, "exp": now_ms() + STATE_TTL_MS });
    let state =
        crate::suspension::seal(KEY.as_slice(), &crate::json::js_string(&id), &bound(&request.name, &args), &payload);
    let input = serde_json::from_value(json!({ "method": "elicitation/create", "params": params }))
        .map_err(|e| ErrorData::internal_error(format!("elicitation: {e}"), None))?;
    let mut requests = rmcp::model::InputRequests::new();
    requests.insert(INPUT_KEY.to_string(), input);
    Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
}

/// A caller taken to offer form elicitation (URL mode is not asked through `input_required`).
struct AsksAll;

#[async_trait::async_trait]
impl Caller for AsksAll {
    fn event(&self, _event: ToolEvent) {}
    fn offers(&self, what: &str) -> bool {
        what == "elicitation"
    }
    async fn request(&self, method: &str, _params: Value) -> crate::error::Result<Value> {
        Err(crate::error::Error::Invalid(format!("{method}: not asked directly")))
    }
}
