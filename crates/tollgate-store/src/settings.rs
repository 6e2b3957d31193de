//! How to reach the store: the store's own settings, mapped from `[store]
//! postgres` by the server (secrets and PEM files already read by
//! `tollgate-config`).

use std::fmt;
use std::time::Duration;

/// A PostgreSQL store.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// `postgres://user@host:port/database[?sslmode=…]`, without a password.
    pub url: String,
    /// The password, from a secret source; overrides one in `url`.
    pub password: Option<String>,
    /// TLS material: a private CA, a client certificate.
    pub tls: StoreTls,
    /// Connections kept by this replica.
    pub pool_size: usize,
    /// The longest one statement may run (PostgreSQL's
    /// `statement_timeout`), and the longest a caller waits for a
    /// connection.
    pub statement_timeout: Duration,
    /// The longest connecting may take.
    pub connect_timeout: Duration,
}

impl StoreSettings {
    /// Settings for `url` with the defaults: no password, the public web
    /// roots, 4 connections, statements of at most 30 s, 5 s to connect.
    pub fn new(url: impl Into<String>) -> StoreSettings {
        StoreSettings {
            url: url.into(),
            password: None,
            tls: StoreTls::default(),
            pool_size: 4,
            statement_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl fmt::Debug for StoreSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreSettings")
            .field("url", &self.url)
            .field("password", &self.password.as_ref().map(|_| "[redacted]"))
            .field("tls", &self.tls)
            .field("pool_size", &self.pool_size)
            .field("statement_timeout", &self.statement_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// TLS material, PEM. With none of it, a TLS connection trusts the public
/// web roots and presents no certificate.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StoreTls {
    /// CA certificates trusted for the server instead of the web roots.
    pub ca: Option<Vec<u8>>,
    /// A client certificate chain and its private key.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

impl StoreTls {
    /// Whether any TLS material is configured (then TLS is required).
    pub fn is_configured(&self) -> bool {
        self.ca.is_some() || self.client.is_some()
    }
}

impl fmt::Debug for StoreTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreTls")
            .field("ca", &self.ca.is_some())
            .field("client", &self.client.is_some())
            .finish()
    }
}
