//! A certificate that names its host only in its subject's CN (`openssl req -x509 -subj
//! /CN=localhost`, without `-addext subjectAltName=…`), trusted through `NODE_EXTRA_CA_CERTS`
//! and presented by a server on 127.0.0.1, as Node's `fetch` treats it.
//!
//! Node 20 (`tls.checkServerIdentity`), checked with `fetch` against a `node:https` server:
//! - no subjectAltName, CN=localhost: accepted at `localhost`, any case of the CN;
//! - the same at `127.0.0.1`: refused (`ERR_TLS_CERT_ALTNAME_INVALID`, "IP: 127.0.0.1 is not
//!   in the cert's list"), as is CN=127.0.0.1 there: an IP address is never read from the CN;
//! - CN=example.com at `localhost`: refused (`ERR_TLS_CERT_ALTNAME_INVALID`);
//! - subjectAltName DNS:example.com with CN=localhost: refused (a DNS alt name turns the CN
//!   off); subjectAltName IP:127.0.0.1 only with CN=localhost: accepted at `localhost`;
//! - CN=*.example.test: accepted at `api.example.test`, refused at `example.test` and
//!   `a.b.example.test`; CN=*.localhost refused at `a.localhost` (no wildcard over one label).
//!
//! webpki reads subjectAltName only; the core reads the CN as Node does, for a certificate
//! that is itself in the file and for nothing else, and still holds it to its dates and purpose.

use std::net::SocketAddr;
use std::sync::OnceLock;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::Transport;
use toolnexus_core::fetch::{BoxIo, Connect, Fetcher, TokioConnect};

use super::node_trust::{accepted, openssl_req_x509, self_signed, serve, via_reqwest_at, with_a_trust_file, Pem};
use crate::fetch::post;

struct Certs {
    /// `openssl req -x509 … -subj /CN=localhost`: CA:TRUE, no subjectAltName, in the file.
    localhost: Pem,
    /// Made the same way, not in the file.
    localhost_untrusted: Pem,
    /// `-subj /CN=example.com`, in the file.
    other_host: Pem,
    /// `-subj /CN=LocalHost`, in the file.
    upper_case: Pem,
    /// `-subj /CN=localhost -addext subjectAltName=DNS:example.com`, in the file.
    dns_alt_name_elsewhere: Pem,
    /// `-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1`, in the file.
    ip_alt_name_only: Pem,
    /// `-subj /CN=*.example.test`, in the file.
    wildcard: Pem,
    /// `-subj /CN=*.localhost`, in the file.
    wildcard_over_one_label: Pem,
    /// CA:FALSE, CN=localhost, no subjectAltName, in the file.
    plain: Pem,
    /// CA:FALSE, CN=localhost, no subjectAltName, valid 2000-2001, in the file.
    plain_expired: Pem,
    /// CA:TRUE, CN=localhost, no subjectAltName, valid from 2090, in the file.
    not_yet_valid: Pem,
    /// CA:TRUE, CN=localhost, no subjectAltName, for TLS clients only, in the file.
    client_only: Pem,
    /// CN=localhost, no subjectAltName, issued by a CA in the file, not itself in it.
    issued: Pem,
}

/// Like `node_trust`'s certificates, made once per process and written to the file
/// `NODE_EXTRA_CA_CERTS` names before any client reads it.
fn certs() -> &'static Certs {
    static CERTS: OnceLock<Certs> = OnceLock::new();
    CERTS.get_or_init(|| {
        let path = std::path::PathBuf::from(
            std::env::var_os("NODE_EXTRA_CA_CERTS").expect("NODE_EXTRA_CA_CERTS names the trust file to write"),
        );
        let dir = path.parent().unwrap();
        // Where there is no openssl, rcgen makes the same kind: CA:TRUE, these names.
        let openssl = |name: &str, cn: &str, alt_names: Option<&str>| {
            openssl_req_x509(dir, name, &format!("/CN={cn}"), alt_names, || {
                let names: Vec<&str> = alt_names
                    .iter()
                    .flat_map(|a| a.split(','))
                    .filter_map(|n| n.split_once(':'))
                    .map(|(_, n)| n)
                    .collect();
                self_signed(&names, true, |p| p.distinguished_name.push(DnType::CommonName, cn))
            })
        };
        let named = |ca: bool, adjust: fn(&mut CertificateParams)| {
            self_signed(&[], ca, |p| {
                p.distinguished_name.push(DnType::CommonName, "localhost");
                if !ca {
                    p.is_ca = IsCa::ExplicitNoCa;
                }
                adjust(p);
            })
        };
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "toolnexus test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let issued_key = KeyPair::generate().unwrap();
        let mut issued_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        issued_params.distinguished_name.push(DnType::CommonName, "localhost");
        let issued =
            Pem { cert: issued_params.signed_by(&issued_key, &issuer).unwrap().pem(), key: issued_key.serialize_pem() };
        let certs = Certs {
            localhost: openssl("localhost", "localhost", None),
            localhost_untrusted: openssl("untrusted", "localhost", None),
            other_host: openssl("other-host", "example.com", None),
            upper_case: openssl("upper-case", "LocalHost", None),
            dns_alt_name_elsewhere: openssl("dns-alt-name", "localhost", Some("DNS:example.com")),
            ip_alt_name_only: openssl("ip-alt-name", "localhost", Some("IP:127.0.0.1")),
            wildcard: openssl("wildcard", "*.example.test", None),
            wildcard_over_one_label: openssl("wildcard-tld", "*.localhost", None),
            plain: named(false, |_| {}),
            plain_expired: named(false, |p| {
                p.not_before = rcgen::date_time_ymd(2000, 1, 1);
                p.not_after = rcgen::date_time_ymd(2001, 1, 1);
            }),
            not_yet_valid: named(true, |p| {
                p.not_before = rcgen::date_time_ymd(2090, 1, 1);
                p.not_after = rcgen::date_time_ymd(2091, 1, 1);
            }),
            client_only: named(true, |p| p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth]),
            issued,
        };
        let trusted = [
            &certs.localhost,
            &certs.other_host,
            &certs.upper_case,
            &certs.dns_alt_name_elsewhere,
            &certs.ip_alt_name_only,
            &certs.wildcard,
            &certs.wildcard_over_one_label,
            &certs.plain,
            &certs.plain_expired,
            &certs.not_yet_valid,
            &certs.client_only,
        ];
        let mut file = ca.pem();
        for pem in trusted {
            file.push_str(&pem.cert);
        }
        std::fs::write(&path, file).unwrap();
        certs
    })
}

/// Every name resolves to 127.0.0.1 (where the test servers listen).
struct Loopback;

#[async_trait::async_trait]
impl Connect for Loopback {
    async fn resolve(&self, _host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))])
    }

    async fn connect(&self, addr: SocketAddr) -> std::io::Result<BoxIo> {
        TokioConnect.connect(addr).await
    }
}

/// A request of the LLM client's own transport (the process's shared TLS configuration) to
/// `https://host:port`.
async fn via_transport_at(host: &str, port: u16) -> Result<String, String> {
    let transport = FetchTransport::new(Fetcher::new(Loopback));
    match transport.post(post(&format!("https://{host}:{port}/v1/chat/completions"), "{}")).await {
        Ok(res) => {
            let json: serde_json::Value = serde_json::from_str(&res.body).map_err(|e| e.to_string())?;
            Ok(json["choices"][0]["message"]["content"].as_str().unwrap_or_default().to_string())
        }
        // fetch's `TypeError: fetch failed`; what went wrong is its cause.
        Err(toolnexus_core::Error::Fetch(f)) => {
            Err(format!("{}: {}", f.message, f.cause.map(|c| c.message).unwrap_or_default()))
        }
        Err(other) => Err(other.to_string()),
    }
}

/// Both clients accept the server presenting `pem` as `host`.
async fn accepted_at(pem: &Pem, host: &str) {
    let port = serve(pem).await;
    assert_eq!(via_transport_at(host, port).await, Ok("over tls".to_string()), "transport at {host}");
    assert_eq!(via_reqwest_at(host, port).await, Ok("over tls".to_string()), "reqwest at {host}");
}

/// Both clients refuse the server presenting `pem` as `host`, for a reason that mentions `why`.
async fn refused_at(pem: &Pem, host: &str, why: &str) {
    let port = serve(pem).await;
    for (who, outcome) in
        [("transport", via_transport_at(host, port).await), ("reqwest", via_reqwest_at(host, port).await)]
    {
        let e = outcome.expect_err(who);
        assert!(e.contains("certificate"), "{who} at {host}: {e}");
        assert!(e.contains(why), "{who} at {host}: expected {why:?} in {e}");
    }
}

#[tokio::test]
async fn a_trusted_certificate_without_alt_names_is_valid_for_its_common_name() {
    crate::alone!(a_trusted_certificate_without_alt_names_is_valid_for_its_common_name, with_a_trust_file);
    // The LLM client's run, as `node_trust` checks the usual certificate.
    accepted(&certs().localhost).await;
    accepted_at(&certs().localhost, "localhost").await;
    accepted_at(&certs().upper_case, "localhost").await;
    // A certificate that is no CA reaches the same check by webpki's other refusal.
    accepted_at(&certs().plain, "localhost").await;
}

#[tokio::test]
async fn the_common_name_never_names_an_ip_address() {
    crate::alone!(the_common_name_never_names_an_ip_address, with_a_trust_file);
    refused_at(&certs().localhost, "127.0.0.1", "not valid for name").await;
    refused_at(&certs().plain, "127.0.0.1", "not valid for name").await;
}

#[tokio::test]
async fn a_common_name_for_another_host_is_refused() {
    crate::alone!(a_common_name_for_another_host_is_refused, with_a_trust_file);
    refused_at(&certs().other_host, "localhost", "not valid for name").await;
}

#[tokio::test]
async fn a_dns_alt_name_turns_the_common_name_off_and_an_ip_alt_name_does_not() {
    crate::alone!(a_dns_alt_name_turns_the_common_name_off_and_an_ip_alt_name_does_not, with_a_trust_file);
    refused_at(&certs().dns_alt_name_elsewhere, "localhost", "not valid for name").await;
    accepted_at(&certs().ip_alt_name_only, "localhost").await;
    accepted_at(&certs().ip_alt_name_only, "127.0.0.1").await;
}

#[tokio::test]
async fn a_wildcard_common_name_stands_for_one_left_most_label() {
    crate::alone!(a_wildcard_common_name_stands_for_one_left_most_label, with_a_trust_file);
    accepted_at(&certs().wildcard, "api.example.test").await;
    accepted_at(&certs().wildcard, "API.Example.Test").await;
    refused_at(&certs().wildcard, "example.test", "not valid for name").await;
    refused_at(&certs().wildcard, "a.b.example.test", "not valid for name").await;
    refused_at(&certs().wildcard_over_one_label, "a.localhost", "not valid for name").await;
}

#[tokio::test]
async fn a_certificate_read_by_its_common_name_is_still_held_to_its_dates_and_purpose() {
    crate::alone!(a_certificate_read_by_its_common_name_is_still_held_to_its_dates_and_purpose, with_a_trust_file);
    refused_at(&certs().plain_expired, "localhost", "expired").await;
    refused_at(&certs().not_yet_valid, "localhost", "not valid yet").await;
    refused_at(&certs().client_only, "localhost", "InvalidPurpose").await;
}

#[tokio::test]
async fn only_a_certificate_trusted_as_itself_is_read_by_its_common_name() {
    crate::alone!(only_a_certificate_trusted_as_itself_is_read_by_its_common_name, with_a_trust_file);
    refused_at(&certs().localhost_untrusted, "localhost", "CaUsedAsEndEntity").await;
    // Node reads the CN of any certificate, this one too; the core reads it only for a
    // certificate trusted as itself (never one that chains to a root).
    refused_at(&certs().issued, "localhost", "not valid for name").await;
}
