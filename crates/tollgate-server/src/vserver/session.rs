//! Legacy sessions on a virtual server.
//!
//! The virtual server answers `initialize` itself after opening a session
//! with every member (each through the member's route, so each member's
//! id is sealed for that member and the caller as usual). The member ids
//! travel inside the virtual server's own sealed session id, bound to the
//! virtual server and the caller: no store, and any replica holding the
//! session key continues the session. A member that fails to open its
//! session is left out of it; its calls answer 502 while the others work.
//! `DELETE` ends every member's session.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, StatusCode};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;
use tollgate_catalog::compose::Announced;
use tollgate_core::{ErrorKind, Principal};
use tollgate_mcp::headers::SESSION_ID;
use tollgate_mcp::sse;

use super::exposed::Exposed;
use super::{Incoming, VirtualRoute, answer, delegate, per_user};
use crate::rescue::Rejection;
use crate::task_handle::owner;
use tollgate_session::SessionClaims;

/// The largest member `initialize` answer read.
const MAX_INIT_BYTES: usize = 1024 * 1024;

/// One member's session inside a virtual session id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberSession<'a> {
    /// The member's index.
    pub(crate) index: usize,
    /// The protocol version the member agreed (empty: unknown).
    pub(crate) version: &'a str,
    /// The member's sealed session id.
    pub(crate) sealed: &'a str,
}

/// The member sessions inside a virtual session id: one
/// `index:version:sealed` line per member with a session (sealed ids and
/// protocol versions hold no `:` or newline).
fn encode(ids: &[(usize, String, String)]) -> String {
    ids.iter()
        .map(|(i, version, id)| format!("{i}:{version}:{id}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn decode(text: &str) -> Vec<MemberSession<'_>> {
    text.lines()
        .filter_map(|l| {
            let (index, rest) = l.split_once(':')?;
            let (version, sealed) = rest.split_once(':')?;
            Some(MemberSession {
                index: index.parse().ok()?,
                version,
                sealed,
            })
        })
        .collect()
}

fn not_found() -> Rejection {
    Rejection::new(ErrorKind::SessionNotFound, "Session not found")
}

/// The claims of the caller's virtual session id, when it sent one.
fn claims(
    v: &VirtualRoute,
    parts: &Parts,
    principal: Option<&Arc<Principal>>,
) -> Result<Option<SessionClaims>, Rejection> {
    let Some(sealed) = parts.headers.get(&SESSION_ID) else {
        return Ok(None);
    };
    let sealed = sealed.to_str().map_err(|_| not_found())?;
    v.shared
        .sealer
        .unseal(sealed.trim(), owner(&v.name, principal))
        .map(Some)
        .map_err(|_| not_found())
}

/// Refuse a legacy request whose session id is not one of ours.
pub(crate) fn check(v: &VirtualRoute, incoming: &Incoming) -> Result<(), Rejection> {
    claims(v, &incoming.parts, incoming.principal.as_ref())
        .map(|_| ())
        .map_err(|r| r.with_id(incoming.message.id.clone()))
}

/// Member `member`'s sealed session id in the caller's session, and the
/// protocol version that member agreed; `None` without a session. A
/// session without that member (it failed to open) answers 502, unless
/// the member acts per user: it could not open before the caller
/// connected it, and its own phases answer the call (`per_user::rejoin`).
pub(crate) fn member_id(v: &VirtualRoute, incoming: &Incoming, member: usize) -> Result<Option<MemberIds>, Rejection> {
    if incoming.parts.headers.get(&SESSION_ID).is_none() {
        return Ok(None);
    }
    let found = members(v, &incoming.parts, incoming.principal.as_ref())?
        .into_iter()
        .find(|(i, _, _)| *i == member);
    if found.is_none() && per_user::acts_per_user(v, member) {
        return Ok(None);
    }
    found
        .map(|(_, sealed, version)| Some((sealed, version)))
        .ok_or_else(|| {
            Rejection::new(
                ErrorKind::UpstreamUnavailable,
                "Upstream unavailable: the member has no session",
            )
        })
}

/// `initialize`: open a session with every member, answer for the
/// virtual server, and hand out the sealed virtual session id.
pub(crate) async fn open(v: &Arc<VirtualRoute>, incoming: &Incoming, exposed: &Exposed) -> Result<Response, Rejection> {
    let id = incoming.message.id.clone();
    let opened = futures_util::future::join_all((0..v.members.len()).map(|i| open_member(v, incoming, i))).await;
    let mut ids = Vec::new();
    let mut version: Option<String> = None;
    let mut announced = exposed.announced;
    for (i, result) in opened.into_iter().enumerate() {
        match result {
            Some((sealed, answered, member_announced)) => {
                announced = announced.or(member_announced);
                let agreed = answered.clone().unwrap_or_default();
                ids.push((i, agreed, sealed));
                version = version.or(answered);
            }
            None => {
                tracing::warn!(virtual_server = %v.name, member = %v.members[i].route.name, "member session could not be opened")
            }
        }
    }
    // A member acting per user opens no session before the caller has
    // connected it; the session opens without it, so its calls can ask.
    let waiting = (0..v.members.len()).any(|i| per_user::acts_per_user(v, i));
    if ids.is_empty() && !v.members.is_empty() && !waiting {
        return Err(Rejection::new(
            ErrorKind::UpstreamUnavailable,
            "Upstream unavailable: no member opened a session",
        )
        .with_id(id));
    }
    let requested = requested_version(&incoming.body);
    let version = version.or(requested).unwrap_or_else(|| "2025-06-18".to_owned());
    let owner = owner(&v.name, incoming.principal.as_ref());
    let claims = SessionClaims {
        elicits_url: false,
        route: v.name.to_string(),
        issuer: owner.issuer.to_owned(),
        subject: owner.subject.to_owned(),
        upstream_id: encode(&ids),
    };
    let sealed = v
        .shared
        .sealer
        .seal(&claims)
        .ok()
        .and_then(|s| HeaderValue::from_str(&s).ok())
        .ok_or_else(|| Rejection::new(ErrorKind::Internal, "Internal error").with_id(id.clone()))?;
    let result = serde_json::json!({
        "protocolVersion": version,
        "capabilities": answer::capabilities_with(exposed, announced),
        "serverInfo": answer::server_info(v),
    });
    let mut res = answer::result(id.as_ref(), &result.to_string());
    res.headers_mut().insert(SESSION_ID, sealed);
    Ok(res)
}

/// Open member `i`'s session: its sealed id, the version it agreed and
/// what its capabilities announce.
async fn open_member(v: &VirtualRoute, incoming: &Incoming, i: usize) -> Option<(String, Option<String>, Announced)> {
    let req = delegate::request(v, incoming, i, incoming.body.clone()).ok()?;
    let res = delegate::send_for(v, incoming, i, req).await;
    if !res.status().is_success() {
        return None;
    }
    // A member that serves legacy clients statelessly names no session; one
    // that answers with an error (asks the caller to connect) opened none.
    let opened = res.headers().get(&SESSION_ID).is_some();
    let sealed = match res.headers().get(&SESSION_ID) {
        Some(id) => id.to_str().ok()?.to_owned(),
        None => String::new(),
    };
    let bytes = Limited::new(res.into_body(), MAX_INIT_BYTES)
        .collect()
        .await
        .ok()?
        .to_bytes();
    if !opened && !has_result(&bytes) {
        return None;
    }
    Some((sealed, agreed_version(&bytes), announced(&bytes)))
}

/// Whether an `initialize` answer, JSON or SSE, carries a result.
fn has_result(bytes: &Bytes) -> bool {
    let of = |v: &Value| v.get("result").is_some();
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        return of(&v);
    }
    sse::events(bytes).any(|e| serde_json::from_str::<Value>(&e.data).is_ok_and(|v| of(&v)))
}

/// What the capabilities of an `initialize` answer, JSON or SSE, announce.
fn announced(bytes: &Bytes) -> Announced {
    let of = |v: &Value| v.get("result").map(|r| Announced::of(&r["capabilities"]));
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        return of(&v).unwrap_or_default();
    }
    sse::events(bytes)
        .find_map(|e| serde_json::from_str::<Value>(&e.data).ok().as_ref().and_then(of))
        .unwrap_or_default()
}

/// The `protocolVersion` of an `initialize` answer, JSON or SSE (only a
/// plain version token is kept).
fn agreed_version(bytes: &Bytes) -> Option<String> {
    let from = |v: &Value| {
        v["result"]["protocolVersion"]
            .as_str()
            .filter(|s| s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'))
            .map(str::to_owned)
    };
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        return from(&v);
    }
    sse::events(bytes).find_map(|e| serde_json::from_str::<Value>(&e.data).ok().as_ref().and_then(from))
}

fn requested_version(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v["params"]["protocolVersion"].as_str().map(str::to_owned)
}

/// A member's session id (none for a member that keeps no sessions) and
/// the protocol version it agreed.
pub(crate) type MemberIds = (Option<HeaderValue>, Option<HeaderValue>);

/// One member's session as a routed request carries it: the member's
/// index, its sealed session id (none for a member that keeps no
/// sessions) and the protocol version it agreed.
pub(crate) type MemberHeaders = (usize, Option<HeaderValue>, Option<HeaderValue>);

/// Every member session in the caller's virtual session (none without a
/// session id; a forged or foreign one is refused).
pub(crate) fn members(
    v: &VirtualRoute,
    parts: &Parts,
    principal: Option<&Arc<Principal>>,
) -> Result<Vec<MemberHeaders>, Rejection> {
    let Some(claims) = claims(v, parts, principal)? else {
        return Ok(Vec::new());
    };
    Ok(decode(&claims.upstream_id)
        .into_iter()
        .filter(|s| s.index < v.members.len())
        .filter_map(|s| {
            let sealed = match s.sealed {
                "" => None,
                id => Some(HeaderValue::from_str(id).ok()?),
            };
            let version = (!s.version.is_empty())
                .then(|| HeaderValue::from_str(s.version).ok())
                .flatten();
            Some((s.index, sealed, version))
        })
        .collect())
}

/// A client notification (`notifications/initialized`, `cancelled`,
/// `roots/list_changed`, …) in a legacy session: passed to every member
/// session, since the virtual server keeps no record of which member
/// holds the request a notification may refer to (a member ignores what
/// it does not know).
pub(crate) async fn notify(v: &Arc<VirtualRoute>, incoming: &Incoming) -> Result<Response, Rejection> {
    fan_out(v, incoming).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

/// `logging/setLevel` in a legacy session: every member session is set to
/// the level, and the virtual server answers for all of them.
pub(crate) async fn set_level(v: &Arc<VirtualRoute>, incoming: &Incoming) -> Result<Response, Rejection> {
    fan_out(v, incoming).await?;
    Ok(answer::result(incoming.message.id.as_ref(), "{}"))
}

/// Send the caller's message to every member session; answers are not read.
async fn fan_out(v: &Arc<VirtualRoute>, incoming: &Incoming) -> Result<(), Rejection> {
    let members = members(v, &incoming.parts, incoming.principal.as_ref())?;
    futures_util::future::join_all(members.into_iter().map(|(i, _, _)| async move {
        if let Ok(req) = delegate::request(v, incoming, i, incoming.body.clone()) {
            let _ = delegate::send_for(v, incoming, i, req).await;
        }
    }))
    .await;
    Ok(())
}

/// `DELETE`: end every member session.
pub(crate) async fn end(
    v: &Arc<VirtualRoute>,
    parts: &Parts,
    principal: Option<&Arc<Principal>>,
) -> Result<Response, Rejection> {
    if parts.headers.get(&SESSION_ID).is_none() {
        return Err(not_found());
    }
    for (i, sealed, _) in members(v, parts, principal)? {
        let Some(sealed) = sealed else { continue };
        let mut req = delegate::copied(parts, Body::empty());
        *req.method_mut() = http::Method::DELETE;
        req.headers_mut().insert(SESSION_ID, sealed);
        let _ = delegate::send_as(v, i, (principal, None), req).await;
    }
    Ok(StatusCode::OK.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_sessions_round_trip_with_their_versions() {
        let ids = vec![
            (0, "2025-06-18".to_owned(), "tg1.aaa".to_owned()),
            (2, String::new(), "tg1.bbb".to_owned()),
        ];
        let text = encode(&ids);
        let back = decode(&text);
        assert_eq!(
            back,
            [
                MemberSession {
                    index: 0,
                    version: "2025-06-18",
                    sealed: "tg1.aaa"
                },
                MemberSession {
                    index: 2,
                    version: "",
                    sealed: "tg1.bbb"
                },
            ]
        );
        assert!(decode("garbage\n1:x").is_empty());
    }

    #[test]
    fn only_plain_version_tokens_are_kept() {
        let json = Bytes::from_static(br#"{"result":{"protocolVersion":"2025-06-18"}}"#);
        assert_eq!(agreed_version(&json).as_deref(), Some("2025-06-18"));
        let sse = Bytes::from_static(b"event: message\ndata: {\"result\":{\"protocolVersion\":\"2025-03-26\"}}\n\n");
        assert_eq!(agreed_version(&sse).as_deref(), Some("2025-03-26"));
        let bad = Bytes::from_static(br#"{"result":{"protocolVersion":"a:b\nc"}}"#);
        assert_eq!(agreed_version(&bad), None);
    }

    #[test]
    fn a_members_initialize_answer_announces_list_changes_and_subscriptions() {
        let sse = Bytes::from_static(
            b"event: message\ndata: {\"result\":{\"capabilities\":{\"tools\":{\"listChanged\":true},\"resources\":{\"subscribe\":true}}}}\n\n",
        );
        let a = announced(&sse);
        assert!(a.tools_list_changed && a.subscribe, "{a:?}");
        assert!(!a.prompts_list_changed && !a.resources_list_changed, "{a:?}");
        let none = Bytes::from_static(br#"{"result":{"capabilities":{"tools":{}}}}"#);
        assert_eq!(announced(&none), Announced::default());
    }
}
