//! What the audit trail knows about a route, built once from config.
//!
//! The server keeps one [`RouteAudit`] per route and starts each call's
//! record from it, so the route-constant fields cost reference counts.

use std::sync::Arc;
use std::time::SystemTime;

use crate::capture::CapturePolicy;
use crate::record::{CallRecord, CredentialKind};

/// A route's audit settings and the fields its records share.
#[derive(Debug, Clone)]
pub struct RouteAudit {
    /// The route name.
    pub route: Arc<str>,
    /// The upstream URL.
    pub upstream: Arc<str>,
    /// The approved upstream version, from config.
    pub server_version: Option<Arc<str>>,
    /// Who approved the upstream, from config.
    pub approved_by: Option<Arc<str>>,
    /// The credential kind the upstream receives when a call is forwarded.
    pub credential: CredentialKind,
    /// Capture of arguments and results.
    pub capture: CapturePolicy,
}

impl RouteAudit {
    /// Settings for one `[[servers]]` entry.
    pub fn from_config(server: &tollgate_config::Server, audit: &tollgate_config::Audit) -> RouteAudit {
        RouteAudit {
            route: Arc::from(server.name.as_str()),
            upstream: Arc::from(server.url.as_str()),
            server_version: server.audit.server_version.as_deref().map(Arc::from),
            approved_by: server.audit.approved_by.as_deref().map(Arc::from),
            credential: CredentialKind::of(&server.credential),
            capture: CapturePolicy::from_config(&server.audit, audit),
        }
    }

    /// A new record for a call on this route, with the route's fields set.
    /// `credential` stays `none`: set it to [`RouteAudit::credential`] when
    /// the call is forwarded.
    pub fn record(&self, time: SystemTime, request_id: impl Into<String>) -> CallRecord {
        let mut rec = CallRecord::new(time, request_id, self.route.clone());
        rec.upstream = Some(self.upstream.clone());
        rec.server_version = self.server_version.clone();
        rec.approved_by = self.approved_by.clone();
        rec
    }
}
