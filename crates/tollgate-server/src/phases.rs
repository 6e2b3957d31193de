//! The request path of one MCP call, phase by phase, top to bottom.
//!
//! ```text
//! admit → route → classify → authenticate → identify → tasks → gate
//!       → authorize → limit → budget → credential → forward → respond
//! ```
//!
//! `admit` and `route` run in the front service ([`Front::call`]) for
//! every request; the rest runs here for requests on an MCP route. Each
//! phase reads the facts established so far and returns the next fact or a
//! [`Rejection`]; only this function folds facts together. Every refusal,
//! whichever phase it comes from, leaves through [`respond::refuse`] and
//! the one error map; every answer, refused or not, becomes one call
//! summary for the route's observers when its body ends. Legacy session
//! requests (GET streams, DELETEs, POSTs in a session) take the same path
//! as 2026-07-28 POSTs. Cross-cutting work — the request id and span, the
//! body limit, load shedding, request metrics — is done by the layers
//! around this (`stack`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::HeaderName;
use http::Request;
use http::header::CONTENT_TYPE;
use tollgate_core::ErrorKind;
use tollgate_telemetry::McpCall;
use tracing::field::display;

use crate::facts::{Arrival, Facts, Identified};
use crate::phase::admit::{Admission, admit};
use crate::phase::authenticate::authenticate;
use crate::phase::authorize::authorize;
use crate::phase::budget::budget;
use crate::phase::classify::classify;
use crate::phase::credential::credential;
use crate::phase::forward::{durable, forward};
use crate::phase::gate::gate;
use crate::phase::identify::identify;
use crate::phase::limit::limit;
use crate::phase::respond::{refuse, respond};
use crate::phase::tasks;
use crate::rescue::{Rejection, render};
use crate::route::Route;
use crate::task_handle;
use crate::vserver::VirtualRoute;

/// The W3C trace context header.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// Stop the request with the phase's rejection.
macro_rules! phase {
    ($route:expr, $facts:expr, $step:expr) => {{
        // Bound first, so that a phase's borrow of the facts ends here.
        let result = $step;
        match result {
            Ok(next) => next,
            Err(rejection) => return refuse($route, $facts, rejection),
        }
    }};
}

/// Serve one request on an MCP route.
pub(crate) async fn call(route: &Arc<Route>, req: Request<Body>) -> Response {
    let (mut parts, body) = req.into_parts();
    let facts = Facts::arrived(Arrival::of(&parts));
    let request = classify(&parts);
    let principal = phase!(route, facts, authenticate(route, &parts).await);
    let facts = facts.authenticated(principal);
    let (body_facts, identified) = identify(route, &request, &parts, body).await;
    let facts = facts.read(body_facts);
    let (identified, body) = phase!(route, facts, identified);
    let span = server_span(route, &facts, &identified, &parts.headers);
    let facts = facts.identified(identified, span);
    let body = phase!(route, facts, tasks::open(route, &facts, &mut parts, body));
    let gated = gate(route, &facts, &parts.headers);
    let facts = facts.gated(gated.facts);
    if let Some(rejection) = gated.refusal {
        return refuse(route, facts, rejection);
    }
    let decided = authorize(route, &facts);
    let facts = facts.decided(decided.decisions);
    if let Some(rejection) = decided.refusal {
        return refuse(route, facts, rejection);
    }
    if let Err((rule, rejection)) = limit(route, &facts).await {
        return refuse(route, facts.limited(rule), rejection);
    }
    let standing = match budget(route, &facts).await {
        Ok(standing) => standing,
        Err((note, rejection)) => return refuse(route, facts.budgeted(Some(note)), rejection),
    };
    let facts = facts.budgeted(standing.as_ref().and_then(crate::phase::budget::note));
    let outbound = phase!(route, facts, credential(route, &facts, &parts).await);
    if let Some(intent) = durable(route, &facts) {
        phase!(route, facts, intent.await);
    }
    let sealing = tasks::sealing(route, &facts);
    let (forwarded, answer) = forward(route, &facts, parts, body, outbound).await;
    let facts = facts.forwarded(forwarded);
    let res = phase!(route, facts, answer);
    let res = match sealing {
        Some(seal) => task_handle::seal_answer(seal, res).await,
        None => res,
    };
    let mut res = respond(route, facts, res).await;
    if let Some(standing) = &standing {
        res.headers_mut()
            .insert(crate::phase::budget::REMAINING, crate::phase::budget::header(standing));
    }
    res
}

/// Start the request's server span once the call is known, and name the
/// call on the request's log span.
fn server_span(
    route: &Route,
    facts: &Facts,
    identified: &Identified,
    headers: &http::HeaderMap,
) -> tollgate_telemetry::ServerSpan {
    let call = &identified.call;
    let first = call.messages.first();
    let method = first.map_or(identified.family.as_str(), |m| m.method.as_str());
    let log = tracing::Span::current();
    log.record("era", display(call.era.as_str()));
    log.record("method", display(method));
    if let Some(name) = first.and_then(|m| m.name.as_deref()) {
        log.record("name", display(name));
    }
    route.shared.spans.server_span(&McpCall {
        target: first.and_then(|m| m.name.as_deref()),
        protocol_version: call.version.map(|v| v.as_str()),
        request_id: first.and_then(|m| m.id.as_ref()).map(|id| id.as_json()),
        meta_traceparent: call.messages.iter().find_map(|m| m.traceparent.as_deref()),
        header_traceparent: headers.get(&TRACEPARENT).and_then(|v| v.to_str().ok()),
        started: Some(facts.arrival.received),
        ..McpCall::new(&route.name, method, call.era)
    })
}

/// The public front: every request is admitted, then routed.
#[derive(Debug)]
pub(crate) struct Front {
    /// Header size and origin checks.
    pub(crate) admission: Admission,
    /// `/mcp/{name}` → route.
    pub(crate) routes: HashMap<Box<str>, Arc<Route>>,
    /// `/mcp/{name}` → virtual server.
    pub(crate) virtuals: HashMap<Box<str>, Arc<VirtualRoute>>,
    /// RFC 9728 metadata documents by path.
    pub(crate) metadata: HashMap<Box<str>, Bytes>,
}

impl Front {
    /// Whether the route `name` is a member of a virtual server.
    pub(crate) fn is_member(&self, name: &str) -> bool {
        self.virtuals
            .values()
            .any(|v| v.members.iter().any(|m| &*m.route.name == name))
    }

    /// Admit and route one request.
    pub(crate) async fn call(&self, req: Request<Body>) -> Response {
        if let Err(rejection) = admit(&self.admission, req.headers()) {
            return render(&rejection);
        }
        let path = req.uri().path();
        if let Some(route) = self.routes.get(path) {
            tracing::Span::current().record("route", display(&route.name));
            return call(route, req).await;
        }
        if let Some(v) = self.virtuals.get(path) {
            tracing::Span::current().record("route", display(&v.name));
            return crate::vserver::call(v, req).await;
        }
        if let Some(doc) = self.metadata.get(path)
            && req.method() == http::Method::GET
        {
            let mut res = Response::new(Body::from(doc.clone()));
            res.headers_mut()
                .insert(CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
            return res;
        }
        render(&Rejection::new(
            ErrorKind::UnknownRoute,
            "Not found: no MCP server at this path",
        ))
    }
}

#[cfg(test)]
mod tests;
