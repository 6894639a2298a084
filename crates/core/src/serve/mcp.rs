//! The MCP profile (SPEC §7C): a toolkit's tools served as an MCP server.
//!
//! `tools/list` advertises each exposed tool (its name as it is, its description, its schema and
//! its output schema); `tools/call` runs `Tool::execute` and hands the result back as its content
//! blocks (its text as one block when it has none), its structured content and its metadata, a
//! failed execution included. While a tool runs, its progress and log events reach the client as
//! notifications, and a `pending` it returns is put to the client as an elicitation whose answer
//! runs it again. `logging/setLevel` sets what a client gets; the profile's prompts, resources
//! and templates (`mcp_catalog`) are listed, read, subscribed to and completed. The protocol
//! itself is rmcp's: [`Served`] is its server handler (`mcp_http` serves it over HTTP,
//! `mcp_session` over a host's message transport). A request's answer is a plain JSON body
//! unless something is sent before it, so a client that caps one event (the Python SDK, at
//! 1 MiB) reads a result of any size. A method the server does not offer is `-32601 Method not
//! found`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rmcp::model::{CallToolResult, ContentBlock, ErrorCode, ErrorData, Tool as McpTool};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::callback::SharedCallback;
use crate::error::Result;
use crate::json::truthy;
use crate::lru::Lru;
use crate::serve::mcp_catalog::{Catalog, PromptDef, ResourceDef, TemplateDef};
use crate::serve::mcp_wire::InFlight;
pub(crate) use crate::tool::EventSink;
use crate::tool::{SharedTool, ToolContext, ToolEvent, LOG_LEVELS};
use crate::types::ToolResult;

/// The advertised name when the profile gives none.
pub const DEFAULT_NAME: &str = "toolnexus";
/// The advertised version when the profile gives none.
pub const DEFAULT_VERSION: &str = "0.1.0";

/// The `mcp` serve profile: `{ name?, version?, tools?, prompts?, resources?, resourceTemplates? }`.
#[derive(Deserialize, Default, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct McpServeConfig {
    /// `serverInfo.name`; any value but `null` is its text.
    #[serde(default, deserialize_with = "crate::options::text")]
    pub name: Option<String>,
    /// `serverInfo.version`; any value but `null` is its text.
    #[serde(default, deserialize_with = "crate::options::text")]
    pub version: Option<String>,
    /// The names to expose; `None` exposes every tool.
    #[serde(default, deserialize_with = "name_filter")]
    pub tools: Option<Vec<String>>,
    /// The prompts served (toolnexus addition).
    #[serde(default)]
    pub prompts: Vec<PromptDef>,
    /// The resources served at fixed URIs (toolnexus addition).
    #[serde(default)]
    pub resources: Vec<ResourceDef>,
    /// The resources served through URI templates (toolnexus addition).
    #[serde(default)]
    pub resource_templates: Vec<TemplateDef>,
    /// Whether a served toolkit's skills are offered as prompts and their files as resources
    /// (toolnexus addition; on unless `false`).
    #[serde(default)]
    pub skills: Option<bool>,
    /// The skills offered, when the toolkit has them (set by the server, not an option).
    #[serde(skip)]
    pub skill_offers: Vec<crate::skills::SkillOffer>,
}

/// The `tools` filter as the reference reads it: a falsy value is no filter; an array keeps
/// its string items (others can never equal a name); a string is the set of its characters.
/// Anything else (the reference throws building a set of it) exposes nothing.
fn name_filter<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Vec<String>>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(match v {
        ref falsy if !truthy(falsy) => None,
        Value::Array(items) => Some(
            items
                .into_iter()
                .filter_map(|x| match x {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
        ),
        Value::String(s) => Some(s.chars().map(String::from).collect()),
        _ => Some(Vec::new()),
    })
}

impl McpServeConfig {
    /// The profile from its JSON; anything but an object is the empty profile.
    pub fn from_json(text: &str) -> Result<McpServeConfig> {
        Ok(crate::options::parse_object(text, "mcp")?.unwrap_or_default())
    }

    /// `serverInfo.name`.
    pub fn server_name(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT_NAME)
    }

    /// `serverInfo.version`.
    pub fn server_version(&self) -> &str {
        self.version.as_deref().unwrap_or(DEFAULT_VERSION)
    }
}

/// `buildMcpServer(tools, cfg, onCall)`'s two last arguments as one document (`fn_markers`
/// markers): `{ profile, onCall }`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BuiltJson {
    #[serde(default)]
    profile: Value,
    #[serde(default)]
    on_call: crate::fn_markers::HostFn,
}

/// What `buildMcpServer` is given besides its tools: the profile (anything but an object is the
/// empty one) and `onCall`, unset when falsy and a `TypeError` when called if it is set to
/// something that is not a function.
pub fn built_from_json(text: &str) -> Result<(McpServeConfig, Option<SharedCallback>)> {
    let o: BuiltJson = crate::options::parse_object(text, "buildMcpServer")?.unwrap_or_default();
    let profile = match o.profile {
        Value::Object(_) => McpServeConfig::deserialize(o.profile)
            .map_err(|e| crate::error::Error::Invalid(format!("mcp: invalid profile ({e})")))?,
        _ => McpServeConfig::default(),
    };
    Ok((profile, o.on_call.named("buildMcpServer", "onCall")))
}

/// Whether a tool named `name` is exposed under `cfg`.
pub fn is_exposed(name: &str, cfg: &McpServeConfig) -> bool {
    cfg.tools.as_ref().is_none_or(|names| names.iter().any(|n| n == name))
}

/// The tools `cfg` exposes, in their order: all of them without a filter; with one, those
/// it names (a name that matches no tool is ignored).
pub fn exposed_tools(tools: &[SharedTool], cfg: &McpServeConfig) -> Vec<SharedTool> {
    tools.iter().filter(|t| is_exposed(t.name(), cfg)).cloned().collect()
}

/// The MCP server behind every transport: the tools by name, the advertised identity and the
/// `onCall` observer. Cheap to clone (one per stateless request).
#[derive(Clone)]
pub struct Served {
    pub(crate) inner: Arc<ServedInner>,
}

pub(crate) struct ServedInner {
    pub(crate) tools: Vec<SharedTool>,
    /// Name → position in `tools`; a repeated name is called on its last tool (both are
    /// listed), as the reference's name map does.
    pub(crate) index: HashMap<String, usize>,
    /// The `tools/list` entries, built once.
    pub(crate) listed: Vec<McpTool>,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) on_call: Option<SharedCallback>,
    /// The calls in flight over stateless HTTP, for `notifications/cancelled`.
    pub(crate) in_flight: InFlight,
    /// The prompts, resources and templates served.
    pub(crate) catalog: Catalog,
    /// The request states of 2026-07-28 elicitations already answered.
    pub(crate) answered: Mutex<Lru<()>>,
    /// The resources each client subscribed to (the most recent clients' only).
    pub(crate) subscriptions: Mutex<Lru<std::collections::HashSet<String>>>,
    /// The logging level each client asked for, as a rank in `LOG_LEVELS` (the most recent
    /// clients' only).
    pub(crate) levels: Mutex<Lru<usize>>,
}

impl Served {
    /// A server for `tools` (already filtered) under the profile `cfg`.
    pub fn new(tools: Vec<SharedTool>, cfg: &McpServeConfig, on_call: Option<SharedCallback>) -> Served {
        let mut index = HashMap::with_capacity(tools.len());
        for (i, t) in tools.iter().enumerate() {
            index.insert(t.name().to_string(), i);
        }
        let listed = tools.iter().map(|t| listing(t.as_ref())).collect();
        Served {
            inner: Arc::new(ServedInner {
                tools,
                index,
                listed,
                name: cfg.server_name().to_string(),
                version: cfg.server_version().to_string(),
                on_call,
                in_flight: InFlight::default(),
                levels: Mutex::new(Lru::new(4096)),
                catalog: Catalog {
                    prompts: cfg.prompts.clone(),
                    resources: cfg.resources.clone(),
                    templates: cfg.resource_templates.clone(),
                    skills: if cfg.skills == Some(false) { Vec::new() } else { cfg.skill_offers.clone() },
                },
                subscriptions: Mutex::new(Lru::new(4096)),
                answered: Mutex::new(Lru::new(65_536)),
            }),
        }
    }

    /// Run one `tools/call`: `Ok` with the result (a failed execution is an error result),
    /// `Err` with the JSON-RPC error for a tool that is not served. The tool's progress and log
    /// events go to `caller`; a `pending` it returns is put to the caller as an elicitation when
    /// the caller takes them, and its answer runs the tool again (`ctx.answer`), once per answer,
    /// up to [`MAX_ROUNDS`] times. A caller that cannot answer gets the pending result as it is.
    pub async fn call(
        &self,
        name: &str,
        args: Option<Map<String, Value>>,
        cancel: CancellationToken,
        caller: Option<EventSink>,
    ) -> std::result::Result<ToolResult, ErrorData> {
        self.call_answered(name, args, cancel, caller, None).await
    }

    /// [`Served::call`], its first run given `answer` (an elicitation answered across requests,
    /// as protocol 2026-07-28 does it).
    pub async fn call_answered(
        &self,
        name: &str,
        args: Option<Map<String, Value>>,
        cancel: CancellationToken,
        caller: Option<EventSink>,
        mut answer: Option<Value>,
    ) -> std::result::Result<ToolResult, ErrorData> {
        let Some(tool) = self.inner.index.get(name).and_then(|&i| self.inner.tools.get(i)) else {
            return Err(ErrorData::invalid_params(format!("Unknown tool: {name}"), None));
        };
        let started = Instant::now();
        let args = Value::Object(args.unwrap_or_default());
        let mut round = 0;
        let result = loop {
            let ctx = ToolContext {
                cancel: Some(cancel.clone()),
                events: caller.clone(),
                answer: answer.take(),
                ..ToolContext::default()
            };
            let r = match tool.execute(args.clone(), ctx).await {
                Ok(r) => r,
                Err(e) => ToolResult::error(e.to_string()),
            };
            round += 1;
            let (Some(request), Some(caller)) = (crate::types::pending_of(&r), caller.as_ref()) else { break r };
            if round > MAX_ROUNDS || cancel.is_cancelled() {
                break r;
            }
            let Some(params) = elicitation(request, &r.output, caller.as_ref()) else { break r };
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let schema = params.get("requestedSchema").cloned();
            let asked = tokio::select! {
                asked = caller.request("elicitation/create", params) => asked,
                _ = cancel.cancelled() => break r,
            };
            match asked {
                Ok(reply) => answer = Some(answer_of(id, &reply, schema.as_ref())),
                // A caller that cannot answer gets the pending result, as without elicitation.
                Err(_) => break r,
            }
        };
        if let Some(on_call) = &self.inner.on_call {
            let ms = started.elapsed().as_millis() as u64;
            let event = json!({ "name": tool.name(), "source": tool.source(), "ms": ms, "isError": result.is_error });
            // The observer's failure is its own: the caller still gets the result.
            let _ = on_call.call(event).await;
        }
        Ok(result)
    }

    /// The least severe level the client `who` asked to be sent (`logging/setLevel`); all of
    /// them until it asks.
    fn log_floor(&self, who: &str) -> usize {
        let mut levels = self.inner.levels.lock().unwrap_or_else(PoisonError::into_inner);
        levels.get(who).copied().unwrap_or(0)
    }

    /// What a call's events become for client `who`: progress when it sent `token`, logs at or
    /// above its level.
    pub(crate) fn filter(&self, who: &str, token: Option<Value>) -> Filter {
        Filter { token, floor: self.log_floor(who) }
    }

    /// The clients (by [`client_key`]) subscribed to `uri`.
    pub fn subscribers(&self, uri: &str) -> Vec<String> {
        let subs = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        subs.iter().filter(|(_, uris)| uris.contains(uri)).map(|(k, _)| k.clone()).collect()
    }

    /// The seals of 2026-07-28 elicitations already answered (each is taken once).
    pub(crate) fn answered(&self) -> &Mutex<Lru<()>> {
        &self.inner.answered
    }

    /// The calls in flight over stateless HTTP.
    pub(crate) fn in_flight(&self) -> &InFlight {
        &self.inner.in_flight
    }

    /// Whether resources (fixed or templated) are served.
    pub(crate) fn offers_resources(&self) -> bool {
        self.inner.catalog.offers_resources()
    }
}

/// Who a request came from, as far as a stateless server can tell: its peer's address, its
/// credentials and its session, if any (the key of its logging level).
pub(crate) fn client_of(context: &RequestContext<RoleServer>) -> String {
    client_key(context.extensions.get::<http::request::Parts>())
}

/// [`client_of`] for the parts of an HTTP request (`None`: a connection of its own).
pub(crate) fn client_key(parts: Option<&http::request::Parts>) -> String {
    let Some(parts) = parts else {
        return String::new();
    };
    let header = |name: &str| parts.headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let peer = parts.extensions.get::<crate::serve::mcp_wire::PeerAddr>().map(|p| p.0.ip().to_string());
    json!([peer, header("authorization"), header("mcp-session-id")]).to_string()
}

/// How many times one `tools/call` may run its tool, each run after the first answering the
/// elicitation the one before asked.
pub const MAX_ROUNDS: usize = 10;

/// The `elicitation/create` params that put `request` (a `pending` Request, whose result's text
/// is `text`) to `caller`, or `None` when the caller takes no elicitation. A Request with a
/// `url` is a URL-mode elicitation where the caller offers that mode; otherwise a form with the
/// schema in `data.schema` (an object schema), or none (accept or decline).
pub(crate) fn elicitation(request: &Map<String, Value>, text: &str, caller: &dyn crate::tool::Caller) -> Option<Value> {
    if !caller.offers("elicitation") {
        return None;
    }
    let prompt = crate::types::request_prompt(request);
    let url = request.get("url").and_then(Value::as_str).filter(|u| !u.is_empty());
    if let (Some(url), true) = (url, caller.offers("elicitation.url")) {
        let id = request.get("id").map(crate::json::js_string).unwrap_or_default();
        return Some(json!({ "mode": "url", "message": prompt, "url": url, "elicitationId": id }));
    }
    let schema = match request.get("data").and_then(|d| d.get("schema")) {
        Some(s @ Value::Object(m)) if m.get("type").and_then(Value::as_str) == Some("object") => s.clone(),
        _ => json!({ "type": "object", "properties": {} }),
    };
    // Without URL mode the URL is in the message, as the text result carries it.
    let message = if url.is_some() { text.to_string() } else { prompt };
    Some(json!({ "message": message, "requestedSchema": schema }))
}

/// The Answer an elicitation's result makes for Request `id`: accepted is `ok` with the
/// content as `data` (a field the form's `schema` gives a default and the content leaves out
/// takes that default); declined and cancelled are not `ok`, with that reason.
pub(crate) fn answer_of(id: Value, reply: &Value, schema: Option<&Value>) -> Value {
    match reply.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let mut data = match reply.get("content") {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            if let Some(Value::Object(props)) = schema.and_then(|s| s.get("properties")) {
                for (name, prop) in props {
                    if let (false, Some(default)) = (data.contains_key(name), prop.get("default")) {
                        data.insert(name.clone(), default.clone());
                    }
                }
            }
            json!({ "id": id, "ok": true, "data": data })
        }
        Some("decline") => json!({ "id": id, "ok": false, "reason": "declined" }),
        _ => json!({ "id": id, "ok": false, "reason": "cancelled" }),
    }
}

/// Which of a call's events a client gets, as MCP notifications.
pub(crate) struct Filter {
    token: Option<Value>,
    floor: usize,
}

impl Filter {
    /// The notification (`{ method, params }`) an event makes, if the client gets it.
    pub(crate) fn notification(&self, event: ToolEvent) -> Option<Value> {
        match event {
            ToolEvent::Progress { progress, total, message } => {
                let token = self.token.clone()?;
                let mut p = Map::new();
                p.insert("progressToken".into(), token);
                p.insert("progress".into(), json!(progress));
                if let Some(t) = total {
                    p.insert("total".into(), json!(t));
                }
                if let Some(m) = message {
                    p.insert("message".into(), Value::String(m));
                }
                Some(json!({ "method": "notifications/progress", "params": p }))
            }
            ToolEvent::Log { level, data, logger } => {
                let rank = LOG_LEVELS.iter().position(|l| *l == level).unwrap_or(0);
                if rank < self.floor {
                    return None;
                }
                let mut p = Map::new();
                p.insert("level".into(), Value::String(level));
                if let Some(l) = logger {
                    p.insert("logger".into(), Value::String(l));
                }
                p.insert("data".into(), data);
                Some(json!({ "method": "notifications/message", "params": p }))
            }
            ToolEvent::CloseStream => None,
        }
    }
}

/// A served tool's result as MCP's: its content blocks when it gave them (else its text as one
/// block), its structured content, its error flag and its metadata (`_meta`, under
/// `toolnexus/metadata`). Blocks MCP cannot read make an error result naming the tool.
pub(crate) fn call_result(name: &str, r: ToolResult) -> CallToolResult {
    let (content, structured) = match r.rich {
        Some(rich) => (rich.content, rich.structured),
        None => (None, None),
    };
    let content = match content {
        None => vec![ContentBlock::text(r.output)],
        Some(items) => match serde_json::from_value::<Vec<ContentBlock>>(Value::Array(items)) {
            Ok(blocks) => blocks,
            Err(e) => {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "tool {name} returned content that is not MCP content blocks: {e}"
                ))])
            }
        },
    };
    let mut out = if r.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    out.structured_content = structured;
    if let Some(meta) = r.metadata {
        let mut m = Map::with_capacity(1);
        m.insert("toolnexus/metadata".into(), meta);
        out.meta = Some(rmcp::model::MetaObject(m));
    }
    out
}

/// The client of an rmcp connection (a session over a host's transport, or a request rmcp
/// answers): events go out as notifications in order, requests through the connection's peer.
pub(crate) struct PeerCaller {
    tx: tokio::sync::mpsc::UnboundedSender<Out>,
    /// What the client said it offers in `initialize` (elicitation, its URL mode, sampling).
    offers: [bool; 3],
}

/// What a call sends its client, in order.
pub(crate) enum Out {
    Event(ToolEvent),
    Ask(String, Value, tokio::sync::oneshot::Sender<Result<Value>>),
}

/// The index in a caller's `offers` of what [`Caller::offers`] names.
pub(crate) fn offer_index(what: &str) -> Option<usize> {
    ["elicitation", "elicitation.url", "sampling"].iter().position(|w| *w == what)
}

/// What an MCP client declared it offers: elicitation, its URL mode, sampling.
pub(crate) fn offers_of(capabilities: &Value) -> [bool; 3] {
    let elicitation = capabilities.get("elicitation").filter(|e| e.is_object());
    [
        elicitation.is_some(),
        elicitation.and_then(|e| e.get("url")).is_some_and(Value::is_object),
        capabilities.get("sampling").is_some_and(Value::is_object),
    ]
}

#[async_trait::async_trait]
impl crate::tool::Caller for PeerCaller {
    fn event(&self, event: ToolEvent) {
        let _ = self.tx.send(Out::Event(event));
    }
    fn offers(&self, what: &str) -> bool {
        offer_index(what).is_some_and(|i| self.offers[i])
    }
    async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.tx
            .send(Out::Ask(method.to_string(), params, reply))
            .map_err(|_| crate::error::Error::Invalid(format!("{method}: the call has ended")))?;
        answer.await.map_err(|_| crate::error::Error::Invalid(format!("{method}: the call has ended")))?
    }
}

impl PeerCaller {
    /// A caller for the request `context` answers, and the task that sends what it is told
    /// (ended by [`PeerCaller::finish`]).
    pub(crate) fn start(
        served: &Served,
        context: &RequestContext<RoleServer>,
    ) -> (Arc<PeerCaller>, tokio::task::JoinHandle<()>) {
        let token = context.meta.get_progress_token().and_then(|t| serde_json::to_value(t).ok());
        let filter = served.filter(&client_of(context), token);
        let peer = context.peer.clone();
        let offers = peer
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.capabilities).ok())
            .map(|c| offers_of(&c))
            .unwrap_or_default();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Out>();
        let task = tokio::spawn(async move {
            while let Some(out) = rx.recv().await {
                match out {
                    Out::Event(event) => {
                        let Some(n) = filter.notification(event) else { continue };
                        // A client that left misses what follows; the call still ends as it ends.
                        if let Ok(n) = serde_json::from_value::<rmcp::model::ServerNotification>(n) {
                            let _ = peer.send_notification(n).await;
                        }
                    }
                    Out::Ask(method, params, reply) => {
                        let peer = peer.clone();
                        tokio::spawn(async move {
                            let _ = reply.send(ask_peer(&peer, &method, params).await);
                        });
                    }
                }
            }
        });
        (Arc::new(PeerCaller { tx, offers }), task)
    }
}

/// Put a request to an rmcp connection's client: its result as JSON, or why there is none.
async fn ask_peer(peer: &rmcp::Peer<RoleServer>, method: &str, params: Value) -> Result<Value> {
    let failed = |why: String| crate::error::Error::Invalid(format!("{method}: {why}"));
    let request: rmcp::model::ServerRequest = serde_json::from_value(json!({ "method": method, "params": params }))
        .map_err(|e| failed(format!("not a request MCP knows ({e})")))?;
    let result = peer.send_request(request).await.map_err(|e| failed(e.to_string()))?;
    serde_json::to_value(result).map_err(|e| failed(e.to_string()))
}

/// A tool's `tools/list` entry: its schema when that is an object, the empty object schema
/// otherwise (MCP requires an object).
fn listing(t: &dyn crate::tool::Tool) -> McpTool {
    let schema = match t.input_schema() {
        Value::Object(m) => m.clone(),
        _ => match crate::fn_tool::empty_schema() {
            Value::Object(m) => m,
            _ => Map::new(),
        },
    };
    let mut listed = McpTool::new(t.name().to_string(), t.description().to_string(), schema);
    if let Some(Value::Object(out)) = t.output_schema() {
        listed.output_schema = Some(Arc::new(out.clone()));
    }
    listed
}

/// The answer to a method the server does not offer, in the words of the reference's SDK
/// (rmcp's own names the method instead).
pub(crate) fn not_found() -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "Method not found", None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_from_json() {
        let c = McpServeConfig::from_json(r#"{"name":"gw","version":2,"tools":["a",1,"b"]}"#).unwrap();
        assert_eq!(c.server_name(), "gw");
        assert_eq!(c.server_version(), "2");
        assert_eq!(c.tools, Some(vec!["a".to_string(), "b".to_string()]));
        let c = McpServeConfig::from_json(r#"{"name":null,"tools":null}"#).unwrap();
        assert_eq!((c.server_name(), c.server_version(), c.tools.clone()), (DEFAULT_NAME, DEFAULT_VERSION, None));
        for text in ["null", "[1]", "5", "{}", r#"{"tools":""}"#, r#"{"tools":0}"#, r#"{"tools":false}"#] {
            assert_eq!(McpServeConfig::from_json(text).unwrap().tools, None, "{text}");
        }
        assert_eq!(McpServeConfig::from_json(r#"{"tools":[]}"#).unwrap().tools, Some(vec![]));
        assert_eq!(McpServeConfig::from_json(r#"{"tools":"ab"}"#).unwrap().tools, Some(vec!["a".into(), "b".into()]));
        assert_eq!(McpServeConfig::from_json(r#"{"tools":{"a":true}}"#).unwrap().tools, Some(vec![]));
        assert_eq!(McpServeConfig::from_json(r#"{"name":""}"#).unwrap().server_name(), "");
        assert!(McpServeConfig::from_json("{").unwrap_err().to_string().starts_with("mcp: invalid JSON ("));
    }

    #[test]
    fn results_become_content_blocks() {
        let plain = serde_json::to_value(call_result("t", ToolResult::ok("hi"))).unwrap();
        assert_eq!(plain["content"], json!([{"type": "text", "text": "hi"}]));
        assert!(plain.get("_meta").is_none() && plain.get("structuredContent").is_none());
        let rich = ToolResult::from_value(json!({"output": "o", "isError": false, "metadata": {"m": 1},
            "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}], "structuredContent": {"a": 1}}));
        let v = serde_json::to_value(call_result("t", rich)).unwrap();
        assert_eq!(v["content"][0]["type"], "image");
        assert_eq!(v["structuredContent"], json!({"a": 1}));
        assert_eq!(v["_meta"], json!({"toolnexus/metadata": {"m": 1}}));
        let bad = ToolResult::from_value(json!({"output": "o", "isError": false, "content": [{"type": "x"}]}));
        let v = serde_json::to_value(call_result("t", bad)).unwrap();
        assert_eq!(v["isError"], true);
        assert!(v["content"][0]["text"].as_str().unwrap().starts_with("tool t returned content that is not MCP"));
    }

    #[test]
    fn elicitation_answers() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}, "b": {"type": "integer"}}});
        let a = answer_of(json!("p1"), &json!({"action": "accept", "content": {"b": 2}}), Some(&schema));
        assert_eq!(a, json!({"id": "p1", "ok": true, "data": {"b": 2, "a": "x"}}));
        let a = answer_of(json!("p1"), &json!({"action": "accept", "content": {"a": "given"}}), Some(&schema));
        assert_eq!(a["data"], json!({"a": "given"}));
        assert_eq!(
            answer_of(json!("p"), &json!({"action": "decline"}), None),
            json!({"id": "p", "ok": false, "reason": "declined"})
        );
        assert_eq!(
            answer_of(json!("p"), &json!({"action": "cancel"}), None),
            json!({"id": "p", "ok": false, "reason": "cancelled"})
        );
    }

    #[test]
    fn tool_events_from_json() {
        assert_eq!(
            ToolEvent::from_json(r#"{"progress":1,"total":2,"message":"m"}"#).unwrap(),
            ToolEvent::Progress { progress: 1.0, total: Some(2.0), message: Some("m".into()) }
        );
        assert_eq!(
            ToolEvent::from_json(r#"{"level":"info","data":{"x":1}}"#).unwrap(),
            ToolEvent::Log { level: "info".into(), data: json!({"x": 1}), logger: None }
        );
        for bad in [r#"{"level":"loud","data":1}"#, r#"{"progress":"x"}"#, r#"{}"#, "[]"] {
            let e = ToolEvent::from_json(bad).unwrap_err();
            assert!(matches!(e, crate::error::Error::Type(_)), "{bad}: {e}");
        }
    }

    #[test]
    fn the_filter_keeps_named_tools_in_order() {
        let cfg = McpServeConfig { tools: Some(vec!["b".into(), "nope".into(), "a".into()]), ..Default::default() };
        assert!(is_exposed("a", &cfg) && is_exposed("b", &cfg) && !is_exposed("c", &cfg));
        assert!(is_exposed("anything", &McpServeConfig::default()));
    }
}
