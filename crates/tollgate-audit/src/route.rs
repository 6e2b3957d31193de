//! What the audit trail knows about a route, built once from its settings.
//!
//! The route's [`crate::AuditObserver`] starts each call's records from its
//! [`RouteAudit`], so the route-constant fields cost reference counts.

use std::sync::Arc;
use std::time::SystemTime;

use crate::capture::{CapturePolicy, CaptureSettings};
use crate::record::{CallRecord, CredentialKind};

/// A route's audit settings, as the server maps them from the route's
/// `audit` table and `[audit]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteAuditSettings {
    /// The route name.
    pub route: String,
    /// The upstream as records show it: for a server, its URL without
    /// credentials and with a query string as `?<redacted>`.
    pub upstream: String,
    /// The approved upstream version.
    pub server_version: Option<String>,
    /// Who approved the upstream.
    pub approved_by: Option<String>,
    /// The credential kind the upstream receives when a call is forwarded.
    pub credential: CredentialKind,
    /// Capture of arguments and results.
    pub capture: CaptureSettings,
    /// Response bytes per estimated token; a ratio that is not a positive
    /// number counts as 3.5.
    pub bytes_per_token: f64,
}

/// A route's audit settings and the fields its records share.
#[derive(Debug, Clone)]
pub struct RouteAudit {
    /// The route name.
    pub route: Arc<str>,
    /// The upstream URL as records show it: no credentials, and a query
    /// string (which may carry an API key) as `?<redacted>`.
    pub upstream: Arc<str>,
    /// The approved upstream version, from config.
    pub server_version: Option<Arc<str>>,
    /// Who approved the upstream, from config.
    pub approved_by: Option<Arc<str>>,
    /// The credential kind the upstream receives when a call is forwarded.
    pub credential: CredentialKind,
    /// Capture of arguments and results.
    pub capture: CapturePolicy,
    /// `[audit] bytes_per_token`, to estimate the tokens of each record's
    /// share of a batch's response.
    bytes_per_token: f64,
}

/// The ratio used when the configured one is not a positive number.
const DEFAULT_BYTES_PER_TOKEN: f64 = 3.5;

impl RouteAudit {
    /// The route of `settings`.
    pub fn new(settings: &RouteAuditSettings) -> RouteAudit {
        let ratio = settings.bytes_per_token;
        RouteAudit {
            route: Arc::from(settings.route.as_str()),
            upstream: Arc::from(settings.upstream.as_str()),
            server_version: settings.server_version.as_deref().map(Arc::from),
            approved_by: settings.approved_by.as_deref().map(Arc::from),
            credential: settings.credential,
            capture: CapturePolicy::new(&settings.capture),
            bytes_per_token: if ratio.is_finite() && ratio > 0.0 {
                ratio
            } else {
                DEFAULT_BYTES_PER_TOKEN
            },
        }
    }

    /// The configured bytes per token.
    pub fn bytes_per_token(&self) -> f64 {
        self.bytes_per_token
    }

    /// Estimated tokens of `bytes` response bytes: `ceil(bytes /
    /// bytes_per_token)`, 0 for 0. The same arithmetic as
    /// `tollgate_meter::TokenEstimator` (a crate at this one's level), so a
    /// single call's record and its summary agree; a batch's records
    /// estimate each element's share of the bytes.
    pub fn tokens(&self, bytes: u64) -> u64 {
        // Precision loss above 2^53 bytes is irrelevant for an estimate.
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "an estimate; the division is finite and non-negative"
        )]
        let tokens = (bytes as f64 / self.bytes_per_token).ceil() as u64;
        tokens
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
