//! A small HTTP/1.1 client for the LLM transport, over whatever byte streams a [`Connect`]
//! hands it.
//!
//! The LLM endpoint is one host spoken to over and over with POSTs, so this keeps it simple:
//! one request per connection at a time, idle connections kept for reuse, bodies framed by
//! `content-length`, `chunked` or the connection closing. The connection itself is not this
//! module's business: a host whose event loop owns the sockets (Node, through libuv) supplies
//! its own, so a run is woken by the loop that is already waiting rather than by another
//! thread.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::transport::{HttpRequest, HttpResponse, StreamResponse, Transport};
use crate::error::{Error, Result};

/// A connected byte stream.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

pub type BoxIo = Box<dyn Io>;

/// Opens TCP connections. `host` is a name or an IP literal (IPv6 without brackets).
#[async_trait]
pub trait Connect: Send + Sync + 'static {
    async fn connect(&self, host: &str, port: u16) -> io::Result<BoxIo>;
}

/// Connections through tokio's own sockets.
pub struct TokioConnect;

#[async_trait]
impl Connect for TokioConnect {
    async fn connect(&self, host: &str, port: u16) -> io::Result<BoxIo> {
        let stream = tokio::net::TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        Ok(Box::new(stream))
    }
}

/// How long an idle connection is kept (reqwest's default).
const IDLE_FOR: Duration = Duration::from_secs(90);
/// At most this many idle connections are kept.
const MAX_IDLE: usize = 64;
/// A response head larger than this is refused.
const MAX_HEAD: usize = 256 * 1024;
const READ_CHUNK: usize = 16 * 1024;

#[derive(Clone, PartialEq, Eq, Debug)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

struct Target {
    origin: Origin,
    /// The `host` header: the host as written, with the port when it is not the default.
    authority: String,
    path: String,
}

struct Conn {
    io: BoxIo,
    /// Bytes read past what has been consumed.
    buf: Vec<u8>,
    /// Came from the idle pool (it may have been closed by the peer meanwhile).
    reused: bool,
}

struct Idle {
    target: Arc<Target>,
    conn: Conn,
    since: Instant,
}

struct Shared {
    connect: Box<dyn Connect>,
    tls: Option<tokio_rustls::TlsConnector>,
    idle: Mutex<Vec<Idle>>,
}

impl Shared {
    /// Back to the pool when the exchange left it at a message boundary; closed otherwise.
    fn finish(&self, target: Arc<Target>, keep_alive: bool, body: &Body, mut conn: Conn) {
        if !(keep_alive && body.reusable() && conn.buf.is_empty()) {
            return;
        }
        conn.reused = true;
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() >= MAX_IDLE {
            idle.remove(0);
        }
        idle.push(Idle { target, conn, since: Instant::now() });
    }

    fn checkout(&self, origin: &Origin) -> Option<Conn> {
        loop {
            let mut found = {
                let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
                let now = Instant::now();
                idle.retain(|i| now.duration_since(i.since) < IDLE_FOR);
                let at = idle.iter().rposition(|i| &i.target.origin == origin)?;
                idle.remove(at).conn
            };
            // Dropped outside the lock: closing a connection may call into the host.
            if still_open(&mut found) {
                return Some(found);
            }
        }
    }
}

/// An idle connection is usable when reading from it would wait: no end of stream, no error
/// and no stray bytes arrived while it sat in the pool.
fn still_open(conn: &mut Conn) -> bool {
    if !conn.buf.is_empty() {
        return false;
    }
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut byte = [0u8; 1];
    let mut rb = ReadBuf::new(&mut byte);
    matches!(Pin::new(&mut conn.io).poll_read(&mut cx, &mut rb), Poll::Pending)
}

/// The HTTP/1.1 transport: pooled keep-alive connections from a [`Connect`], TLS through
/// rustls for https.
pub struct H1Transport {
    shared: Arc<Shared>,
    /// The last URL posted to, parsed (a client talks to one endpoint).
    last: Mutex<Option<(String, Arc<Target>)>>,
}

impl H1Transport {
    pub fn new(connect: impl Connect) -> Self {
        Self::with_tls(connect, crate::net::tls_config())
    }

    /// With a TLS configuration of the caller's (other roots, client certificates); `None`
    /// refuses https.
    pub fn with_tls(connect: impl Connect, tls: Option<Arc<rustls::ClientConfig>>) -> Self {
        let tls = tls.map(tokio_rustls::TlsConnector::from);
        H1Transport {
            shared: Arc::new(Shared { connect: Box::new(connect), tls, idle: Mutex::new(Vec::new()) }),
            last: Mutex::new(None),
        }
    }

    fn target(&self, raw: &str) -> Result<Arc<Target>> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, t)) = last.as_ref().filter(|(text, _)| text == raw) {
            return Ok(t.clone());
        }
        let t = Arc::new(parse_target(raw)?);
        *last = Some((raw.to_string(), t.clone()));
        Ok(t)
    }

    async fn open(&self, origin: &Origin) -> Result<Conn> {
        let io = self
            .shared
            .connect
            .connect(&origin.host, origin.port)
            .await
            .map_err(|e| failed("tcp connect error", &e))?;
        let io = if origin.https {
            let tls = self.shared.tls.as_ref().ok_or_else(|| fetch_failed("TLS is not available"))?;
            let name = rustls::pki_types::ServerName::try_from(origin.host.clone())
                .map_err(|e| fetch_failed(&format!("invalid server name: {e}")))?;
            Box::new(tls.connect(name, io).await.map_err(|e| failed("TLS handshake failed", &e))?) as BoxIo
        } else {
            io
        };
        Ok(Conn { io, buf: Vec::with_capacity(READ_CHUNK), reused: false })
    }

    /// Send `req` and read the response head. A reused connection the peer closed before
    /// answering anything is replaced by a fresh one, once.
    async fn exchange(&self, req: &HttpRequest) -> Result<(Arc<Target>, Head, Conn)> {
        let target = self.target(&req.url)?;
        let wire = encode(&target, req)?;
        let mut pooled = self.shared.checkout(&target.origin);
        loop {
            let mut conn = match pooled.take() {
                Some(c) => c,
                None => self.open(&target.origin).await?,
            };
            let reused = conn.reused;
            let sent = async {
                conn.io.write_all(&wire).await?;
                conn.io.flush().await
            }
            .await;
            let outcome = match sent {
                Err(e) => Err((true, e)),
                Ok(()) => read_head(&mut conn).await,
            };
            match outcome {
                Ok(head) => return Ok((target, head, conn)),
                Err((true, _)) if reused => continue,
                Err((_, e)) => return Err(failed("error sending request", &e)),
            }
        }
    }
}

#[async_trait]
impl Transport for H1Transport {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse> {
        let (target, head, mut conn) = self.exchange(&req).await?;
        let mut body = Body::new(&head);
        let mut bytes = Vec::new();
        while let Some(chunk) = body.next(&mut conn).await.map_err(|e| failed("error decoding response body", &e))? {
            bytes.extend_from_slice(&chunk);
        }
        self.shared.finish(target, head.keep_alive, &body, conn);
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        Ok(HttpResponse { status: head.status, headers: head.headers, body: text })
    }

    async fn post_stream(&self, req: HttpRequest) -> Result<StreamResponse> {
        let (target, head, conn) = self.exchange(&req).await?;
        let status = head.status;
        let headers = head.headers.clone();
        let state = Some(Streaming {
            body: Body::new(&head),
            keep_alive: head.keep_alive,
            conn,
            target,
            shared: self.shared.clone(),
        });
        let body = futures::stream::unfold(state, |state| async move {
            let mut s = state?;
            match s.body.next(&mut s.conn).await {
                Ok(Some(chunk)) => Some((Ok(chunk), Some(s))),
                Ok(None) => {
                    s.shared.finish(s.target, s.keep_alive, &s.body, s.conn);
                    None
                }
                Err(e) => Some((Err(failed("error decoding response body", &e)), None)),
            }
        });
        Ok(StreamResponse { status, headers, body: body.boxed() })
    }
}

struct Streaming {
    body: Body,
    keep_alive: bool,
    conn: Conn,
    target: Arc<Target>,
    shared: Arc<Shared>,
}

fn fetch_failed(cause: &str) -> Error {
    Error::Transport(format!("fetch failed ({cause})"))
}

fn failed(what: &str, e: &io::Error) -> Error {
    fetch_failed(&format!("{what}: {e}"))
}

fn parse_target(raw: &str) -> Result<Target> {
    let url = url::Url::parse(raw).map_err(|e| fetch_failed(&format!("builder error: {e}")))?;
    let https = match url.scheme() {
        "http" => false,
        "https" => true,
        other => return Err(fetch_failed(&format!("builder error: URL scheme is not allowed: {other}"))),
    };
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => return Err(fetch_failed("builder error: URL has no host")),
    };
    let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
    let written = url.host_str().unwrap_or_default();
    let authority = match url.port() {
        Some(p) => format!("{written}:{p}"),
        None => written.to_string(),
    };
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok(Target { origin: Origin { https, host, port }, authority, path })
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn valid_value(value: &str) -> bool {
    value.bytes().all(|b| b != b'\r' && b != b'\n' && b != 0)
}

/// The request as bytes: the caller's headers in their order, then what HTTP needs.
fn encode(target: &Target, req: &HttpRequest) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(req.body.len() + 512);
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(target.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut has_host = false;
    let mut has_accept = false;
    for (k, v) in &req.headers {
        if !valid_name(k) {
            return Err(fetch_failed(&format!("builder error: invalid header name {k:?}")));
        }
        if !valid_value(v) {
            return Err(fetch_failed(&format!("builder error: invalid value for header {k:?}")));
        }
        if k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("transfer-encoding") {
            continue;
        }
        has_host |= k.eq_ignore_ascii_case("host");
        has_accept |= k.eq_ignore_ascii_case("accept");
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.trim().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !has_host {
        out.extend_from_slice(b"host: ");
        out.extend_from_slice(target.authority.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !has_accept {
        out.extend_from_slice(b"accept: */*\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", req.body.len()).as_bytes());
    out.extend_from_slice(req.body.as_bytes());
    Ok(out)
}

struct Head {
    status: u16,
    /// Lower-cased names.
    headers: Vec<(String, String)>,
    keep_alive: bool,
    framing: Framing,
}

#[derive(Clone, Copy)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// Read more bytes into the connection's buffer; `Ok(0)` is the end of the stream.
async fn fill(conn: &mut Conn) -> io::Result<usize> {
    conn.buf.reserve(READ_CHUNK);
    conn.io.read_buf(&mut conn.buf).await
}

/// Read a response head, skipping interim (1xx) ones. The error says whether nothing at all
/// came back, which is what makes a retry on a fresh connection safe.
async fn read_head(conn: &mut Conn) -> std::result::Result<Head, (bool, io::Error)> {
    let mut got_any = false;
    loop {
        if let Some((used, head)) = parse_head(&conn.buf).map_err(|e| (false, e))? {
            conn.buf.drain(..used);
            if (100..200).contains(&head.status) && head.status != 101 {
                continue;
            }
            return Ok(head);
        }
        if conn.buf.len() > MAX_HEAD {
            return Err((false, io::Error::new(io::ErrorKind::InvalidData, "response head too large")));
        }
        match fill(conn).await {
            Ok(0) => {
                return Err((
                    !got_any,
                    io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before message completed"),
                ))
            }
            Ok(_) => got_any = true,
            Err(e) => return Err((!got_any, e)),
        }
    }
}

fn parse_head(buf: &[u8]) -> io::Result<Option<(usize, Head)>> {
    let mut slots = [httparse::EMPTY_HEADER; 128];
    let mut res = httparse::Response::new(&mut slots);
    let used = match res.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, format!("invalid HTTP response: {e}"))),
    };
    let status = res.code.unwrap_or(0);
    let http11 = res.version == Some(1);
    let mut headers = Vec::with_capacity(res.headers.len());
    let mut keep_alive = http11;
    let mut length = None;
    let mut chunked = false;
    for h in res.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        let value = String::from_utf8_lossy(h.value).into_owned();
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
            "content-length" => {
                let n = value
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "invalid content-length"))?;
                if length.is_some_and(|l| l != n) {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "conflicting content-length"));
                }
                length = Some(n);
            }
            "transfer-encoding" => {
                chunked = value.rsplit(',').next().is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            }
            _ => {}
        }
        headers.push((name, value));
    }
    let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    if matches!(framing, Framing::UntilClose) {
        keep_alive = false;
    }
    Ok(Some((used, Head { status, headers, keep_alive, framing })))
}

/// Reads a body in its framing, piece by piece.
struct Body {
    state: BodyState,
}

enum BodyState {
    Length(u64),
    /// Inside a chunk with this many bytes left (then its CRLF).
    Chunk(u64),
    /// Expecting a chunk-size line.
    ChunkSize,
    /// After the last chunk: trailers up to an empty line.
    Trailers,
    UntilClose,
    Done,
}

impl Body {
    fn new(head: &Head) -> Self {
        let state = match head.framing {
            Framing::Length(0) => BodyState::Done,
            Framing::Length(n) => BodyState::Length(n),
            Framing::Chunked => BodyState::ChunkSize,
            Framing::UntilClose => BodyState::UntilClose,
        };
        Body { state }
    }

    /// The connection is left at a message boundary.
    fn reusable(&self) -> bool {
        matches!(self.state, BodyState::Done)
    }

    async fn next(&mut self, conn: &mut Conn) -> io::Result<Option<Vec<u8>>> {
        loop {
            match self.state {
                BodyState::Done => return Ok(None),
                BodyState::Length(left) => {
                    let chunk = take(conn, left).await?;
                    let left = left - chunk.len() as u64;
                    self.state = if left == 0 { BodyState::Done } else { BodyState::Length(left) };
                    return Ok(Some(chunk));
                }
                BodyState::UntilClose => {
                    if conn.buf.is_empty() && fill(conn).await? == 0 {
                        self.state = BodyState::Done;
                        return Ok(None);
                    }
                    return Ok(Some(std::mem::take(&mut conn.buf)));
                }
                BodyState::ChunkSize => {
                    let line = read_line(conn).await?;
                    let digits = line.split(';').next().unwrap_or_default().trim();
                    let size = u64::from_str_radix(digits, 16)
                        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "invalid chunk size"))?;
                    self.state = if size == 0 { BodyState::Trailers } else { BodyState::Chunk(size) };
                }
                BodyState::Chunk(0) => {
                    let line = read_line(conn).await?;
                    if !line.is_empty() {
                        return Err(io::Error::new(io::ErrorKind::InvalidData, "invalid chunk end"));
                    }
                    self.state = BodyState::ChunkSize;
                }
                BodyState::Chunk(left) => {
                    let chunk = take(conn, left).await?;
                    self.state = BodyState::Chunk(left - chunk.len() as u64);
                    return Ok(Some(chunk));
                }
                BodyState::Trailers => {
                    let line = read_line(conn).await?;
                    if line.is_empty() {
                        self.state = BodyState::Done;
                    }
                }
            }
        }
    }
}

/// Up to `left` bytes of a framed body (at least one): what is buffered, or the next read.
async fn take(conn: &mut Conn, left: u64) -> io::Result<Vec<u8>> {
    if conn.buf.is_empty() && fill(conn).await? == 0 {
        return Err(eof());
    }
    let n = left.min(conn.buf.len() as u64) as usize;
    Ok(conn.buf.drain(..n).collect())
}

fn eof() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before message completed")
}

/// One CRLF-terminated line, without its ending.
async fn read_line(conn: &mut Conn) -> io::Result<String> {
    loop {
        if let Some(at) = conn.buf.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&conn.buf[..at]).into_owned();
            conn.buf.drain(..at + 2);
            return Ok(line);
        }
        if conn.buf.len() > MAX_HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "chunk line too long"));
        }
        if fill(conn).await? == 0 {
            return Err(eof());
        }
    }
}
