//! The HTTP/1.1 transport against raw TCP servers on 127.0.0.1 that answer byte for byte as
//! each test scripts: framings, keep-alive reuse, a pooled connection the server dropped,
//! interim responses, streamed bodies.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use toolnexus_core::client::h1::{H1Transport, TokioConnect};
use toolnexus_core::client::{HttpRequest, Transport};

/// Read one request (head + content-length body) from `s`; `None` at end of stream.
async fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, String)> {
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..at]).into_owned();
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            while buf.len() < at + 4 + len {
                let mut tmp = [0u8; 4096];
                let n = s.read(&mut tmp).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            let body = String::from_utf8_lossy(&buf[at + 4..at + 4 + len]).into_owned();
            buf.drain(..at + 4 + len);
            return Some((head, body));
        }
        let mut tmp = [0u8; 4096];
        let n = s.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

/// A server answering every request on a connection with `reply(n)` (n counts requests across
/// connections), closing the connection after it when `close_after` says so. Reports each
/// request head and counts connections.
struct Server {
    url: String,
    heads: mpsc::UnboundedReceiver<(String, String)>,
    conns: Arc<AtomicUsize>,
}

async fn server(reply: fn(usize) -> Vec<u8>, close_after: fn(usize) -> bool) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let (tx, heads) = mpsc::unbounded_channel();
    let conns = Arc::new(AtomicUsize::new(0));
    let count = Arc::new(AtomicUsize::new(0));
    let c2 = conns.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            c2.fetch_add(1, Ordering::SeqCst);
            let tx = tx.clone();
            let count = count.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some(req) = read_request(&mut s, &mut buf).await {
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    let _ = tx.send(req);
                    let bytes = reply(n);
                    if s.write_all(&bytes).await.is_err() {
                        return;
                    }
                    if close_after(n) {
                        return;
                    }
                }
            });
        }
    });
    Server { url, heads, conns }
}

fn req(url: &str, body: &str) -> HttpRequest {
    HttpRequest {
        url: url.to_string(),
        headers: vec![("content-type".into(), "application/json".into()), ("authorization".into(), "Bearer k".into())],
        body: body.to_string(),
    }
}

fn never(_: usize) -> bool {
    false
}

fn with_length(_: usize) -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request: a\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"
        .to_vec()
}

#[tokio::test]
async fn sends_headers_in_order_and_reads_a_sized_body() {
    let mut s = server(with_length, never).await;
    let t = H1Transport::new(TokioConnect);
    let r = t.post(req(&s.url, "{\"a\":1}")).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "{\"ok\":true}");
    assert_eq!(r.header("x-request"), Some("a"));
    assert!(r.headers.iter().all(|(k, _)| k == &k.to_ascii_lowercase()));
    let (head, body) = s.heads.recv().await.unwrap();
    assert_eq!(body, "{\"a\":1}");
    let lines: Vec<&str> = head.lines().collect();
    assert_eq!(lines[0], "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(lines[1], "content-type: application/json");
    assert_eq!(lines[2], "authorization: Bearer k");
    let port = s.url.split(':').nth(2).unwrap().split('/').next().unwrap();
    assert_eq!(lines[3], format!("host: 127.0.0.1:{port}"));
    assert!(lines.contains(&"content-length: 7"));
}

#[tokio::test]
async fn keeps_the_connection_for_the_next_request() {
    let s = server(with_length, never).await;
    let t = H1Transport::new(TokioConnect);
    for _ in 0..5 {
        assert_eq!(t.post(req(&s.url, "{}")).await.unwrap().body, "{\"ok\":true}");
    }
    assert_eq!(s.conns.load(Ordering::SeqCst), 1);
}

fn chunked(_: usize) -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n".to_vec()
}

#[tokio::test]
async fn decodes_chunked_bodies_and_reuses_after_them() {
    let s = server(chunked, never).await;
    let t = H1Transport::new(TokioConnect);
    for _ in 0..3 {
        assert_eq!(t.post(req(&s.url, "{}")).await.unwrap().body, "hello, world");
    }
    assert_eq!(s.conns.load(Ordering::SeqCst), 1);
}

fn until_close(_: usize) -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\n\r\nread to the end".to_vec()
}

fn always(_: usize) -> bool {
    true
}

#[tokio::test]
async fn reads_an_unframed_body_to_the_close_and_does_not_reuse() {
    let s = server(until_close, always).await;
    let t = H1Transport::new(TokioConnect);
    assert_eq!(t.post(req(&s.url, "{}")).await.unwrap().body, "read to the end");
    assert_eq!(t.post(req(&s.url, "{}")).await.unwrap().body, "read to the end");
    assert_eq!(s.conns.load(Ordering::SeqCst), 2);
}

fn close_header(_: usize) -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec()
}

#[tokio::test]
async fn connection_close_is_honoured() {
    let s = server(close_header, never).await;
    let t = H1Transport::new(TokioConnect);
    for _ in 0..3 {
        assert_eq!(t.post(req(&s.url, "{}")).await.unwrap().body, "ok");
    }
    assert_eq!(s.conns.load(Ordering::SeqCst), 3);
}

fn first_then_drop(n: usize) -> bool {
    n == 0
}

#[tokio::test]
async fn a_pooled_connection_the_server_dropped_is_replaced() {
    // The server answers keep-alive, then closes without saying so.
    let s = server(with_length, first_then_drop).await;
    let t = H1Transport::new(TokioConnect);
    assert_eq!(t.post(req(&s.url, "{}")).await.unwrap().status, 200);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(t.post(req(&s.url, "{}")).await.unwrap().body, "{\"ok\":true}");
    assert_eq!(s.conns.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_connection_dropped_just_as_it_is_reused_is_retried_once() {
    // Accept, answer one request, then read the second request and close without a byte.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/x", listener.local_addr().unwrap());
    let conns = Arc::new(AtomicUsize::new(0));
    let c2 = conns.clone();
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((mut s, _)) = listener.accept().await {
            c2.fetch_add(1, Ordering::SeqCst);
            let drop_second = first;
            first = false;
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut n = 0;
                while read_request(&mut s, &mut buf).await.is_some() {
                    if drop_second && n == 1 {
                        return;
                    }
                    n += 1;
                    if s.write_all(&with_length(0)).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let t = H1Transport::new(TokioConnect);
    assert_eq!(t.post(req(&url, "{}")).await.unwrap().status, 200);
    assert_eq!(t.post(req(&url, "{}")).await.unwrap().status, 200);
    assert_eq!(conns.load(Ordering::SeqCst), 2);
}

fn interim(_: usize) -> Vec<u8> {
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone".to_vec()
}

#[tokio::test]
async fn interim_responses_are_skipped() {
    let s = server(interim, never).await;
    let r = H1Transport::new(TokioConnect).post(req(&s.url, "{}")).await.unwrap();
    assert_eq!((r.status, r.body.as_str()), (201, "done"));
}

fn error_status(_: usize) -> Vec<u8> {
    b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 4\r\n\r\nslow".to_vec()
}

#[tokio::test]
async fn error_statuses_come_back_as_responses() {
    let s = server(error_status, never).await;
    let r = H1Transport::new(TokioConnect).post(req(&s.url, "{}")).await.unwrap();
    assert_eq!((r.status, r.header("retry-after"), r.body.as_str()), (429, Some("0"), "slow"));
}

#[tokio::test]
async fn a_streamed_body_arrives_as_the_server_sends_it() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/s", listener.local_addr().unwrap());
    let (go_tx, mut go_rx) = mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        read_request(&mut s, &mut buf).await.unwrap();
        s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata:1\r\n").await.unwrap();
        // The second piece only after the client has seen the first.
        go_rx.recv().await.unwrap();
        s.write_all(b"6\r\ndata:2\r\n0\r\n\r\n").await.unwrap();
        let _ = read_request(&mut s, &mut buf).await;
    });
    let t = H1Transport::new(TokioConnect);
    let mut res = t.post_stream(req(&url, "{}")).await.unwrap();
    assert_eq!(res.status, 200);
    assert_eq!(res.body.next().await.unwrap().unwrap(), b"data:1");
    go_tx.send(()).unwrap();
    assert_eq!(res.body.next().await.unwrap().unwrap(), b"data:2");
    assert!(res.body.next().await.is_none());
}

#[tokio::test]
async fn failures_read_fetch_failed_with_a_cause() {
    let t = H1Transport::new(TokioConnect);
    // Nothing listens on port 1.
    let e = t.post(req("http://127.0.0.1:1/v1", "{}")).await.unwrap_err().to_string();
    assert!(e.starts_with("fetch failed (tcp connect error: "), "{e}");
    let e = t.post(req("not a url", "{}")).await.unwrap_err().to_string();
    assert!(e.starts_with("fetch failed (builder error"), "{e}");
    let mut bad = req("http://127.0.0.1:1/v1", "{}");
    bad.headers.push(("x-bad".into(), "a\r\nb".into()));
    let e = t.post(bad).await.unwrap_err().to_string();
    assert!(e.starts_with("fetch failed (builder error"), "{e}");
}

#[tokio::test]
async fn a_response_cut_short_is_an_error() {
    fn cut(_: usize) -> Vec<u8> {
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort".to_vec()
    }
    let s = server(cut, always).await;
    let e = H1Transport::new(TokioConnect).post(req(&s.url, "{}")).await.unwrap_err().to_string();
    assert!(e.starts_with("fetch failed ("), "{e}");
}

mod tls {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    fn pem(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../__test__/support/tls").join(name);
        std::fs::read(path).unwrap()
    }

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    /// An https server with the self-signed localhost certificate, answering every request on
    /// a connection; counts connections.
    async fn https_server() -> (u16, Arc<AtomicUsize>) {
        let cert = CertificateDer::from_pem_slice(&pem("localhost.crt")).unwrap();
        let key = PrivateKeyDer::from_pem_slice(&pem("localhost.key")).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns = Arc::new(AtomicUsize::new(0));
        let c2 = conns.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                c2.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut s) = acceptor.accept(tcp).await else { return };
                    let mut buf = Vec::new();
                    loop {
                        // The request head and its small body arrive together here.
                        let mut tmp = [0u8; 4096];
                        let Ok(n) = s.read(&mut tmp).await else { return };
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&tmp[..n]);
                        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            buf.drain(..at + 4 + 2);
                            let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure";
                            if s.write_all(reply).await.is_err() || s.flush().await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        (port, conns)
    }

    #[tokio::test]
    async fn https_with_a_trusted_certificate_works_and_keeps_the_connection() {
        let (port, conns) = https_server().await;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(&pem("ca.crt")).unwrap()).unwrap();
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let t = H1Transport::with_tls(TokioConnect, Some(Arc::new(config)));
        for _ in 0..3 {
            let r = t.post(req(&format!("https://localhost:{port}/v1"), "{}")).await.unwrap();
            assert_eq!((r.status, r.body.as_str()), (200, "secure"));
        }
        assert_eq!(conns.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn https_with_an_untrusted_certificate_fails_the_handshake() {
        let (port, _) = https_server().await;
        let e = H1Transport::new(TokioConnect).post(req(&format!("https://localhost:{port}/v1"), "{}")).await;
        let e = e.unwrap_err().to_string();
        assert!(e.starts_with("fetch failed (TLS handshake failed: "), "{e}");
    }
}
