//! Where every HTTP client is built: reqwest over rustls, with ring as the one crypto provider.
//!
//! reqwest is built with `rustls-no-provider`, so it takes the process's default rustls
//! provider and has none of its own; each builder here makes sure ring is installed first.

use std::sync::{Once, OnceLock};

/// Install ring as the process's rustls provider, once. If another provider was installed
/// first (a Rust program embedding the core may have chosen one), that one is kept and used.
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A client builder that trusts the bundled Mozilla roots and nothing else, as reqwest 0.12's
/// `rustls-tls` did: https works the same with or without a system certificate store.
/// Used by the LLM transport, the HTTP tools, webfetch and the legacy MCP SSE transport.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    // Parsed once per process: every client (one per createClient, httpTool, webfetch call)
    // would otherwise decode the ~150 bundled roots again.
    static ROOTS: OnceLock<Vec<reqwest::Certificate>> = OnceLock::new();
    let roots = ROOTS.get_or_init(|| {
        webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .filter_map(|der| reqwest::Certificate::from_der(der).ok())
            .collect()
    });
    reqwest::Client::builder().tls_certs_only(roots.iter().cloned())
}

/// A client builder that verifies certificates against the platform's roots (on Linux, the
/// system store read by rustls-platform-verifier), as the streamable-HTTP MCP client has.
pub(crate) fn platform_client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suites(p: &rustls::crypto::CryptoProvider) -> Vec<rustls::CipherSuite> {
        p.cipher_suites.iter().map(|s| s.suite()).collect()
    }

    #[test]
    fn clients_build_over_ring() {
        // Every bundled root parses (a bad one would fail the build).
        assert!(client_builder().build().is_ok());
        // The platform verifier needs a system store; this one is there on a box with ca-certificates.
        if std::path::Path::new("/etc/ssl/certs/ca-certificates.crt").exists() {
            assert!(platform_client_builder().build().is_ok());
        }
        let installed = rustls::crypto::CryptoProvider::get_default().map(|p| suites(p));
        assert_eq!(installed, Some(suites(&rustls::crypto::ring::default_provider())));
    }
}
