//! Where every HTTP client gets its TLS: rustls, with ring as the one crypto provider, for the
//! LLM transport (`fetch`) and the reqwest clients alike.
//!
//! reqwest is built with `rustls-no-provider`, so it takes the process's default rustls
//! provider and has none of its own; everything here makes sure ring is installed first.

use std::sync::{Arc, Once, OnceLock};

mod trust;

/// Install ring as the process's rustls provider, once. If another provider was installed
/// first (a Rust program embedding the core may have chosen one), that one is kept and used.
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The TLS configuration every client built here shares: the bundled Mozilla roots, as
/// reqwest 0.12's `rustls-tls` trusted and as Node's own TLS does, plus the certificates in
/// `NODE_EXTRA_CA_CERTS`, as Node adds them; https works the same with or without a system
/// certificate store. Verified by [`trust::NodeTrust`], which also accepts a server presenting
/// one of those extra certificates itself (a self-signed CA:TRUE one, or one that names its
/// host only in its subject's CN), as Node does. Built once
/// per process from the roots' ready-made trust anchors, so building a client parses no
/// certificates. HTTP/1.1 only.
pub(crate) fn tls_config() -> Option<Arc<rustls::ClientConfig>> {
    install_crypto_provider();
    static TLS: OnceLock<Option<Arc<rustls::ClientConfig>>> = OnceLock::new();
    TLS.get_or_init(|| {
        let extra = std::env::var_os("NODE_EXTRA_CA_CERTS").filter(|p| !p.is_empty());
        config_trusting(extra.as_deref().map(std::path::Path::new))
    })
    .clone()
}

/// The configuration of [`tls_config`], with the extra certificates of `extra_pem` (if any).
fn config_trusting(extra_pem: Option<&std::path::Path>) -> Option<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let extra = extra_pem.map(|path| add_pem_roots(&mut roots, path)).unwrap_or_default();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let webpki =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().ok()?;
    let verifier = Arc::new(trust::NodeTrust::new(webpki, extra));
    let builder = rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions().ok()?;
    let mut config = builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Some(Arc::new(config))
}

/// Trust the certificates of a PEM file too, as Node does with `NODE_EXTRA_CA_CERTS`. A file
/// that cannot be read, or a certificate in it that does not parse, is skipped: Node itself
/// has already warned about it at startup. Returns the certificates added.
pub(crate) fn add_pem_roots(
    roots: &mut rustls::RootCertStore,
    path: &std::path::Path,
) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    let Ok(bytes) = std::fs::read(path) else { return Vec::new() };
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(&bytes).filter_map(|c| c.ok());
    certs.filter(|cert| roots.add(cert.clone()).is_ok()).collect()
}

/// A reqwest client builder over [`tls_config`], for the HTTP tools, webfetch and both MCP
/// HTTP transports (streamable HTTP and legacy SSE). (The LLM transport, `fetch`, uses the
/// same configuration.)
pub fn client_builder() -> reqwest::ClientBuilder {
    match tls_config() {
        Some(config) => reqwest::Client::builder().tls_backend_preconfigured((*config).clone()),
        None => reqwest::Client::builder(),
    }
}

/// `client_builder()` set up as Node's `fetch` behaves: no proxy from the environment, up to 20
/// redirects, `user-agent: node`. For the tools that fetch on the model's behalf (httpTool,
/// webfetch).
pub(crate) fn fetch_like_builder() -> reqwest::ClientBuilder {
    client_builder().no_proxy().redirect(reqwest::redirect::Policy::limited(20)).user_agent("node")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suites(p: &rustls::crypto::CryptoProvider) -> Vec<rustls::CipherSuite> {
        p.cipher_suites.iter().map(|s| s.suite()).collect()
    }

    #[test]
    fn extra_roots_come_from_a_pem_file_and_a_bad_one_adds_nothing() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../__test__/support/tls");
        let mut roots = rustls::RootCertStore::empty();
        assert_eq!(add_pem_roots(&mut roots, &dir.join("ca.crt")).len(), 1);
        assert_eq!(roots.len(), 1);
        assert_eq!(add_pem_roots(&mut roots, &dir.join("missing.crt")), vec![]);
        assert_eq!(add_pem_roots(&mut roots, &dir.join("README.md")), vec![]);
        assert_eq!(roots.len(), 1);
    }

    #[test]
    fn clients_build_over_ring() {
        // Every bundled root parses (a bad one would fail the build).
        assert!(client_builder().build().is_ok());
        let installed = rustls::crypto::CryptoProvider::get_default().map(|p| suites(p));
        assert_eq!(installed, Some(suites(&rustls::crypto::ring::default_provider())));
    }
}
