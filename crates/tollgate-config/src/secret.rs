//! Secrets: where they come from, and a value that never prints itself.

use std::fmt;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

/// Where a secret is read from: an environment variable or a file. Secrets
/// never appear inline in the configuration.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SecretSource {
    /// Name of an environment variable holding the secret.
    #[serde(default)]
    pub env: Option<String>,
    /// Path of a file holding the secret (trailing newline ignored).
    #[serde(default)]
    pub file: Option<PathBuf>,
}

/// A secret value. `Debug` and `Display` print `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wrap secret bytes.
    pub fn new(bytes: Vec<u8>) -> Secret {
        Secret(bytes)
    }

    /// The secret bytes; callers must not log them.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}
