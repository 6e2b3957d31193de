//! TLS on Tollgate's own listeners (`[listen.tls]`, `[listen.admin_tls]`)
//! and toward an upstream (`[[servers]] tls`).

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

/// A listener's certificate, key and (optional) client-certificate
/// authentication. Paths are relative to the configuration file.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ListenerTls {
    /// The certificate chain, PEM, leaf first.
    pub cert: PathBuf,
    /// The private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// CA certificates (PEM) that client certificates must chain to; when
    /// set, every client must present one.
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
    /// How often the files are checked for a change; a changed pair is
    /// loaded for new connections, open ones keep theirs.
    #[serde(default = "default_reload_interval", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub reload_interval: Duration,
}

fn default_reload_interval() -> Duration {
    Duration::from_secs(10)
}

/// TLS toward one upstream: CA certificates trusted besides the public
/// roots, and a client certificate for upstreams that require one (mTLS).
/// Paths are relative to the configuration file.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamTls {
    /// CA certificates (PEM) trusted for this upstream, besides the
    /// public (webpki) roots.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// A client certificate chain (PEM) to present; with `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// Its private key (PEM); with `cert`.
    #[serde(default)]
    pub key: Option<PathBuf>,
}
