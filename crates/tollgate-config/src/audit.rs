//! The audit part of the configuration model: `[audit]` (where and how
//! audit records are written, token estimation, OTLP export) and each
//! server's `audit` table (its version and approver for the record, and the
//! opt-in capture of arguments and results).
//!
//! The server maps them to the sink and per-route settings of
//! `tollgate-audit` (request path step 13). Every value is checked while
//! deserializing, so a bad one is reported with its file, line and key like
//! any other.

use std::num::{NonZeroU64, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use url::Url;

/// `[audit]`: the audit trail and spend estimation.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Audit {
    /// Write audit records. On by default.
    pub enabled: bool,
    /// Keep the audit index (`index.sqlite` in `directory`) up to date as
    /// records are written, for `tollgate audit query` and `tollgate
    /// usage`. Off by default: it costs CPU on the gateway's cores, and
    /// those commands keep an index current themselves once it exists.
    pub index: bool,
    /// Directory of the audit files, relative to the configuration file.
    /// Each replica needs its own.
    pub directory: PathBuf,
    /// File names are `{file_prefix}-{sequence}-{UTC time}.jsonl`.
    #[serde(deserialize_with = "file_prefix")]
    pub file_prefix: String,
    /// `batch` (group commit, never blocks a call) or `strict` (a call is
    /// forwarded only once its record is on disk).
    pub durability: Durability,
    /// Longest time a written record waits for `fdatasync` in batch mode.
    #[serde(deserialize_with = "nonzero_duration")]
    #[schemars(with = "String")]
    pub sync_interval: Duration,
    /// Records written before an `fdatasync` is forced in batch mode.
    #[schemars(with = "u64")]
    pub sync_records: NonZeroUsize,
    /// Records waiting for the writer; beyond it batch records are dropped
    /// (and counted), strict calls wait.
    #[schemars(with = "u64")]
    pub queue_capacity: NonZeroUsize,
    /// Start a new file once the current one reaches this size, in bytes.
    #[schemars(with = "u64")]
    pub rotate_bytes: NonZeroU64,
    /// Start a new file once the current one is this old.
    #[serde(deserialize_with = "nonzero_duration")]
    #[schemars(with = "String")]
    pub rotate_interval: Duration,
    /// Response bytes per estimated model token.
    #[serde(deserialize_with = "positive_ratio")]
    pub bytes_per_token: f64,
    /// Keys whose values are replaced by `"[redacted]"` in captured
    /// arguments and results, on every route (added to each route's own).
    pub redact_keys: Vec<String>,
    /// Export of audit records as OpenTelemetry log records.
    pub otlp: AuditOtlp,
    /// How often the chain head is signed (with `checkpoint_key`); once
    /// more at shutdown.
    #[serde(deserialize_with = "nonzero_duration")]
    #[schemars(with = "String")]
    pub checkpoint_interval: Duration,
    /// This replica's Ed25519 private key (PKCS#8 PEM) for signed
    /// checkpoints, from an environment variable or a file; no
    /// checkpoints without it.
    pub checkpoint_key: Option<crate::SecretSource>,
    /// The Ed25519 public keys (base64) whose checkpoints `tollgate audit
    /// verify --checkpoints` trusts: every replica's, and retired ones.
    pub checkpoint_public_keys: Vec<String>,
}

impl Default for Audit {
    fn default() -> Audit {
        Audit {
            enabled: true,
            index: false,
            directory: PathBuf::from("audit"),
            file_prefix: "audit".to_owned(),
            durability: Durability::Batch,
            sync_interval: Duration::from_millis(10),
            sync_records: NonZeroUsize::new(1000).unwrap_or(NonZeroUsize::MIN),
            queue_capacity: NonZeroUsize::new(65_536).unwrap_or(NonZeroUsize::MIN),
            rotate_bytes: NonZeroU64::new(256 * 1024 * 1024).unwrap_or(NonZeroU64::MIN),
            rotate_interval: Duration::from_secs(24 * 3600),
            bytes_per_token: 3.5,
            redact_keys: DEFAULT_REDACT_KEYS.iter().map(|k| (*k).to_owned()).collect(),
            otlp: AuditOtlp::default(),
            checkpoint_interval: Duration::from_secs(60),
            checkpoint_key: None,
            checkpoint_public_keys: Vec::new(),
        }
    }
}

impl Audit {
    /// The audit directory, a relative one resolved against the directory of
    /// the configuration file at `config_path`.
    pub fn directory_for(&self, config_path: &Path) -> PathBuf {
        let base = config_path.parent().unwrap_or(Path::new("."));
        base.join(&self.directory)
    }
}

/// Keys redacted in captures unless `redact_keys` is set.
pub const DEFAULT_REDACT_KEYS: [&str; 9] = [
    "password",
    "passwd",
    "secret",
    "token",
    "authorization",
    "apikey",
    "cookie",
    "credential",
    "privatekey",
];

/// When a call's audit record must be on disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Group commit: records are written at once and synced every
    /// `sync_interval` or `sync_records`; a call never waits for the disk.
    #[default]
    Batch,
    /// A call is forwarded only after its record is synced; when the audit
    /// files cannot be written, calls are refused (fail closed).
    Strict,
}

/// `[audit.otlp]`: audit records as OpenTelemetry log records (OTLP/HTTP).
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuditOtlp {
    /// Export. Off by default.
    pub enabled: bool,
    /// The collector's OTLP/HTTP base URL; records are POSTed to
    /// `{endpoint}/v1/logs`.
    #[schemars(with = "String")]
    pub endpoint: Url,
    /// Time one export request may take.
    #[serde(deserialize_with = "nonzero_duration")]
    #[schemars(with = "String")]
    pub timeout: Duration,
    /// Records waiting for export; beyond it records are dropped from the
    /// export (and counted), never from the files.
    #[schemars(with = "u64")]
    pub queue_capacity: NonZeroUsize,
    /// Most records in one export request.
    #[schemars(with = "u64")]
    pub batch_records: NonZeroUsize,
    /// Longest time a record waits to be exported.
    #[serde(deserialize_with = "nonzero_duration")]
    #[schemars(with = "String")]
    pub batch_interval: Duration,
}

impl Default for AuditOtlp {
    fn default() -> AuditOtlp {
        AuditOtlp {
            enabled: false,
            endpoint: Url::parse("http://127.0.0.1:4318").unwrap_or_else(|_| unreachable!("a valid literal URL")),
            timeout: Duration::from_secs(5),
            queue_capacity: NonZeroUsize::new(8192).unwrap_or(NonZeroUsize::MIN),
            batch_records: NonZeroUsize::new(512).unwrap_or(NonZeroUsize::MIN),
            batch_interval: Duration::from_secs(1),
        }
    }
}

/// A server's `audit` table: what its records say about it, and what they
/// capture of its calls.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerAudit {
    /// The upstream's version, as approved (e.g. `"1.4.2"`).
    pub server_version: Option<String>,
    /// Who approved this server (e.g. a person or a change ticket).
    pub approved_by: Option<String>,
    /// Record `tools/call` arguments (and other request params).
    pub capture_arguments: bool,
    /// Record results (JSON responses only).
    pub capture_results: bool,
    /// Largest captured value, in bytes of JSON; larger ones are cut.
    #[schemars(with = "u64")]
    pub capture_max_bytes: NonZeroUsize,
    /// Keys redacted in this route's captures, besides `audit.redact_keys`.
    pub redact_keys: Vec<String>,
}

impl Default for ServerAudit {
    fn default() -> ServerAudit {
        ServerAudit {
            server_version: None,
            approved_by: None,
            capture_arguments: false,
            capture_results: false,
            capture_max_bytes: NonZeroUsize::new(4096).unwrap_or(NonZeroUsize::MIN),
            redact_keys: Vec::new(),
        }
    }
}

fn nonzero_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let value: Duration = humantime_serde::deserialize(d)?;
    if value.is_zero() {
        return Err(serde::de::Error::custom("must be greater than 0"));
    }
    Ok(value)
}

fn file_prefix<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let value = String::deserialize(d)?;
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if value.is_empty() || value.len() > 64 || !value.chars().all(ok_char) || value.starts_with('.') {
        return Err(serde::de::Error::custom(
            "use 1 to 64 of A-Z a-z 0-9 _ . - (not starting with a dot)",
        ));
    }
    Ok(value)
}

fn positive_ratio<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(d)?;
    if !(value.is_finite() && value > 0.0) {
        return Err(serde::de::Error::custom("must be a number greater than 0"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests;
