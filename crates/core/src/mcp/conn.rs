//! Connections: a local server is a child process spoken to over stdio, a remote one is reached
//! over streamable HTTP, at protocol 2026-07-28 when the server speaks it (`server/discover`) and
//! with `initialize` otherwise, falling back to the legacy SSE transport only where an old server
//! answers the way the spec says it does (a 4xx other than 401/403 to the POST). Each is an rmcp
//! client session; requests go out raw so every peer answer is read the same lenient way.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Url;
use rmcp::model::ProtocolVersion;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, InputResponses};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, PeerRequestOptions, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransport, StreamableHttpClientTransportConfig};
use rmcp::{Peer, ServiceExt};
use serde_json::Value;
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::config::{expand_env_headers, is_remote};
use super::elicit::Handler;
use super::http::BoundedHttp;
use super::keep::{Keep, LOGIN_TTL_MS};
use super::oauth::ServerAuth;
use super::procs;
use super::sse::SseTransport;
use crate::json::js_string;
use crate::redact::redact_urls;

/// The largest single message accepted from a server, on any transport.
const MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;
/// How long `close()` lets a server exit on its own before its process group is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

pub(crate) type Session = RunningService<RoleClient, Handler>;

/// What a request gave back: the peer's result as raw JSON, or the text of the failure.
pub(crate) type Answer = Result<Value, String>;

/// Where a call parked on the question `id` of the server `server` keeps its retry.
fn input_key(server: &str, id: &str) -> String {
    format!("input {server} {id}")
}

/// The text the reference's MCP SDK gives each way a request can fail.
pub(crate) fn service_error(e: ServiceError) -> String {
    match e {
        ServiceError::McpError(d) => format!("MCP error {}: {}", d.code.0, d.message),
        ServiceError::Timeout { .. } => "MCP error -32001: Request timed out".into(),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) | ServiceError::Cancelled { .. } => {
            "MCP error -32000: Connection closed".into()
        }
        other => other.to_string(),
    }
}

/// The text of a failed handshake, in the reference SDK's words where it has them.
fn init_error(e: ClientInitializeError) -> String {
    init_error_ref(&e)
}

/// A local server's child process, started as the leader of its own process group so the
/// whole tree can be ended at once (see `procs` for how the group ends with the host). Dropping
/// it kills the group.
pub(crate) struct ChildGroup {
    child: tokio::sync::Mutex<Option<Child>>,
    watcher: tokio::sync::Mutex<Option<Child>>,
    pgid: Option<u32>,
    slot: Option<usize>,
    /// On Windows, the job the server's tree runs in.
    #[cfg_attr(not(windows), allow(dead_code))]
    tree: procs::Tree,
    killed: AtomicBool,
}

impl ChildGroup {
    /// The server's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pgid
    }

    fn kill_group(&self) {
        if self.killed.swap(true, Ordering::SeqCst) {
            return;
        }
        #[cfg(unix)]
        if let Some(pgid) = self.pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
            // SAFETY: killpg only sends a signal; a group that no longer exists gives ESRCH.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        #[cfg(windows)]
        if let Some(job) = &self.tree {
            job.terminate();
        }
        procs::release(self.slot);
    }

    /// Let the server exit on its own (its stdin is closed by now), then end whatever is left of
    /// its group (the watcher included) and reap them.
    async fn shutdown(&self) {
        let child = self.child.lock().await.take();
        match child {
            Some(mut c) => {
                let _ = tokio::time::timeout(CLOSE_GRACE, c.wait()).await;
                self.kill_group();
                let _ = c.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(1), c.wait()).await;
            }
            None => self.kill_group(),
        }
        let watcher = self.watcher.lock().await.take();
        if let Some(mut w) = watcher {
            let _ = w.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(1), w.wait()).await;
        }
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        // The child handles themselves are `kill_on_drop`, and tokio reaps them.
        self.kill_group();
    }
}

fn spawn_error(program: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("spawn {program} ENOENT"),
        std::io::ErrorKind::PermissionDenied => format!("spawn {program} EACCES"),
        _ => format!("spawn {program}: {e}"),
    }
}

/// Start `command[0]` with `command[1..]`, the process environment plus `environment` (or its
/// alias `env`), in `cwd`; stdin and stdout piped for the protocol, stderr discarded.
fn spawn_local(cfg: &Value) -> Result<(ChildGroup, ChildStdout, ChildStdin), String> {
    let argv: Vec<String> = match cfg.get("command") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(|| "command must be an array of strings".to_string()))
            .collect::<Result<_, _>>()?,
        Some(Value::String(_)) => return Err("command must be an array of strings".into()),
        _ => return Err("local.command is not iterable".into()),
    };
    let Some((program, args)) = argv.split_first() else {
        return Err("The \"file\" argument must be of type string. Received undefined".into());
    };
    let set = |k: &str| cfg.get(k).filter(|v| !v.is_null());
    let env: Vec<(String, String)> = match set("environment").or_else(|| set("env")) {
        Some(Value::Object(extra)) => extra.iter().map(|(k, v)| (k.clone(), js_string(v))).collect(),
        _ => Vec::new(),
    };
    let cwd = match set("cwd") {
        None => None,
        Some(Value::String(dir)) => Some(std::path::PathBuf::from(dir)),
        Some(_) => return Err("The \"options.cwd\" property must be of type string".into()),
    };
    // On Windows a bare name is found with PATHEXT and a `.cmd` shim (`npx`) runs through cmd.exe.
    let launch = crate::proc::command::for_platform(program, args, &env, cwd.as_deref())?;
    let mut cmd = crate::proc::command::command(&launch);
    cmd.envs(env);
    if let Some(dir) = &cwd {
        cmd.current_dir(dir);
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let procs::Spawned { mut child, watcher, slot, tree } = procs::spawn(cmd).map_err(|e| spawn_error(program, &e))?;
    let pgid = child.id();
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let group = ChildGroup {
        child: tokio::sync::Mutex::new(Some(child)),
        watcher: tokio::sync::Mutex::new(watcher),
        pgid,
        slot,
        tree,
        killed: AtomicBool::new(false),
    };
    match (stdout, stdin) {
        (Some(out), Some(inp)) => Ok((group, out, inp)),
        _ => Err(format!("spawn {program}: no stdio")),
    }
}

/// Headers for a remote server, `${ENV}` placeholders expanded.
fn remote_headers(cfg: &Value) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    let Some(expanded) = expand_env_headers(cfg.get("headers")).map_err(|e| e.to_string())? else { return Ok(map) };
    for (k, v) in expanded {
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| format!("Invalid header name: {k}"))?;
        // The value is a secret more often than not: never echo it.
        let value = HeaderValue::from_str(v.as_str().unwrap_or_default())
            .map_err(|_| format!("Invalid value for header {k}"))?;
        map.append(name, value);
    }
    Ok(map)
}

/// What must live exactly as long as a session: the local server's process group, or the
/// lifetime of the remote server's HTTP requests. Dropping it ends them.
pub(crate) struct Resources {
    child: Option<ChildGroup>,
    http: Option<DropGuard>,
    auth: Option<Arc<ServerAuth>>,
}

/// Open a session with the server `name`.
pub(crate) async fn connect(name: &str, cfg: &Value, handler: Handler) -> Result<(Session, Resources), String> {
    if is_remote(cfg)? {
        let (session, http, auth) = connect_remote(name, cfg, handler).await?;
        return Ok((session, Resources { child: None, http, auth }));
    }
    // The group lives in this future: if the connect is abandoned (timeout, abort), dropping
    // the future kills the server.
    let (group, stdout, stdin) = spawn_local(cfg)?;
    let transport = AsyncRwTransport::<RoleClient, _, _>::new(stdout, stdin).with_max_line_length(MAX_MESSAGE_BYTES);
    let session = handler.serve(transport).await.map_err(init_error)?;
    Ok((session, Resources { child: Some(group), http: None, auth: None }))
}

type Remote = (Session, Option<DropGuard>, Option<Arc<ServerAuth>>);

async fn connect_remote(name: &str, cfg: &Value, handler: Handler) -> Result<Remote, String> {
    let text = match cfg.get("url") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => js_string(v),
        None => "undefined".into(),
    };
    let url = Url::parse(&text).map_err(|_| "Invalid URL".to_string())?;
    let headers = remote_headers(cfg)?;
    let auth = ServerAuth::for_server(
        name,
        &url,
        cfg,
        headers.contains_key(reqwest::header::AUTHORIZATION),
        handler.wait_for.clone(),
        handler.token.clone(),
        handler.store.as_deref(),
    )?;
    // The transport sets these itself.
    let reserved = ["accept", "mcp-session-id", "last-event-id"];
    let custom: HashMap<HeaderName, HeaderValue> =
        headers.iter().filter(|(k, _)| !reserved.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
        .custom_headers(custom)
        .max_json_response_size(MAX_MESSAGE_BYTES)
        .max_sse_event_size(MAX_MESSAGE_BYTES);
    let start = |lifecycle: ClientLifecycleMode| {
        let modern = matches!(lifecycle, ClientLifecycleMode::Discover { .. });
        let (mut handler, config, auth) = (handler.clone(), config.clone(), auth.clone());
        handler.modern = modern;
        async move {
            let lifetime = CancellationToken::new();
            let guard = lifetime.clone().drop_guard();
            let client = BoundedHttp::new(lifetime, auth).map_err(ClientInitializeError::ConnectionClosed)?;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            ClientServiceExt::serve_with_lifecycle(handler, transport, lifecycle).await.map(|s| (s, guard))
        }
    };
    // `initialize` first, as every server before protocol 2026-07-28 expects; a server that
    // speaks only 2026-07-28 refuses it naming the versions it speaks, and is then reached with
    // `server/discover`.
    let first = match start(ClientLifecycleMode::Initialize).await {
        Ok((session, guard)) => return Ok((session, Some(guard), auth)),
        Err(e) => e,
    };
    let first = if offers_discover(&first) {
        let discover = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        match start(discover).await {
            Ok((session, guard)) => return Ok((session, Some(guard), auth)),
            Err(e) => e,
        }
    } else {
        first
    };
    let why = start_error(&first);
    if let Some(failure) = auth.as_ref().and_then(|a| a.failure()) {
        return Err(format!("{why}; signing in failed: {failure}"));
    }
    if !legacy_answer(&first) {
        return Err(why);
    }
    let sse =
        SseTransport::connect(url, headers).await.map_err(|e| format!("{why}; then the legacy SSE transport: {e}"))?;
    handler
        .serve(sse)
        .await
        .map(|s| (s, None, None))
        .map_err(|e| format!("{why}; then the legacy SSE transport: {}", init_error(e)))
}

/// Whether a refused `initialize` names protocol 2026-07-28 among the versions the server speaks.
fn offers_discover(e: &ClientInitializeError) -> bool {
    let ClientInitializeError::JsonRpcError(d) = e else { return false };
    let supported = d.data.as_ref().and_then(|v| v.get("supported")).and_then(Value::as_array);
    supported.is_some_and(|list| list.iter().any(|v| v.as_str() == Some(ProtocolVersion::V_2026_07_28.as_str())))
}

/// The streamable-HTTP error behind a failed start, if that is what it was.
fn http_error(
    e: &ClientInitializeError,
) -> Option<&rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>> {
    let error = match e {
        ClientInitializeError::TransportError { error, .. } => error,
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => return http_error(fallback),
        _ => return None,
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(current) = source {
        if let Some(found) = current.downcast_ref() {
            return Some(found);
        }
        source = current.source();
    }
    None
}

/// Whether the server answered the start the way an old HTTP+SSE server does: a 4xx other than
/// 401 and 403 to the POST (400, 404, 405...). Anything else (authorization required, a JSON-RPC
/// error, no answer at all) is the answer itself: trying SSE would only hide it.
fn legacy_answer(e: &ClientInitializeError) -> bool {
    use rmcp::transport::streamable_http_client::StreamableHttpError as H;
    match http_error(e) {
        Some(H::UnexpectedServerResponse(text)) => {
            let status = text.strip_prefix("HTTP ").and_then(|t| t.get(..3)).and_then(|c| c.parse::<u16>().ok());
            status.is_some_and(|s| (400..500).contains(&s) && s != 401 && s != 403)
        }
        Some(H::UnexpectedContentType(_) | H::ServerDoesNotSupportSse) => true,
        _ => false,
    }
}

/// Why a remote server could not be started, in words that name the cause: authorization it
/// requires (and where its metadata is), the versions it speaks, what it answered.
fn start_error(e: &ClientInitializeError) -> String {
    if let Some(challenge) = e.auth_challenge() {
        let metadata = challenge_param(challenge, "resource_metadata");
        let status = match http_error(e) {
            Some(rmcp::transport::streamable_http_client::StreamableHttpError::InsufficientScope(_)) => 403,
            _ => 401,
        };
        return match metadata {
            Some(url) => format!(
                "authorization required: the server answered HTTP {status} (WWW-Authenticate: {challenge}); its protected-resource metadata is at {url}"
            ),
            None => format!("authorization required: the server answered HTTP {status} (WWW-Authenticate: {challenge})"),
        };
    }
    if e.is_authorization_required() {
        return format!("authorization required: {e}");
    }
    if let Some(h) = http_error(e) {
        use rmcp::transport::streamable_http_client::StreamableHttpError as H;
        return match h {
            H::HttpStatus(s) => format!("the server answered HTTP {}", s.status),
            H::UnexpectedServerResponse(text) => match text.strip_prefix("HTTP ") {
                Some(rest) => format!("the server answered HTTP {rest}"),
                None => format!("the server answered: {text}"),
            },
            H::Client(c) => format!("the server could not be reached: {}", crate::error::with_causes(c)),
            other => crate::error::with_causes(other),
        };
    }
    match e {
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => start_error(fallback),
        ClientInitializeError::JsonRpcError(d) => match d.data.as_ref().and_then(|v| v.get("supported")) {
            Some(versions) => format!(
                "MCP error {}: {} (the server speaks protocol {})",
                d.code.0,
                d.message,
                crate::json::to_string(versions)
            ),
            None => format!("MCP error {}: {}", d.code.0, d.message),
        },
        other => init_error_ref(other),
    }
}

/// One parameter of a `WWW-Authenticate` challenge (quoted or bare).
fn challenge_param(challenge: &str, name: &str) -> Option<String> {
    let at = challenge.to_ascii_lowercase().find(&format!("{name}="))?;
    let rest = &challenge[at + name.len() + 1..];
    let value = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    Some(value.to_string())
}

fn init_error_ref(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::ConnectionClosed(_) => "MCP error -32000: Connection closed".into(),
        ClientInitializeError::JsonRpcError(d) => format!("MCP error {}: {}", d.code.0, d.message),
        other => other.to_string(),
    }
}

/// One live server: the session, a handle to send through, and what the session runs on.
pub(crate) struct Connection {
    peer: Peer<RoleClient>,
    session: tokio::sync::Mutex<Option<Session>>,
    child: Option<ChildGroup>,
    http: std::sync::Mutex<Option<DropGuard>>,
    auth: Option<Arc<ServerAuth>>,
    /// The session's client side: the host's `waitFor` for a server's questions.
    handler: Handler,
    /// Where a call that parked on a server's question keeps what its retry needs.
    keep: Keep,
}

/// How many times one tool call may come back "input required" before it is given up.
const MAX_INPUT_ROUNDS: usize = 10;

/// How a tool call ended.
pub(crate) enum CallOutcome {
    /// The server's result, as raw JSON.
    Done(Value),
    /// The call parks on this Request: a login, or a question of the server's for a person.
    Park(Value),
    Failed(String),
}

/// What was done with one of a server's questions.
enum Input {
    Answered(Value),
    /// Nobody here can answer it now: the call parks on this Request.
    Ask(Value),
    Refused(String),
}

impl Connection {
    pub(crate) fn new(session: Session, resources: Resources) -> Self {
        let handler = session.service().clone();
        Connection {
            peer: session.peer().clone(),
            keep: Keep::new(handler.store.as_deref()),
            handler,
            session: tokio::sync::Mutex::new(Some(session)),
            child: resources.child,
            http: std::sync::Mutex::new(resources.http),
            auth: resources.auth,
        }
    }

    /// The local server's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(ChildGroup::pid)
    }

    /// Send one request and wait for its result as raw JSON, bounded by `timeout` and by
    /// `cancel` (which tells the server the request is abandoned). The request carries a
    /// `progressToken`, and each `notifications/progress` for it starts `timeout` afresh (the
    /// reference asks its SDK for `resetTimeoutOnProgress`): a long call that reports progress
    /// is not cut off. A failure's text never
    /// quotes a URL's credentials.
    pub(crate) async fn request(
        &self,
        req: ClientRequest,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> Answer {
        self.send(req, timeout, cancel).await.map_err(|(m, _)| self.failure_text(m))
    }

    /// A `tools/call` of the server `server`. It may park instead: on a login (the server wants
    /// a person to sign in and there is no `waitFor` to ask one), or on a question the server
    /// asks in the call's result (protocol 2026-07-28, "input required") that no `waitFor` is
    /// there to answer. A question `waitFor` answers, or one this client answers itself
    /// (`roots/list`: none), goes back with the call retried, up to [`MAX_INPUT_ROUNDS`] times.
    pub(crate) async fn call_tool(
        &self,
        server: &str,
        mut params: CallToolRequestParams,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> CallOutcome {
        for _ in 0..MAX_INPUT_ROUNDS {
            let req = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let result = match self.send(req, timeout, cancel).await {
                Ok(v) => v,
                Err((m, id)) => {
                    let login = id.zip(self.auth.as_ref()).and_then(|(id, auth)| auth.take_parked(&id));
                    return match login {
                        Some(request) => CallOutcome::Park(request),
                        None => CallOutcome::Failed(self.failure_text(m)),
                    };
                }
            };
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return CallOutcome::Done(result);
            }
            let state = result.get("requestState").and_then(Value::as_str).map(str::to_string);
            let mut responses = InputResponses::new();
            if let Some(Value::Object(requests)) = result.get("inputRequests") {
                for (key, request) in requests {
                    match self.answer_input(request).await {
                        Input::Answered(v) => {
                            responses.insert(key.clone(), v);
                        }
                        Input::Ask(ask) => {
                            let id = ask.get("id").and_then(Value::as_str).unwrap_or_default();
                            let params = request.get("params").cloned().unwrap_or(Value::Null);
                            let record = serde_json::json!({
                                "key": key, "params": params, "requestState": state, "responses": responses,
                            });
                            let kept = self.keep.put(&input_key(server, id), &record, Some(LOGIN_TTL_MS)).await;
                            return match kept {
                                Ok(()) => CallOutcome::Park(ask),
                                Err(e) => CallOutcome::Failed(e),
                            };
                        }
                        Input::Refused(m) => return CallOutcome::Failed(m),
                    }
                }
            }
            params.input_responses = Some(responses);
            params.request_state = state;
        }
        CallOutcome::Failed(format!(
            "the server answered \"input required\" {MAX_INPUT_ROUNDS} times without finishing the call"
        ))
    }

    /// One of a server's questions: an elicitation goes to `waitFor` (or parks the call when
    /// there is none); `roots/list` is answered with no roots; anything else is refused.
    async fn answer_input(&self, request: &Value) -> Input {
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        match request.get("method").and_then(Value::as_str).unwrap_or_default() {
            "elicitation/create" => match &self.handler.wait_for {
                Some(wait_for) => match self.handler.ask(wait_for, &params).await {
                    Ok(v) => Input::Answered(v),
                    Err(e) => Input::Refused(e.to_string()),
                },
                None => match super::elicit::elicitation_to_request(&params) {
                    Ok(ask) => Input::Ask(ask),
                    Err(e) => Input::Refused(e.to_string()),
                },
            },
            "roots/list" => Input::Answered(serde_json::json!({"roots": []})),
            other => Input::Refused(format!("the server asked for {other}, which this client does not answer")),
        }
    }

    /// The retry a parked call's `answer` makes, when it answers a question this server asked:
    /// the answers so far with this one, and the server's `requestState`. Taken once.
    pub(crate) async fn resume_input(
        &self,
        server: &str,
        answer: &Value,
    ) -> Result<Option<(InputResponses, Option<String>)>, String> {
        let Some(id) = answer.get("id").and_then(Value::as_str) else { return Ok(None) };
        let Some(record) = self.keep.take(&input_key(server, id)).await? else { return Ok(None) };
        let mut responses: InputResponses =
            record.get("responses").cloned().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
        let key = record.get("key").and_then(Value::as_str).unwrap_or_default().to_string();
        let params = record.get("params").cloned().unwrap_or(Value::Null);
        let result = super::elicit::elicit_result(&params, answer).map_err(|e| e.to_string())?;
        responses.insert(key, result);
        let state = record.get("requestState").and_then(Value::as_str).map(str::to_string);
        Ok(Some((responses, state)))
    }

    /// This server's sign-in, when it has one.
    pub(crate) fn auth(&self) -> Option<&Arc<ServerAuth>> {
        self.auth.as_ref()
    }

    fn failure_text(&self, m: String) -> String {
        // A request the server refused for want of a sign-in that could not be had says so.
        let m = match self.auth.as_ref().and_then(|a| a.failure()) {
            Some(failure) if m == "MCP error -32000: Connection closed" => {
                format!("authorization required: signing in to the server failed: {failure}")
            }
            _ => m,
        };
        redact_urls(&m).into_owned()
    }

    /// Send and wait; a failure names the request's JSON-RPC id once it had one.
    async fn send(
        &self,
        req: ClientRequest,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, (String, Option<String>)> {
        let handle = self
            .peer
            .send_request_with_option(req, PeerRequestOptions::with_timeout(timeout).reset_timeout_on_progress())
            .await
            .map_err(|e| (service_error(e), None))?;
        let (id, peer) = (handle.id.clone(), handle.peer.clone());
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        let result = tokio::select! {
            r = handle.await_response() => r.map_err(|e| (service_error(e), Some(id.to_string())))?,
            _ = cancel.cancelled() => {
                let note = rmcp::model::CancelledNotification::new(rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("This operation was aborted".into()),
                ));
                let _ = tokio::time::timeout(Duration::from_secs(1), peer.send_notification(note.into())).await;
                return Err(("This operation was aborted".into(), None));
            }
        };
        // Whatever variant rmcp read it as, the wire fields are what the mapping reads.
        serde_json::to_value(&result).map_err(|e| (e.to_string(), None))
    }

    /// End the session and the server. Idempotent.
    pub(crate) async fn close(&self) {
        let session = self.session.lock().await.take();
        if let Some(mut s) = session {
            let _ = s.close_with_timeout(CLOSE_GRACE).await;
        }
        // Ends whatever HTTP request is still pending (a session DELETE the server never answers).
        drop(self.http.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take());
        if let Some(c) = &self.child {
            c.shutdown().await;
        }
    }
}
