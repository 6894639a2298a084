//! The elicitation bridge (SPEC §2, §10): a server's `elicitation/create` becomes a §10
//! Request for the host's `waitFor`, and the Answer goes back as the MCP result.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::{
    ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationCapability, ElicitationCreateRequestMethod,
    Implementation, InitializeRequestParams, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::ClientHandler;
use serde_json::{Map, Value};

use crate::callback::SharedCallback;
use crate::error::{Error, Result};
use crate::json::{js_string, truthy};
use crate::types::base36;

static ELICIT_SEQ: AtomicU64 = AtomicU64::new(0);

fn read_field<'a>(v: &'a Value, what: &str, key: &str) -> Result<Option<&'a Value>> {
    match v {
        Value::Null => Err(Error::Invalid(format!("Cannot read properties of {what} (reading '{key}')"))),
        Value::Object(m) => Ok(m.get(key)),
        _ => Ok(None),
    }
}

/// Map an MCP `elicitation/create` request's params onto a §10 Request: URL mode becomes
/// `kind: "authorization"` carrying the `url`, anything else `kind: "input"` carrying the
/// requested schema under `data.schema`. The id is `elc-<ms in base 36>-<sequence>`.
pub fn elicitation_to_request(params: &Value) -> Result<Value> {
    let mode = read_field(params, "null", "mode")?;
    let get = |k: &str| params.as_object().and_then(|m| m.get(k));
    let is_url = mode == Some(&Value::String("url".into()));
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let seq = ELICIT_SEQ.fetch_add(1, Ordering::Relaxed) + 1;
    let mut req = Map::with_capacity(5);
    req.insert("id".into(), Value::String(format!("elc-{}-{}", base36(ms), seq)));
    req.insert("kind".into(), Value::String(if is_url { "authorization" } else { "input" }.into()));
    let prompt = match get("message") {
        None | Some(Value::Null) => String::new(),
        Some(m) => js_string(m),
    };
    req.insert("prompt".into(), Value::String(prompt));
    if is_url {
        if let Some(url) = get("url").filter(|u| truthy(u)) {
            req.insert("url".into(), url.clone());
        }
    } else if let Some(schema) = get("requestedSchema").filter(|s| truthy(s)) {
        let mut data = Map::with_capacity(1);
        data.insert("schema".into(), schema.clone());
        req.insert("data".into(), Value::Object(data));
    }
    Ok(Value::Object(req))
}

/// Map a §10 Answer back onto an MCP elicitation result: `ok` accepts with `data` (or `{}`)
/// as the content; otherwise `reason: "declined"` declines and anything else cancels.
pub fn answer_to_elicit_result(answer: &Value) -> Result<Value> {
    let ok = read_field(answer, "null", "ok")?;
    let get = |k: &str| answer.as_object().and_then(|m| m.get(k));
    let mut out = Map::with_capacity(2);
    if ok.is_some_and(truthy) {
        out.insert("action".into(), Value::String("accept".into()));
        let content = get("data").filter(|d| !d.is_null()).cloned().unwrap_or_else(|| Value::Object(Map::new()));
        out.insert("content".into(), content);
    } else {
        let declined = get("reason") == Some(&Value::String("declined".into()));
        out.insert("action".into(), Value::String(if declined { "decline" } else { "cancel" }.into()));
    }
    Ok(Value::Object(out))
}

/// The client side of every MCP session: identifies as toolnexus and, only when the host gave a
/// `waitFor`, advertises elicitation and answers it through that callback.
#[derive(Clone)]
pub(crate) struct Handler {
    pub wait_for: Option<SharedCallback>,
    /// Where remote servers' sign-ins are kept (a store URL; memory when none).
    pub store: Option<String>,
    /// The host's own tokens for remote servers (`mcpToken`).
    pub token: Option<SharedCallback>,
    /// A session of protocol 2026-07-28, where a server asks for input only in a tool call's
    /// result (multi round-trip): what the host cannot answer at once parks the call, so the
    /// elicitation capability is advertised even without `waitFor`.
    pub modern: bool,
}

/// An accepted answer's content with the defaults the requested schema names filled in where the
/// answer left a field out (SEP-1034: the person saw the default and let it stand).
fn with_schema_defaults(mut result: Value, schema: Option<&Value>) -> Value {
    let Some(props) = schema.and_then(|s| s.get("properties")).and_then(Value::as_object) else { return result };
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return result;
    }
    if let Some(Value::Object(content)) = result.get_mut("content") {
        for (name, prop) in props {
            if let (false, Some(default)) = (content.contains_key(name), prop.get("default")) {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    result
}

/// An elicitation's result for the host's `answer` to it: accepted, declined or cancelled, an
/// accepted one with the defaults of the requested schema it left out.
pub(crate) fn elicit_result(params: &Value, answer: &Value) -> Result<Value> {
    Ok(with_schema_defaults(answer_to_elicit_result(answer)?, params.get("requestedSchema")))
}

impl Handler {
    /// Ask the host for what an elicitation's `params` request, as an elicitation result.
    pub(crate) async fn ask(&self, wait_for: &SharedCallback, params: &Value) -> Result<Value> {
        let request = elicitation_to_request(params)?;
        let answer = wait_for.call(request).await?;
        elicit_result(params, &answer)
    }

    async fn elicit(&self, wait_for: &SharedCallback, params: ElicitRequestParams) -> Result<ElicitResult> {
        let params = serde_json::to_value(&params).map_err(|e| Error::Invalid(e.to_string()))?;
        let result = self.ask(wait_for, &params).await?;
        crate::json::from_value(result).map_err(|e| Error::Invalid(format!("invalid elicitation answer: {e}")))
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> InitializeRequestParams {
        let mut caps = ClientCapabilities::default();
        if self.wait_for.is_some() || self.modern {
            caps.elicitation = Some(ElicitationCapability::new());
        }
        InitializeRequestParams::new(caps, Implementation::new("toolnexus", "0.1.0"))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> std::result::Result<ElicitResult, rmcp::ErrorData> {
        let Some(wait_for) = &self.wait_for else {
            return Err(rmcp::ErrorData::method_not_found::<ElicitationCreateRequestMethod>());
        };
        tokio::select! {
            r = self.elicit(wait_for, request) => r.map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None)),
            _ = context.ct.cancelled() => Err(rmcp::ErrorData::internal_error("elicitation cancelled", None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_answer_gets_the_defaults_it_left_out() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "note": {"type": "string"}
        }});
        let accepted = answer_to_elicit_result(&serde_json::json!({"ok": true, "data": {"age": 41}})).unwrap();
        assert_eq!(
            with_schema_defaults(accepted, Some(&schema)),
            serde_json::json!({"action": "accept", "content": {"age": 41, "name": "John Doe", "status": "active"}})
        );
        let declined = answer_to_elicit_result(&serde_json::json!({"ok": false, "reason": "declined"})).unwrap();
        assert_eq!(with_schema_defaults(declined.clone(), Some(&schema)), declined);
    }
    use serde_json::json;

    #[test]
    fn form_mode_becomes_an_input_request_with_the_schema() {
        let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]});
        let r = elicitation_to_request(&json!({"message": "Which env?", "requestedSchema": schema})).unwrap();
        let keys: Vec<_> = r.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["id", "kind", "prompt", "data"]);
        assert_eq!(r["kind"], "input");
        assert_eq!(r["prompt"], "Which env?");
        assert_eq!(r["data"], json!({"schema": schema}));
        let id = r["id"].as_str().unwrap();
        let parts: Vec<_> = id.split('-').collect();
        assert_eq!(parts[0], "elc");
        assert!(u128::from_str_radix(parts[1], 36).is_ok());
        assert!(parts[2].parse::<u64>().is_ok());
        let again = elicitation_to_request(&json!({"message": "x"})).unwrap();
        assert_ne!(again["id"], r["id"]);
        assert!(again.get("data").is_none());
        assert_eq!(elicitation_to_request(&json!({"mode": "form", "message": 7})).unwrap()["prompt"], "7");
    }

    #[test]
    fn url_mode_becomes_an_authorization_request() {
        let r = elicitation_to_request(
            &json!({"mode": "url", "message": "Log in", "url": "https://x/a", "requestedSchema": {"type": "object"}}),
        )
        .unwrap();
        assert_eq!(r["kind"], "authorization");
        assert_eq!(r["url"], "https://x/a");
        assert!(r.get("data").is_none());
        let r = elicitation_to_request(&json!({"mode": "url"})).unwrap();
        assert_eq!(r["prompt"], "");
        assert!(r.get("url").is_none());
        assert!(elicitation_to_request(&Value::Null).is_err());
    }

    #[test]
    fn answers_map_to_accept_decline_or_cancel() {
        assert_eq!(
            answer_to_elicit_result(&json!({"id": "a", "ok": true, "data": {"env": "prod"}})).unwrap(),
            json!({"action": "accept", "content": {"env": "prod"}})
        );
        assert_eq!(answer_to_elicit_result(&json!({"ok": true})).unwrap(), json!({"action": "accept", "content": {}}));
        assert_eq!(
            answer_to_elicit_result(&json!({"ok": false, "reason": "declined"})).unwrap(),
            json!({"action": "decline"})
        );
        assert_eq!(
            answer_to_elicit_result(&json!({"ok": false, "reason": "expired"})).unwrap(),
            json!({"action": "cancel"})
        );
        assert_eq!(answer_to_elicit_result(&json!({"ok": false})).unwrap(), json!({"action": "cancel"}));
        assert!(answer_to_elicit_result(&Value::Null).is_err());
    }
}
