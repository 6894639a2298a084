//! The MCP profile of an HTTP server: the requests to `/mcp`. POST is MCP's, checked by
//! `mcp_wire`; a `tools/call` of the revisions before 2026-07-28 is answered by `mcp_call` (so
//! it can ask its client), anything else by rmcp's streamable-HTTP server side run statelessly
//! (each request answered by a server of its own, no session).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use rmcp::model::ErrorCode;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use serde_json::Value;

use crate::callback::SharedCallback;
use crate::lru::Lru;
use crate::serve::mcp::{client_key, offers_of};
use crate::serve::mcp::{McpServeConfig, Served};
use crate::serve::mcp_stream::Streams;
use crate::serve::mcp_wire::{plain, rpc_error};
use crate::tool::SharedTool;

/// A response body (the same type as `serve::Body`).
type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The most sessions remembered; beyond it the least recently used are forgotten (their
/// clients are still answered, as any client without a session is).
pub const MAX_SESSIONS: usize = 10_000;

/// A fresh session id: 128 random bits in hex.
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    rand::Rng::fill(&mut rand::rng(), &mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
    /// The requests the calls answered here put to their clients, awaiting answers.
    replies: Arc<crate::serve::mcp_call::Replies>,
    /// The event streams of those calls, kept for their clients to resume.
    kept: Arc<Streams>,
    /// The event streams clients opened with GET, by client ([`client_key`]): where a
    /// resource's update notifications go.
    listeners: Arc<Mutex<HashMap<String, Vec<tokio::sync::mpsc::Sender<Bytes>>>>>,
    /// The sessions handed out at `initialize`, with what each client offers (the most recent
    /// ones only). A request is answered with or without one, as statelessly.
    sessions: Arc<Mutex<Lru<[bool; 3]>>>,
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
        McpProfile {
            service,
            served,
            stop,
            streams,
            replies: Arc::default(),
            kept: Arc::default(),
            listeners: Arc::default(),
            sessions: Arc::new(Mutex::new(Lru::new(MAX_SESSIONS))),
        }
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
    /// POST is MCP's, checked by `mcp_wire` and answered as [`McpProfile::route`] says (a batch
    /// one message at a time). GET with `Last-Event-ID` resumes a call's event stream
    /// (`mcp_stream`); GET without one opens an event stream that carries nothing (it ends when
    /// the client leaves or the server stops), as the reference's stateless transport does;
    /// either is refused with 406 without `text/event-stream` in `Accept`. DELETE ends the
    /// session it names, if any, and is 200; any other method is 405.
    pub async fn handle(&self, req: http::Request<Bytes>) -> http::Response<Body> {
        match *req.method() {
            http::Method::POST => crate::serve::mcp_wire::post(req, self.served.in_flight(), |r| self.route(r)).await,
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
                let (parts, _) = req.into_parts();
                let last = parts.headers.get("last-event-id").and_then(|v| v.to_str().ok());
                let who = client_key(Some(&parts));
                if let Some((log, from)) = last.and_then(|id| self.kept.resume(id, &who)) {
                    return crate::serve::mcp_stream::reader(log, from, false, self.stop.clone(), None);
                }
                self.listening_stream(who)
            }
            http::Method::DELETE => {
                if let Some(id) = req.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                    self.lock_sessions().remove(id);
                }
                plain(200)
            }
            _ => rpc_error(405, ErrorCode(-32000), "Method not allowed.", Some("GET, POST, DELETE")),
        }
    }

    /// Where one message POSTed to `/mcp` is answered: a `tools/call` of the revisions before
    /// 2026-07-28 here (`mcp_call`), a client's answer to a request of ours by the call that
    /// asked, anything else by rmcp's stateless server.
    async fn route(&self, r: http::Request<http_body_util::Full<Bytes>>) -> http::Response<Body> {
        if let Some(crate::serve::mcp_wire::Parsed(msg)) = r.extensions().get::<crate::serve::mcp_wire::Parsed>() {
            if crate::serve::mcp_call::answers_here(r.headers(), msg) {
                let msg = msg.clone();
                let offers = r
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|id| self.lock_sessions().get(id).copied());
                let (parts, _) = r.into_parts();
                let at = crate::serve::mcp_call::Place {
                    served: &self.served,
                    replies: &self.replies,
                    streams: &self.kept,
                    stop: &self.stop,
                };
                return crate::serve::mcp_call::call(at, parts, &msg, offers).await;
            }
            if msg.get("method").and_then(Value::as_str) == Some("initialize") && msg.get("id").is_some() {
                let offers = offers_of(msg.pointer("/params/capabilities").unwrap_or(&Value::Null));
                let mut res = self.service.handle(r).await;
                if res.status() == http::StatusCode::OK {
                    let id = session_id();
                    if let Ok(v) = http::HeaderValue::from_str(&id) {
                        res.headers_mut().insert("mcp-session-id", v);
                        self.lock_sessions().insert(id, offers, |_| false);
                    }
                }
                return res;
            }
            let (parts, body) = r.into_parts();
            if let Some(crate::serve::mcp_wire::Parsed(msg)) = parts.extensions.get::<crate::serve::mcp_wire::Parsed>()
            {
                if self.replies.deliver(&parts, msg) {
                    return plain(202);
                }
            }
            return self.service.handle(http::Request::from_parts(parts, body)).await;
        }
        self.service.handle(r).await
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, Lru<[bool; 3]>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tell the clients subscribed to `uri` that it changed, on the event streams they opened
    /// with GET; how many streams were told.
    pub fn resource_updated(&self, uri: &str) -> usize {
        let note = serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": uri } });
        let frame = Bytes::from(format!("data: {note}\n\n"));
        let who = self.served.subscribers(uri);
        let mut listeners = self.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        let mut told = 0;
        for key in who {
            if let Some(streams) = listeners.get_mut(&key) {
                // A stream whose client left, or that is full, is let go.
                streams.retain(|tx| tx.try_send(frame.clone()).is_ok());
                told += streams.len();
            }
        }
        listeners.retain(|_, v| !v.is_empty());
        told
    }

    /// An event stream of client `who` that carries its resource notifications, and ends when
    /// the client leaves or the server stops.
    fn listening_stream(&self, who: String) -> http::Response<Body> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(64);
        {
            let mut listeners = self.listeners.lock().unwrap_or_else(PoisonError::into_inner);
            listeners.retain(|_, v| {
                v.retain(|tx| !tx.is_closed());
                !v.is_empty()
            });
            listeners.entry(who).or_default().push(tx);
        }
        let stop = self.streams.clone();
        let (frames, mut body) =
            tokio::sync::mpsc::channel::<std::result::Result<hyper::body::Frame<Bytes>, Infallible>>(16);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    next = rx.recv() => match next {
                        Some(b) => {
                            if frames.send(Ok(hyper::body::Frame::data(b))).await.is_err() {
                                break;
                            }
                        }
                        None => break,
                    },
                    _ = stop.cancelled() => break,
                    _ = frames.closed() => break,
                }
            }
        });
        let events = futures::stream::poll_fn(move |cx| body.poll_recv(cx));
        crate::serve::mcp_stream::sse_response(events)
    }
}
