//! https trust as Node's: certificates made at test time, a TLS server on 127.0.0.1 presenting
//! each, and both of the core's HTTP clients (the LLM client's own transport and the reqwest
//! clients of the tools and MCP) trusting `NODE_EXTRA_CA_CERTS`.
//!
//! A self-signed certificate made the usual way (`openssl req -x509`, marked CA:TRUE) and
//! listed in `NODE_EXTRA_CA_CERTS` is accepted, as Node accepts it; a different one, a wrong
//! host name, dates outside the validity period, a certificate meant for clients only, and a
//! CA:TRUE certificate that is not itself in the file are all refused.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolnexus_core::client::{Client, RunOptions, Style};

use crate::common::*;

/// A certificate and its key, as PEM.
#[derive(Clone)]
pub(super) struct Pem {
    pub(super) cert: String,
    pub(super) key: String,
}

struct Certs {
    /// `openssl req -x509 … -subj /CN=localhost -addext subjectAltName=…`: CA:TRUE, in the file.
    node_style: Pem,
    /// Made the same way, not in the file.
    other_self_signed: Pem,
    /// CA:TRUE, self-signed, in the file, for `example.com` only.
    wrong_host: Pem,
    /// CA:TRUE, self-signed, in the file, valid 2000-2001.
    expired: Pem,
    /// CA:TRUE, self-signed, in the file, valid from 2090.
    not_yet_valid: Pem,
    /// CA:TRUE, self-signed, in the file, for TLS clients only (extendedKeyUsage clientAuth).
    client_only: Pem,
    /// CA:FALSE, self-signed, in the file.
    plain_self_signed: Pem,
    /// An ordinary server certificate issued by a CA that is in the file.
    issued: Pem,
    /// CA:TRUE, issued by the CA in the file, not itself in the file.
    ca_issued: Pem,
}

const SAN: &[&str] = &["localhost", "127.0.0.1"];

/// The trust of `NODE_EXTRA_CA_CERTS` is read once per process, by the first client any test
/// builds: each test here runs in a process of its own (`alone!`), set up by this, whose
/// `NODE_EXTRA_CA_CERTS` names a file in a fresh directory (kept until the process ends) that
/// [`certs`] writes before any client reads it.
pub(super) fn with_a_trust_file(cmd: &mut Command) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    cmd.env("NODE_EXTRA_CA_CERTS", dir.path().join("extra-ca.pem"));
    dir
}

/// The certificates, made once; they are written to the trust file `NODE_EXTRA_CA_CERTS` names
/// before any client reads it (every test comes through here first).
fn certs() -> &'static Certs {
    static CERTS: OnceLock<Certs> = OnceLock::new();
    CERTS.get_or_init(|| {
        let path = std::path::PathBuf::from(
            std::env::var_os("NODE_EXTRA_CA_CERTS").expect("NODE_EXTRA_CA_CERTS names the trust file to write"),
        );
        let dir = path.parent().unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "toolnexus test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let certs = Certs {
            node_style: openssl_self_signed(dir, "node-style"),
            other_self_signed: openssl_self_signed(dir, "other"),
            wrong_host: self_signed(&["example.com"], true, |_| {}),
            expired: self_signed(SAN, true, |p| {
                p.not_before = rcgen::date_time_ymd(2000, 1, 1);
                p.not_after = rcgen::date_time_ymd(2001, 1, 1);
            }),
            not_yet_valid: self_signed(SAN, true, |p| {
                p.not_before = rcgen::date_time_ymd(2090, 1, 1);
                p.not_after = rcgen::date_time_ymd(2091, 1, 1);
            }),
            client_only: self_signed(SAN, true, |p| p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth]),
            plain_self_signed: self_signed(SAN, false, |_| {}),
            issued: issued_by(&issuer, false),
            ca_issued: issued_by(&issuer, true),
        };
        let trusted = [
            &certs.node_style,
            &certs.wrong_host,
            &certs.expired,
            &certs.not_yet_valid,
            &certs.client_only,
            &certs.plain_self_signed,
        ];
        let mut file = ca.pem();
        for pem in trusted {
            file.push_str(&pem.cert);
        }
        std::fs::write(&path, file).unwrap();
        certs
    })
}

/// A self-signed certificate as `openssl req -x509` makes it (CA:TRUE). Where there is no
/// `openssl`, rcgen makes the same kind.
fn openssl_self_signed(dir: &Path, name: &str) -> Pem {
    openssl_req_x509(dir, name, "/CN=localhost", Some("DNS:localhost,IP:127.0.0.1"), || {
        self_signed(SAN, true, |p| p.distinguished_name.push(rcgen::DnType::CommonName, "localhost"))
    })
}

/// `openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj <subject>`, with
/// `-addext subjectAltName=<alt_names>` if given: a self-signed CA:TRUE certificate. Where
/// there is no `openssl`, `fallback` makes it.
pub(super) fn openssl_req_x509(
    dir: &Path,
    name: &str,
    subject: &str,
    alt_names: Option<&str>,
    fallback: impl FnOnce() -> Pem,
) -> Pem {
    let (cert, key) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
    let mut cmd = std::process::Command::new("openssl");
    cmd.args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", subject]);
    if let Some(alt_names) = alt_names {
        cmd.args(["-addext", &format!("subjectAltName={alt_names}")]);
    }
    let made = cmd.arg("-keyout").arg(&key).arg("-out").arg(&cert).output();
    match made {
        Ok(out) if out.status.success() => {
            let pem = Pem { cert: std::fs::read_to_string(cert).unwrap(), key: std::fs::read_to_string(key).unwrap() };
            let text = std::process::Command::new("openssl")
                .args(["x509", "-noout", "-text", "-in"])
                .arg(dir.join(format!("{name}.crt")))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&text.stdout);
            assert!(text.contains("CA:TRUE"), "openssl made a CA:TRUE certificate");
            assert_eq!(text.contains("Subject Alternative Name"), alt_names.is_some(), "{text}");
            pem
        }
        _ => {
            eprintln!("no usable openssl: {name} is made by rcgen");
            fallback()
        }
    }
}

pub(super) fn self_signed(names: &[&str], ca: bool, adjust: impl FnOnce(&mut CertificateParams)) -> Pem {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    if ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    adjust(&mut params);
    Pem { cert: params.self_signed(&key).unwrap().pem(), key: key.serialize_pem() }
}

fn issued_by(issuer: &Issuer<'_, KeyPair>, ca: bool) -> Pem {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(SAN.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    if ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    Pem { cert: params.signed_by(&key, issuer).unwrap().pem(), key: key.serialize_pem() }
}

/// A TLS server on 127.0.0.1 presenting `pem`, answering every request with an OpenAI-style
/// chat completion. Returns its port.
pub(super) async fn serve(pem: &Pem) -> u16 {
    let chain = vec![CertificateDer::from_pem_slice(pem.cert.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(pem.key.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as much body as it announces.
                loop {
                    let Ok(n) = tls.read(&mut buf).await else { return };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&seen[..at]).to_ascii_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
                            .unwrap_or(0usize);
                        if seen.len() >= at + 4 + len {
                            break;
                        }
                    }
                }
                let body = oa_text("over tls").to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    port
}

/// A run of the LLM client (its own HTTP/1.1 transport) against `https://localhost:port`.
async fn via_client(port: u16) -> Result<String, String> {
    let mut o = options(&format!("https://localhost:{port}/v1"), Style::OpenAI);
    o.retries = 0;
    let client = Client::new(o).unwrap();
    let tk = toolkit(vec![]).await;
    client.run("hi", &tk, RunOptions::default()).await.map(|r| r.text).map_err(|e| match e {
        // fetch's `TypeError: fetch failed`; what went wrong is its cause.
        toolnexus_core::Error::Fetch(f) => format!("{}: {}", f.message, f.cause.map(|c| c.message).unwrap_or_default()),
        other => other.to_string(),
    })
}

/// A request of the reqwest client the HTTP tools, webfetch and MCP are built from.
async fn via_reqwest(port: u16) -> Result<String, String> {
    via_reqwest_at("localhost", port).await
}

/// The same, to `https://host:port`, `host` resolving to 127.0.0.1.
pub(super) async fn via_reqwest_at(host: &str, port: u16) -> Result<String, String> {
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let client = toolnexus_core::net::client_builder().resolve(host, loopback).build().unwrap();
    let sent = client.post(format!("https://{host}:{port}/v1/chat/completions")).body("{}").send().await;
    match sent {
        Ok(res) => {
            let json: serde_json::Value = res.json().await.map_err(|e| e.to_string())?;
            Ok(json["choices"][0]["message"]["content"].as_str().unwrap_or_default().to_string())
        }
        Err(e) => {
            // The whole chain: reqwest's own message names only the URL.
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            Err(text)
        }
    }
}

/// Both clients accept the server presenting `pem`.
pub(super) async fn accepted(pem: &Pem) {
    let port = serve(pem).await;
    assert_eq!(via_client(port).await, Ok("over tls".to_string()));
    assert_eq!(via_reqwest(port).await, Ok("over tls".to_string()));
}

/// Both clients refuse the server presenting `pem`, for a reason that mentions `why`.
async fn refused(pem: &Pem, why: &str) {
    let port = serve(pem).await;
    for (who, outcome) in [("client", via_client(port).await), ("reqwest", via_reqwest(port).await)] {
        let e = outcome.expect_err(who);
        assert!(e.contains("certificate"), "{who}: {e}");
        assert!(e.contains(why), "{who}: expected {why:?} in {e}");
    }
}

#[tokio::test]
async fn a_self_signed_ca_certificate_in_the_file_is_trusted_as_node_trusts_it() {
    crate::alone!(a_self_signed_ca_certificate_in_the_file_is_trusted_as_node_trusts_it, with_a_trust_file);
    accepted(&certs().node_style).await;
}

#[tokio::test]
async fn a_self_signed_ca_certificate_not_in_the_file_is_refused() {
    crate::alone!(a_self_signed_ca_certificate_not_in_the_file_is_refused, with_a_trust_file);
    refused(&certs().other_self_signed, "CaUsedAsEndEntity").await;
}

#[tokio::test]
async fn a_trusted_ca_certificate_for_another_host_is_refused() {
    crate::alone!(a_trusted_ca_certificate_for_another_host_is_refused, with_a_trust_file);
    refused(&certs().wrong_host, "not valid for name").await;
}

#[tokio::test]
async fn a_trusted_ca_certificate_outside_its_validity_period_is_refused() {
    crate::alone!(a_trusted_ca_certificate_outside_its_validity_period_is_refused, with_a_trust_file);
    refused(&certs().expired, "expired").await;
    refused(&certs().not_yet_valid, "not valid yet").await;
}

#[tokio::test]
async fn a_trusted_ca_certificate_meant_for_clients_only_is_refused() {
    crate::alone!(a_trusted_ca_certificate_meant_for_clients_only_is_refused, with_a_trust_file);
    refused(&certs().client_only, "InvalidPurpose").await;
}

#[tokio::test]
async fn a_ca_certificate_issued_by_a_trusted_ca_but_not_itself_trusted_is_refused() {
    crate::alone!(a_ca_certificate_issued_by_a_trusted_ca_but_not_itself_trusted_is_refused, with_a_trust_file);
    refused(&certs().ca_issued, "CaUsedAsEndEntity").await;
}

#[tokio::test]
async fn ordinary_chains_and_plain_self_signed_certificates_are_unchanged() {
    crate::alone!(ordinary_chains_and_plain_self_signed_certificates_are_unchanged, with_a_trust_file);
    accepted(&certs().issued).await;
    accepted(&certs().plain_self_signed).await;
}
