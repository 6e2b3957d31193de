//! Tollgate's HTTP front end.
//!
//! This crate owns everything that knows HTTP: the public router with its
//! layer stack ([`stack`]), the per-route MCP handler, upstream forwarding,
//! sealed legacy sessions, the admin listener, the error mapping
//! ([`rescue`]) and the serve loop with graceful shutdown ([`serve`]).
//! It combines the lower crates; none of them depends on it.

mod admin;
mod body;
mod forward;
mod gateway;
mod guard;
mod handler;
mod identity;
mod metrics;
pub mod rescue;
mod serve;
mod session;
pub mod stack;
mod upstream;

pub use gateway::{Gateway, GatewayError};
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
}

/// Labels the handler leaves on its response for the metrics layer.
#[derive(Debug, Clone)]
pub(crate) struct CallLabels {
    pub(crate) route: Arc<str>,
    pub(crate) method: McpMethod,
}
