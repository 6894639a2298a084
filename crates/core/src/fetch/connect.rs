//! Opening connections: the seam a host fills with its own sockets, name resolution, and the
//! race between a name's addresses that Node's `autoSelectFamily` runs.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};

use super::error::Cause;

/// A connected byte stream.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {
    /// The connection goes idle into the pool: stop anything that waits on it (a stream whose
    /// readiness an event loop reports would otherwise keep that loop alive).
    fn park(&mut self) {}
}

pub type BoxIo = Box<dyn Io>;

impl Io for Box<dyn Io> {
    fn park(&mut self) {
        (**self).park()
    }
}

impl Io for tokio::net::TcpStream {}
impl Io for tokio::io::DuplexStream {}

impl<T: Io> Io for tokio_rustls::client::TlsStream<T> {
    fn park(&mut self) {
        self.get_mut().0.park()
    }
}

/// Opens TCP connections and resolves names.
#[async_trait]
pub trait Connect: Send + Sync + 'static {
    /// The addresses of `host` (a name; IP literals never reach here), in resolver order.
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        lookup(host, port).await
    }

    async fn connect(&self, addr: SocketAddr) -> io::Result<BoxIo>;
}

/// The system resolver, on the runtime's blocking pool.
pub async fn lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    Ok(tokio::net::lookup_host((host, port)).await?.collect())
}

/// Connections through tokio's own sockets.
pub struct TokioConnect;

#[async_trait]
impl Connect for TokioConnect {
    async fn connect(&self, addr: SocketAddr) -> io::Result<BoxIo> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Box::new(stream))
    }
}

/// How long an attempt has before the next address is tried alongside it (Node's
/// `autoSelectFamilyAttemptTimeout`).
pub const STAGGER: Duration = Duration::from_millis(250);

/// Addresses interleaved by family, starting with the family of the first, as Node orders
/// them for `autoSelectFamily`.
fn interleave(addrs: Vec<SocketAddr>) -> Vec<SocketAddr> {
    let Some(first) = addrs.first() else { return addrs };
    let v6_first = first.is_ipv6();
    let (mut a, mut b): (Vec<_>, Vec<_>) = addrs.into_iter().partition(|x| x.is_ipv6() == v6_first);
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.drain(..), b.drain(..));
    loop {
        match (a.next(), b.next()) {
            (None, None) => return out,
            (x, y) => out.extend(x.into_iter().chain(y)),
        }
    }
}

/// Connect to the first of `addrs` that answers: each attempt gets [`STAGGER`] before the
/// next one starts beside it, a failed attempt starts the next at once, and the first
/// connection made wins (the others are dropped). All failing gives the last failure.
pub async fn race(connect: &dyn Connect, addrs: Vec<SocketAddr>) -> Result<BoxIo, Cause> {
    type Attempt<'a> = Pin<Box<dyn std::future::Future<Output = (SocketAddr, io::Result<BoxIo>)> + Send + 'a>>;
    let mut pending = interleave(addrs).into_iter();
    let mut running: FuturesUnordered<Attempt<'_>> = FuturesUnordered::new();
    let start = |addr: SocketAddr| -> Attempt<'_> { Box::pin(async move { (addr, connect.connect(addr).await) }) };
    let mut last: Option<Cause> = None;
    match pending.next() {
        Some(addr) => running.push(start(addr)),
        None => return Err(Cause::new("Error", "no address to connect to")),
    }
    loop {
        let stagger = tokio::time::sleep(STAGGER);
        tokio::pin!(stagger);
        tokio::select! {
            biased;
            done = running.next() => match done {
                Some((_, Ok(io))) => return Ok(io),
                Some((addr, Err(e))) => {
                    last = Some(Cause::connect(&e, addr));
                    match pending.next() {
                        Some(next) => running.push(start(next)),
                        None if running.is_empty() => {
                            return Err(last.unwrap_or_else(|| Cause::new("Error", "connect failed")))
                        }
                        None => {}
                    }
                }
                None => return Err(last.unwrap_or_else(|| Cause::new("Error", "connect failed"))),
            },
            () = &mut stagger, if pending.len() > 0 => {
                if let Some(next) = pending.next() {
                    running.push(start(next));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_alternate_from_the_first() {
        let v4 = |n: u8| SocketAddr::from(([127, 0, 0, n], 1));
        let v6 = |n: u16| SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, n], 1));
        assert_eq!(interleave(vec![v6(1), v6(2), v4(1), v4(2), v4(3)]), vec![v6(1), v4(1), v6(2), v4(2), v4(3)]);
        assert_eq!(interleave(vec![v4(1), v6(1)]), vec![v4(1), v6(1)]);
        assert_eq!(interleave(vec![]), Vec::<SocketAddr>::new());
    }
}
