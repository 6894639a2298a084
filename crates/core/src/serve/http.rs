//! The HTTP server behind `serve`: binds, routes to the profiles, guards, and stops.
//!
//! Routing, as the reference has it: with no profile every request is a 404 `not found`;
//! `/mcp` (and `/mcp?…`, any method) goes to the MCP profile when it is on, checked first;
//! without the A2A profile everything else is a 404; with it, `GET
//! /.well-known/agent-card.json` is the card and any other `POST` is JSON-RPC.
//!
//! Guards this package adds: an opt-in bearer token (`auth`) on JSON-RPC and `/mcp` (the card
//! stays public: it is how peers discover the agent), Origin checks on `/mcp` and on JSON-RPC
//! POSTs against DNS rebinding and cross-site requests, a cap on request bodies and a time limit
//! on their arrival (a refusal lingers so a client still sending reads it), and a warning when
//! tools that run commands or write files are served on a non-loopback address without a token.
//!
//! A server ends with its owner (`OwnerGone`): a host fires it when what started the server
//! goes away, and the server closes at once, without `stop`'s grace.

use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::callback::SharedCallback;

use crate::error::{Error, Result};
use crate::host_thread::Hold;
use crate::serve::a2a::A2AService;
use crate::serve::mcp_http::McpProfile;
use crate::serve::mcp_wire::PeerAddr;
use crate::serve::options::ServeSecurity;
use crate::serve::Body;

pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// How long `stop` lets requests in flight finish before it closes their connections.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long a request's headers may take to arrive (hyper's `header_read_timeout`).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a request's body may take to arrive once its headers have, by default; past it
/// the request is answered 408 and its connection closed. `TOOLNEXUS_BODY_TIMEOUT_MS` (in
/// milliseconds, read when a server starts) sets another: it exists for tests, which cannot
/// wait 30 s for a client that trickles its body in.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// After an answer that leaves the request's body unread (a refusal: 401, 403, 404, 408,
/// 413...), how long the connection goes on reading and discarding what the client still
/// sends, its answer written and the write side shut. Closing at once with unread data resets
/// the connection, and a client still sending its body then sees the reset (EPIPE,
/// ECONNRESET) instead of the answer.
pub const LINGER: Duration = Duration::from_secs(2);

/// The body timeout in force: [`BODY_TIMEOUT`] unless `TOOLNEXUS_BODY_TIMEOUT_MS` names a
/// positive number of milliseconds.
pub fn body_timeout() -> Duration {
    std::env::var("TOOLNEXUS_BODY_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(BODY_TIMEOUT, Duration::from_millis)
}

/// Tools that run commands or change files: serving them openly is worth a warning.
pub const RISKY_TOOLS: [&str; 4] = ["bash", "write", "edit", "apply_patch"];

/// What to serve, and where.
pub struct ServeConfig {
    /// `host:port`, split on the last colon; no host ⇒ 127.0.0.1; port 0 ⇒ any free port.
    pub addr: String,
    pub a2a: Option<Arc<A2AService>>,
    pub mcp: Option<McpProfile>,
    pub security: ServeSecurity,
    /// The names of the tools a caller can reach through the server (for the warning).
    pub reachable_tools: Vec<String>,
    /// Kept for as long as the server accepts connections (a host's hold on its process).
    pub hold: Option<Hold>,
    /// How long a request's body may take once its headers are in; `None`: [`body_timeout`].
    pub body_timeout: Option<Duration>,
    /// Fired when the server's owner goes away (a host environment torn down): the server
    /// then ends at once, without the grace `stop` gives.
    pub owner: Option<OwnerGone>,
    /// Records a span for each request (continuing the caller's trace when its request carries
    /// one), under which the Tasks and tool calls it serves record theirs (see `trace`).
    pub telemetry: Option<SharedCallback>,
}

/// What ends a server together with its owner: fired (from any thread) when whatever started
/// the server is gone, it closes the listener at once and ends every connection, with no
/// grace. A Node worker that started a server and is terminated must not leave its port bound
/// and answering; this is how the host says so. Firing it after the server stopped does nothing.
#[derive(Clone, Default)]
pub struct OwnerGone(CancellationToken);

impl OwnerGone {
    pub fn new() -> Self {
        Self::default()
    }

    /// The owner is gone: end the server now.
    pub fn fire(&self) {
        self.0.cancel();
    }

    /// Whether it has fired (or the server it belonged to has ended).
    pub fn is_fired(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// A running server.
pub struct Server {
    url: String,
    local: SocketAddr,
    stop: CancellationToken,
    done: watch::Receiver<bool>,
    /// The MCP profile served, if any (for its resource notifications).
    mcp: Option<McpProfile>,
}

/// `host:port` split on the last colon; a missing host is 127.0.0.1.
pub fn split_addr(addr: &str) -> (String, String) {
    match addr.rfind(':') {
        None => ("127.0.0.1".into(), addr.to_string()),
        Some(i) => {
            let host = if i == 0 { "127.0.0.1" } else { &addr[..i] };
            (host.to_string(), addr[i + 1..].to_string())
        }
    }
}

/// The host as a URL has it: 0.0.0.0 and :: as 127.0.0.1, other IPv6 addresses in brackets.
fn url_host(host: &str) -> String {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare {
        "0.0.0.0" | "::" => "127.0.0.1".into(),
        h if h.contains(':') => format!("[{h}]"),
        h => h.into(),
    }
}

/// Whether `host` names this machine only (`localhost`, 127.0.0.0/8, ::1).
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.eq_ignore_ascii_case("localhost") || bare.to_ascii_lowercase().ends_with(".localhost") {
        return true;
    }
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Server {
    /// Bind and start serving.
    pub async fn start(cfg: ServeConfig) -> Result<Server> {
        let (host, port_text) = split_addr(&cfg.addr);
        let port: u16 = if port_text.trim().is_empty() {
            0
        } else {
            port_text
                .trim()
                .parse()
                .map_err(|_| Error::Invalid(format!("serve: invalid port \"{port_text}\" in \"{}\"", cfg.addr)))?
        };
        let bind_host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let listener = TcpListener::bind((bind_host.as_str(), port))
            .await
            .map_err(|e| Error::Invalid(format!("serve: cannot listen on {}: {e}", cfg.addr)))?;
        let owner = cfg.owner.unwrap_or_default();
        if owner.is_fired() {
            // The owner went away while the port was being bound: nobody is left to serve.
            return Err(Error::Invalid(format!("serve: the owner of {} is gone", cfg.addr)));
        }
        let local = listener.local_addr().map_err(|e| Error::Invalid(format!("serve: {e}")))?;
        let url = format!("http://{}:{}", url_host(&host), local.port());

        if (cfg.a2a.is_some() || cfg.mcp.is_some()) && cfg.security.auth.is_none() && !is_loopback_host(&host) {
            let risky: Vec<&str> =
                RISKY_TOOLS.iter().copied().filter(|r| cfg.reachable_tools.iter().any(|t| t == r)).collect();
            if !risky.is_empty() {
                crate::warn::warn(&format!(
                    "[toolnexus] serve: {} is reachable from other machines, has no `auth`, and exposes {}: anyone who can reach it can use them (set `auth`, or bind 127.0.0.1)",
                    cfg.addr,
                    risky.join(", ")
                ));
            }
        }

        let mcp = cfg.mcp.clone();
        let state = Arc::new(State {
            a2a: cfg.a2a,
            mcp: cfg.mcp,
            own_origin: url.to_ascii_lowercase(),
            url: url.clone(),
            limit: cfg.security.body_limit(),
            body_timeout: cfg.body_timeout.unwrap_or_else(body_timeout),
            auth: cfg.security.auth,
            allowed_origins: cfg.security.allowed_origins,
            telemetry: cfg.telemetry,
        });
        let stop = CancellationToken::new();
        let (done_tx, done) = watch::channel(false);
        let hold = cfg.hold;
        tokio::spawn(crate::json::DeepStack::new(crate::warn::carry(accept(
            listener,
            state,
            Ends { stop: stop.clone(), owner },
            done_tx,
            hold,
        ))));
        Ok(Server { url, local, stop, done, mcp })
    }

    /// The base URL, e.g. `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Tell the MCP clients subscribed to `uri` that it changed
    /// (`notifications/resources/updated`); how many were told. Without an MCP profile, none.
    pub fn resource_updated(&self, uri: &str) -> usize {
        self.mcp.as_ref().map_or(0, |m| m.resource_updated(uri))
    }

    /// Stop accepting, let requests in flight finish (for up to [`STOP_GRACE`], then close
    /// their connections), release the port. Calling it again waits for the same end.
    pub async fn stop(&self) {
        self.stop.cancel();
        let mut done = self.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }
}

/// What ends the accept loop: `stop` (with a grace for requests in flight) or the owner gone
/// (at once).
struct Ends {
    stop: CancellationToken,
    owner: OwnerGone,
}

async fn accept(listener: TcpListener, state: Arc<State>, ends: Ends, done: watch::Sender<bool>, hold: Option<Hold>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let force = CancellationToken::new();
    let gone = ends.owner.0.clone();
    loop {
        let accepted = tokio::select! {
            _ = ends.stop.cancelled() => break,
            _ = gone.cancelled() => break,
            a = listener.accept() => a,
        };
        let (sock, peer) = match accepted {
            Ok(a) => a,
            Err(_) => {
                // Out of descriptors and the like: back off a little rather than spin.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let st = state.clone();
        let sock = Lingering { sock: Some(sock), linger: Arc::default(), force: force.clone() };
        let linger = sock.linger.clone();
        let service = service_fn(move |mut req: Request<Incoming>| {
            let (st, linger) = (st.clone(), linger.clone());
            // Who sent it: MCP finds a call to cancel by its sender.
            req.extensions_mut().insert(PeerAddr(peer));
            // A body may nest as deep as its size allows: its value is dropped with the stack for it.
            async move {
                let res = crate::json::DeepStack::new(st.handle(req)).await;
                if res.status().is_client_error() {
                    linger.store(true, Ordering::Relaxed);
                }
                Ok::<_, Infallible>(res)
            }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .serve_connection(TokioIo::new(sock), service);
        let conn = graceful.watch(conn);
        let force = force.clone();
        // Warnings raised while answering go where the server's own do (the host's console).
        tokio::spawn(crate::json::DeepStack::new(crate::warn::carry(async move {
            tokio::select! {
                _ = conn => {}
                _ = force.cancelled() => {}
            }
        })));
    }
    // The port is released here; connections in flight get their grace.
    drop(listener);
    // Idle MCP event streams would hold their connections open for the whole grace.
    if let Some(mcp) = &state.mcp {
        mcp.end_streams();
    }
    // The grace ends early when the owner goes away meanwhile (or went away first).
    let graced = tokio::select! {
        biased;
        _ = gone.cancelled() => false,
        r = tokio::time::timeout(STOP_GRACE, graceful.shutdown()) => r.is_ok(),
    };
    if !graced {
        if let Some(mcp) = &state.mcp {
            mcp.shutdown();
        }
        force.cancel();
    }
    // Nothing is left for an owner going away to end.
    ends.owner.fire();
    drop(hold);
    let _ = done.send(true);
}

/// A connection's socket. Once a refusal was answered on it (`linger`), dropping it lingers:
/// the rest of what the client sends is read and discarded (for up to [`LINGER`], or until the
/// server is forced down) before the socket closes, so the client reads the answer rather
/// than a reset.
struct Lingering {
    sock: Option<TcpStream>,
    linger: Arc<AtomicBool>,
    force: CancellationToken,
}

impl Lingering {
    fn sock(&mut self) -> io::Result<Pin<&mut TcpStream>> {
        match self.sock.as_mut() {
            Some(s) => Ok(Pin::new(s)),
            None => Err(io::Error::from(io::ErrorKind::NotConnected)),
        }
    }
}

impl AsyncRead for Lingering {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.sock() {
            Ok(s) => s.poll_read(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.sock() {
            Ok(s) => s.poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.sock() {
            Ok(s) => s.poll_write_vectored(cx, bufs),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.sock.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.sock() {
            Ok(s) => s.poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.sock() {
            Ok(s) => s.poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let Some(sock) = self.sock.take() else { return };
        if !self.linger.load(Ordering::Relaxed) || self.force.is_cancelled() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(linger(sock, self.force.clone()));
        }
    }
}

/// Shut the write side (the answer is out), then read and discard until the client closes,
/// [`LINGER`] passes, or the server is forced down; then the socket closes.
async fn linger(mut sock: TcpStream, force: CancellationToken) {
    let _ = sock.shutdown().await;
    let drain = async {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = sock.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    };
    tokio::select! {
        _ = drain => {}
        _ = tokio::time::sleep(LINGER) => {}
        _ = force.cancelled() => {}
    }
}

struct State {
    a2a: Option<Arc<A2AService>>,
    mcp: Option<McpProfile>,
    url: String,
    own_origin: String,
    limit: u64,
    body_timeout: Duration,
    auth: Option<String>,
    allowed_origins: Vec<String>,
    telemetry: Option<SharedCallback>,
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut res = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    *res.status_mut() = status;
    res
}

fn not_found() -> Response<Body> {
    text(StatusCode::NOT_FOUND, "not found")
}

fn json(value: &serde_json::Value) -> Response<Body> {
    let mut res = Response::new(Full::new(Bytes::from(crate::json::to_string(value))).boxed());
    res.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    res
}

/// Server-sent events, one `data:` line of JSON per response, until the sender ends.
fn events(rx: tokio::sync::mpsc::Receiver<serde_json::Value>) -> Response<Body> {
    let frames = futures::stream::unfold(rx, |mut rx| async move {
        let v = rx.recv().await?;
        let frame = hyper::body::Frame::data(Bytes::from(format!("data: {}\n\n", crate::json::to_string(&v))));
        Some((Ok::<_, Infallible>(frame), rx))
    });
    let mut res = Response::new(http_body_util::StreamBody::new(frames).boxed());
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache"));
    res
}

/// Equal, in time that depends only on the lengths.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let mut diff = a.len() ^ b.len();
    for i in 0..n {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// Whether an `Origin` may reach `/mcp`: a configured one (or `"*"`), a loopback one, or the
/// server's own.
pub fn origin_allowed(origin: &str, own_origin: &str, allowed: &[String]) -> bool {
    let o = origin.trim().trim_end_matches('/');
    if allowed.iter().any(|a| a == "*" || a.trim_end_matches('/').eq_ignore_ascii_case(o)) {
        return true;
    }
    if o.eq_ignore_ascii_case(own_origin) {
        return true;
    }
    match url::Url::parse(o) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => u.host_str().is_some_and(is_loopback_host),
        _ => false,
    }
}

enum BodyError {
    TooLarge,
    TimedOut,
    Broken,
}

impl State {
    /// One request, as a server span when spans are recorded.
    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let Some(sink) = self.telemetry.clone() else {
            return self.route(req).await;
        };
        let path = req.uri().path().to_string();
        let mut attrs = serde_json::Map::with_capacity(4);
        attrs.insert("http.request.method".into(), req.method().as_str().into());
        attrs.insert("url.path".into(), path.clone().into());
        attrs.insert("server.address".into(), self.url.clone().into());
        let mut carrier = serde_json::Map::new();
        for name in ["traceparent", "tracestate"] {
            if let Some(v) = req.headers().get(name).and_then(|v| v.to_str().ok()) {
                carrier.insert(name.into(), v.into());
            }
        }
        let name = format!("{} {path}", req.method());
        crate::trace::within(Some(sink), async move {
            let Some(mut span) = crate::trace::start_remote(name, crate::trace::Kind::Server, attrs, carrier).await
            else {
                return self.route(req).await;
            };
            let res = span.enter(self.route(req)).await;
            let status = res.status();
            span.set("http.response.status_code", status.as_u16());
            if status.is_server_error() {
                span.set("error.type", status.as_str());
                span.end(Some(status.as_str()));
            } else {
                span.end(None);
            }
            res
        })
        .await
    }

    async fn route(&self, req: Request<Incoming>) -> Response<Body> {
        if self.a2a.is_none() && self.mcp.is_none() {
            return not_found();
        }
        let target = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
        if let Some(mcp) = &self.mcp {
            if target == "/mcp" || target.starts_with("/mcp?") {
                return match self.admit(req).await {
                    Ok(req) => mcp.handle(req).await,
                    Err(refused) => refused,
                };
            }
        }
        let Some(a2a) = &self.a2a else { return not_found() };
        if req.method() == Method::GET && target == CARD_PATH {
            return json(&a2a.card(&format!("{}/", self.url)));
        }
        if req.method() == Method::POST {
            return match self.admit(req).await {
                Ok(req) => {
                    let version = req.headers().get("a2a-version").and_then(|v| v.to_str().ok());
                    match a2a.answer(req.body(), version).await {
                        crate::serve::a2a::Answer::One(v) => json(&v),
                        crate::serve::a2a::Answer::Events(rx) => events(rx),
                    }
                }
                Err(refused) => refused,
            };
        }
        not_found()
    }

    /// A request that passes the guards (Origin, then auth), with its body read under the
    /// cap; else the answer that refuses it.
    async fn admit(&self, req: Request<Incoming>) -> std::result::Result<Request<Bytes>, Response<Body>> {
        if let Some(denied) = self.check_origin(&req).or_else(|| self.check_auth(&req)) {
            return Err(denied);
        }
        let (parts, body) = req.into_parts();
        match self.read_body(&parts.headers, body).await {
            Ok(bytes) => Ok(Request::from_parts(parts, bytes)),
            Err(e) => Err(body_error(e)),
        }
    }

    /// `None` when the request has no `Origin` or an allowed one; else the 403 to answer. A
    /// browser page of another site (or a rebound DNS name) must not drive the server: peers
    /// that are programs send no `Origin`.
    fn check_origin(&self, req: &Request<Incoming>) -> Option<Response<Body>> {
        let origin = req.headers().get(header::ORIGIN)?;
        let origin = origin.to_str().unwrap_or("");
        if origin_allowed(origin, &self.own_origin, &self.allowed_origins) {
            None
        } else {
            Some(text(StatusCode::FORBIDDEN, "forbidden origin"))
        }
    }

    /// `None` when no token is set or the request carries it; else the 401 to answer.
    fn check_auth(&self, req: &Request<Incoming>) -> Option<Response<Body>> {
        let token = self.auth.as_ref()?;
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        if given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
            return None;
        }
        let mut res = text(StatusCode::UNAUTHORIZED, "unauthorized");
        res.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        Some(res)
    }

    /// The whole body, read as it streams in and refused past the cap (never buffered beyond
    /// it) or past the body timeout; a declared length over the cap is refused before reading
    /// anything.
    async fn read_body(&self, headers: &http::HeaderMap, body: Incoming) -> std::result::Result<Bytes, BodyError> {
        let declared =
            headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.limit) {
            return Err(BodyError::TooLarge);
        }
        let limit = usize::try_from(self.limit).unwrap_or(usize::MAX);
        match tokio::time::timeout(self.body_timeout, Limited::new(body, limit).collect()).await {
            Err(_) => Err(BodyError::TimedOut),
            Ok(Ok(c)) => Ok(c.to_bytes()),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
            Ok(Err(_)) => Err(BodyError::Broken),
        }
    }
}

fn body_error(e: BodyError) -> Response<Body> {
    let mut res = match e {
        BodyError::TooLarge => text(StatusCode::PAYLOAD_TOO_LARGE, "payload too large"),
        BodyError::TimedOut => text(StatusCode::REQUEST_TIMEOUT, "request timeout"),
        BodyError::Broken => text(StatusCode::BAD_REQUEST, "bad request"),
    };
    // The rest of the body is never read: the connection ends with this answer (lingering).
    res.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(split_addr("127.0.0.1:0"), ("127.0.0.1".into(), "0".into()));
        assert_eq!(split_addr(":8080"), ("127.0.0.1".into(), "8080".into()));
        assert_eq!(split_addr("8080"), ("127.0.0.1".into(), "8080".into()));
        assert_eq!(split_addr("::1:80"), ("::1".into(), "80".into()));
        assert_eq!(url_host("0.0.0.0"), "127.0.0.1");
        assert_eq!(url_host("::"), "127.0.0.1");
        assert_eq!(url_host("[::1]"), "[::1]");
        assert!(is_loopback_host("127.0.0.2") && is_loopback_host("localhost") && is_loopback_host("[::1]"));
        assert!(!is_loopback_host("0.0.0.0") && !is_loopback_host("10.0.0.1") && !is_loopback_host("example.com"));
    }

    #[test]
    fn origins() {
        let own = "http://10.0.0.5:8080";
        assert!(origin_allowed("http://localhost:3000", own, &[]));
        assert!(origin_allowed("http://127.0.0.1", own, &[]));
        assert!(origin_allowed("http://[::1]:9", own, &[]));
        assert!(origin_allowed("http://10.0.0.5:8080", own, &[]));
        assert!(!origin_allowed("http://evil.example", own, &[]));
        assert!(!origin_allowed("null", own, &[]));
        assert!(origin_allowed("https://app.example", own, &["https://app.example/".into()]));
        assert!(origin_allowed("https://x", own, &["*".into()]));
    }

    #[test]
    fn secrets() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"a"));
    }
}
