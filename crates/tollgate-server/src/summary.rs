//! The end of a request: its facts and what was sent back become one
//! [`CallSummary`], handed to the route's observers.
//!
//! Observers (the audit writer, the Prometheus call metrics) each read the
//! summary on their own; the request's spans end with it. Nothing here
//! writes a record or a metric itself. [`intent`] builds the summary of a
//! call about to be forwarded, for strict audit durability.

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use tollgate_core::{
    Answer, BudgetNote, CallElement, CallObserver, CallSummary, CatalogVerdict, McpMethod, Payload, PolicyVerdict,
    Stage,
};
use tollgate_mcp::{Call, Message};
use tollgate_meter::TokenEstimator;
use tollgate_policy::Decision;
use tollgate_telemetry::ServerSpan;

use crate::facts::{Facts, GateFact};
use crate::rescue::Rejection;
use crate::route::Route;
use crate::stage::{Credentialed, Decisions};

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

/// Whom a summary is for: the endpoint that answered — a route, or a
/// virtual server answering itself — and its observers.
pub(crate) struct Ledger<'a> {
    /// The endpoint's name, the summary's `route`.
    pub(crate) name: &'a Arc<str>,
    /// Who reads the summary.
    pub(crate) observers: &'a [Arc<dyn CallObserver>],
    /// How the answer's tokens are estimated.
    pub(crate) estimator: &'a TokenEstimator,
}

impl<'a> Ledger<'a> {
    /// A route's ledger.
    pub(crate) fn of(route: &'a Route) -> Ledger<'a> {
        Ledger {
            name: &route.name,
            observers: &route.observers,
            estimator: &route.shared.estimator,
        }
    }
}

/// What a summary is built from: the record of a finished call, or the
/// stage of one about to be forwarded.
struct View<'a> {
    facts: &'a Facts,
    call: Option<(&'a Call, McpMethod)>,
    span: Option<&'a ServerSpan>,
    gated: &'a [Option<GateFact>],
    decisions: &'a [Option<Decision>],
    budget: Option<BudgetNote>,
}

impl<'a> View<'a> {
    /// The record of a call.
    fn of(facts: &'a Facts) -> View<'a> {
        View {
            facts,
            call: facts.identified.as_ref().map(|i| (&i.call, i.family)),
            span: facts.span.as_ref(),
            gated: &facts.gated,
            decisions: &facts.decisions,
            budget: facts.budget.clone(),
        }
    }

    /// The request's method family (`other` when nothing is known).
    fn family(&self) -> McpMethod {
        self.call.map_or_else(|| self.facts.family(), |(_, f)| f)
    }

    /// The messages of the call (the scanned ones when it was refused
    /// before it was identified).
    fn messages(&self) -> &'a [Message] {
        self.call.map_or_else(|| self.facts.messages(), |(c, _)| &c.messages)
    }
}

/// The summary of a call about to be forwarded (strict audit).
pub(crate) fn intent(route: &Route, call: &Credentialed) -> CallSummary {
    let view = View {
        facts: &call.facts,
        call: Some((&call.call, call.family)),
        span: Some(&call.span),
        gated: &call.gate,
        decisions: match &call.decisions {
            Decisions::Unchecked => &[],
            Decisions::Decided(d) => d,
        },
        budget: call.budget.note(),
    };
    let mut summary = base(&route.name, &view, Stage::Forwarding);
    summary.forwarded = true;
    summary
}

/// Fold the facts of a finished request into its summary (with the
/// captured `payload`), end its spans and hand the summary to the
/// ledger's observers.
pub(crate) fn finish(
    ledger: &Ledger<'_>,
    mut facts: Box<Facts>,
    rejection: Option<&Rejection>,
    sent: &Sent,
    payload: Option<Payload>,
) {
    let errors = answer_errors(rejection, sent);
    let mut summary = base(ledger.name, &View::of(&facts), Stage::Complete);
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
        rpc_error: rejection
            .filter(|r| r.result.is_none() && !r.accepted)
            .map(|r| crate::rescue::rpc_code(r.kind)),
        bytes_out: sent.bytes,
        tokens: ledger.estimator.estimate(sent.bytes),
        ttfb: facts.forwarded.as_ref().and_then(|f| f.ttfb),
        duration: facts.arrival.start.elapsed(),
        aborted: sent.aborted,
    };
    summary.hidden = facts.hidden;
    summary.payload = payload;
    if let Some(spans) = facts.take_spans() {
        spans.finish(&summary);
    }
    for observer in ledger.observers {
        observer.observe(&summary);
    }
}

/// The summary skeleton: who, what, and how it was decided.
fn base(name: &Arc<str>, view: &View<'_>, stage: Stage) -> CallSummary {
    let facts = view.facts;
    let call = view.call.map(|(c, _)| c);
    CallSummary {
        stage,
        request_id: facts.arrival.request_id.clone(),
        received: facts.arrival.received,
        route: name.clone(),
        client_ip: facts.arrival.client_ip,
        principal: facts.principal.clone(),
        era: call.map(|c| c.era),
        protocol_version: call.and_then(|c| c.version).map(|v| v.as_str()),
        family: view.family(),
        elements: elements(view),
        trace_id: view.span.and_then(|s| s.trace_id()).map(|t| Arc::from(t.to_string())),
        forwarded: false,
        bytes_in: facts.body.bytes_in.get(),
        answer: Answer::default(),
        hidden: None,
        payload: None,
        via: facts.arrival.via.clone(),
        limited_by: facts.limited.clone(),
        budget: view.budget.clone(),
        upstream_grant: facts.upstream_grant.clone(),
    }
}

/// One element per message, or one for a GET stream or session DELETE.
fn elements(view: &View<'_>) -> Vec<CallElement> {
    let messages = view.messages();
    if messages.is_empty() {
        return match view.call {
            Some((_, family)) => vec![CallElement {
                jsonrpc_id: None,
                method: http_method(family).into(),
                family,
                name: None,
                policy: view.decisions.first().and_then(Option::as_ref).map(verdict),
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
            let gated = view.gated.get(i).and_then(Option::as_ref);
            element(m, gated, view.decisions.get(i).and_then(Option::as_ref))
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
pub(crate) fn payload(route: &Route, facts: &Facts, sent: &Sent) -> Option<Payload> {
    let request = facts.body.captured.clone()?;
    let response = route.captures_results().then(|| sent.tee_bytes());
    Some(Payload {
        request: Some(request),
        response,
        response_complete: sent.complete,
    })
}
