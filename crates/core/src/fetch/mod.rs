//! An HTTP/1.1 client that behaves as Node's `fetch` does, for the LLM transport.
//!
//! hyper does the protocol (one client connection per request, over any byte stream a
//! [`Connect`] opens); this module adds what `fetch` adds around it: the request headers it
//! sends, redirects, the race between a name's addresses, connect / response-head / body
//! timeouts, the content codings it decodes, one keep-alive pool per origin shared by every
//! client, and its errors (`TypeError: fetch failed` with Node's `cause`).

pub mod connect;
pub mod decode;
pub mod error;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::Stream;
use http_body_util::Full;
use hyper::body::Body as _;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::ReadBuf;

pub use connect::{BoxIo, Connect, Io, TokioConnect};
pub use error::{Cause, FetchError};

use decode::Decoder;

/// Node's `fetch` gives up connecting after this long (undici's `connectTimeout`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// ... waiting for a response head (undici's `headersTimeout`).
pub const HEADERS_TIMEOUT: Duration = Duration::from_secs(300);
/// ... waiting between two pieces of a body (undici's `bodyTimeout`).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(300);
/// An idle connection is kept this long, unless the server's `keep-alive: timeout=` says
/// less (undici's `keepAliveTimeout`, and its one-second margin on the server's hint).
const KEEP_ALIVE: Duration = Duration::from_secs(4);
const KEEP_ALIVE_MAX: Duration = Duration::from_secs(600);
const KEEP_ALIVE_MARGIN: Duration = Duration::from_secs(1);
/// Redirects followed before fetch gives up.
const MAX_REDIRECTS: usize = 20;
/// Idle connections kept per origin.
const MAX_IDLE: usize = 64;

pub type Result<T, E = FetchError> = std::result::Result<T, E>;

/// One request, as the caller hands it to `fetch`.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: http::Method,
    pub url: String,
    /// In the caller's order, names as the caller wrote them.
    pub headers: Vec<(String, String)>,
    pub body: Option<Bytes>,
}

/// A response whose body has not been read yet.
pub struct Response {
    pub status: u16,
    /// Lower-cased names, in the order they arrived.
    pub headers: Vec<(String, String)>,
    /// The URL of the final response (after redirects).
    pub url: String,
    pub redirected: bool,
    pub body: Body,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The whole body, decoded.
    pub async fn bytes(self) -> Result<Vec<u8>> {
        Ok(self.bytes_up_to(usize::MAX).await?.unwrap_or_default())
    }

    /// The whole body, decoded, or `None` as soon as it passes `limit` bytes (the connection
    /// is then dropped).
    pub async fn bytes_up_to(mut self, limit: usize) -> Result<Option<Vec<u8>>> {
        // Room for the whole body at once when its length is known and nothing decodes it.
        let known = match (self.header("content-length"), self.body.decoder.is_some()) {
            (Some(n), false) => n.trim().parse::<usize>().ok(),
            _ => None,
        };
        if known.is_some_and(|n| n > limit) {
            return Ok(None);
        }
        let mut out = crate::jsstr::Gather::new(limit, known).map_err(no_memory)?;
        while let Some(piece) = futures::StreamExt::next(&mut self.body).await {
            match out.push(&piece?) {
                Ok(()) => {}
                Err(crate::jsstr::Refused::Limit) => return Ok(None),
                Err(refused) => return Err(no_memory(refused)),
            }
        }
        Ok(Some(out.into_vec()))
    }
}

/// A body that could not be held: `terminated`, with V8's allocation failure as the cause.
fn no_memory(_: crate::jsstr::Refused) -> FetchError {
    FetchError::terminated(Cause::new("RangeError", crate::jsstr::NO_MEMORY))
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

struct Idle {
    io: BoxIo,
    until: Instant,
}

/// The shared half: the connector, TLS, the pool.
struct Inner {
    connect: Box<dyn Connect>,
    tls: Tls,
    /// The connector over `tls`, made on the first https connection: an `http://` endpoint
    /// never builds a TLS configuration (the roots, the provider), which costs a fresh process
    /// more than a millisecond.
    connector: OnceLock<Option<tokio_rustls::TlsConnector>>,
    idle: Mutex<HashMap<Origin, Vec<Idle>>>,
    /// The last URL parsed and what it parsed to: a client posts to one endpoint over and
    /// over, and parsing it again each time is a good part of a request's own cost.
    last_url: Mutex<Option<(String, url::Url)>>,
    connect_timeout: Duration,
    headers_timeout: Duration,
    body_timeout: Duration,
    zstd: bool,
}

/// Node's `fetch`, over a [`Connect`]. Cheap to clone; clones share one pool.
#[derive(Clone)]
pub struct Fetcher {
    inner: Arc<Inner>,
}

/// Which TLS configuration https connections use.
#[derive(Clone, Default)]
pub enum Tls {
    /// The process's shared one ([`crate::net`]), built when the first https connection needs it.
    #[default]
    Shared,
    /// This one.
    Config(Arc<rustls::ClientConfig>),
    /// None: an https URL fails to connect.
    Off,
}

/// Settings a test or a host may change.
pub struct Options {
    pub tls: Tls,
    pub connect_timeout: Duration,
    pub headers_timeout: Duration,
    pub body_timeout: Duration,
    /// Decode `zstd` (Node's fetch does from Node 24 on).
    pub zstd: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tls: Tls::Shared,
            connect_timeout: CONNECT_TIMEOUT,
            headers_timeout: HEADERS_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            zstd: true,
        }
    }
}

impl Fetcher {
    pub fn new(connect: impl Connect) -> Self {
        Self::with_options(connect, Options::default())
    }

    pub fn with_options(connect: impl Connect, o: Options) -> Self {
        Fetcher {
            inner: Arc::new(Inner {
                connect: Box::new(connect),
                tls: o.tls,
                connector: OnceLock::new(),
                idle: Mutex::new(HashMap::new()),
                last_url: Mutex::new(None),
                connect_timeout: o.connect_timeout,
                headers_timeout: o.headers_timeout,
                body_timeout: o.body_timeout,
                zstd: o.zstd,
            }),
        }
    }

    /// The process's one fetcher over tokio's sockets (as Node has one global dispatcher).
    pub fn shared() -> Fetcher {
        static SHARED: OnceLock<Fetcher> = OnceLock::new();
        SHARED.get_or_init(|| Fetcher::new(TokioConnect)).clone()
    }

    fn tls_connector(&self) -> Option<&tokio_rustls::TlsConnector> {
        let inner = &self.inner;
        inner
            .connector
            .get_or_init(|| {
                let config = match &inner.tls {
                    Tls::Shared => crate::net::tls_config(),
                    Tls::Config(config) => Some(config.clone()),
                    Tls::Off => None,
                };
                config.map(tokio_rustls::TlsConnector::from)
            })
            .as_ref()
    }

    /// Whether this fetcher has made its TLS connector yet, which it does on its first https
    /// connection (for tests and diagnostics).
    pub fn tls_ready(&self) -> bool {
        self.inner.connector.get().is_some()
    }

    /// Idle connections held for `host:port` (for tests and diagnostics).
    pub fn idle_count(&self) -> usize {
        self.inner.idle.lock().unwrap_or_else(PoisonError::into_inner).values().map(Vec::len).sum()
    }

    /// Send `req`, following redirects as `fetch` does (`redirect: "follow"`).
    pub async fn fetch(&self, req: Request) -> Result<Response> {
        let Request { mut method, url, mut headers, mut body } = req;
        let mut url = self.url_of(&url)?;
        let mut redirected = false;
        for _ in 0..=MAX_REDIRECTS {
            let res = self.once(&method, &url, &headers, body.clone()).await?;
            let location = match res.status {
                301 | 302 | 303 | 307 | 308 => res.header("location").map(str::to_string),
                _ => None,
            };
            let Some(location) = location else {
                return Ok(Response { url: url.as_str().to_owned(), redirected, ..res });
            };
            let next = url.join(&location).map_err(|_| invalid_redirect(&location))?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(FetchError::failed(Cause::new("Error", "URL scheme must be a HTTP(S) scheme")));
            }
            // The redirect's own body is read and dropped, so its connection can be reused.
            drain(res.body).await;
            // 301/302 turn a POST into a GET and 303 anything but GET/HEAD, without a body.
            let to_get = match res.status {
                301 | 302 => method == http::Method::POST,
                303 => method != http::Method::GET && method != http::Method::HEAD,
                _ => false,
            };
            if to_get {
                method = http::Method::GET;
                body = None;
                headers.retain(|(k, _)| !is_body_header(k));
            }
            if origin_of(&next) != origin_of(&url) {
                headers.retain(|(k, _)| !is_credential(k));
            }
            url = next;
            redirected = true;
        }
        Err(FetchError::failed(Cause::new("Error", "redirect count exceeded")))
    }

    /// `raw` parsed as fetch parses a request's URL (the last one parsed is remembered).
    fn url_of(&self, raw: &str) -> Result<url::Url> {
        let last = self.inner.last_url.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, url)) = last.as_ref().filter(|(r, _)| r == raw) {
            return Ok(url.clone());
        }
        drop(last);
        let url = parse_url(raw)?;
        *self.inner.last_url.lock().unwrap_or_else(PoisonError::into_inner) = Some((raw.to_owned(), url.clone()));
        Ok(url)
    }

    /// One request on one connection, no redirects.
    async fn once(
        &self,
        method: &http::Method,
        url: &url::Url,
        headers: &[(String, String)],
        body: Option<Bytes>,
    ) -> Result<Response> {
        let origin = origin_of(url);
        if is_bad_port(origin.port) {
            return Err(FetchError::failed(Cause::new("Error", "bad port")));
        }
        let request = build_request(method, url, headers, body)?;
        let mut pooled = self.checkout(&origin);
        loop {
            let reused = pooled.is_some();
            let io = match pooled.take() {
                Some(io) => io,
                None => self.open(&origin).await?,
            };
            match self.exchange(io, request.clone(), &origin).await {
                Ok(res) => return Ok(res),
                // A pooled connection the server had closed: once more on a fresh one.
                Err(Failure::Stale(_)) if reused => {
                    pooled = self.checkout(&origin);
                    continue;
                }
                Err(Failure::Stale(e)) => return Err(e),
                Err(Failure::Fetch(e)) => return Err(e),
            }
        }
    }

    fn checkout(&self, origin: &Origin) -> Option<BoxIo> {
        loop {
            let mut io = {
                let mut idle = self.inner.idle.lock().unwrap_or_else(PoisonError::into_inner);
                let list = idle.get_mut(origin)?;
                let now = Instant::now();
                list.retain(|i| i.until > now);
                let found = list.pop();
                if list.is_empty() {
                    idle.remove(origin);
                }
                found?.io
            };
            // Dropped outside the lock: closing may call into the host.
            if still_open(&mut io) {
                return Some(io);
            }
        }
    }

    fn checkin(&self, origin: Origin, mut io: BoxIo, keep_for: Duration) {
        io.park();
        let mut idle = self.inner.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let list = idle.entry(origin).or_default();
        if list.len() >= MAX_IDLE {
            list.remove(0);
        }
        list.push(Idle { io, until: Instant::now() + keep_for });
    }

    async fn open(&self, origin: &Origin) -> Result<BoxIo> {
        let connecting = async {
            let addrs = match origin.host.parse::<std::net::IpAddr>() {
                Ok(ip) => vec![std::net::SocketAddr::new(ip, origin.port)],
                Err(_) => self
                    .inner
                    .connect
                    .resolve(&origin.host, origin.port)
                    .await
                    .map_err(|e| FetchError::failed(Cause::lookup(&e, &origin.host)))?,
            };
            if addrs.is_empty() {
                let e = std::io::Error::other("Name or service not known");
                return Err(FetchError::failed(Cause::lookup(&e, &origin.host)));
            }
            let io = connect::race(&*self.inner.connect, addrs).await.map_err(FetchError::failed)?;
            if !origin.https {
                return Ok(io);
            }
            let tls = self
                .tls_connector()
                .ok_or_else(|| FetchError::failed(Cause::new("Error", "TLS is not available in this build")))?;
            let name = rustls::pki_types::ServerName::try_from(origin.host.clone())
                .map_err(|e| FetchError::failed(Cause::new("Error", e.to_string())))?;
            let io = tls.connect(name, io).await.map_err(|e| FetchError::failed(Cause::tls(&e)))?;
            Ok(Box::new(io) as BoxIo)
        };
        let host = origin.host.clone();
        let ms = u64::try_from(self.inner.connect_timeout.as_millis()).unwrap_or(u64::MAX);
        match tokio::time::timeout(self.inner.connect_timeout, connecting).await {
            Ok(r) => r,
            Err(_) => Err(FetchError::failed(Cause::connect_timeout(&host, origin.port, ms))),
        }
    }

    /// Write the request on `io` and read the response head; the body is read later, by the
    /// [`Body`] that keeps driving the connection.
    async fn exchange(
        &self,
        io: BoxIo,
        request: http::Request<Full<Bytes>>,
        origin: &Origin,
    ) -> std::result::Result<Response, Failure> {
        let (mut send, mut conn) = http1::Builder::new()
            .allow_obsolete_multiline_headers_in_responses(true)
            .max_headers(16 * 1024)
            .handshake::<_, Full<Bytes>>(TokioIo::new(io))
            .await
            .map_err(|e| Failure::Fetch(FetchError::failed(hyper_cause(&e))))?;
        let head_only = request.method() == http::Method::HEAD;
        let mut responding = std::pin::pin!(send.send_request(request));
        let mut conn_done = false;
        let driven = std::future::poll_fn(|cx| {
            if !conn_done {
                // A failure of the connection reaches the response future too.
                if conn.poll_without_shutdown(cx).is_ready() {
                    conn_done = true;
                }
            }
            responding.as_mut().poll(cx)
        });
        let head = match tokio::time::timeout(self.inner.headers_timeout, driven).await {
            Err(_) => return Err(Failure::Fetch(FetchError::failed(Cause::headers_timeout()))),
            Ok(Ok(head)) => head,
            Ok(Err(e)) => {
                let cause = hyper_cause(&e);
                let nothing_back = e.is_incomplete_message()
                    || e.is_canceled()
                    || matches!(cause.code(), Some("ECONNRESET" | "EPIPE"));
                let e = FetchError::failed(cause);
                return Err(if nothing_back { Failure::Stale(e) } else { Failure::Fetch(e) });
            }
        };
        let status = head.status().as_u16();
        let http11 = head.version() == http::Version::HTTP_11;
        let mut headers = Vec::with_capacity(head.headers().len());
        let mut keep_alive = http11;
        let mut keep_for = KEEP_ALIVE;
        let mut encoding: Option<String> = None;
        let mut has_length = false;
        let mut chunked = false;
        for (name, value) in head.headers() {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            match name.as_str() {
                "connection" => {
                    for token in value.split(',').map(str::trim) {
                        if token.eq_ignore_ascii_case("close") {
                            keep_alive = false;
                        } else if token.eq_ignore_ascii_case("keep-alive") {
                            keep_alive = true;
                        }
                    }
                }
                "keep-alive" => {
                    if let Some(secs) = keep_alive_hint(&value) {
                        keep_for = secs.saturating_sub(KEEP_ALIVE_MARGIN).min(KEEP_ALIVE_MAX);
                    }
                }
                "content-encoding" => {
                    encoding = Some(match encoding {
                        Some(prev) => format!("{prev}, {value}"),
                        None => value.clone(),
                    })
                }
                "content-length" => has_length = true,
                "transfer-encoding" => chunked |= value.to_ascii_lowercase().contains("chunked"),
                _ => {}
            }
            headers.push((name.as_str().to_string(), value));
        }
        if has_length && chunked {
            // As Node's HTTP parser refuses it.
            let mut cause =
                Cause::new("HTTPParserError", "Parse Error: Content-Length can't be present with Transfer-Encoding");
            cause.fields.push(("code", "HPE_UNEXPECTED_CONTENT_LENGTH".into()));
            return Err(Failure::Fetch(FetchError::failed(cause)));
        }
        let no_body = head_only || matches!(status, 204 | 304) || (100..200).contains(&status);
        let decoder = match (&encoding, no_body) {
            (Some(value), false) => Decoder::for_header(value, self.inner.zstd),
            _ => None,
        };
        let incoming = head.into_body();
        let body = Body {
            state: Some(Driving { conn, conn_done, send: Some(send), incoming }),
            decoder,
            idle: Box::pin(tokio::time::sleep(self.inner.body_timeout)),
            idle_for: self.inner.body_timeout,
            reuse: keep_alive.then(|| (self.clone(), origin.clone(), keep_for.max(Duration::from_millis(1)))),
            ended: false,
        };
        Ok(Response { status, headers, url: String::new(), redirected: false, body })
    }
}

enum Failure {
    /// The connection ended before any response: safe to repeat on a fresh one when it came
    /// from the pool (the error is what a fresh one failing gives).
    Stale(FetchError),
    Fetch(FetchError),
}

type Conn = http1::Connection<TokioIo<BoxIo>, Full<Bytes>>;

struct Driving {
    conn: Conn,
    conn_done: bool,
    send: Option<http1::SendRequest<Full<Bytes>>>,
    incoming: Incoming,
}

/// A response body: decoded pieces as they arrive, the connection back to the pool at its end.
pub struct Body {
    state: Option<Driving>,
    decoder: Option<Decoder>,
    idle: Pin<Box<tokio::time::Sleep>>,
    idle_for: Duration,
    /// Where the connection goes when the body has been read to its end.
    reuse: Option<(Fetcher, Origin, Duration)>,
    ended: bool,
}

impl Body {
    /// The end of the body: the connection goes back to the pool when it is at a message
    /// boundary and the server keeps it open.
    fn release(&mut self, cx: &mut Context<'_>) {
        let Some(mut d) = self.state.take() else { return };
        let Some((fetcher, origin, keep_for)) = self.reuse.take() else { return };
        if d.conn_done {
            return;
        }
        drop(d.send.take());
        if let Poll::Ready(Ok(())) = d.conn.poll_without_shutdown(cx) {
            let parts = d.conn.into_parts();
            if parts.read_buf.is_empty() {
                fetcher.checkin(origin, parts.io.into_inner(), keep_for);
            }
        }
    }
}

impl Stream for Body {
    type Item = Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            let Some(d) = this.state.as_mut() else {
                this.ended = true;
                return Poll::Ready(None);
            };
            if !d.conn_done && d.conn.poll_without_shutdown(cx).is_ready() {
                d.conn_done = true;
            }
            match Pin::new(&mut d.incoming).poll_frame(cx) {
                Poll::Pending => {
                    if this.idle.as_mut().poll(cx).is_ready() {
                        this.fail();
                        return Poll::Ready(Some(Err(FetchError::terminated(Cause::body_timeout()))));
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else { continue };
                    let deadline = tokio::time::Instant::now() + this.idle_for;
                    this.idle.as_mut().reset(deadline);
                    let data = match this.decoder.as_mut() {
                        None => data,
                        Some(dec) => match dec.push(&data) {
                            Ok(v) => Bytes::from(v),
                            Err(cause) => {
                                this.fail();
                                return Poll::Ready(Some(Err(FetchError::terminated(cause))));
                            }
                        },
                    };
                    if data.is_empty() {
                        continue;
                    }
                    return Poll::Ready(Some(Ok(data)));
                }
                Poll::Ready(Some(Err(e))) => {
                    this.fail();
                    let cause = if e.is_incomplete_message() { Cause::other_side_closed() } else { hyper_cause(&e) };
                    return Poll::Ready(Some(Err(FetchError::terminated(cause))));
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    let rest = match this.decoder.as_mut().map(Decoder::finish) {
                        Some(Err(cause)) => {
                            this.fail();
                            return Poll::Ready(Some(Err(FetchError::terminated(cause))));
                        }
                        Some(Ok(rest)) => rest,
                        None => Vec::new(),
                    };
                    this.release(cx);
                    if rest.is_empty() {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Ok(Bytes::from(rest))));
                }
            }
        }
    }
}

impl Body {
    fn fail(&mut self) {
        self.ended = true;
        self.state = None;
        self.reuse = None;
    }
}

/// Read and drop a body (a redirect's), so its connection may be reused.
async fn drain(mut body: Body) {
    let deadline = tokio::time::sleep(Duration::from_secs(1));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            piece = futures::StreamExt::next(&mut body) => match piece {
                Some(Ok(_)) => continue,
                _ => return,
            },
            () = &mut deadline => return,
        }
    }
}

/// An idle connection is usable when reading from it would wait: no end of stream, no error
/// and no stray bytes arrived while it sat in the pool.
fn still_open(io: &mut BoxIo) -> bool {
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut byte = [0u8; 1];
    let mut rb = ReadBuf::new(&mut byte);
    matches!(tokio::io::AsyncRead::poll_read(Pin::new(io), &mut cx, &mut rb), Poll::Pending)
}

fn hyper_cause(e: &hyper::Error) -> Cause {
    use std::error::Error as _;
    if e.is_incomplete_message() {
        return Cause::other_side_closed();
    }
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::UnexpectedEof {
                return Cause::other_side_closed();
            }
            if io.kind() == std::io::ErrorKind::InvalidData || io.get_ref().is_some_and(|r| r.is::<rustls::Error>()) {
                return Cause::tls(io);
            }
            return Cause::socket(io);
        }
        source = s.source();
    }
    if e.is_incomplete_message() || e.is_canceled() {
        return Cause::other_side_closed();
    }
    if e.is_parse() && e.to_string().contains("too large") {
        let mut c = Cause::new("HTTPParserError", "Parse Error: Header overflow");
        c.fields.push(("code", "HPE_HEADER_OVERFLOW".into()));
        return c;
    }
    if e.is_parse() || e.is_parse_status() {
        return Cause::new("HTTPParserError", format!("Parse Error: {e}"));
    }
    Cause::new("Error", e.to_string())
}

/// `keep-alive: timeout=N`, in seconds.
fn keep_alive_hint(value: &str) -> Option<Duration> {
    value.split(',').find_map(|part| {
        let (k, v) = part.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("timeout") {
            return None;
        }
        v.trim().parse::<u64>().ok().map(Duration::from_secs)
    })
}

fn parse_url(raw: &str) -> Result<url::Url> {
    let fail = || {
        let mut cause = Cause::new("TypeError", "Invalid URL");
        cause.fields.push(("code", "ERR_INVALID_URL".into()));
        cause.fields.push(("input", raw.into()));
        FetchError { message: format!("Failed to parse URL from {raw}"), cause: Some(cause) }
    };
    let url = url::Url::parse(raw).map_err(|_| fail())?;
    match url.scheme() {
        "http" | "https" if url.host().is_some() => Ok(url),
        "http" | "https" => Err(fail()),
        _ => Err(FetchError::failed(Cause::new("Error", "unknown scheme"))),
    }
}

fn invalid_redirect(location: &str) -> FetchError {
    let mut cause = Cause::new("TypeError", "Invalid URL");
    cause.fields.push(("code", "ERR_INVALID_URL".into()));
    cause.fields.push(("input", location.into()));
    FetchError::failed(cause)
}

fn origin_of(url: &url::Url) -> Origin {
    let https = url.scheme() == "https";
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => String::new(),
    };
    let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
    Origin { https, host, port }
}

/// Headers that describe a request body, dropped with it when a redirect turns into a GET.
fn is_body_header(name: &str) -> bool {
    ["content-type", "content-encoding", "content-language", "content-location", "content-length"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// Credentials never sent to another origin on a redirect. Node's fetch drops the first
/// three; `x-api-key` (Anthropic's key header) is dropped too (see COMPAT.md).
fn is_credential(name: &str) -> bool {
    ["authorization", "proxy-authorization", "cookie", "x-api-key"].iter().any(|h| name.eq_ignore_ascii_case(h))
}

/// The ports the fetch standard refuses to connect to.
fn is_bad_port(port: u16) -> bool {
    const BAD: [u16; 80] = [
        1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109,
        110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530,
        531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 5060,
        5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6697, 10080,
    ];
    BAD.contains(&port)
}

fn invalid_header(what: &str, text: &str) -> FetchError {
    FetchError { message: format!("Headers.append: \"{text}\" is an invalid header {what}."), cause: None }
}

/// The request as Node's fetch puts it on the wire: `host` and `connection` first, the
/// caller's headers in their order, then what fetch adds when the caller did not
/// (`accept`, `accept-language`, `sec-fetch-mode`, `user-agent`, `accept-encoding`), and the
/// body's length last.
fn build_request(
    method: &http::Method,
    url: &url::Url,
    headers: &[(String, String)],
    body: Option<Bytes>,
) -> Result<http::Request<Full<Bytes>>> {
    use http::header::{HeaderName, HeaderValue};
    let mut target = url.path().to_string();
    if let Some(q) = url.query() {
        target.push('?');
        target.push_str(q);
    }
    let mut b = http::Request::builder().method(method.clone()).uri(target);
    let Some(map) = b.headers_mut() else {
        return Err(FetchError::failed(Cause::new("Error", "invalid request target")));
    };
    let host = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    let value = |v: &str| HeaderValue::from_str(v.trim_matches([' ', '\t'])).map_err(|_| invalid_header("value", v));
    map.insert(http::header::HOST, value(&host)?);
    map.insert(http::header::CONNECTION, HeaderValue::from_static("keep-alive"));
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    for (k, v) in headers {
        let fetch_owns = ["host", "connection", "content-length", "transfer-encoding", "keep-alive"];
        if fetch_owns.iter().any(|h| k.eq_ignore_ascii_case(h)) {
            continue;
        }
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| invalid_header("name", k))?;
        map.append(name, value(v)?);
    }
    if !has("accept") {
        map.insert(http::header::ACCEPT, HeaderValue::from_static("*/*"));
    }
    if !has("accept-language") {
        map.insert(http::header::ACCEPT_LANGUAGE, HeaderValue::from_static("*"));
    }
    map.insert(HeaderName::from_static("sec-fetch-mode"), HeaderValue::from_static("cors"));
    if !has("user-agent") {
        map.insert(http::header::USER_AGENT, HeaderValue::from_static("node"));
    }
    if !has("accept-encoding") {
        map.insert(http::header::ACCEPT_ENCODING, HeaderValue::from_static("gzip, deflate"));
    }
    let body = body.unwrap_or_default();
    if !body.is_empty() || (method != http::Method::GET && method != http::Method::HEAD) {
        map.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    b.body(Full::new(body)).map_err(|e| FetchError::failed(Cause::new("Error", e.to_string())))
}
