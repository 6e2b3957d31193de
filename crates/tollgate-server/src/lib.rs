//! Tollgate's HTTP front end.
//!
//! This crate owns everything that knows HTTP: the public router with its
//! layer stack ([`stack`]), the per-route MCP handler, upstream forwarding,
//! sealed legacy sessions, the admin listener, the error mapping
//! ([`rescue`]) and the serve loop with graceful shutdown ([`serve`]).
//! It combines the lower crates; none of them depends on it.

mod admin;
mod audit;
mod authorize;
mod body;
mod catalog;
mod forward;
mod gateway;
mod guard;
mod handler;
mod identity;
mod lists;
mod metered;
mod metrics;
pub mod rescue;
mod serve;
mod services;
mod session;
pub mod stack;
mod upstream;

pub use gateway::{Gateway, GatewayError};
pub use handler::ClientAddr;
pub use metrics::Metrics;
pub use serve::{ServeOptions, serve};
pub use session::{Sealer, SessionClaims, SessionError};
pub use upstream::{Upstream, UpstreamError};

use std::sync::Arc;

use tollgate_config::Limits;
use tollgate_core::McpMethod;

/// State shared by every request on the public listener.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) limits: Limits,
    pub(crate) authn: Option<Arc<tollgate_auth::Authenticator>>,
    pub(crate) broker: tollgate_auth::CredentialBroker,
    pub(crate) sealer: Sealer,
    pub(crate) metrics: Metrics,
    /// Per-call metrics.
    pub(crate) calls: metrics::CallMetrics,
    /// Cedar policies; `None` when `[policy] dir` is unset.
    pub(crate) policy: Option<Arc<tollgate_policy::PolicyEngine>>,
    /// Who calls on an open route, for policies.
    pub(crate) anonymous: Arc<tollgate_core::Principal>,
    /// Tools learned from list answers.
    pub(crate) catalog: catalog::Catalog,
    /// The audit sink.
    pub(crate) audit: tollgate_audit::AuditHandle,
    /// Tokens from response bytes.
    pub(crate) estimator: tollgate_audit::TokenEstimator,
    /// OpenTelemetry spans (record nothing unless `[tracing]` is enabled).
    pub(crate) spans: tollgate_telemetry::Spans,
}

/// Labels the handler leaves on its response for the metrics layer.
#[derive(Debug, Clone)]
pub(crate) struct CallLabels {
    pub(crate) route: Arc<str>,
    pub(crate) method: McpMethod,
}
