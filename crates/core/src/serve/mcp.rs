//! The MCP profile (SPEC §7C): a toolkit's tools served as an MCP server.
//!
//! `tools/list` advertises each exposed tool (its name as it is, its description and its
//! schema); `tools/call` runs `Tool::execute` and hands the result back as one text part, a
//! failed execution included; nothing else of MCP is offered. The protocol itself is rmcp's:
//! [`Served`] is its server handler, [`McpProfile::handle`] its streamable-HTTP server side
//! run statelessly (each request is answered by a server of its own, no session) behind
//! `mcp_wire` (what the transport asks that rmcp's stateless side leaves out: parse errors,
//! batches, cancellation), and `mcp_session` runs the same handler over a host's message
//! transport. A request's answer is a plain JSON body, never an event stream: nothing is sent
//! before it, and a client that caps one event (the Python SDK, at 1 MiB) reads a result of
//! any size. A method the server does not offer is `-32601 Method not found`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult, ContentBlock,
    CustomRequest, CustomResult, ErrorCode, ErrorData, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    Tool as McpTool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::callback::SharedCallback;
use crate::error::Result;
use crate::json::truthy;
use crate::serve::mcp_wire::{plain, rpc_error, CallKey, InFlight};
use crate::tool::{SharedTool, ToolContext};
use crate::types::ToolResult;

/// A response body (the same type as `serve::Body`, spelled out: `serve/mod.rs` imports this
/// file, so this file does not import it back).
type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The advertised name when the profile gives none.
pub const DEFAULT_NAME: &str = "toolnexus";
/// The advertised version when the profile gives none.
pub const DEFAULT_VERSION: &str = "0.1.0";

/// The `mcp` serve profile: `{ name?, version?, tools? }`.
#[derive(Deserialize, Default, Clone, Debug, PartialEq)]
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

/// `buildMcpServer(tools, cfg, onCall)`'s two last arguments as one document (`hostfn`
/// markers): `{ profile, onCall }`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BuiltJson {
    #[serde(default)]
    profile: Value,
    #[serde(default)]
    on_call: crate::hostfn::HostFn,
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
    inner: Arc<ServedInner>,
}

struct ServedInner {
    tools: Vec<SharedTool>,
    /// Name → position in `tools`; a repeated name is called on its last tool (both are
    /// listed), as the reference's name map does.
    index: HashMap<String, usize>,
    /// The `tools/list` entries, built once.
    listed: Vec<McpTool>,
    name: String,
    version: String,
    on_call: Option<SharedCallback>,
    /// The calls in flight over stateless HTTP, for `notifications/cancelled`.
    in_flight: InFlight,
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
            }),
        }
    }

    /// Run one `tools/call`: `Ok` with the result (a failed execution is an error result),
    /// `Err` with the JSON-RPC error for a tool that is not served.
    pub async fn call(
        &self,
        name: &str,
        args: Option<Map<String, Value>>,
        cancel: CancellationToken,
    ) -> std::result::Result<ToolResult, ErrorData> {
        let Some(tool) = self.inner.index.get(name).and_then(|&i| self.inner.tools.get(i)) else {
            return Err(ErrorData::invalid_params(format!("Unknown tool: {name}"), None));
        };
        let started = Instant::now();
        let args = Value::Object(args.unwrap_or_default());
        let ctx = ToolContext { cancel: Some(cancel), ..ToolContext::default() };
        let result = match tool.execute(args, ctx).await {
            Ok(r) => r,
            Err(e) => ToolResult::error(e.to_string()),
        };
        if let Some(on_call) = &self.inner.on_call {
            let ms = started.elapsed().as_millis() as u64;
            let event = json!({ "name": tool.name(), "source": tool.source(), "ms": ms, "isError": result.is_error });
            // The observer's failure is its own: the caller still gets the result.
            let _ = on_call.call(event).await;
        }
        Ok(result)
    }
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
    McpTool::new(t.name().to_string(), t.description().to_string(), schema)
}

/// The answer to a method the server does not offer, in the words of the reference's SDK
/// (rmcp's own names the method instead).
fn not_found() -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "Method not found", None)
}

impl ServerHandler for Served {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new(self.inner.name.clone(), self.inner.version.clone());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.listed.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        // Over stateless HTTP, a `notifications/cancelled` arrives on a POST of its own:
        // the call is findable by who sent it and its id until it ends.
        let _registered = context.extensions.get::<http::request::Parts>().and_then(|parts| {
            let id = serde_json::to_value(&context.id).ok()?;
            Some(self.inner.in_flight.register(CallKey::new(parts, &id), context.ct.clone()))
        });
        let r = self.call(&request.name, request.arguments, context.ct.clone()).await?;
        let content = vec![ContentBlock::text(r.output)];
        Ok(if r.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) }.into())
    }

    async fn on_custom_request(
        &self,
        _request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CustomResult, ErrorData> {
        Err(not_found())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CompleteResult, ErrorData> {
        Err(not_found())
    }

    // Logging is deprecated in rmcp; a client may still ask for it.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        Err(not_found())
    }

    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetPromptResponse, ErrorData> {
        Err(not_found())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListPromptsResult, ErrorData> {
        Err(not_found())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        Err(not_found())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        Err(not_found())
    }

    async fn read_resource(
        &self,
        _request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        Err(not_found())
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        Err(not_found())
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        Err(not_found())
    }
}

/// The MCP profile of an HTTP server: answers the requests to `/mcp`.
#[derive(Clone)]
pub struct McpProfile {
    service: StreamableHttpService<Served, NeverSessionManager>,
    /// The server behind `service` (its calls in flight).
    served: Served,
    /// Fired by [`McpProfile::shutdown`]: ends open event streams and requests in flight.
    stop: CancellationToken,
    /// Fired by [`McpProfile::end_streams`] (and by `stop`): ends open event streams only.
    streams: CancellationToken,
}

impl McpProfile {
    /// The profile serving `tools` (already filtered with [`exposed_tools`]).
    pub fn new(tools: Vec<SharedTool>, cfg: McpServeConfig, on_call: Option<SharedCallback>) -> McpProfile {
        let served = Served::new(tools, &cfg, on_call);
        let stop = CancellationToken::new();
        // Any Host is answered (a server bound to every interface is reached by its LAN
        // address) and Origin is the HTTP server's to check; the caller caps the body.
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_max_request_body_bytes(usize::MAX)
            .with_cancellation_token(stop.clone());
        let factory = served.clone();
        let service =
            StreamableHttpService::new(move || Ok(factory.clone()), Arc::new(NeverSessionManager::default()), config);
        let streams = stop.child_token();
        McpProfile { service, served, stop, streams }
    }

    /// End the event streams still open (they carry nothing; the server is stopping), and let
    /// requests in flight finish.
    pub fn end_streams(&self) {
        self.streams.cancel();
    }

    /// End the event streams still open and the requests still running (the server stops).
    pub fn shutdown(&self) {
        self.stop.cancel();
    }

    /// One HTTP request to `/mcp` (its body already read and capped by the caller).
    ///
    /// POST is MCP's, checked by `mcp_wire` and answered by rmcp's stateless server side
    /// (a batch one message at a time). The rest is what the
    /// reference's stateless transport answers: GET opens an event stream (nothing is ever
    /// sent on it; it ends when the client leaves or the server stops), or is refused with
    /// 406 without `text/event-stream` in `Accept`; DELETE is 200 (there is no session to
    /// end); any other method is 405.
    pub async fn handle(&self, req: http::Request<Bytes>) -> http::Response<Body> {
        match *req.method() {
            http::Method::POST => {
                crate::serve::mcp_wire::post(req, &self.served.inner.in_flight, |r| self.service.handle(r)).await
            }
            http::Method::GET => {
                let accepts_stream = req
                    .headers()
                    .get_all(http::header::ACCEPT)
                    .iter()
                    .any(|v| v.to_str().is_ok_and(|v| v.contains("text/event-stream")));
                if !accepts_stream {
                    return rpc_error(
                        406,
                        ErrorCode(-32000),
                        "Not Acceptable: Client must accept text/event-stream",
                        None,
                    );
                }
                self.idle_stream()
            }
            http::Method::DELETE => plain(200),
            _ => rpc_error(405, ErrorCode(-32000), "Method not allowed.", Some("GET, POST, DELETE")),
        }
    }

    /// An event stream that carries nothing and ends when the server stops.
    fn idle_stream(&self) -> http::Response<Body> {
        let stop = self.streams.clone();
        let never = futures::stream::once(async move {
            stop.cancelled_owned().await;
        })
        .filter_map(|()| async { None::<std::result::Result<hyper::body::Frame<Bytes>, Infallible>> });
        http::Response::builder()
            .status(200)
            .header(http::header::CONTENT_TYPE, "text/event-stream")
            .header(http::header::CACHE_CONTROL, "no-cache, no-transform")
            .header("x-accel-buffering", "no")
            .body(BodyExt::boxed(StreamBody::new(never)))
            .unwrap_or_else(|_| plain(500))
    }
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
    fn the_filter_keeps_named_tools_in_order() {
        let cfg = McpServeConfig { tools: Some(vec!["b".into(), "nope".into(), "a".into()]), ..Default::default() };
        assert!(is_exposed("a", &cfg) && is_exposed("b", &cfg) && !is_exposed("c", &cfg));
        assert!(is_exposed("anything", &McpServeConfig::default()));
    }
}
