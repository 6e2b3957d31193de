//! Connecting: the PostgreSQL client configuration and the TLS it uses,
//! built from [`StoreSettings`], the pool of connections, and connections
//! of their own for `LISTEN` ([`Dedicated`]).

use std::str::FromStr as _;
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use futures_util::StreamExt as _;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::mpsc;
use tokio_postgres::config::SslMode;
use tokio_postgres::{AsyncMessage, Notification};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Result, StoreError};
use crate::settings::{StoreSettings, StoreTls};

/// How to open a connection of its own, outside the pool: for `LISTEN`,
/// whose notifications only the connection that listens receives.
#[derive(Clone)]
pub(crate) struct Dedicated {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
}

/// Notifications a listening connection holds for its reader; more are
/// dropped (each says only "look again", and a look is pending).
const NOTIFICATIONS: usize = 64;

impl Dedicated {
    /// A new connection outside the pool, driven by a task of its own
    /// that hands the server's notifications to the receiver; the receiver
    /// ends when the connection does (closed by the server, broken, or the
    /// client dropped).
    pub(crate) async fn connect(&self) -> Result<(tokio_postgres::Client, mpsc::Receiver<Notification>)> {
        let (client, mut connection) = self
            .config
            .connect(self.tls.clone())
            .await
            .map_err(|e| StoreError::Unavailable(crate::error::chain(&e)))?;
        let (tx, rx) = mpsc::channel(NOTIFICATIONS);
        tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notification(n)) => match tx.try_send(n) {
                        Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => {}
                        Err(mpsc::error::TrySendError::Closed(_)) => break,
                    },
                    Ok(_) => {}
                    Err(e) => {
                        tracing::debug!(error = %e, "a listening connection to the store ended");
                        break;
                    }
                }
            }
        });
        Ok((client, rx))
    }
}

/// The pool of connections to the store described by `settings`, and how
/// to open one outside it. No connection is made yet.
pub(crate) fn pool(settings: &StoreSettings) -> Result<(Pool, Dedicated)> {
    let config = client_config(settings)?;
    let tls = MakeRustlsConnect::new(tls_config(&settings.tls)?);
    let dedicated = Dedicated {
        config: config.clone(),
        tls: tls.clone(),
    };
    let manager = Manager::from_config(
        config,
        tls,
        ManagerConfig {
            // A connection taken from the pool is checked with a round trip
            // only when it reports an error; a dead one fails its statement
            // and is dropped.
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(settings.pool_size.max(1))
        .timeouts(Timeouts {
            wait: Some(settings.statement_timeout),
            create: Some(settings.connect_timeout),
            recycle: Some(settings.connect_timeout),
        })
        .runtime(Runtime::Tokio1)
        .build()
        .map(|pool| (pool, dedicated))
        .map_err(|e| StoreError::Settings(e.to_string()))
}

/// The client configuration: the URL, the password from its secret, the
/// statement timeout as a session setting, TLS required when TLS material
/// is configured.
fn client_config(s: &StoreSettings) -> Result<tokio_postgres::Config> {
    let (url, verify) = verify_modes(&s.url);
    let mut config = tokio_postgres::Config::from_str(&url)
        .map_err(|e| StoreError::Settings(format!("the url is not a PostgreSQL URL: {e}")))?;
    if verify {
        config.ssl_mode(SslMode::Require);
    }
    if let Some(password) = &s.password {
        config.password(password.as_bytes());
    }
    if s.tls.is_configured() {
        if config.get_ssl_mode() == SslMode::Disable {
            return Err(StoreError::Settings(
                "TLS files are configured but the url says sslmode=disable".into(),
            ));
        }
        config.ssl_mode(SslMode::Require);
    }
    let millis = s.statement_timeout.as_millis().max(1);
    config
        .options(format!("-c statement_timeout={millis}"))
        .application_name("tollgate")
        .connect_timeout(s.connect_timeout);
    Ok(config)
}

/// The URL with libpq's `sslmode=verify-ca` and `verify-full` (what
/// managed PostgreSQL services tell users to write) as `require`, and
/// whether one was there: the client knows only `disable`, `prefer` and
/// `require`, and its TLS always verifies the server's certificate and
/// name, so both verifying modes are what `require` does here.
fn verify_modes(url: &str) -> (String, bool) {
    let mut out = url.to_owned();
    let mut found = false;
    for mode in ["sslmode=verify-full", "sslmode=verify-ca"] {
        if out.contains(mode) {
            out = out.replace(mode, "sslmode=require");
            found = true;
        }
    }
    (out, found)
}

/// rustls for the store: the configured CA (else the web roots), the
/// server's name verified, a client certificate when configured.
fn tls_config(tls: &StoreTls) -> Result<rustls::ClientConfig> {
    let bad = |what: &str, e: &dyn std::fmt::Display| StoreError::Settings(format!("{what}: {e}"));
    let mut roots = RootCertStore::empty();
    match &tls.ca {
        Some(pem) => {
            for cert in certificates(pem).map_err(|e| bad("ca_file", &e))? {
                roots.add(cert).map_err(|e| bad("ca_file", &e))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("TLS", &e))?
        .with_root_certificates(roots);
    match &tls.client {
        Some((cert, key)) => {
            let chain = certificates(cert).map_err(|e| bad("cert_file", &e))?;
            let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| bad("key_file", &e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| bad("cert_file and key_file", &e))
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

/// Every certificate in PEM text; at least one.
fn certificates(pem: &[u8]) -> std::result::Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no certificate in the PEM text".into());
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_timeout_and_password_go_into_the_session() {
        let mut s = StoreSettings::new("postgres://tollgate@db.internal:5433/gov");
        s.password = Some("pw".into());
        let c = client_config(&s).unwrap();
        assert_eq!(c.get_options(), Some("-c statement_timeout=30000"));
        assert_eq!(c.get_password(), Some(&b"pw"[..]));
        assert_eq!(c.get_ssl_mode(), SslMode::Prefer);
    }

    #[test]
    fn tls_material_requires_tls_and_refuses_sslmode_disable() {
        let mut s = StoreSettings::new("postgres://tollgate@db/gov");
        s.tls.ca = Some(b"x".to_vec());
        assert_eq!(client_config(&s).unwrap().get_ssl_mode(), SslMode::Require);
        s.url.push_str("?sslmode=disable");
        assert!(matches!(client_config(&s), Err(StoreError::Settings(_))));
    }

    #[test]
    fn libpq_verify_modes_require_tls() {
        for url in [
            "postgres://tollgate@db.rds.example.com/gov?sslmode=verify-full",
            "postgres://tollgate@db/gov?application_name=x&sslmode=verify-ca",
        ] {
            let c = client_config(&StoreSettings::new(url)).unwrap();
            assert_eq!(c.get_ssl_mode(), SslMode::Require, "{url}");
        }
    }

    #[test]
    fn bad_tls_material_is_named() {
        let tls = StoreTls {
            ca: Some(b"not pem".to_vec()),
            client: None,
        };
        let e = tls_config(&tls).unwrap_err().to_string();
        assert!(e.contains("ca_file"), "{e}");
        assert!(matches!(
            client_config(&StoreSettings::new("mysql://x")),
            Err(StoreError::Settings(_))
        ));
    }
}
