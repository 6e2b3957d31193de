//! The audit record of one JSON-RPC request (schema version 1).
//!
//! The route's [`crate::AuditObserver`] builds one [`CallRecord`] per
//! JSON-RPC request (per batch element) from the call summary at request
//! path step 13, or, in strict mode, a [`Phase::Forwarding`] record before
//! step 11. The writer thread serializes it; nothing here runs I/O.
//! Route-constant values (`route`, `upstream`, version, approver) are
//! `Arc<str>` so filling them costs a reference count. `docs/audit.md`
//! documents every field; a test keeps the two in step.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tollgate_core::{Era, Principal};

use crate::capture::Capture;
use crate::serde_util::{era_opt, principal_opt, timestamp, timestamp_opt};

/// Version of the record schema, written as `v` on every line.
pub const SCHEMA_VERSION: u32 = 1;

/// One JSON-RPC request as the gateway saw, decided and forwarded it.
///
/// Never holds the client's token, an upstream credential, or (unless a
/// route opts in, with redaction) tool arguments and results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// When the request arrived.
    #[serde(with = "timestamp")]
    pub time: SystemTime,
    /// The gateway's request id (`x-request-id`).
    pub request_id: String,
    /// The element's index when the request was a JSON-RPC batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_index: Option<u32>,
    /// The JSON-RPC `id` as JSON text (`42`, `"a1"`); absent for notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsonrpc_id: Option<String>,
    /// W3C trace id (32 hex digits): one user instruction across servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// `complete` (the default, omitted) or `forwarding` (strict mode).
    #[serde(default, skip_serializing_if = "Phase::is_complete")]
    pub phase: Phase,
    /// The authenticated caller; absent when the route needs no token or
    /// authentication failed.
    #[serde(default, with = "principal_opt", skip_serializing_if = "Option::is_none")]
    pub principal: Option<Arc<Principal>>,
    /// The route (`[[servers]] name`): for a call through a virtual
    /// server, the member server it was routed to.
    pub route: Arc<str>,
    /// The virtual server the call came through (`[[virtual_servers]]
    /// name`), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_server: Option<Arc<str>>,
    /// The name the virtual server exposes the tool or prompt under (`name`
    /// is the member's own), when it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_name: Option<Arc<str>>,
    /// The `[[limits.rules]]` rule that refused the call (`rate_limited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_rule: Option<Arc<str>>,
    /// The `[[limits.budgets]]` budget that refused the call
    /// (`budget_exhausted`) or that it counted against past its warning
    /// share (`budget_warning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Arc<str>>,
    /// The call counted against `budget` past its `warn_at` share.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub budget_warning: bool,
    /// The upstream URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Arc<str>>,
    /// The upstream's approved version (from config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<Arc<str>>,
    /// Who approved the upstream (from config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<Arc<str>>,
    /// The protocol era.
    #[serde(default, with = "era_opt", skip_serializing_if = "Option::is_none")]
    pub era: Option<Era>,
    /// The MCP protocol version of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<Cow<'static, str>>,
    /// The JSON-RPC method, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Cow<'static, str>>,
    /// Tool or prompt name, or resource URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The revision of the called definition the call ran against: the
    /// approved one under catalog governance, else the one listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_hash: Option<Arc<str>>,
    /// Who approved that revision (catalog governance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_approved_by: Option<Arc<str>>,
    /// When it was approved.
    #[serde(default, with = "timestamp_opt", skip_serializing_if = "Option::is_none")]
    pub definition_approved_at: Option<SystemTime>,
    /// The catalog gate's verdict on the called definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
    /// The authorization decision.
    #[serde(default)]
    pub decision: Decision,
    /// The credential the upstream received.
    #[serde(default)]
    pub credential: CredentialKind,
    /// With `credential` `user_oauth`: which of the caller's own upstream
    /// grants the call went with (never the token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_grant: Option<UpstreamGrantRecord>,
    /// HTTP status returned to the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// JSON-RPC error code returned to the client, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_error: Option<i64>,
    /// The gateway's error class when it rejected or failed the call
    /// (`tollgate_core::ErrorKind::as_str`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Cow<'static, str>>,
    /// Request body bytes.
    #[serde(default)]
    pub bytes_in: u64,
    /// Response body bytes, counted while streaming.
    #[serde(default)]
    pub bytes_out: u64,
    /// Estimated model tokens of the response.
    #[serde(default)]
    pub tokens: u64,
    /// The response is a catalog (`tools/list`): its tokens are context
    /// cost for every later model turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub catalog: bool,
    /// Microseconds to the upstream's first response byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb_us: Option<u64>,
    /// Microseconds from arrival to the end of the response.
    #[serde(default)]
    pub duration_us: u64,
    /// Captured arguments and result (opt-in per route, redacted, capped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<Box<Capture>>,
}

impl CallRecord {
    /// A record of a call on `route` that arrived at `time`; every other
    /// field starts empty or zero. See also [`crate::RouteAudit::record`].
    pub fn new(time: SystemTime, request_id: impl Into<String>, route: Arc<str>) -> CallRecord {
        CallRecord {
            time,
            request_id: request_id.into(),
            batch_index: None,
            jsonrpc_id: None,
            trace_id: None,
            phase: Phase::Complete,
            principal: None,
            route,
            virtual_server: None,
            exposed_name: None,
            rate_limit_rule: None,
            budget: None,
            budget_warning: false,
            upstream: None,
            server_version: None,
            approved_by: None,
            era: None,
            protocol_version: None,
            method: None,
            name: None,
            definition_hash: None,
            definition_approved_by: None,
            definition_approved_at: None,
            gate: None,
            decision: Decision::default(),
            credential: CredentialKind::None,
            upstream_grant: None,
            status: None,
            rpc_error: None,
            error: None,
            bytes_in: 0,
            bytes_out: 0,
            tokens: 0,
            catalog: false,
            ttfb_us: None,
            duration_us: 0,
            capture: None,
        }
    }

    /// The time to first byte.
    pub fn ttfb(&self) -> Option<Duration> {
        self.ttfb_us.map(Duration::from_micros)
    }

    /// The duration.
    pub fn duration(&self) -> Duration {
        Duration::from_micros(self.duration_us)
    }

    /// Set `duration_us` (saturating).
    pub fn set_duration(&mut self, d: Duration) {
        self.duration_us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    }

    /// Set `ttfb_us` (saturating).
    pub fn set_ttfb(&mut self, d: Duration) {
        self.ttfb_us = Some(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// Whether the call failed or was refused: an HTTP status of 400 or
    /// more, or a JSON-RPC error.
    pub fn is_error(&self) -> bool {
        self.status.is_some_and(|s| s >= 400) || self.rpc_error.is_some()
    }

    /// Nanoseconds since the Unix epoch of `time` (0 before it).
    pub fn time_unix_nanos(&self) -> u64 {
        self.time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

/// The catalog gate's verdict on a call's definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gate {
    /// `approved`, `quarantined` (not approved: new), `blocked` (listed at
    /// another revision than the approved one) or `unlisted` (approved, not
    /// in the upstream's latest list).
    pub outcome: Cow<'static, str>,
    /// `enforce` (a quarantined or blocked call was refused) or `observe`
    /// (it went ahead).
    pub mode: PolicyMode,
}

/// Whether a record closes a call or announces it (strict mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Written when the call ended: every field is final.
    #[default]
    Complete,
    /// Strict mode: written and synced before the call was forwarded;
    /// status, sizes and durations are not known yet. A `complete` record
    /// with the same `request_id` and `batch_index` follows unless the
    /// gateway stopped.
    Forwarding,
    /// Not a call: an action taken in the console (an approval, an
    /// export), naming who took it in `principal`, what in `method`
    /// (`console/approve`, `console/export`) and `name`. Usage reports
    /// do not count it.
    Admin,
}

impl Phase {
    fn is_complete(&self) -> bool {
        *self == Phase::Complete
    }
}

/// The authorization decision of a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// What was decided.
    pub outcome: Outcome,
    /// Whether the policy set enforces or only observes.
    #[serde(default)]
    pub mode: PolicyMode,
    /// Ids of the policies that determined the outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<Arc<str>>,
    /// Why, when no policy did (e.g. `quarantined`, `rate_limited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Cow<'static, str>>,
}

/// The outcome of authorization.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Allowed.
    Allow,
    /// Denied and refused.
    Deny,
    /// Policies denied, but they only observe: the call was forwarded.
    ObserveDeny,
    /// Not evaluated: the call was rejected before authorization, or the
    /// route has no policies.
    #[default]
    NotEvaluated,
}

impl Outcome {
    /// The stable name used in records and filters.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allow => "allow",
            Outcome::Deny => "deny",
            Outcome::ObserveDeny => "observe_deny",
            Outcome::NotEvaluated => "not_evaluated",
        }
    }

    /// Parse a name written by [`Outcome::as_str`] (`-` also accepted for `_`).
    pub fn parse(s: &str) -> Option<Outcome> {
        match s.replace('-', "_").as_str() {
            "allow" => Some(Outcome::Allow),
            "deny" => Some(Outcome::Deny),
            "observe_deny" => Some(Outcome::ObserveDeny),
            "not_evaluated" => Some(Outcome::NotEvaluated),
            _ => None,
        }
    }
}

/// Whether policies are enforced or only observed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMode {
    /// Denials refuse the call.
    #[default]
    Enforce,
    /// Denials are recorded, the call proceeds.
    Observe,
}

/// The caller's own upstream grant a call went with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UpstreamGrantRecord {
    /// The grant's id in the vault.
    pub id: String,
    /// The upstream authorization server that issued it.
    pub issuer: String,
    /// The user at the upstream, when its token said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Its scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// The kind of credential the gateway presented upstream. The client's own
/// token is never forwarded, so there is no "passthrough" kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialKind {
    /// Nothing (or the call was not forwarded).
    #[default]
    None,
    /// A static secret from config.
    Static,
    /// A token the gateway obtained for itself.
    ClientCredentials,
    /// A token obtained by RFC 8693 exchange on behalf of the caller.
    TokenExchange,
    /// The caller's own grant at the upstream's authorization server.
    UserOauth,
    /// The caller's own token at the upstream, obtained with an identity
    /// assertion from the company identity provider.
    IdJag,
}
