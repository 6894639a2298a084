//! The HTTP server behind `serve`: binds, routes to the profiles, guards, and stops.
//!
//! Routing, as the reference has it: with no profile every request is a 404 `not found`;
//! `/mcp` (and `/mcp?…`, any method) goes to the MCP profile when it is on, checked first;
//! without the A2A profile everything else is a 404; with it, `GET
//! /.well-known/agent-card.json` is the card and any other `POST` is JSON-RPC.
//!
//! Guards this package adds: an opt-in bearer token (`auth`) on JSON-RPC and `/mcp` (the card
//! stays public: it is how peers discover the agent), Origin checks on `/mcp` and on JSON-RPC
//! POSTs against DNS rebinding and cross-site requests, a cap on request bodies, and a warning when tools that run commands or write
//! files are served on a non-loopback address without a token.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::host::Hold;
use crate::serve::a2a::A2AService;
use crate::serve::mcp::McpProfile;
use crate::serve::mcp_wire::PeerAddr;
use crate::serve::options::ServeSecurity;
use crate::serve::Body;

pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// How long `stop` lets requests in flight finish before it closes their connections.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

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
}

/// A running server.
pub struct Server {
    url: String,
    local: SocketAddr,
    stop: CancellationToken,
    done: watch::Receiver<bool>,
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

        let state = Arc::new(State {
            a2a: cfg.a2a,
            mcp: cfg.mcp,
            own_origin: url.to_ascii_lowercase(),
            url: url.clone(),
            limit: cfg.security.body_limit(),
            auth: cfg.security.auth,
            allowed_origins: cfg.security.allowed_origins,
        });
        let stop = CancellationToken::new();
        let (done_tx, done) = watch::channel(false);
        let hold = cfg.hold;
        tokio::spawn(crate::json::DeepStack::new(crate::warn::carry(accept(
            listener,
            state,
            stop.clone(),
            done_tx,
            hold,
        ))));
        Ok(Server { url, local, stop, done })
    }

    /// The base URL, e.g. `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stop accepting, let requests in flight finish (for up to [`STOP_GRACE`], then close
    /// their connections), release the port. Calling it again waits for the same end.
    pub async fn stop(&self) {
        self.stop.cancel();
        let mut done = self.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }
}

async fn accept(
    listener: TcpListener,
    state: Arc<State>,
    stop: CancellationToken,
    done: watch::Sender<bool>,
    hold: Option<Hold>,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let force = CancellationToken::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
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
        let service = service_fn(move |mut req: Request<Incoming>| {
            let st = st.clone();
            // Who sent it: MCP finds a call to cancel by its sender.
            req.extensions_mut().insert(PeerAddr(peer));
            // A body may nest as deep as its size allows: its value is dropped with the stack for it.
            async move { Ok::<_, Infallible>(crate::json::DeepStack::new(st.handle(req)).await) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(30))
            .serve_connection(TokioIo::new(sock), service);
        let conn = graceful.watch(conn);
        let force = force.clone();
        tokio::spawn(crate::json::DeepStack::new(async move {
            tokio::select! {
                _ = conn => {}
                _ = force.cancelled() => {}
            }
        }));
    }
    // The port is released here; connections in flight get their grace.
    drop(listener);
    // Idle MCP event streams would hold their connections open for the whole grace.
    if let Some(mcp) = &state.mcp {
        mcp.end_streams();
    }
    if tokio::time::timeout(STOP_GRACE, graceful.shutdown()).await.is_err() {
        if let Some(mcp) = &state.mcp {
            mcp.shutdown();
        }
        force.cancel();
    }
    drop(hold);
    let _ = done.send(true);
}

struct State {
    a2a: Option<Arc<A2AService>>,
    mcp: Option<McpProfile>,
    url: String,
    own_origin: String,
    limit: u64,
    auth: Option<String>,
    allowed_origins: Vec<String>,
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
    Broken,
}

impl State {
    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
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
                    json(&a2a.rpc(req.body(), version).await)
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
    /// it); a declared length over the cap is refused before reading anything.
    async fn read_body(&self, headers: &http::HeaderMap, body: Incoming) -> std::result::Result<Bytes, BodyError> {
        let declared =
            headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.limit) {
            return Err(BodyError::TooLarge);
        }
        let limit = usize::try_from(self.limit).unwrap_or(usize::MAX);
        match Limited::new(body, limit).collect().await {
            Ok(c) => Ok(c.to_bytes()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
            Err(_) => Err(BodyError::Broken),
        }
    }
}

fn body_error(e: BodyError) -> Response<Body> {
    let mut res = match e {
        BodyError::TooLarge => text(StatusCode::PAYLOAD_TOO_LARGE, "payload too large"),
        BodyError::Broken => text(StatusCode::BAD_REQUEST, "bad request"),
    };
    // The rest of the body is never read: the connection ends with this answer.
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
