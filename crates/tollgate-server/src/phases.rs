//! The request path of one MCP call, phase by phase, top to bottom.
//!
//! ```text
//! admit → route → classify → authenticate → identify → tasks → gate
//!       → connection → authorize → limit → budget → credential (→ elicit)
//!       → forward → respond
//! ```
//!
//! `admit` and `route` run in the front service (`front`) for every
//! request; the rest runs here for requests on an MCP route. A virtual
//! server (`vserver`) runs `authenticate` and `identify` for itself, then
//! `resolve`s the call and enters a member route here: at the gate with
//! the identified call ([`call_resolved`]), or at `identify` for the
//! requests it fans out for an authenticated caller ([`call_as`]). Each phase
//! takes the typed stage the one before it returned (`stage`) and returns
//! the next stage or a [`Stop`]: no phase runs on facts it was not given.
//! Every stop, whichever phase it comes from, leaves through [`refuse`] and
//! the one error map; every answer, refused or not, becomes one call
//! summary for the route's observers when its body ends. Legacy session
//! requests (GET streams, DELETEs, POSTs in a session) take the same path
//! as 2026-07-28 POSTs. Cross-cutting work — the request id and span, the
//! body limit, load shedding, request metrics — is done by the layers
//! around this (`stack`).

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::Request;
use http::request::Parts;

use crate::facts::Arrival;
use crate::phase::authenticate::authenticate;
use crate::phase::authorize::authorize;
use crate::phase::classify::classify;
use crate::phase::connection::connection;
use crate::phase::credential::{credential, refused_grant};
use crate::phase::elicit;
use crate::phase::forward::forward;
use crate::phase::gate::gate;
use crate::phase::identify::identify;
use crate::phase::limit::limit;
use crate::phase::respond::{refuse, respond};
use crate::phase::tasks;
use crate::route::Route;
use crate::stage::{Admitted, Authenticated, Identified, Stop};
use crate::task_handle;

/// Serve one request on an MCP route.
pub(crate) async fn call(route: &Arc<Route>, req: Request<Body>) -> Response {
    let (parts, body) = req.into_parts();
    let admitted = Admitted::new(Arrival::of(&parts));
    let outcome = async {
        let authenticated = authenticate(&**route, admitted, &parts).await?;
        identified(route, authenticated, parts, body).await
    };
    outcome.await.unwrap_or_else(|stop| refuse(route, stop))
}

/// Serve a call again from the top (`elicit`, once its caller connected).
fn again(route: Arc<Route>, req: Request<Body>) -> futures_util::future::BoxFuture<'static, Response> {
    Box::pin(async move { call(&route, req).await })
}

/// Serve a request a virtual server makes to its member `route` for a
/// caller it authenticated (`initialize`, notifications, a client's
/// answer, GET streams and session ends, fanned out to its members).
pub(crate) async fn call_as(route: &Arc<Route>, authenticated: Authenticated, req: Request<Body>) -> Response {
    let (parts, body) = req.into_parts();
    identified(route, authenticated, parts, body)
        .await
        .unwrap_or_else(|stop| refuse(route, stop))
}

/// Serve a call a virtual server identified and resolved to its member
/// `route`: from the catalog gate on, under the member's own gate,
/// policies, limits, credential, audit and metrics. Task handles are the
/// virtual server's, not the member route's.
pub(crate) async fn call_resolved(route: &Arc<Route>, identified: Identified, parts: Parts, body: Body) -> Response {
    governed(route, identified, parts, body, false)
        .await
        .unwrap_or_else(|stop| refuse(route, stop))
}

/// From identify on, for an authenticated caller.
async fn identified(
    route: &Arc<Route>,
    authenticated: Authenticated,
    mut parts: Parts,
    body: Body,
) -> Result<Response, Stop> {
    let request = classify(&parts);
    let (identified, body) = identify(&**route, &request, authenticated, &parts, body).await?;
    let (identified, body) = tasks::open(route, identified, &mut parts, body)?;
    governed(route, identified, parts, body, true).await
}

/// The phases that govern an identified call, in order: each takes the
/// stage the one before returned, or the call stops with what is known so
/// far. With `route_handles`, the task ids of the answer are sealed for
/// the caller as this route's handles (a virtual server seals its own).
async fn governed(
    route: &Arc<Route>,
    identified: Identified,
    parts: Parts,
    body: Body,
    route_handles: bool,
) -> Result<Response, Stop> {
    let identified = elicit::take_answers(identified)?;
    let gated = gate(route, identified, &parts.headers)?;
    let gated = connection(route, gated).await?;
    let authorized = authorize(route, gated)?;
    let limited = limit(route, authorized).await?;
    let credentialed = match credential(route, limited, &parts).await {
        Ok(c) => c,
        Err(stop) if stop.rejection.elicit.is_some() => return Ok(elicit::ask(route, stop, (parts, body), again)),
        Err(stop) => return Err(stop),
    };
    let sealing = route_handles.then(|| tasks::sealing(route, &credentialed)).flatten();
    let (forwarded, res) = forward(route, credentialed, parts, body).await?;
    let (forwarded, res) = refused_grant(route, forwarded, res).await?;
    let res = match sealing {
        Some(seal) => task_handle::seal_answer(seal, res).await,
        None => res,
    };
    respond(route, forwarded, res).await
}

#[cfg(test)]
mod tests;
