//! The errors of a request that got no usable response, in the shape Node's `fetch` gives
//! them: a `TypeError` (`fetch failed`, or `terminated` once the body had begun) whose `cause`
//! is the `Error` of the layer that failed, with the fields Node sets on it.

use std::fmt;
use std::io;
use std::net::SocketAddr;

use serde_json::{Map, Value};

/// The `cause` of a failed fetch: what Node's socket, resolver or HTTP client raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The error's `name` (`Error`, `SocketError`, `ConnectTimeoutError`, ...).
    pub name: String,
    pub message: String,
    /// Further own properties, in the order Node defines them (`errno`, `code`, `syscall`,
    /// `address`, `port`, `hostname`, ...).
    pub fields: Vec<(&'static str, Value)>,
}

impl Cause {
    pub fn new(name: &str, message: impl Into<String>) -> Self {
        Cause { name: name.to_string(), message: message.into(), fields: Vec::new() }
    }

    fn with(mut self, key: &'static str, value: impl Into<Value>) -> Self {
        self.fields.push((key, value.into()));
        self
    }

    /// The value of a field (`code`, `syscall`, ...), when set.
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// `code`, when set.
    pub fn code(&self) -> Option<&str> {
        self.field("code").and_then(Value::as_str)
    }

    /// An undici error: `name` and `code` are its own properties.
    fn undici(name: &str, code: &str, message: impl Into<String>) -> Self {
        Cause::new(name, message).with("name", name).with("code", code)
    }

    /// The peer closed the connection before the response was complete.
    pub fn other_side_closed() -> Self {
        Cause::undici("SocketError", "UND_ERR_SOCKET", "other side closed")
    }

    pub fn connect_timeout(host: &str, port: u16, ms: u64) -> Self {
        let message = format!("Connect Timeout Error (attempted address: {host}:{port}, timeout: {ms}ms)");
        Cause::undici("ConnectTimeoutError", "UND_ERR_CONNECT_TIMEOUT", message)
    }

    pub fn headers_timeout() -> Self {
        Cause::undici("HeadersTimeoutError", "UND_ERR_HEADERS_TIMEOUT", "Headers Timeout Error")
    }

    pub fn body_timeout() -> Self {
        Cause::undici("BodyTimeoutError", "UND_ERR_BODY_TIMEOUT", "Body Timeout Error")
    }

    /// A failed `connect(2)` to `addr`, as Node's `net` reports it.
    pub fn connect(e: &io::Error, addr: SocketAddr) -> Self {
        let (code, errno) = code_of(e);
        let ip = addr.ip().to_string();
        Cause::new("Error", format!("connect {code} {ip}:{}", addr.port()))
            .with_errno(errno)
            .with("code", code)
            .with("syscall", "connect")
            .with("address", ip)
            .with("port", addr.port())
    }

    /// A failed read or write on an established connection.
    pub fn socket(e: &io::Error) -> Self {
        let (code, errno) = code_of(e);
        let syscall = if code == "EPIPE" { "write" } else { "read" };
        Cause::new("Error", format!("{syscall} {code}")).with_errno(errno).with("code", code).with("syscall", syscall)
    }

    /// A name that did not resolve.
    pub fn lookup(e: &io::Error, host: &str) -> Self {
        let text = e.to_string().to_ascii_lowercase();
        // getaddrinfo's own texts, as libuv maps them to Node's codes: glibc's and musl's
        // ("Temporary failure in name resolution", "Try again"), macOS's (lower case), Windows'
        // WSATRY_AGAIN ("... a temporary error during hostname resolution ...").
        let transient = ["temporary failure", "try again", "temporary error"];
        let (code, errno) =
            if transient.iter().any(|t| text.contains(t)) { ("EAI_AGAIN", -3001) } else { ("ENOTFOUND", -3008) };
        Cause::new("Error", format!("getaddrinfo {code} {host}"))
            .with("errno", errno)
            .with("code", code)
            .with("syscall", "getaddrinfo")
            .with("hostname", host)
    }

    /// A TLS failure during the handshake or on the connection.
    pub fn tls(e: &io::Error) -> Self {
        let text = match e.get_ref() {
            Some(inner) => inner.to_string(),
            None => e.to_string(),
        };
        Cause::new("Error", text)
    }

    fn with_errno(self, errno: Option<i64>) -> Self {
        match errno {
            Some(n) => self.with("errno", n),
            None => self,
        }
    }

    /// `{ name, message, ...fields }`, for the host to rebuild the error from.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), self.name.clone().into());
        m.insert("message".into(), self.message.clone().into());
        let mut own = Map::new();
        for (k, v) in &self.fields {
            own.insert((*k).to_string(), v.clone());
        }
        m.insert("fields".into(), Value::Object(own));
        Value::Object(m)
    }
}

/// A request that got no usable response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError {
    /// `fetch failed` before a response, `terminated` while its body was read; other texts
    /// for a request fetch refuses to send.
    pub message: String,
    pub cause: Option<Cause>,
}

impl FetchError {
    pub fn failed(cause: Cause) -> Self {
        FetchError { message: "fetch failed".into(), cause: Some(cause) }
    }

    pub fn terminated(cause: Cause) -> Self {
        FetchError { message: "terminated".into(), cause: Some(cause) }
    }

    /// `{ name: "TypeError", message, cause? }`, for the host to rebuild the error from.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), "TypeError".into());
        m.insert("message".into(), self.message.clone().into());
        if let Some(c) = &self.cause {
            m.insert("cause".into(), c.to_value());
        }
        Value::Object(m)
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FetchError {}

/// Node's `code` and `errno` for an OS error: the errno's symbolic name, and its negation as
/// libuv reports it on Unix (on Windows, libuv's own number for the code).
pub fn code_of(e: &io::Error) -> (&'static str, Option<i64>) {
    #[cfg(windows)]
    if let Some((name, errno)) = e.raw_os_error().and_then(crate::syserr::windows_net_code) {
        return (name, Some(errno));
    }
    #[cfg(unix)]
    if let Some(raw) = e.raw_os_error() {
        let name = match raw {
            libc::ECONNREFUSED => "ECONNREFUSED",
            libc::ECONNRESET => "ECONNRESET",
            libc::ECONNABORTED => "ECONNABORTED",
            libc::ETIMEDOUT => "ETIMEDOUT",
            libc::EHOSTUNREACH => "EHOSTUNREACH",
            libc::ENETUNREACH => "ENETUNREACH",
            libc::ENETDOWN => "ENETDOWN",
            libc::EHOSTDOWN => "EHOSTDOWN",
            libc::EPIPE => "EPIPE",
            libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
            libc::EADDRINUSE => "EADDRINUSE",
            libc::EAFNOSUPPORT => "EAFNOSUPPORT",
            libc::EACCES => "EACCES",
            libc::EPERM => "EPERM",
            libc::EMFILE => "EMFILE",
            libc::ENFILE => "ENFILE",
            libc::ENOBUFS => "ENOBUFS",
            libc::EINVAL => "EINVAL",
            libc::EPROTO => "EPROTO",
            _ => return (kind_code(e.kind()), Some(-i64::from(raw))),
        };
        return (name, Some(-i64::from(raw)));
    }
    (kind_code(e.kind()), None)
}

fn kind_code(kind: io::ErrorKind) -> &'static str {
    use io::ErrorKind as K;
    match kind {
        K::ConnectionRefused => "ECONNREFUSED",
        K::ConnectionReset => "ECONNRESET",
        K::ConnectionAborted => "ECONNABORTED",
        K::TimedOut => "ETIMEDOUT",
        K::BrokenPipe => "EPIPE",
        K::AddrNotAvailable => "EADDRNOTAVAIL",
        K::AddrInUse => "EADDRINUSE",
        K::PermissionDenied => "EACCES",
        K::HostUnreachable => "EHOSTUNREACH",
        K::NetworkUnreachable => "ENETUNREACH",
        K::NetworkDown => "ENETDOWN",
        K::UnexpectedEof => "ECONNRESET",
        _ => "EIO",
    }
}

#[cfg(test)]
mod tests {
    use super::Cause;
    use serde_json::Value;
    use std::io;

    fn code(message: &str) -> Value {
        let cause = Cause::lookup(&io::Error::other(message.to_string()), "example.test");
        cause.fields.iter().find(|(k, _)| *k == "code").map(|(_, v)| v.clone()).unwrap_or(Value::Null)
    }

    #[test]
    fn a_transient_lookup_failure_is_eai_again_whatever_the_platform_says() {
        assert_eq!(code("failed to lookup address information: Temporary failure in name resolution"), "EAI_AGAIN");
        assert_eq!(code("failed to lookup address information: Try again"), "EAI_AGAIN");
        assert_eq!(code("failed to lookup address information: temporary failure in name resolution"), "EAI_AGAIN");
        assert_eq!(
            code("This is usually a temporary error during hostname resolution and means that the local server did not receive a response from an authoritative server."),
            "EAI_AGAIN"
        );
        assert_eq!(code("failed to lookup address information: Name or service not known"), "ENOTFOUND");
        assert_eq!(
            code("failed to lookup address information: nodename nor servname provided, or not known"),
            "ENOTFOUND"
        );
    }
}
