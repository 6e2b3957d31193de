//! `[store]`: the fleet store, where every replica shares its governance
//! records (audit lines, approvals, checkpoints) in PostgreSQL.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

/// `[store]`: off unless `postgres` is set.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Store {
    /// The PostgreSQL database every replica shares.
    #[serde(default)]
    pub postgres: Option<PostgresStore>,
    /// This replica's name in the store, stable across restarts (a
    /// StatefulSet pod's name); the host name when unset.
    #[serde(default)]
    pub replica: Option<String>,
    /// Whether the gateway applies pending schema migrations at start
    /// (`false`: run `tollgate store migrate` with a privileged role
    /// first; the gateway then refuses to start on an old schema).
    #[serde(default = "yes")]
    pub migrate: bool,
    /// Whether catalog approvals are rows in the store (the console and
    /// `tollgate catalog approve` write there, every replica applies them
    /// with the lock file's); `false` keeps approvals in the lock file
    /// only.
    #[serde(default = "yes")]
    pub approvals: bool,
}

/// `[store] postgres`: how to reach the database.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PostgresStore {
    /// `postgres://user@host[:port]/database[?sslmode=…]`, without a
    /// password.
    pub url: String,
    /// CA certificates (PEM) trusted for the server instead of the public
    /// web roots; makes TLS required.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// A client certificate chain (PEM) to present; with `key_file`.
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    /// Its private key (PEM); with `cert_file`.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// The password, from an environment variable or a file.
    #[serde(default)]
    pub password: Option<crate::SecretSource>,
    /// Connections each replica keeps.
    #[serde(default = "default_pool_size")]
    pub pool_size: u32,
    /// The longest one statement may run.
    #[serde(default = "default_statement_timeout", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub statement_timeout: Duration,
}

fn yes() -> bool {
    true
}

fn default_pool_size() -> u32 {
    4
}

fn default_statement_timeout() -> Duration {
    Duration::from_secs(30)
}
