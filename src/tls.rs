//! The process's TLS crypto provider. rustls runs on ring (see Cargo.toml
//! for why not aws-lc-rs), and reqwest, built without a provider of its
//! own, takes the process default; so every HTTPS client is made after
//! [`install`].

/// Installs ring as the process's default provider, once; later calls,
/// and a provider installed already, leave it as it is.
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // An error means a provider is installed already: that one stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_https_client_builds_once_the_provider_is_installed() {
        super::install();
        super::install();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        reqwest::Client::builder()
            .build()
            .expect("reqwest finds the process's provider");
    }
}
