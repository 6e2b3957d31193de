//! What the console asks of the running gateway: the server implements
//! [`Backend`] over its live configuration, catalog, policy engine and
//! audit sink, so the console depends on no server type.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use tollgate_audit::CallRecord;
use tollgate_core::Principal;

/// A definition to approve (`POST /console/api/catalog/approve`), at the
/// revision the approver reviewed.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The server (`[[servers]] name`).
    pub server: String,
    /// `tool`, `prompt`, `resource` or `resource_template`.
    pub kind: String,
    /// Its name, URI or URI template.
    pub key: String,
    /// The live revision the approver saw (the catalog's
    /// `live_revision`): a definition that changed since is not approved.
    pub revision: String,
}

/// Why an approval was not written to the lock file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No such server, kind or definition.
    #[error("{0}")]
    Unknown(String),
    /// The request does not say which revision the approver reviewed.
    #[error("say which revision you reviewed: `revision`, the definition's live revision as the catalog shows it")]
    NoRevision,
    /// The live definition is not the one the approver reviewed.
    #[error("the definition changed since you saw it: its live revision is {live}, not {seen}; review it again")]
    Stale {
        /// The live revision.
        live: String,
        /// The revision the approver sent.
        seen: String,
    },
    /// The lock file does not parse (an edit under way): left as it is.
    #[error("the catalog lock does not parse, so it was left as it is: {0}")]
    LockInvalid(String),
    /// The lock file changed on disk since the gateway loaded it: left as
    /// it is, so an operator's edit is never overwritten.
    #[error(
        "the catalog lock {path} changed on disk since the gateway loaded it, so it was left as it is; \
         approve again once the gateway has reloaded it (SIGHUP, or within a second when it watches the file)"
    )]
    LockChanged {
        /// The lock file.
        path: String,
    },
    /// The lock file cannot be written here (a read-only mount such as a
    /// ConfigMap): approve with the CLI where the lock is kept.
    #[error(
        "the catalog lock {path} is read-only here (a read-only mount such as a ConfigMap): approve where the \
         lock is kept, then deploy it: {command}"
    )]
    ReadOnly {
        /// The lock file.
        path: String,
        /// The `tollgate catalog approve` command that approves the same
        /// definition.
        command: String,
    },
    /// Reading or writing the lock file failed.
    #[error("the catalog lock could not be read or written: {0}")]
    Io(String),
    /// The fleet store, where approvals are kept, did not take the
    /// approval (PostgreSQL down, unreachable or refusing): nothing was
    /// approved, and the approvals in force keep serving.
    #[error("the fleet store did not take the approval, so nothing was approved; approve again once it answers: {0}")]
    Store(String),
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
    /// Verify a console token: issued by `issuer` (no other trusted
    /// issuer's), and naming one of `audiences` in its `aud` (an issuer's
    /// route-wide audiences do not count).
    async fn authenticate(&self, token: &str, issuer: &str, audiences: &[String]) -> Result<Arc<Principal>, String>;
    /// The budgets and prices in force, for spend reports and the cost of
    /// a call.
    fn report_settings(&self) -> tollgate_report::Settings;
    /// The audit directory, when the gateway writes audit files.
    fn audit_dir(&self) -> Option<PathBuf>;
    /// The fleet store (`[store] postgres`), when the gateway has one:
    /// audit search, the call view, export, spend and budgets then read
    /// every replica's records there instead of this replica's index.
    fn store(&self) -> Option<tollgate_store::Store> {
        None
    }
    /// The Ed25519 public keys (base64) audit checkpoints may be signed
    /// with (`[audit] checkpoint_public_keys`): the fleet view checks each
    /// replica's newest checkpoint against them.
    fn checkpoint_public_keys(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether the gateway's indexer keeps the audit index current (else
    /// the console brings it up to date before reading it).
    fn indexer_running(&self) -> bool;
    /// Per server: the gate, the sync, every definition with its verdict,
    /// poisoning findings and the diff against the lock.
    fn catalog(&self) -> Value;
    /// Approve a definition as `by` in the lock file, if its live revision
    /// is still the one requested and the file is as the gateway loaded
    /// it; the gate serves it once the lock is reloaded. Blocking (file
    /// I/O): call it off the async threads.
    fn approve(&self, request: &ApprovalRequest, by: &str) -> Result<Value, ApprovalError>;
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
    /// The authorization server's clients (`{"clients": [...]}`); `None`
    /// when it is not enabled.
    async fn oauth_clients(&self) -> Option<Result<Value, String>> {
        None
    }
    /// Disable, enable or delete a client: whether it was known.
    async fn oauth_client_action(&self, client_id: &str, action: &str) -> Result<bool, String> {
        let _ = (client_id, action);
        Err("the authorization server is not enabled".into())
    }
    /// The live grants (`{"grants": [...]}`), only `subject`'s when given;
    /// `None` when the authorization server is not enabled.
    async fn oauth_grants(&self, subject: Option<&str>) -> Option<Result<Value, String>> {
        let _ = subject;
        None
    }
    /// Revoke grant `id`, when it is `subject`'s (any grant without a
    /// subject): whether one was revoked.
    async fn oauth_revoke(&self, id: &str, subject: Option<&str>) -> Result<bool, String> {
        let _ = (id, subject);
        Err("the authorization server is not enabled".into())
    }
}
