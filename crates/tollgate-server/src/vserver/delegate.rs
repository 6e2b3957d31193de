//! A call resolved to a member, on its way there, and the requests a
//! virtual server makes to its members for a caller.
//!
//! A resolved call carries the member's own name — `Mcp-Name` replaced,
//! and the name in the body replaced by a splice at the byte range a
//! bounded scan located (`tollgate_mcp::splice`), never by rebuilding the
//! body — and its identified stage goes on, renamed the same way, through
//! the member route's phases from the catalog gate on
//! (`phases::call_resolved`): nothing is authenticated, read or scanned
//! twice. A legacy session's member id replaces the virtual session id on
//! the way in, and the virtual one replaces whatever the member's answer
//! carries on the way out. The requests a virtual server fans out to its
//! members (`initialize`, notifications, GET streams, session ends) run
//! the member route's phases from `identify` on, for the caller the
//! virtual server authenticated (`phases::call_as`).

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Request};
use tollgate_core::{Era, ErrorKind, Principal, Via};
use tollgate_mcp::headers::{NAME, PROTOCOL_VERSION, SESSION_ID};
use tollgate_mcp::{check_served, splice};

use super::exposed::Target;
use super::resolve::NamePath;
use super::{Incoming, Member, VirtualRoute, session, tasks};
use crate::facts::{Arrival, Arrived};
use crate::phases;
use crate::rescue::{Rejection, render};
use crate::stage::{Authenticated, Identified, Stage, Stop};

/// Send the call resolved to `target` on to its member, renamed at `path`
/// in the body when the exposed name differs from the member's own.
///
/// # Errors
///
/// The stop of a call that cannot reach its member: a splice that fails,
/// a legacy session without that member, a version it does not serve.
pub(crate) async fn forward(
    v: &VirtualRoute,
    identified: Identified,
    incoming: &mut Incoming,
    target: Target<'_>,
    path: NamePath,
) -> Result<Response, Stop> {
    let Some(member) = v.members.get(target.member) else {
        return Err(identified.stop(Rejection::new(ErrorKind::Internal, "Internal error")));
    };
    // The virtual session id the answer carries back (legacy).
    let ours = match incoming.era {
        Era::Legacy => incoming.parts.headers.get(&SESSION_ID).cloned(),
        Era::Modern => None,
    };
    if let Some(refused) = super::per_user::rejoin(v, incoming, target.member).await {
        return Err(identified.stop(refused));
    }
    let rewritten = rewrite(v, incoming, target, path);
    let (identified, (parts, body)) = identified.check(rewritten)?;
    let identified = renamed(v, identified, member, target, path, &body)?;
    // Boxed: the member route's phases are a large future; held inline, the
    // virtual server's own future would be as large, and copied as such.
    let res = Box::pin(phases::call_resolved(
        &member.route,
        identified,
        parts,
        Body::from(body),
    ))
    .await;
    Ok(answered(v, incoming, target.member, res, ours).await)
}

/// The head and body the member gets: the caller's, with the member's
/// own name and (legacy) session.
fn rewrite(
    v: &VirtualRoute,
    incoming: &mut Incoming,
    target: Target<'_>,
    path: NamePath,
) -> Result<(Parts, Bytes), Rejection> {
    let id = incoming.message.id.clone();
    let renamed = target.exposed != target.own;
    let body = match path {
        Some(path) if renamed => Bytes::from(
            splice::replace(&incoming.body, path, target.own).map_err(|e| Rejection::from(e).with_id(id.clone()))?,
        ),
        _ => incoming.body.clone(),
    };
    let session = member_session(v, incoming, target.member, id)?;
    // The message goes to this one member only: its head is taken, not
    // copied.
    let (mut parts, ()) = Request::new(()).into_parts();
    parts.method = http::Method::POST;
    parts.uri = incoming.parts.uri.clone();
    parts.headers = std::mem::take(&mut incoming.parts.headers);
    parts.extensions = std::mem::take(&mut incoming.parts.extensions);
    for_member(&mut parts.headers, body.len(), session);
    if renamed && parts.headers.contains_key(&NAME) {
        parts.headers.insert(NAME, encode_name(target.own));
    }
    Ok((parts, body))
}

/// The identified call as the member sees it: its message named by the
/// member's own name, through the virtual server under the exposed one,
/// with the body the member gets (captured when the member captures).
fn renamed(
    v: &VirtualRoute,
    mut identified: Identified,
    member: &Member,
    target: Target<'_>,
    path: NamePath,
    body: &Bytes,
) -> Result<Identified, Stop> {
    let route = &member.route;
    if let Err(e) = check_served(&identified.call, route.served_versions()) {
        let refusal = route.version_error(e).with_id(identified.first_id());
        return Err(identified.stop(refusal.into()));
    }
    let renamed = target.exposed != target.own;
    if renamed
        && matches!(path, Some(["params", "name" | "taskId"]))
        && let Some(message) = identified.call.messages.first_mut()
    {
        message.name = Some(target.own.into());
    }
    identified.facts.arrival.via = Some(if renamed {
        Arc::new(Via {
            virtual_server: v.name.clone(),
            exposed_name: Some(Arc::from(target.exposed)),
        })
    } else {
        v.via.clone()
    });
    identified.facts.body.bytes = Some(body.clone());
    if route.captures_call(&identified.call) {
        identified.facts.body.captured = Some(body.clone());
    }
    Ok(identified)
}

/// The member's answer as the caller gets it: the virtual session id
/// `ours` in place of the member's, the ids the member gives its own
/// requests and tasks namespaced (`relay`, `tasks`).
async fn answered(
    v: &VirtualRoute,
    incoming: &Incoming,
    member: usize,
    mut res: Response,
    ours: Option<HeaderValue>,
) -> Response {
    res.headers_mut().remove(&SESSION_ID);
    let relayed = ours.is_some();
    if let Some(ours) = ours {
        res.headers_mut().insert(SESSION_ID, ours);
    }
    if tasks::may_name_a_task(incoming) {
        tasks::answer(v, incoming, member, res, relayed).await
    } else if relayed {
        super::relay::answer_from(v, incoming.principal.as_ref(), member, res, true)
    } else {
        res
    }
}

/// Run `req`, a request the virtual server makes for the caller
/// `principal`, through member `member`'s route, as part of the call that
/// arrived as `arrived` (none: a request of its own, timed from now).
pub(crate) async fn send_as(
    v: &VirtualRoute,
    member: usize,
    (principal, arrived): (Option<&Arc<Principal>>, Option<&Arrived>),
    req: Request<Body>,
) -> Response {
    let Some(m) = v.members.get(member) else {
        return render(&Rejection::new(ErrorKind::Internal, "Internal error"));
    };
    let (parts, body) = req.into_parts();
    let arrival = match arrived {
        Some(arrived) => Arrival::resumed(arrived.clone(), &parts, Some(v.via.clone())),
        None => Arrival::of(&parts).through(v.via.clone()),
    };
    let authenticated = Authenticated::on_behalf(arrival, principal.cloned());
    phases::call_as(&m.route, authenticated, Request::from_parts(parts, body)).await
}

/// Run `req` through member `member`'s route as part of the call
/// `incoming`, for its caller.
pub(crate) async fn send_for(v: &VirtualRoute, incoming: &Incoming, member: usize, req: Request<Body>) -> Response {
    send_as(v, member, (incoming.principal.as_ref(), Some(&incoming.arrived)), req).await
}

/// A POST of `body` to member `member` with a copy of the caller's
/// headers, its address, and (legacy) the member's session id.
pub(crate) fn request(
    v: &VirtualRoute,
    incoming: &Incoming,
    member: usize,
    body: Bytes,
) -> Result<Request<Body>, Rejection> {
    let session = member_session(v, incoming, member, incoming.message.id.clone())?;
    let length = body.len();
    let mut req = copied(&incoming.parts, body);
    *req.method_mut() = http::Method::POST;
    for_member(req.headers_mut(), length, session);
    Ok(req)
}

/// The member's session id and agreed version a legacy request carries
/// to member `member`.
fn member_session(
    v: &VirtualRoute,
    incoming: &Incoming,
    member: usize,
    id: Option<tollgate_mcp::RequestId>,
) -> Result<Option<session::MemberIds>, Rejection> {
    if incoming.era != Era::Legacy || incoming.message.method == "initialize" {
        return Ok(None);
    }
    session::member_id(v, incoming, member).map_err(|r| r.with_id(id))
}

/// Headers for a member: the body's length (the caller's stands unless a
/// splice changed it), the member's session and agreed version in place
/// of the virtual session.
fn for_member(headers: &mut HeaderMap, length: usize, session: Option<session::MemberIds>) {
    headers.remove(&SESSION_ID);
    let stated = headers
        .get(CONTENT_LENGTH)
        .and_then(|h| h.to_str().ok())
        .and_then(|t| t.parse::<usize>().ok());
    if stated != Some(length) {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    }
    if let Some((sealed, version)) = session {
        if let Some(sealed) = sealed {
            headers.insert(SESSION_ID, sealed);
        }
        // Each member is spoken to in the version it agreed.
        if let Some(version) = version {
            headers.insert(PROTOCOL_VERSION, version);
        }
    }
}

/// A request to a member from a copy of the caller's head — URI, headers
/// and address — where one message goes to several members. The virtual
/// session id means nothing to a member: it is removed.
pub(crate) fn copied(parts: &Parts, body: impl Into<Body>) -> Request<Body> {
    let mut req = Request::new(body.into());
    *req.uri_mut() = parts.uri.clone();
    *req.headers_mut() = parts.headers.clone();
    req.headers_mut().remove(&SESSION_ID);
    if let Some(addr) = parts.extensions.get::<crate::facts::ClientAddr>() {
        req.extensions_mut().insert(*addr);
    }
    req
}

/// `Mcp-Name` for `name`, sentinel-encoded where it must be.
pub(crate) fn encode_name(name: &str) -> HeaderValue {
    HeaderValue::from_str(&tollgate_mcp::encode_header_value(name)).unwrap_or(HeaderValue::from_static(""))
}
