//! Tollgate's audit trail: one tamper-evident record per JSON-RPC request,
//! and the offline tools that verify, query and cost it.
//!
//! Where it sits (see `DESIGN.md`, request path step 13, and
//! `docs/audit.md`):
//!
//! - **record**: the server starts a [`CallRecord`] from the route's
//!   [`RouteAudit`], fills principal, decision, status, sizes
//!   ([`ByteMeter`], [`TokenEstimator`]) and timings, and hands it to an
//!   [`AuditHandle`]: [`AuditHandle::record`] (batch mode, never blocks) or
//!   [`AuditHandle::record_durable`] (strict mode, before forwarding; an
//!   error refuses the call).
//! - **sink**: [`AuditSink::start`] runs a dedicated writer thread that
//!   frames records into a SHA-256 hash chain (JSON lines), writes them with
//!   group commit, rotates by size and age, and optionally exports them over
//!   OTLP.
//! - **offline**: [`verify`] proves a trail was not edited, [`query`] finds
//!   calls, [`usage`] sums spend. The CLI renders them.
//!
//! This crate reads no configuration files and knows no HTTP: its errors
//! implement [`tollgate_core::Classify`].

mod capture;
mod chain;
mod error;
mod files;
mod otlp;
mod percentile;
mod query;
mod record;
mod route;
mod serde_util;
mod sink;
mod spend;
mod usage;
mod verify;

pub use capture::{Capture, CapturePolicy, REDACTED};
pub use chain::{Hash, LineKind};
pub use error::{AuditError, Problem, QueryError, Tampering, VerifyError};
pub use files::trail_files;
pub use otlp::OtlpSettings;
pub use query::{Entry, Filter, QueryFormat, Records, parse_time, query, render_query};
pub use record::{CallRecord, CredentialKind, Decision, Outcome, Phase, PolicyMode, SCHEMA_VERSION};
pub use route::RouteAudit;
pub use sink::{AuditHandle, AuditSink, AuditStats, AuditWorker, Commit, CommitObserver, Recorded, SinkSettings};
pub use spend::{ByteMeter, TokenEstimator, is_catalog};
pub use tollgate_config::Durability;
pub use usage::{GroupBy, NONE_KEY, UsageReport, UsageRow, usage};
pub use verify::{FileReport, VerifyOptions, VerifyReport, verify, verify_with};
