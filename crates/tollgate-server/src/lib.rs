//! Tollgate's HTTP front end.
//!
//! This crate owns everything that knows HTTP: the public service and its
//! layers ([`stack`]), the request path phase by phase (`phases`, with one
//! module per phase under `phase`), the one error map ([`rescue`]),
//! upstream connections, the admin listener, the
//! worker threads and the serve loop with graceful shutdown ([`serve`]).
//! It combines the lower crates; none of them depends on it, and none of
//! them takes the configuration: [`settings`] maps it to their settings.

mod admin;
mod audit_index;
mod body;
pub(crate) mod catalog;
mod checkpoint;
mod console;
mod dev_signin;
mod error;
mod facts;
mod front;
mod front_door;
mod gateway;
mod generation;
mod governance;
mod layer;
mod learn;
mod lists;
mod live;
mod metered;
mod metrics;
mod phase;
mod phases;
mod reload;
pub mod rescue;
mod route;
mod runtime;
mod serve;
mod services;
pub mod settings;
mod shipping;
mod spend;
mod stack;
mod stage;
mod summary;
mod task_handle;
#[cfg(test)]
mod test_support;
mod tls;
mod upstream;
mod vserver;

pub use gateway::{Gateway, GatewayError};
pub use governance::service::sync_configured;
pub use metrics::Metrics;
pub use rescue::status_and_code;
pub use serve::{ClientAddr, ServeOptions, serve};
pub use tls::{ListenerTls, TlsError};
pub use tollgate_session::{Clock, Sealer, SessionClaims, SessionError, SystemClock};
pub use upstream::UpstreamError;
pub use vserver::rewritten;

use std::sync::Arc;

use tollgate_core::McpMethod;

/// How much of an upstream answer is kept aside to read its JSON-RPC error
/// codes when it ends.
pub(crate) const TEE_BYTES: usize = 16 * 1024;

/// Labels the request path leaves on its response for the request metrics.
#[derive(Debug, Clone)]
pub(crate) struct CallLabels {
    pub(crate) route: Arc<str>,
    pub(crate) method: McpMethod,
}
