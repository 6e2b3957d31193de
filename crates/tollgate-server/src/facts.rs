//! The facts the phases establish about one request, in the order they
//! are established.
//!
//! A phase reads the facts so far and returns the next fact (or a
//! [`Rejection`](crate::rescue::Rejection)); only the request path in
//! [`phases`](crate::phases) folds a returned fact into [`Facts`]. No phase
//! writes into them. When the response ends, the facts become the request's
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

use crate::phase::gate::GateFact;
use crate::serve::ClientAddr;
use crate::vserver::Delegated;

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
    pub(crate) via: Option<Arc<tollgate_core::Via>>,
}

/// When, and under which request id, a request arrived. A virtual server
/// hands its own to the member route it routes the request to, so both
/// name the same request and time it from the same moment.
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
    /// The arrival facts of a request.
    pub(crate) fn of(parts: &Parts) -> Arrival {
        let delegated = parts.extensions.get::<Delegated>();
        let arrived = match delegated.and_then(|d| d.arrived.clone()) {
            Some(arrived) => arrived,
            None => Arrived {
                request_id: Arc::from(
                    parts
                        .headers
                        .get(&crate::layer::request::REQUEST_ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default(),
                ),
                received: SystemTime::now(),
                start: Instant::now(),
            },
        };
        Arrival {
            request_id: arrived.request_id,
            received: arrived.received,
            start: arrived.start,
            client_ip: parts.extensions.get::<ClientAddr>().map(|a| a.0.ip()),
            declared: crate::phase::identify::content_length(parts),
            via: delegated.map(|d| d.via.clone()),
        }
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

/// The call identified from the headers or the body scan.
#[derive(Debug)]
pub(crate) struct Identified {
    /// Era, version and messages.
    pub(crate) call: Call,
    /// The method family of the request as a whole.
    pub(crate) family: McpMethod,
}

/// The upstream call, once made.
#[derive(Debug)]
pub(crate) struct Forwarded {
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
    pub(crate) identified: Option<Identified>,
    pub(crate) span: Option<ServerSpan>,
    /// Per message: what the catalog gate established.
    pub(crate) gated: Vec<Option<GateFact>>,
    /// Per message (one for a GET stream or DELETE): the policy decision.
    pub(crate) decisions: Vec<Option<Decision>>,
    pub(crate) forwarded: Option<Forwarded>,
    pub(crate) hidden: Option<Hidden>,
    /// The rate-limit rule that refused the call.
    pub(crate) limited: Option<Arc<str>>,
    /// The budget that refused the call, or that it counts against past
    /// its warning share.
    pub(crate) budget: Option<tollgate_core::BudgetNote>,
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
        })
    }

    /// The caller is known.
    pub(crate) fn authenticated(mut self: Box<Self>, principal: Option<Arc<Principal>>) -> Box<Facts> {
        self.principal = principal;
        self
    }

    /// The body has been looked at (a body refused unread keeps the size
    /// it declared).
    pub(crate) fn read(mut self: Box<Self>, mut body: BodyFacts) -> Box<Facts> {
        if matches!(body.bytes_in, BytesIn::Unknown) {
            body.bytes_in = self.body.bytes_in.clone();
        }
        self.body = body;
        self
    }

    /// The call is identified and its server span started.
    pub(crate) fn identified(mut self: Box<Self>, identified: Identified, span: ServerSpan) -> Box<Facts> {
        self.identified = Some(identified);
        self.span = Some(span);
        self
    }

    /// The catalog gate judged.
    pub(crate) fn gated(mut self: Box<Self>, gated: Vec<Option<GateFact>>) -> Box<Facts> {
        self.gated = gated;
        self
    }

    /// The policies decided.
    pub(crate) fn decided(mut self: Box<Self>, decisions: Vec<Option<Decision>>) -> Box<Facts> {
        self.decisions = decisions;
        self
    }

    /// A budget spoke about the call.
    pub(crate) fn budgeted(mut self: Box<Self>, note: Option<tollgate_core::BudgetNote>) -> Box<Facts> {
        self.budget = note;
        self
    }

    /// A rate-limit rule refused the call.
    pub(crate) fn limited(mut self: Box<Self>, rule: Arc<str>) -> Box<Facts> {
        self.limited = Some(rule);
        self
    }

    pub(crate) fn forwarded(mut self: Box<Self>, forwarded: Forwarded) -> Box<Facts> {
        self.forwarded = Some(forwarded);
        self
    }

    /// A list answer was filtered.
    pub(crate) fn filtered(mut self: Box<Self>, hidden: Option<Hidden>) -> Box<Facts> {
        self.hidden = hidden;
        self
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
