//! Phase 11, respond: the answer on its way to the client.
//!
//! A list answer is filtered to what the caller may use (`lists`); a legacy
//! upstream's session id is sealed (and never shown to the client); then
//! the body is metered as it streams, and when it ends the call's facts
//! become its summary (`summary`). A refusal from any phase leaves through
//! [`refuse`]: rendered by the one error map, then metered and summarised
//! like any answer.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::HeaderValue;
use tollgate_core::{Era, ErrorKind};
use tollgate_mcp::headers::SESSION_ID;

use crate::facts::Facts;
use crate::lists;
use crate::metered::{Completion, MeteredBody};
use crate::phase::budget;
use crate::rescue::{Rejection, render};
use crate::route::Route;
use crate::stage::{Forwarded, Stage, Stop};
use crate::task_handle::owner;
use crate::{CallLabels, TEE_BYTES};
use tollgate_session::SessionClaims;

/// Answer with the upstream's response `res`.
///
/// # Errors
///
/// The stop of an answer that cannot be passed on: a list that does not
/// read, or a legacy session id that does not seal.
pub(crate) async fn respond(route: &Arc<Route>, forwarded: Forwarded, res: Response) -> Result<Response, Stop> {
    let (forwarded, (res, hidden)) = if lists::filters(route, forwarded.family) {
        // Boxed: reading and rewriting a whole list is the rare path.
        let filtered = Box::pin(lists::filter(route, &forwarded, res)).await;
        forwarded.check(filtered)?
    } else {
        (forwarded, (res, None))
    };
    let mut res = match seal(route, &forwarded, res) {
        Ok(res) => res,
        Err(rejection) => {
            // The list was filtered: the record still says what was hidden.
            let mut stop = forwarded.stop(rejection);
            stop.facts.hidden = hidden;
            return Err(stop);
        }
    };
    if let Some(remaining) = budget::header(&forwarded.budget) {
        res.headers_mut().insert(budget::REMAINING, remaining);
    }
    let mut facts = forwarded.into_facts();
    facts.hidden = hidden;
    Ok(metered(route, facts, res, None))
}

/// Answer with a refusal.
pub(crate) fn refuse(route: &Arc<Route>, stop: Stop) -> Response {
    let (facts, rejection, res) = rendered(stop);
    metered(route, facts, res, Some(rejection))
}

/// A stop rendered by the one error map: a single message's id is
/// echoed; a batch's refusal answers each element, or carries a null id.
pub(crate) fn rendered(stop: Stop) -> (Box<Facts>, Rejection, Response) {
    let Stop { facts, rejection } = stop;
    let id = match facts.messages() {
        [one] => one.id.clone(),
        _ => None,
    };
    let rejection = rejection.with_id(id);
    let res = render(&rejection);
    (facts, rejection, res)
}

/// Seal the upstream's session id (legacy) or drop it (modern).
fn seal(route: &Route, call: &Forwarded, mut res: Response) -> Result<Response, Rejection> {
    let Some(upstream_id) = res.headers_mut().remove(&SESSION_ID) else {
        return Ok(res);
    };
    if call.call.era != Era::Legacy {
        return Ok(res);
    }
    let invalid = || Rejection::new(ErrorKind::UpstreamUnavailable, "Upstream sent an invalid session id");
    let upstream_id = upstream_id.to_str().map_err(|_| invalid())?;
    let owner = owner(&route.name, call.principal());
    // Declared at `initialize`; kept by every later id of the session.
    let elicits_url = match call.messages().first() {
        Some(m) if m.method == "initialize" => call
            .facts
            .body
            .bytes
            .as_deref()
            .is_some_and(tollgate_mcp::declares_url_elicitation),
        _ => call.facts.elicits_url,
    };
    let claims = SessionClaims {
        route: route.name.to_string(),
        issuer: owner.issuer.to_owned(),
        subject: owner.subject.to_owned(),
        upstream_id: upstream_id.to_owned(),
        elicits_url,
    };
    let sealed = route
        .shared
        .sealer
        .seal(&claims)
        .ok()
        .and_then(|s| HeaderValue::from_str(&s).ok())
        .ok_or_else(|| Rejection::new(ErrorKind::Internal, "Internal error"))?;
    res.headers_mut().insert(SESSION_ID, sealed);
    Ok(res)
}

/// Meter the response body; the call finishes when it ends.
pub(crate) fn metered(
    route: &Arc<Route>,
    facts: Box<Facts>,
    mut res: Response,
    rejection: Option<Rejection>,
) -> Response {
    let family = facts.family();
    res.extensions_mut().insert(CallLabels {
        route: route.name.clone(),
        method: family,
    });
    let sse = tollgate_mcp::sse::is_event_stream(res.headers());
    let tee = if rejection.is_some() {
        0
    } else {
        tee_limit(route, &facts)
    };
    let status = res.status().as_u16();
    let completion = Completion::new(route.clone(), facts, rejection, status, sse, tee);
    res.map(|body| Body::new(MeteredBody::new(body, completion)))
}

/// How much of an upstream answer to keep aside: enough for its error
/// codes, a whole list answer to learn from, or the captured result.
fn tee_limit(route: &Route, facts: &Facts) -> usize {
    let mut limit = TEE_BYTES;
    if crate::learn::wants_whole_answer(route, facts) {
        limit = limit.max(crate::learn::MAX_ANSWER_BYTES);
    }
    if facts.body.captured.is_some() && route.captures_results() {
        limit = limit.max(route.capture_limit());
    }
    limit
}
