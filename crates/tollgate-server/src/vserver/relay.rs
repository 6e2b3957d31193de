//! What members send the client on their own account, in a virtual
//! server's legacy sessions: server-to-client requests (sampling,
//! elicitation, roots) and the GET stream.
//!
//! Two members may use the same JSON-RPC ids for their requests, so each
//! such request reaches the client under an id naming its member —
//! `"tg.{member}.{original id as JSON}"`, spliced over the original in the
//! event's data (the message is not rebuilt). The client's answer carries
//! that id back; it names the member it goes to, and is forwarded there
//! with the original id spliced back. Nothing is stored, so any replica can
//! route an answer.
//!
//! Task ids in the members' answers and `notifications/tasks` are
//! namespaced the same way, by `tasks`.
//!
//! A GET on a virtual session opens each member's GET stream (through the
//! member's route) and merges them. Each merged event's id holds the last
//! event id of every member, so a client resuming with `Last-Event-ID`
//! resumes each member where it left off. The events of a member's answer
//! to a POST carry such an id too, naming only that member: a GET with it
//! resumes the answer's stream on that member (and opens the others').

use std::pin::Pin;
use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use http::request::Parts;
use http::{HeaderName, HeaderValue, Method, StatusCode};
use serde_json::value::RawValue;
use tollgate_core::{ErrorKind, Principal};
use tollgate_mcp::headers::{PROTOCOL_VERSION, SESSION_ID};
use tollgate_mcp::sse::{Event, is_event_stream};
use tollgate_mcp::{MessageKind, RequestId, Scanned, scan, splice};

use super::{Incoming, VirtualRoute, delegate, session, tasks};
use crate::rescue::Rejection;
use crate::task_handle::{self, TaskSeal, seal_in};

/// The prefix of a namespaced server-to-client request id.
const ID_PREFIX: &str = "tg.";
/// The prefix of a merged GET stream's event id.
const EVENT_PREFIX: &str = "tgv.";
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// A member's stream as events, server-to-client request ids namespaced.
type Events = Pin<Box<dyn Stream<Item = Result<Event, axum::BoxError>> + Send>>;

/// The id (JSON text of a string) member `member`'s request `raw` reaches
/// the client under.
fn namespaced(member: usize, raw: &str) -> String {
    serde_json::Value::from(format!("{ID_PREFIX}{member}.{raw}")).to_string()
}

/// The member a client's answer goes to and the original id (JSON text),
/// when `id` is one the virtual server namespaced.
fn target(id: &RequestId) -> Option<(usize, String)> {
    let text: String = serde_json::from_str(id.as_json()).ok()?;
    let (member, raw) = text.strip_prefix(ID_PREFIX)?.split_once('.')?;
    let raw: &RawValue = serde_json::from_str(raw).ok()?;
    Some((member.parse().ok()?, raw.get().to_owned()))
}

/// `data` with its id namespaced, when it is a request from `member`, or
/// with the task id it names sealed by `seal`.
fn rewrite(member: usize, seal: &TaskSeal, data: &str) -> Option<String> {
    let Ok(Scanned::Single(m)) = scan(data.as_bytes()) else {
        return None;
    };
    if m.kind != MessageKind::Request {
        return seal_in(seal, &m, data);
    }
    let id = m.id?;
    let out = splice::replace_raw(data.as_bytes(), &["id"], &namespaced(member, id.as_json())).ok()?;
    String::from_utf8(out).ok()
}

/// Member `member`'s SSE body as events (its task ids sealed by `seal`),
/// each passed on as soon as it is complete; a body error ends the stream
/// after it.
fn events(member: usize, seal: TaskSeal, body: Body) -> Events {
    Box::pin(task_handle::events(body, move |e| {
        if let Some(data) = rewrite(member, &seal, &e.data) {
            e.data = data;
        }
    }))
}

fn encoded(e: &Event) -> Bytes {
    let mut out = Vec::with_capacity(e.data.len() + 32);
    e.write_to(&mut out);
    Bytes::from(out)
}

/// Member `member`'s answer to a routed request, with the ids of the
/// requests it streams to the client and of its tasks namespaced (a JSON
/// answer passes untouched). In a legacy session (`resumable`), each
/// event's id becomes a merged one naming only this member, so a GET with
/// it as `Last-Event-ID` resumes this stream on the member.
pub(crate) fn answer_from(
    v: &VirtualRoute,
    principal: Option<&Arc<Principal>>,
    member: usize,
    res: Response,
    resumable: bool,
) -> Response {
    if !is_event_stream(res.headers()) {
        return res;
    }
    let Some(seal) = tasks::seal_for(v, principal, member) else {
        return res;
    };
    let members = v.members.len();
    let (mut parts, body) = res.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    let body = Body::from_stream(events(member, seal, body).map(move |e| {
        e.map(|mut e| {
            if resumable && let Some(id) = e.id.take() {
                let mut last = vec![None; members];
                if let Some(slot) = last.get_mut(member) {
                    *slot = Some(id);
                }
                e.id = Some(event_id(&last));
            }
            encoded(&e)
        })
    }));
    Response::from_parts(parts, body)
}

/// A client's answer to a member's request: forwarded to that member with
/// the original id; one the virtual server never sent is accepted and
/// dropped.
pub(crate) async fn client_answer(v: &Arc<VirtualRoute>, incoming: &Incoming) -> Result<Response, Rejection> {
    let Some((member, raw)) = incoming.message.id.as_ref().and_then(target) else {
        tracing::debug!(virtual_server = %v.name, "answer to no request of a member: dropped");
        return Ok(StatusCode::ACCEPTED.into_response());
    };
    if member >= v.members.len() {
        return Ok(StatusCode::ACCEPTED.into_response());
    }
    let body = splice::replace_raw(&incoming.body, &["id"], &raw).map_err(Rejection::from)?;
    let req = delegate::request(v, incoming, member, Bytes::from(body))?;
    Ok(delegate::send_for(v, incoming, member, req).await)
}

/// The merged event id: every member's last event id.
fn event_id(last: &[Option<String>]) -> String {
    let json = serde_json::to_vec(last).unwrap_or_default();
    format!("{EVENT_PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
}

/// The per-member last event ids in a merged event id (none for an id the
/// virtual server did not make).
fn resume_points(id: &str, members: usize) -> Vec<Option<String>> {
    let mut last: Vec<Option<String>> = id
        .strip_prefix(EVENT_PREFIX)
        .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok())
        .and_then(|json| serde_json::from_slice(&json).ok())
        .unwrap_or_default();
    last.resize(members, None);
    last
}

/// GET on a virtual session: the members' GET streams, merged. Members
/// that offer no stream are left out; when none does, 405.
pub(crate) async fn stream(
    v: &Arc<VirtualRoute>,
    parts: &Parts,
    principal: Option<&Arc<Principal>>,
) -> Result<Response, Rejection> {
    // Streams belong to legacy sessions; without one there is none to offer.
    let ours = parts.headers.get(&SESSION_ID).cloned().ok_or_else(no_stream)?;
    let resume = parts
        .headers
        .get(&LAST_EVENT_ID)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let mut last = resume_points(resume, v.members.len());
    let opened = futures_util::future::join_all(session::members(v, parts, principal)?.into_iter().map(
        |(i, sealed, version)| {
            open(
                v,
                parts,
                principal,
                (i, sealed, version),
                last.get(i).cloned().flatten(),
            )
        },
    ))
    .await;
    let streams: Vec<_> = opened.into_iter().flatten().collect();
    if streams.is_empty() {
        return Err(no_stream());
    }
    let merged = stream::select_all(streams).map(move |(i, mut e)| {
        if let (Some(id), Some(slot)) = (e.id.take(), last.get_mut(i)) {
            *slot = Some(id);
            e.id = Some(event_id(&last));
        }
        Ok::<_, axum::BoxError>(encoded(&e))
    });
    let mut res = Body::from_stream(merged).into_response();
    let headers = res.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(SESSION_ID, ours);
    Ok(res)
}

/// Member `i`'s GET stream, its events tagged with `i`; a member error
/// ends that member's part of the merged stream only.
async fn open(
    v: &VirtualRoute,
    parts: &Parts,
    principal: Option<&Arc<Principal>>,
    (i, sealed, version): session::MemberHeaders,
    last: Option<String>,
) -> Option<Pin<Box<dyn Stream<Item = (usize, Event)> + Send>>> {
    let mut req = delegate::copied(parts, Body::empty());
    *req.method_mut() = Method::GET;
    let headers = req.headers_mut();
    if let Some(sealed) = sealed {
        headers.insert(SESSION_ID, sealed);
    }
    if let Some(version) = version {
        headers.insert(PROTOCOL_VERSION, version);
    }
    headers.remove(&LAST_EVENT_ID);
    if let Some(last) = last.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(LAST_EVENT_ID, last);
    }
    let res = delegate::send_as(v, i, (principal, None), req).await;
    if res.status() != StatusCode::OK || !is_event_stream(res.headers()) {
        return None;
    }
    let seal = tasks::seal_for(v, principal, i)?;
    let member = events(i, seal, res.into_body()).take_while(|e| std::future::ready(e.is_ok()));
    Some(Box::pin(
        member.filter_map(move |e| std::future::ready(e.ok().map(|e| (i, e)))),
    ))
}

/// The refusal of a GET when no member offers a stream.
pub(crate) fn no_stream() -> Rejection {
    Rejection::new(
        ErrorKind::MethodNotAllowed,
        "Method not allowed: no member of this virtual server offers a GET stream",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(json: &str) -> RequestId {
        let raw: Box<RawValue> = serde_json::from_str(json).unwrap();
        RequestId::from_raw(&raw)
    }

    #[test]
    fn request_ids_round_trip_through_their_namespace() {
        let data = r#"{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}"#;
        let out = rewrite(2, &TaskSeal::for_tests(), data).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["id"], "tg.2.0");
        assert_eq!(target(&id(r#""tg.2.0""#)), Some((2, "0".to_owned())));
        let quoted = namespaced(1, r#""a.b""#);
        assert_eq!(target(&id(&quoted)), Some((1, r#""a.b""#.to_owned())));
    }

    #[test]
    fn only_requests_are_rewritten_and_only_our_ids_are_routed() {
        assert_eq!(
            rewrite(0, &TaskSeal::for_tests(), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            None
        );
        assert_eq!(
            rewrite(
                0,
                &TaskSeal::for_tests(),
                r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#
            ),
            None
        );
        assert_eq!(rewrite(0, &TaskSeal::for_tests(), "not json"), None);
        assert_eq!(target(&id("7")), None);
        assert_eq!(target(&id(r#""tg.x.1""#)), None);
        assert_eq!(target(&id(r#""tg.1.{""#)), None);
    }

    #[test]
    fn merged_event_ids_carry_every_member() {
        let last = vec![Some("a-1".to_owned()), None, Some("c\u{e9}".to_owned())];
        let id = event_id(&last);
        assert!(id.bytes().all(|b| b.is_ascii_graphic()));
        assert_eq!(resume_points(&id, 3), last);
        assert_eq!(resume_points(&id, 4).len(), 4);
        assert_eq!(resume_points("foreign", 2), vec![None, None]);
    }
}
