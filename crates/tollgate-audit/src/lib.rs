//! Tollgate's audit trail: one tamper-evident record per JSON-RPC request,
//! and the offline tools that verify and read it.
//!
//! Where it sits (see `DESIGN.md`, request path step 13, and
//! `docs/audit.md`):
//!
//! - **observer**: the server hands each finished call's
//!   [`tollgate_core::CallSummary`] to the route's [`AuditObserver`] (one of
//!   the call's independent observers, beside the metrics and the span),
//!   which turns it into [`CallRecord`]s (one per JSON-RPC message, started
//!   from the route's [`RouteAudit`]) and queues them on the
//!   [`AuditHandle`] without blocking. In strict durability the server
//!   first awaits [`AuditObserver::before_forwarding`], which writes a
//!   `forwarding` record per message and waits for it to be on disk; an
//!   error refuses the call.
//! - **sink**: [`AuditSink::start`] runs a dedicated writer thread that
//!   frames records into a SHA-256 hash chain (JSON lines), writes them with
//!   group commit, rotates by size and age, and optionally exports them over
//!   OTLP.
//! - **checkpoints**: the sink publishes its durable head
//!   ([`AuditHandle::head`]); the server signs it ([`CheckpointSigner`])
//!   and [`check`] proves files match every signed [`Checkpoint`].
//! - **offline**: [`verify`] proves a trail was not edited (reporting its
//!   [`TrailProgress`] with [`verify_with_progress`]); [`query`]
//!   streams the records that match a [`Filter`]. The binary renders them
//!   and sums spend with `tollgate-meter`.
//!
//! This crate reads no configuration files and knows no HTTP: its errors
//! implement [`tollgate_core::Classify`].

mod capture;
mod chain;
mod checkpoint;
mod error;
mod files;
mod observer;
mod otlp;
mod progress;
mod query;
mod record;
mod route;
mod serde_util;
mod sink;
mod verify;

pub use capture::{Capture, CapturePolicy, CaptureSettings, REDACTED};
pub use chain::{Hash, LineKind};
pub use checkpoint::{
    ChainHead, Checkpoint, CheckpointFailure, CheckpointKeys, CheckpointReport, CheckpointSigner, check, key_id,
    parse_public_key,
};
pub use error::{AuditError, Problem, QueryError, Tampering, VerifyError};
pub use files::{opened_at as file_opened_at, trail_files};
pub use observer::{AuditObserver, task_fingerprint};
pub use otlp::OtlpSettings;
pub use progress::{ProgressReporter, STEP as PROGRESS_STEP, TrailProgress, no_progress};
pub use query::{Entry, Filter, Records, is_call_line, parse_time, query};
pub use record::{
    CallRecord, CredentialKind, Decision, Gate, Outcome, Phase, PolicyMode, SCHEMA_VERSION, UpstreamGrantRecord,
};
pub use route::{RouteAudit, RouteAuditSettings};
pub use sink::{
    AuditHandle, AuditSink, AuditStats, AuditWorker, Commit, CommitObserver, Durability, Recorded, SinkSettings,
};
pub use verify::{FileReport, VerifyOptions, VerifyReport, verify, verify_with, verify_with_progress};
