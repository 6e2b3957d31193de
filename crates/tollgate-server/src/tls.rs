//! TLS on Tollgate's own listeners (`[listen.tls]`, `[listen.admin_tls]`),
//! with rustls on aws-lc-rs.
//!
//! Where it sits: the serve loop hands each accepted connection to the
//! listener's acceptor before HTTP starts; ALPN offers `h2` and
//! `http/1.1`, and the negotiated protocol picks hyper's connection. The
//! certificate is served through a resolver whose key pair can be swapped:
//! a task checks the files every `reload_interval` and loads a changed
//! pair for new connections (open ones keep theirs; a pair that does not
//! load is logged and the old one kept). The served certificate's expiry
//! is a gauge, so an alert warns before it lapses. With `client_ca`,
//! every client must present a certificate chaining to it.
//!
//! Toward an upstream, [`upstream_config`] builds the client side: the
//! public (webpki) roots plus `[[servers]] tls.ca`, and the client
//! certificate of `tls.cert`/`tls.key` for upstreams that require one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use prometheus::{IntGauge, IntGaugeVec, Opts};
use rustls::RootCertStore;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// Why a listener's TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or parsed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

fn file_error(path: &Path, reason: impl ToString) -> TlsError {
    TlsError::File {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

/// The certificate in force, swappable.
#[derive(Debug)]
struct Current(ArcSwap<CertifiedKey>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.load_full())
    }
}

/// One listener's TLS: its acceptor, and what reloading needs.
#[derive(Clone)]
pub struct ListenerTls {
    acceptor: TlsAcceptor,
    current: Arc<Current>,
    cert: PathBuf,
    key: PathBuf,
    interval: Duration,
    /// When the served certificate expires (Unix time), for
    /// `tollgate_tls_certificate_expiry_timestamp_seconds`.
    expiry: IntGauge,
}

impl std::fmt::Debug for ListenerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerTls")
            .field("cert", &self.cert)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The client TLS of an upstream with `[[servers]] tls`, paths relative
/// to `base`.
///
/// # Errors
///
/// [`TlsError`] naming the file that cannot be used.
pub(crate) fn upstream_config(
    tls: &tollgate_config::UpstreamTls,
    base: &Path,
) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(ca) = &tls.ca {
        for c in certificates(&base.join(ca))? {
            roots.add(c)?;
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    Ok(match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            let key = base.join(key);
            let der = PrivateKeyDer::from_pem_file(&key).map_err(|e| file_error(&key, e))?;
            builder.with_client_auth_cert(certificates(&base.join(cert))?, der)?
        }
        _ => builder.with_no_client_auth(),
    })
}

/// Every certificate in a PEM file, in order.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| file_error(path, e))
}

/// When the first (leaf) certificate of `pair` stops being valid, in
/// Unix seconds; 0 when it cannot be read.
fn not_after(pair: &CertifiedKey) -> i64 {
    pair.cert
        .first()
        .and_then(|der| x509_parser::parse_x509_certificate(der.as_ref()).ok())
        .map_or(0, |(_, cert)| cert.validity().not_after.timestamp())
}

/// The listeners' expiry gauges, by `listener` (`public` or `admin`), for
/// the gateway to register once.
pub(crate) fn expiry_gauges() -> prometheus::Result<IntGaugeVec> {
    IntGaugeVec::new(
        Opts::new(
            "tollgate_tls_certificate_expiry_timestamp_seconds",
            "When the certificate a TLS listener serves expires (Unix time), updated when it is reloaded.",
        ),
        &["listener"],
    )
}

/// The certificate chain and key in two PEM files.
fn load_pair(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let chain = certificates(cert)?;
    if chain.is_empty() {
        return Err(file_error(cert, "no certificate in the file"));
    }
    let der = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e))?;
    let signing = provider()
        .key_provider
        .load_private_key(der)
        .map_err(|e| file_error(key, e))?;
    Ok(CertifiedKey::new(chain, signing))
}

impl ListenerTls {
    /// The TLS of a listener configured by `config`, its paths relative to
    /// `base`; `expiry` is set to when its certificate expires.
    ///
    /// # Errors
    ///
    /// [`TlsError`] naming the file that cannot be used.
    pub fn new(config: &tollgate_config::ListenerTls, base: &Path, expiry: IntGauge) -> Result<ListenerTls, TlsError> {
        let (cert, key) = (base.join(&config.cert), base.join(&config.key));
        let pair = load_pair(&cert, &key)?;
        expiry.set(not_after(&pair));
        let current = Arc::new(Current(ArcSwap::from_pointee(pair)));
        let builder = rustls::ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
        let builder = match &config.client_ca {
            Some(ca) => {
                let ca = base.join(ca);
                let mut roots = RootCertStore::empty();
                for c in certificates(&ca)? {
                    roots.add(c)?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                    .build()
                    .map_err(|e| file_error(&ca, e))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut server = builder.with_cert_resolver(current.clone());
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(ListenerTls {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            current,
            cert,
            key,
            interval: config.reload_interval,
            expiry,
        })
    }

    /// The acceptor for the serve loop.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }

    /// Check the files every `reload_interval` (for as long as the
    /// runtime runs) and load a changed pair.
    pub(crate) async fn watch(self) {
        let stamp = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let mut seen: (Option<SystemTime>, Option<SystemTime>) = (stamp(&self.cert), stamp(&self.key));
        loop {
            tokio::time::sleep(self.interval).await;
            let now = (stamp(&self.cert), stamp(&self.key));
            if now == seen {
                continue;
            }
            match load_pair(&self.cert, &self.key) {
                Ok(pair) => {
                    self.expiry.set(not_after(&pair));
                    self.current.0.store(Arc::new(pair));
                    seen = now;
                    tracing::info!(cert = %self.cert.display(), "TLS certificate reloaded");
                }
                // A half-written pair is tried again at the next check.
                Err(e) => tracing::warn!(error = %e, "TLS certificate not reloaded; the previous one stays"),
            }
        }
    }
}
