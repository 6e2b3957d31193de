//! The end of a request: its facts and what was sent back become one
//! [`CallSummary`], handed to the route's observers.
//!
//! Observers (the audit writer, the Prometheus call metrics) each read the
//! summary on their own; the request's spans end with it. Nothing here
//! writes a record or a metric itself. [`intent`] builds the summary of a
//! call about to be forwarded, for strict audit durability.

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use tollgate_core::{Answer, CallElement, CallSummary, CatalogVerdict, McpMethod, Payload, PolicyVerdict, Stage};
use tollgate_mcp::Message;
use tollgate_policy::Decision;

use crate::facts::Facts;
use crate::phase::gate::GateFact;
use crate::rescue::Rejection;
use crate::route::Route;

/// What went back to the client, as the metered body saw it.
#[derive(Debug, Default)]
pub(crate) struct Sent {
    /// The HTTP status.
    pub(crate) status: u16,
    /// Body bytes sent.
    pub(crate) bytes: u64,
    /// The start of the body (whole when `complete`).
    pub(crate) tee: Vec<Bytes>,
    /// Whether `tee` holds the whole body.
    pub(crate) complete: bool,
    /// Whether the body was an SSE stream.
    pub(crate) sse: bool,
    /// Whether the client went away before the end.
    pub(crate) aborted: bool,
    /// Whether the upstream's answer broke off before its end (the
    /// connection dropped mid-stream): the call failed, whatever its status.
    pub(crate) cut: bool,
}

impl Sent {
    /// The copied start of the body as one slice.
    pub(crate) fn tee_bytes(&self) -> Bytes {
        match self.tee.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => Bytes::from(many.concat()),
        }
    }
}

/// The summary of a call about to be forwarded (strict audit).
pub(crate) fn intent(route: &Route, facts: &Facts) -> CallSummary {
    let mut summary = base(route, facts, Stage::Forwarding);
    summary.forwarded = true;
    summary
}

/// Fold the facts of a finished request into its summary, end its spans
/// and hand the summary to the route's observers.
pub(crate) fn finish(route: &Route, mut facts: Box<Facts>, rejection: Option<&Rejection>, sent: &Sent) {
    let errors = answer_errors(rejection, sent);
    let mut summary = base(route, &facts, Stage::Complete);
    for (i, e) in summary.elements.iter_mut().enumerate() {
        e.rpc_error = match rejection {
            Some(r) => r.code_of(i),
            None => errors
                .iter()
                .find(|(id, _)| id.as_deref() == e.jsonrpc_id.as_deref())
                .or_else(|| errors.first().filter(|_| e.jsonrpc_id.is_none()))
                .map(|(_, c)| *c),
        };
    }
    summary.forwarded = facts.forwarded.is_some();
    summary.answer = Answer {
        status: sent.status,
        error: rejection
            .map(|r| r.kind)
            .or(sent.cut.then_some(tollgate_core::ErrorKind::UpstreamUnavailable)),
        rpc_error: rejection.map(|r| crate::rescue::rpc_code(r.kind)),
        bytes_out: sent.bytes,
        tokens: route.shared.estimator.estimate(sent.bytes),
        ttfb: facts.forwarded.as_ref().and_then(|f| f.ttfb),
        duration: facts.arrival.start.elapsed(),
        aborted: sent.aborted,
    };
    summary.hidden = facts.hidden;
    summary.payload = payload(route, &facts, sent);
    if let Some(spans) = facts.take_spans() {
        spans.finish(&summary);
    }
    for observer in &route.observers {
        observer.observe(&summary);
    }
}

/// The summary skeleton: who, what, and how it was decided.
fn base(route: &Route, facts: &Facts, stage: Stage) -> CallSummary {
    let identified = facts.identified.as_ref();
    CallSummary {
        stage,
        request_id: facts.arrival.request_id.clone(),
        received: facts.arrival.received,
        route: route.name.clone(),
        client_ip: facts.arrival.client_ip,
        principal: facts.principal.clone(),
        era: identified.map(|i| i.call.era),
        protocol_version: identified.and_then(|i| i.call.version).map(|v| v.as_str()),
        family: facts.family(),
        elements: elements(facts),
        trace_id: facts
            .span
            .as_ref()
            .and_then(|s| s.trace_id())
            .map(|t| Arc::from(t.to_string())),
        forwarded: false,
        bytes_in: facts.body.bytes_in.get(),
        answer: Answer::default(),
        hidden: None,
        payload: None,
        via: facts.arrival.via.clone(),
        limited_by: facts.limited.clone(),
        budget: facts.budget.clone(),
    }
}

/// One element per message, or one for a GET stream or session DELETE.
fn elements(facts: &Facts) -> Vec<CallElement> {
    let messages = facts.messages();
    if messages.is_empty() {
        return match facts.identified.as_ref() {
            Some(i) => vec![CallElement {
                jsonrpc_id: None,
                method: http_method(i.family).into(),
                family: i.family,
                name: None,
                policy: facts.decisions.first().and_then(Option::as_ref).map(verdict),
                definition: None,
                catalog: None,
                rpc_error: None,
            }],
            None => Vec::new(),
        };
    }
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let gated = facts.gated.get(i).and_then(Option::as_ref);
            element(m, gated, facts.decisions.get(i).and_then(Option::as_ref))
        })
        .collect()
}

/// The HTTP method a request without messages is recorded under.
fn http_method(family: McpMethod) -> &'static str {
    match family {
        McpMethod::StreamGet => "GET",
        McpMethod::SessionDelete => "DELETE",
        _ => "",
    }
}

fn element(m: &Message, gated: Option<&GateFact>, decision: Option<&Decision>) -> CallElement {
    let family = McpMethod::from_name(&m.method);
    CallElement {
        jsonrpc_id: m.id.as_ref().map(|id| Box::from(id.as_json())),
        method: m.method.clone(),
        family: if m.method.is_empty() {
            McpMethod::Response
        } else {
            family
        },
        name: m.name.clone(),
        policy: decision.map(verdict),
        definition: gated.and_then(|g| g.revision.clone()),
        catalog: gated.and_then(catalog_verdict),
        rpc_error: None,
    }
}

/// The catalog gate's verdict as the summary states it.
fn catalog_verdict(g: &GateFact) -> Option<CatalogVerdict> {
    let outcome = g.outcome?;
    Some(CatalogVerdict {
        outcome: outcome.as_str(),
        enforced: g.enforced,
        approved_by: g.approved.as_ref().map(|(by, _)| by.clone()),
        approved_at: g.approved.as_ref().map(|(_, at)| *at),
    })
}

/// The policy decision as the summary states it.
fn verdict(d: &Decision) -> PolicyVerdict {
    PolicyVerdict {
        allowed: d.allowed,
        enforced: d.enforced,
        reason: d.reason.as_str(),
        policies: d.determining_policy_ids.iter().cloned().collect(),
    }
}

/// The `(id, code)` of each JSON-RPC error in the upstream's answer, read
/// from the copied start of the body only when it can hold one.
fn answer_errors(rejection: Option<&Rejection>, sent: &Sent) -> Vec<(Option<String>, i64)> {
    if rejection.is_some() || sent.tee.is_empty() {
        return Vec::new();
    }
    static ERROR_KEY: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\"error\""));
    let tee = sent.tee_bytes();
    if ERROR_KEY.find(&tee).is_none() {
        return Vec::new();
    }
    tollgate_mcp::answer_errors(&tee, sent.sse)
}

/// The captured payloads, when the route captures them.
fn payload(route: &Route, facts: &Facts, sent: &Sent) -> Option<Payload> {
    let request = facts.body.captured.clone()?;
    let response = route.captures_results().then(|| sent.tee_bytes());
    Some(Payload {
        request: Some(request),
        response,
        response_complete: sent.complete,
    })
}
