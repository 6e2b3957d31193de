//! `[admin]`: who may read the admin listener's operational detail.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::SecretSource;

/// `[admin]`: protection of the admin listener (`listen.admin`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Admin {
    /// The bearer token that `/readyz?detail` and `/catalog` require
    /// (`Authorization: Bearer <token>`), read from an environment variable
    /// or a file: at least 16 printable ASCII characters without spaces
    /// (e.g. `openssl rand -base64 32`). `/healthz`, `/readyz` and
    /// `/metrics` stay open for probes and scrapers, and the console keeps
    /// its own sign-in. Without a token, whoever reaches the admin listener
    /// reads everything on it. A reload puts a new token in force.
    pub token: Option<SecretSource>,
}
