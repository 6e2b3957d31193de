//! What the console asks of the running gateway: the server implements
//! [`Backend`] over its live configuration, catalog, policy engine and
//! audit sink, so the console depends on no server type.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use tollgate_audit::CallRecord;
use tollgate_config::Config;
use tollgate_core::Principal;

/// A definition to approve (`POST /console/api/catalog/approve`).
#[derive(Debug, Clone, Deserialize)]
pub struct ApprovalRequest {
    /// The server (`[[servers]] name`).
    pub server: String,
    /// `tool`, `prompt`, `resource` or `resource_template`.
    pub kind: String,
    /// Its name, URI or URI template.
    pub key: String,
}

/// A call to decide without sending it (`POST /console/api/policies/check`).
#[derive(Debug, Clone, Deserialize)]
pub struct CheckRequest {
    /// The caller's subject.
    pub subject: String,
    /// Its team.
    #[serde(default)]
    pub team: Option<String>,
    /// Its groups.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Its token's scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The server.
    pub server: String,
    /// `tool`, `prompt` or `resource`.
    pub kind: String,
    /// The tool or prompt name, or resource URI.
    pub name: String,
}

/// The gateway as the console sees it. Answers are JSON documents the
/// console serves as they are (each documented in `docs/console.md`).
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Verify a bearer token whose audience is the console's URL.
    async fn authenticate(&self, token: &str) -> Result<Arc<Principal>, String>;
    /// The configuration in force.
    fn config(&self) -> Arc<Config>;
    /// The audit directory, when the gateway writes audit files.
    fn audit_dir(&self) -> Option<PathBuf>;
    /// Whether the gateway's indexer keeps the audit index current (else
    /// the console brings it up to date before reading it).
    fn indexer_running(&self) -> bool;
    /// Per server: the gate, the sync, every definition with its verdict,
    /// poisoning findings and the diff against the lock.
    fn catalog(&self) -> Value;
    /// Approve the live revision of a definition as `by`, in the lock file;
    /// the gate serves it once the lock is reloaded.
    fn approve(&self, request: &ApprovalRequest, by: &str) -> Result<Value, String>;
    /// Each route's policy mode and the loaded policies with their source.
    fn policies(&self) -> Value;
    /// The source text of the loaded policy `id`.
    fn policy_source(&self, id: &str) -> Option<String>;
    /// Decide a call against the loaded policies without sending it.
    fn check(&self, request: &CheckRequest) -> Result<Value, String>;
    /// Upstream health, breakers, virtual servers, the limit store.
    fn upstreams(&self) -> Value;
    /// Write a record to the audit trail: queued, or on disk when the
    /// trail is strict. Ok when audit is off.
    async fn record(&self, record: CallRecord) -> Result<(), String>;
}
