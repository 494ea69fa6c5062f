//! The TLS acceptor of STARTTLS and implicit TLS, from the PEM files of `HERALD_TLS_CERT`
//! (the chain, leaf first) and `HERALD_TLS_KEY`. Read once at startup: a missing or bad file
//! stops startup with its path named.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::ring;

pub fn acceptor(cert: &Path, key: &Path) -> anyhow::Result<TlsAcceptor> {
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading HERALD_TLS_CERT {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing HERALD_TLS_CERT {}", cert.display()))?;
    if certs.is_empty() {
        anyhow::bail!("HERALD_TLS_CERT {} holds no certificate", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading HERALD_TLS_KEY {}", key.display()))?;
    // The provider is named: two are compiled into the binary (ring here, aws-lc elsewhere),
    // so rustls has no process default to pick.
    let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("HERALD_TLS_CERT and HERALD_TLS_KEY do not make a usable certificate")?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
