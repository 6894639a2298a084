//! The transport over https with a TLS configuration of its own: a trusted certificate works
//! and keeps the connection, the default trust refuses one it does not know.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::Transport;
use toolnexus_core::fetch::{Fetcher, Options, Tls, TokioConnect};

use crate::fetch::{fresh, post};

fn pem(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../__test__/support/tls").join(name);
    std::fs::read(path).unwrap()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// An https server with the localhost certificate; counts connections.
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
                    let mut tmp = [0u8; 4096];
                    let Ok(n) = s.read(&mut tmp).await else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                    let mut slots = [httparse::EMPTY_HEADER; 64];
                    let mut req = httparse::Request::new(&mut slots);
                    if let Ok(httparse::Status::Complete(at)) = req.parse(&buf) {
                        buf.drain(..at + 2);
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
    let o = Options { tls: Tls::Config(Arc::new(config)), ..Options::default() };
    let t = FetchTransport::new(Fetcher::with_options(TokioConnect, o));
    for _ in 0..3 {
        let r = t.post(post(&format!("https://localhost:{port}/v1"), "{}")).await.unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "secure"));
    }
    assert_eq!(conns.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn https_with_an_untrusted_certificate_fails_the_fetch() {
    let (port, _) = https_server().await;
    let e = fresh().post(post(&format!("https://localhost:{port}/v1"), "{}")).await.unwrap_err();
    let toolnexus_core::Error::Fetch(e) = e else { panic!("{e:?}") };
    assert_eq!(e.message, "fetch failed");
    assert!(e.cause.unwrap().message.contains("certificate"));
}
