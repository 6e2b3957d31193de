//! The call summary: everything the gateway established about one request,
//! handed once to every observer of the call.
//!
//! The request path's phases establish facts (who called, what they
//! called, what the policies said, what the upstream answered); when the
//! response body ends, or the client goes away, the server folds those
//! facts into one immutable [`CallSummary`] and hands it to each
//! [`CallObserver`] of the route: the audit writer, the Prometheus call
//! metrics, the request's trace span. Observers read the summary; none of
//! them knows another, and none feeds anything back into the request.
//!
//! This module holds values only; it knows no HTTP and does no I/O.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use smol_str::SmolStr;

use crate::{Era, ErrorKind, McpMethod, Principal};

/// Whether the summary describes a call about to be forwarded or one that
/// has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Strict audit durability: the call is authorized and about to be
    /// forwarded; its record must be durable first. No response yet.
    Forwarding,
    /// The response has ended (or the client went away).
    Complete,
}

/// What the policies said about one JSON-RPC request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVerdict {
    /// What the policies say.
    pub allowed: bool,
    /// Whether the route enforces it (`false` in observe mode).
    pub enforced: bool,
    /// A stable reason name: `allow`, `deny`, `deny_missing_scope`, `error`.
    pub reason: &'static str,
    /// The `@id`s of the policies that determined the decision.
    pub policies: Arc<[Arc<str>]>,
}

impl PolicyVerdict {
    /// Whether the call went ahead: allowed, or not enforced.
    pub fn proceeds(&self) -> bool {
        self.allowed || !self.enforced
    }
}

/// What the catalog gate found for a call's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogVerdict {
    /// `approved`, `quarantined`, `blocked` or `unlisted`.
    pub outcome: &'static str,
    /// Whether the route enforces the gate (`false` in observe mode).
    pub enforced: bool,
    /// Who approved the revision in effect, when one is approved.
    pub approved_by: Option<Arc<str>>,
    /// When it was approved.
    pub approved_at: Option<SystemTime>,
}

impl CatalogVerdict {
    /// Whether the call went ahead as far as the catalog goes.
    pub fn proceeds(&self) -> bool {
        !self.enforced || matches!(self.outcome, "approved" | "unlisted")
    }
}

/// One JSON-RPC message of the request (one per element of a batch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallElement {
    /// The JSON-RPC id as JSON text (`7`, `"a"`); `None` for notifications.
    pub jsonrpc_id: Option<Box<str>>,
    /// The method, verbatim; empty for a client's response to a server
    /// request.
    pub method: SmolStr,
    /// The method family (bounded, for metrics).
    pub family: McpMethod,
    /// Tool or prompt name, resource URI or task id.
    pub name: Option<SmolStr>,
    /// The policy decision; `None` when no policy decided it (no policies
    /// configured, or the request was refused before authorization).
    pub policy: Option<PolicyVerdict>,
    /// The revision (`sha256:…`) of the called tool, prompt or resource's
    /// definition the call ran against: the approved one under catalog
    /// governance, else the one the upstream lists.
    pub definition: Option<Arc<str>>,
    /// The catalog gate's verdict (routes with governance on).
    pub catalog: Option<CatalogVerdict>,
    /// The JSON-RPC error code answered to this message, if any.
    pub rpc_error: Option<i64>,
}

/// What went back to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The gateway's own error, when it answered instead of the upstream.
    pub error: Option<ErrorKind>,
    /// The JSON-RPC code of the gateway's own error (what a request refused
    /// before its messages were known was answered).
    pub rpc_error: Option<i64>,
    /// Response body bytes, counted while streaming.
    pub bytes_out: u64,
    /// Estimated model tokens of the response body.
    pub tokens: u64,
    /// Time to the upstream's response headers, when it was called.
    pub ttfb: Option<Duration>,
    /// Time from arrival to the end of the response.
    pub duration: Duration,
    /// Whether the client went away before the response ended.
    pub aborted: bool,
}

/// List entries the policies hid from the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hidden {
    /// How many entries (would have been) removed.
    pub entries: usize,
    /// Whether they were removed (`false`: observe mode).
    pub enforced: bool,
}

/// The raw request and the start of the answer, kept only when the route
/// opted in to capturing arguments or results.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Payload {
    /// The request body as received.
    pub request: Option<Bytes>,
    /// The start of the response body, up to the capture limit.
    pub response: Option<Bytes>,
    /// Whether `response` holds the whole body.
    pub response_complete: bool,
}

/// The virtual server a call came through, when it did: the summary's
/// `route` is then the member server the call was routed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Via {
    /// The virtual server (`[[virtual_servers]] name`).
    pub virtual_server: Arc<str>,
    /// The name the virtual server exposes the tool or prompt under, when
    /// it differs from the member's own name.
    pub exposed_name: Option<Arc<str>>,
}

/// Everything known of one request when it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSummary {
    /// Before forwarding (strict audit) or after the answer.
    pub stage: Stage,
    /// The gateway's request id (`x-request-id`).
    pub request_id: Arc<str>,
    /// When the request arrived.
    pub received: SystemTime,
    /// The route (server name).
    pub route: Arc<str>,
    /// The client's address.
    pub client_ip: Option<IpAddr>,
    /// The authenticated caller; `None` on an open route or when
    /// authentication failed.
    pub principal: Option<Arc<Principal>>,
    /// The protocol era, once classified.
    pub era: Option<Era>,
    /// The protocol version the client named.
    pub protocol_version: Option<&'static str>,
    /// The request's method family (a GET stream or session DELETE has no
    /// JSON-RPC message).
    pub family: McpMethod,
    /// One entry per JSON-RPC message; empty when the request was refused
    /// before its messages were known.
    pub elements: Vec<CallElement>,
    /// The W3C trace id of the request's span, when traced.
    pub trace_id: Option<Arc<str>>,
    /// Whether the request reached the upstream.
    pub forwarded: bool,
    /// Request body bytes (counted as they streamed when forwarded unread).
    pub bytes_in: u64,
    /// The answer; `Stage::Forwarding` summaries have the default.
    pub answer: Answer,
    /// List entries hidden by policy, for list methods.
    pub hidden: Option<Hidden>,
    /// Captured payloads (opt-in per route).
    pub payload: Option<Payload>,
    /// The virtual server the call came through.
    pub via: Option<Arc<Via>>,
    /// The rate-limit rule that refused the call.
    pub limited_by: Option<Arc<str>>,
    /// The token budget the call counted against with the least left, when
    /// it is past its warning share or spent (`[[limits.budgets]]`).
    pub budget: Option<BudgetNote>,
    /// The caller's own grant at the upstream the call went with
    /// (`user_oauth` routes): which grant, never its token.
    pub upstream_grant: Option<Arc<UpstreamGrantNote>>,
}

/// Which of the caller's own upstream grants a call used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamGrantNote {
    /// The grant's id in the vault.
    pub id: Arc<str>,
    /// The upstream authorization server that issued it.
    pub issuer: Arc<str>,
    /// The user at the upstream (the token's `sub`), when it said.
    pub subject: Option<Arc<str>>,
    /// Its scopes.
    pub scopes: Arc<[String]>,
}

/// A budget's word on a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetNote {
    /// The budget's id.
    pub id: Arc<str>,
    /// Past its `warn_at` share.
    pub warn: bool,
    /// Spent: the call was refused.
    pub exhausted: bool,
}

impl CallSummary {
    /// The summary of a finished request `request_id` on `route` that
    /// arrived at `received`, of method family `family`, with nothing else
    /// known yet: no caller, no elements, nothing forwarded, the default
    /// answer. The other fields are set by whoever knows them.
    pub fn new(
        request_id: impl Into<Arc<str>>,
        route: impl Into<Arc<str>>,
        received: SystemTime,
        family: McpMethod,
    ) -> CallSummary {
        CallSummary {
            stage: Stage::Complete,
            request_id: request_id.into(),
            received,
            route: route.into(),
            client_ip: None,
            principal: None,
            era: None,
            protocol_version: None,
            family,
            elements: Vec::new(),
            trace_id: None,
            forwarded: false,
            bytes_in: 0,
            answer: Answer::default(),
            hidden: None,
            payload: None,
            via: None,
            limited_by: None,
            budget: None,
            upstream_grant: None,
        }
    }

    /// The team of the caller, if any.
    pub fn team(&self) -> Option<&str> {
        self.principal.as_ref().and_then(|p| p.team.as_deref())
    }

    /// The outcome of one element for metrics: `denied` when its policy
    /// stopped it, `error` when the answer (or the element's JSON-RPC
    /// reply) is an error, `ok` otherwise.
    pub fn outcome(&self, element: Option<&CallElement>) -> &'static str {
        let refused_by_catalog = element.and_then(|e| e.catalog.as_ref()).is_some_and(|c| !c.proceeds());
        if refused_by_catalog || element.and_then(|e| e.policy.as_ref()).is_some_and(|p| !p.proceeds()) {
            "denied"
        } else if self.answer.status >= 400 || element.is_some_and(|e| e.rpc_error.is_some()) {
            "error"
        } else {
            "ok"
        }
    }
}

/// Reads finished calls: an audit writer, a metrics registry, a span.
pub trait CallObserver: Send + Sync {
    /// Take note of one finished call. Must not block.
    fn observe(&self, summary: &CallSummary);
}
