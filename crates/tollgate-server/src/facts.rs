//! The facts the phases establish about one request: the value layer at
//! the bottom of the server crate, importing nothing above it.
//!
//! While a call is in flight its facts travel in the typed stages of
//! [`stage`](crate::stage), each phase's output holding exactly what that
//! phase established. When the call stops or its answer ends, the stage
//! becomes the record [`Facts`], where a fact not yet established is
//! `None`; the record becomes the request's
//! [`CallSummary`](tollgate_core::CallSummary) (`summary`).

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::request::Parts;
use tokio::time::Instant;
use tollgate_core::{Hidden, McpMethod, Principal};
use tollgate_mcp::{Call, Message};
use tollgate_policy::Decision;
use tollgate_telemetry::{ClientSpan, RequestSpans, ServerSpan};

use tollgate_catalog::Outcome;
use tollgate_core::{BudgetNote, Via};
use tollgate_policy::ToolAnnotations;

/// The request id header (set by the request-id layer).
pub(crate) const REQUEST_ID: http::HeaderName = http::HeaderName::from_static("x-request-id");

/// The peer address of the connection a request came on (a request
/// extension the listener sets).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::SocketAddr);

/// What the catalog gate established about one message's definition.
#[derive(Debug, Clone, Default)]
pub(crate) struct GateFact {
    /// The verdict; `None` with the gate off.
    pub(crate) outcome: Option<Outcome>,
    /// Whether the route enforces it.
    pub(crate) enforced: bool,
    /// The revision the call runs against.
    pub(crate) revision: Option<Arc<str>>,
    /// Who approved it, and when.
    pub(crate) approved: Option<(Arc<str>, SystemTime)>,
    /// The tool's annotations as approved (the MCP defaults when unknown).
    pub(crate) annotations: Option<ToolAnnotations>,
    /// The checked `Mcp-Param-*` values, by header name.
    pub(crate) args: Vec<(String, String)>,
}

impl GateFact {
    /// Whether the call goes ahead as far as the catalog goes.
    pub(crate) fn proceeds(&self) -> bool {
        !self.enforced || self.outcome.is_none_or(Outcome::passes)
    }
}

/// The request as it arrived.
#[derive(Debug)]
pub(crate) struct Arrival {
    /// `x-request-id` (set by the request-id layer).
    pub(crate) request_id: Arc<str>,
    /// Wall-clock arrival, for records.
    pub(crate) received: SystemTime,
    /// Monotonic arrival, for durations.
    pub(crate) start: Instant,
    /// The peer address.
    pub(crate) client_ip: Option<IpAddr>,
    /// The body size its `Content-Length` declares.
    pub(crate) declared: Option<u64>,
    /// The virtual server the request came through.
    pub(crate) via: Option<Arc<Via>>,
}

/// When, and under which request id, a request arrived. A virtual server
/// hands its own to the member requests it makes for a call, so that
/// they name the same request and time it from the same moment.
#[derive(Debug, Clone)]
pub(crate) struct Arrived {
    /// `x-request-id` (set by the request-id layer).
    pub(crate) request_id: Arc<str>,
    /// Wall-clock arrival.
    pub(crate) received: SystemTime,
    /// Monotonic arrival.
    pub(crate) start: Instant,
}

impl Arrival {
    /// The arrival facts of a request that has just come in.
    pub(crate) fn of(parts: &Parts) -> Arrival {
        let request_id = parts
            .headers
            .get(&REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let arrived = Arrived {
            request_id: Arc::from(request_id),
            received: SystemTime::now(),
            start: Instant::now(),
        };
        Arrival::resumed(arrived, parts, None)
    }

    /// The arrival facts of `parts`, a request a virtual server makes
    /// through `via` for a call that arrived as `arrived`.
    pub(crate) fn resumed(arrived: Arrived, parts: &Parts, via: Option<Arc<Via>>) -> Arrival {
        Arrival {
            request_id: arrived.request_id,
            received: arrived.received,
            start: arrived.start,
            client_ip: parts.extensions.get::<ClientAddr>().map(|a| a.0.ip()),
            declared: content_length(parts),
            via,
        }
    }

    /// The request came through the virtual server `via`.
    #[must_use]
    pub(crate) fn through(self, via: Arc<Via>) -> Arrival {
        Arrival { via: Some(via), ..self }
    }

    /// When and as what it arrived.
    pub(crate) fn arrived(&self) -> Arrived {
        Arrived {
            request_id: self.request_id.clone(),
            received: self.received,
            start: self.start,
        }
    }
}

/// How many request body bytes came in.
#[derive(Debug, Clone, Default)]
pub(crate) enum BytesIn {
    /// Not known yet (the request was refused before its body was looked at).
    #[default]
    Unknown,
    /// Read, or declared by `Content-Length`.
    Known(u64),
    /// Forwarded unread without a length: counted as it streams.
    Counted(Arc<AtomicU64>),
}

impl BytesIn {
    /// The count so far.
    pub(crate) fn get(&self) -> u64 {
        match self {
            BytesIn::Unknown => 0,
            BytesIn::Known(n) => *n,
            BytesIn::Counted(c) => c.load(Ordering::Relaxed),
        }
    }
}

/// What the request body told, once read (or declared without reading).
#[derive(Debug, Default)]
pub(crate) struct BodyFacts {
    /// Its size.
    pub(crate) bytes_in: BytesIn,
    /// The JSON-RPC messages a scan found (even when the call is then
    /// refused, so that the records name them).
    pub(crate) messages: Vec<Message>,
    /// The body itself, kept when the route captures arguments.
    pub(crate) captured: Option<Bytes>,
    /// The body as read (shared, not copied), when it was read.
    pub(crate) bytes: Option<Bytes>,
}

/// The call identified from the headers or the body scan, as recorded.
#[derive(Debug)]
pub(crate) struct CallIdentity {
    /// Era, version and messages.
    pub(crate) call: Call,
    /// The method family of the request as a whole.
    pub(crate) family: McpMethod,
}

/// The upstream call, once made.
#[derive(Debug)]
pub(crate) struct ForwardFacts {
    /// Time to the upstream's response headers.
    pub(crate) ttfb: Option<Duration>,
    /// The client span of the upstream call.
    pub(crate) span: Option<ClientSpan>,
}

/// Everything established so far.
#[derive(Debug)]
pub(crate) struct Facts {
    pub(crate) arrival: Arrival,
    pub(crate) principal: Option<Arc<Principal>>,
    pub(crate) body: BodyFacts,
    pub(crate) identified: Option<CallIdentity>,
    pub(crate) span: Option<ServerSpan>,
    /// Per message: what the catalog gate established.
    pub(crate) gated: Vec<Option<GateFact>>,
    /// Per message (one for a GET stream or DELETE): the policy decision.
    pub(crate) decisions: Vec<Option<Decision>>,
    pub(crate) forwarded: Option<ForwardFacts>,
    pub(crate) hidden: Option<Hidden>,
    /// The rate-limit rule that refused the call.
    pub(crate) limited: Option<Arc<str>>,
    /// The budget that refused the call, or that it counts against past
    /// its warning share.
    pub(crate) budget: Option<BudgetNote>,
    /// The caller's own upstream grant the call goes with (`user_oauth`).
    pub(crate) upstream_grant: Option<Arc<tollgate_core::UpstreamGrantNote>>,
    /// The legacy session's client declared URL-mode elicitation.
    pub(crate) elicits_url: bool,
}

impl Facts {
    /// The facts of a request that has just arrived. Boxed: the facts
    /// travel from phase to phase, and a box moves as one pointer.
    pub(crate) fn arrived(arrival: Arrival) -> Box<Facts> {
        // A request refused before its body is read still counts the size
        // it declared.
        let body = BodyFacts {
            bytes_in: arrival.declared.map_or(BytesIn::Unknown, BytesIn::Known),
            ..BodyFacts::default()
        };
        Box::new(Facts {
            arrival,
            principal: None,
            body,
            identified: None,
            span: None,
            gated: Vec::new(),
            decisions: Vec::new(),
            forwarded: None,
            hidden: None,
            limited: None,
            budget: None,
            upstream_grant: None,
            elicits_url: false,
        })
    }

    /// The body has been looked at (a body refused unread keeps the size
    /// it declared).
    pub(crate) fn read(&mut self, mut body: BodyFacts) {
        if matches!(body.bytes_in, BytesIn::Unknown) {
            body.bytes_in = self.body.bytes_in.clone();
        }
        self.body = body;
    }

    /// The request's method family: the identified call's, else that of
    /// the first message a scan found (`other` when nothing is known).
    pub(crate) fn family(&self) -> McpMethod {
        match &self.identified {
            Some(i) => i.family,
            None => family_of(&self.body.messages),
        }
    }

    /// The messages of the call (the scanned ones when it was refused
    /// before it was identified).
    pub(crate) fn messages(&self) -> &[Message] {
        match &self.identified {
            Some(i) => &i.call.messages,
            None => &self.body.messages,
        }
    }

    /// The spans to end with the summary.
    pub(crate) fn take_spans(&mut self) -> Option<RequestSpans> {
        let server = self.span.take()?;
        let client = self.forwarded.as_mut().and_then(|f| f.span.take());
        Some(RequestSpans { server, client })
    }
}

/// The declared body length.
pub(crate) fn content_length(parts: &Parts) -> Option<u64> {
    parts
        .headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// The family of a request: that of its first message.
pub(crate) fn family_of(messages: &[Message]) -> McpMethod {
    messages.first().map_or(McpMethod::Other, |m| {
        if m.method.is_empty() {
            McpMethod::Response
        } else {
            McpMethod::from_name(&m.method)
        }
    })
}
