//! Routing one message to the member that owns it.
//!
//! The request is rewritten to carry the member's own name — `Mcp-Name`
//! replaced, and the name in the body replaced by a splice at the byte
//! range a bounded scan located (`tollgate_mcp::splice`), never by
//! rebuilding the body — and runs the member route's phases with the
//! caller already authenticated (`Delegated`). A legacy session's member
//! id replaces the virtual session id on the way in, and the virtual one
//! replaces whatever the member's answer carries on the way out.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::request::Parts;
use http::{HeaderValue, Request};
use http_body::Body as _;
use tollgate_core::{Era, Principal, Via};
use tollgate_mcp::headers::{NAME, PROTOCOL_VERSION, SESSION_ID};
use tollgate_mcp::splice;

use super::exposed::Target;
use super::{Delegated, Incoming, VirtualRoute, session, tasks};
use crate::facts::Arrived;
use crate::rescue::{Rejection, render};

/// Forward `incoming` to `target`'s member, renamed at `path` in the body
/// when the exposed name differs from the member's own. The message goes
/// to this one member only, so the request made for it takes the caller's
/// headers and extensions instead of copying them.
pub(crate) async fn forward(
    v: &Arc<VirtualRoute>,
    incoming: &mut Incoming,
    target: Target<'_>,
    path: Option<&[&str]>,
) -> Response {
    // The virtual session id the answer carries back (legacy).
    let ours = match incoming.era {
        Era::Legacy => incoming.parts.headers.get(&SESSION_ID).cloned(),
        Era::Modern => None,
    };
    match rewrite(v, incoming, target, path) {
        Ok(req) => super::observe::routed(send(v, incoming, target.member, req, ours).await),
        Err(r) => super::observe::refuse(&r),
    }
}

/// Run a request through member `member`'s route, as the member answers.
pub(crate) async fn send_raw(v: &VirtualRoute, member: usize, req: Request<Body>) -> Response {
    match v.members.get(member) {
        Some(m) => crate::phases::call(&m.route, req).await,
        None => render(&Rejection::new(tollgate_core::ErrorKind::Internal, "Internal error")),
    }
}

/// Run a rewritten request through member `member`'s route; the caller
/// keeps seeing the virtual session id `ours`, and the ids the member's
/// answer gives its own requests and tasks are namespaced (`relay`,
/// `tasks`).
async fn send(
    v: &VirtualRoute,
    incoming: &Incoming,
    member: usize,
    req: Request<Body>,
    ours: Option<HeaderValue>,
) -> Response {
    let mut res = send_raw(v, member, req).await;
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

fn rewrite(
    v: &VirtualRoute,
    incoming: &mut Incoming,
    target: Target<'_>,
    path: Option<&[&str]>,
) -> Result<Request<Body>, Rejection> {
    let id = incoming.message.id.clone();
    let renamed = target.exposed != target.own;
    let body = match path {
        Some(path) if renamed => Bytes::from(
            splice::replace(&incoming.body, path, target.own).map_err(|e| Rejection::from(e).with_id(id.clone()))?,
        ),
        _ => incoming.body.clone(),
    };
    let exposed = renamed.then(|| Arc::from(target.exposed));
    let session = member_session(v, incoming, target.member, id)?;
    let head = Head::take(&mut incoming.parts);
    let req = delegated(
        v,
        head,
        (incoming.principal.as_ref(), Some(&incoming.arrived)),
        body,
        exposed,
    );
    let mut req = finish(req, session);
    // The member route takes the message as scanned here, with the name the
    // splice put in the body (a rename elsewhere in the body, such as a
    // completion's `ref`, is left to the member's own scan).
    let names_target = matches!(path, Some(["params", "name" | "taskId"]));
    if (!renamed || names_target)
        && let Some(d) = req.extensions_mut().get_mut::<Delegated>()
    {
        let mut message = incoming.message.clone();
        if renamed {
            message.name = Some(target.own.into());
        }
        d.scanned = Some(tollgate_mcp::Scanned::Single(message));
    }
    if renamed && req.headers().contains_key(&NAME) {
        req.headers_mut().insert(NAME, encode_name(target.own));
    }
    Ok(req)
}

/// A POST of `body` to member `member` with (a copy of) the caller's
/// headers, its address, and (legacy) the member's session id; `exposed`
/// is the name the virtual server shows, when the member's own differs.
pub(crate) fn request(
    v: &VirtualRoute,
    incoming: &Incoming,
    member: usize,
    body: Bytes,
    id: Option<tollgate_mcp::RequestId>,
    exposed: Option<Arc<str>>,
) -> Result<Request<Body>, Rejection> {
    let session = member_session(v, incoming, member, id)?;
    let head = Head::copy(&incoming.parts);
    let req = delegated(
        v,
        head,
        (incoming.principal.as_ref(), Some(&incoming.arrived)),
        body,
        exposed,
    );
    Ok(finish(req, session))
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

/// `req` as a POST of its body, with its length and the member session.
fn finish(mut req: Request<Body>, session: Option<session::MemberIds>) -> Request<Body> {
    *req.method_mut() = http::Method::POST;
    // The caller's length stands unless a splice changed the body.
    let length = req.body().size_hint().exact().and_then(|n| usize::try_from(n).ok());
    let stated = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|h| h.to_str().ok())
        .and_then(|t| t.parse::<usize>().ok());
    if let Some(length) = length
        && stated != Some(length)
    {
        req.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(length));
    }
    if let Some((sealed, version)) = session {
        if let Some(sealed) = sealed {
            req.headers_mut().insert(SESSION_ID, sealed);
        }
        // Each member is spoken to in the version it agreed.
        if let Some(version) = version {
            req.headers_mut().insert(PROTOCOL_VERSION, version);
        }
    }
    req
}

/// The caller's request head a member request starts from.
pub(crate) struct Head {
    uri: http::Uri,
    headers: http::HeaderMap,
    extensions: http::Extensions,
}

impl Head {
    /// A copy of `parts`' URI, headers and the caller's address, where one
    /// message goes to several members.
    pub(crate) fn copy(parts: &Parts) -> Head {
        let mut extensions = http::Extensions::new();
        if let Some(addr) = parts.extensions.get::<crate::facts::ClientAddr>() {
            extensions.insert(*addr);
        }
        Head {
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
            extensions,
        }
    }

    /// `parts`' head itself, where the message goes to one member: its
    /// headers and extensions are left empty.
    fn take(parts: &mut Parts) -> Head {
        Head {
            uri: parts.uri.clone(),
            headers: std::mem::take(&mut parts.headers),
            extensions: std::mem::take(&mut parts.extensions),
        }
    }
}

/// A request for a member route from the caller's head, already
/// authenticated for the virtual server as `principal` and received at
/// `arrived` (`Delegated`; none for the GET streams the virtual server
/// opens itself). The virtual session id means nothing to a member: it is
/// removed.
pub(crate) fn delegated(
    v: &VirtualRoute,
    head: Head,
    (principal, arrived): (Option<&Arc<Principal>>, Option<&Arrived>),
    body: impl Into<Body>,
    exposed: Option<Arc<str>>,
) -> Request<Body> {
    let mut req = Request::new(body.into());
    *req.uri_mut() = head.uri;
    *req.headers_mut() = head.headers;
    *req.extensions_mut() = head.extensions;
    req.headers_mut().remove(&SESSION_ID);
    req.extensions_mut().insert(Delegated {
        principal: principal.cloned(),
        via: Arc::new(Via {
            virtual_server: v.name.clone(),
            exposed_name: exposed,
        }),
        scanned: None,
        arrived: arrived.cloned(),
    });
    req
}

/// `Mcp-Name` for `name`, sentinel-encoded where it must be.
pub(crate) fn encode_name(name: &str) -> HeaderValue {
    HeaderValue::from_str(&tollgate_mcp::encode_header_value(name)).unwrap_or(HeaderValue::from_static(""))
}
