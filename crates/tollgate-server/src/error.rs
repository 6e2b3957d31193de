//! The error of building a gateway from configuration (value layer):
//! what failed, named for the operator; `tollgate` prints it and exits.

use crate::upstream::UpstreamError;

/// Why a gateway could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// An upstream could not be set up.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// Metrics could not be registered.
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// The session sealer could not be set up.
    #[error("session key setup failed")]
    Sessions,
    /// A listener's TLS cannot be set up.
    #[error("{0}")]
    Tls(String),
    /// The shared limit store (`[limits.redis]`) cannot be set up.
    #[error("limit store: {0}")]
    LimitStore(String),
    /// Authentication or the credential broker could not be set up.
    #[error("authentication setup: {0}")]
    Auth(String),
    /// The policy directory is invalid.
    #[error("policies: {0}")]
    Policy(String),
    /// The audit trail could not be opened.
    #[error("audit: {0}")]
    Audit(String),
    /// The trace exporter could not be set up.
    #[error("tracing: {0}")]
    Tracing(String),
    /// The catalog lock is invalid.
    #[error("catalog lock: {0}")]
    Catalog(String),
    /// The console cannot be set up.
    #[error("console: {0}")]
    Console(String),
    /// The fleet store (`[store]`) cannot be set up, or its schema is not
    /// this binary's.
    #[error("fleet store: {0}")]
    Store(String),
    /// The authorization server cannot be set up.
    #[error(transparent)]
    Issuer(#[from] tollgate_issuer::IssuerError),
}

/// An authentication or credential-broker setup failure.
pub(crate) fn auth_err(e: impl std::fmt::Display) -> GatewayError {
    GatewayError::Auth(e.to_string())
}
