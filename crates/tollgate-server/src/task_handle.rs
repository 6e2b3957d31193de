//! Task handles (the tasks extension, SEP-2663): the task ids clients see.
//!
//! An upstream that runs a call as a task answers with a task id of its
//! own, and whoever presents that id may poll, update or cancel the task
//! and read its result. The upstream sees every caller as the gateway, so
//! it cannot tell them apart: Tollgate never hands its id out. Every task
//! id an answer or stream carries reaches the client as a sealed handle
//! (`tollgate-session`), bound to the route the client called and to the
//! caller's issuer and subject, naming the server that holds the task and
//! its own id. The handle is spliced over the original in the message,
//! which is never rebuilt. A `tasks/*` request is opened by the route (or
//! virtual server) it arrives on; a handle sealed for another route or
//! principal, or one Tollgate never made, is an unknown task.
//!
//! Used by the `tasks` phase of a route and by virtual servers; [`owner`]
//! also binds the sealed session ids of the `credential` and `respond`
//! phases.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::{StreamExt, stream};
use http::HeaderValue;
use http::header::CONTENT_LENGTH;
use tollgate_core::{Era, ErrorKind, Principal};
use tollgate_mcp::sse::{Decoder, Event, is_event_stream};
use tollgate_mcp::{Message, MessageKind, RequestId, Scanned, scan, splice};
use tollgate_session::{Owner, Sealer, TaskClaims};

use crate::rescue::Rejection;

/// The tasks extension's id in capabilities.
pub(crate) const EXTENSION: &str = tollgate_mcp::TASKS_EXTENSION;
/// The largest JSON answer read whole to find the task id in it (a task's
/// creation or status is small; a larger answer passes untouched).
const MAX_JSON_ANSWER: usize = 1024 * 1024;
/// The largest event read from an answer stream.
const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// Whether a tool call may be answered with a task, from what it declares:
/// in a legacy session (`era`), its capabilities were declared at
/// `initialize`, so it may; in 2026-07-28, when its body declares the
/// extension.
pub(crate) fn may_become_a_task(era: Era, body: &[u8]) -> bool {
    era == Era::Legacy || memchr::memmem::find(body, EXTENSION.as_bytes()).is_some()
}

/// Whom the handles `route` issues to `principal` belong to: the route,
/// and the principal's issuer and subject (both empty on an open route).
pub(crate) fn owner<'a>(route: &'a str, principal: Option<&'a Arc<Principal>>) -> Owner<'a> {
    Owner {
        route,
        issuer: principal.map_or("", |p| p.issuer.as_str()),
        subject: principal.map_or("", |p| p.subject.as_str()),
    }
}

/// How one server's task ids reach one caller of one route.
#[derive(Clone)]
pub(crate) struct TaskSeal {
    sealer: Arc<Sealer>,
    route: Arc<str>,
    principal: Option<Arc<Principal>>,
    server: Arc<str>,
}

impl TaskSeal {
    /// The seal of server `server`'s task ids for `principal` on `route`.
    pub(crate) fn new(
        sealer: &Arc<Sealer>,
        route: &Arc<str>,
        principal: Option<&Arc<Principal>>,
        server: &Arc<str>,
    ) -> TaskSeal {
        TaskSeal {
            sealer: sealer.clone(),
            route: route.clone(),
            principal: principal.cloned(),
            server: server.clone(),
        }
    }

    /// The handle the server's task `own` reaches the caller under.
    fn seal(&self, own: &str) -> Option<String> {
        let task = TaskClaims {
            server: self.server.to_string(),
            task_id: own.to_owned(),
        };
        let owner = owner(&self.route, self.principal.as_ref());
        self.sealer.seal_task(owner, &task).ok()
    }
}

/// The refusal of a task request whose handle names no task of the
/// caller's (the handle is not echoed: it may be another's).
pub(crate) fn unknown(id: Option<RequestId>) -> Rejection {
    Rejection::new(ErrorKind::UnknownName, "Unknown task").with_id(id)
}

/// The task a handle names, when `owner` may use it; otherwise the refusal
/// of an unknown task.
pub(crate) fn open(
    sealer: &Sealer,
    handle: &str,
    owner: Owner<'_>,
    id: Option<RequestId>,
) -> Result<TaskClaims, Rejection> {
    sealer.unseal_task(handle, owner).map_err(|why| {
        tracing::debug!(reason = %why, "task handle refused");
        unknown(id)
    })
}

/// `data` (message `m`) with the task id it names sealed by `seal`:
/// `result.taskId` of an answer (a task created, or its status),
/// `params.taskId` of `notifications/tasks`. `None` when it names none.
pub(crate) fn seal_in(seal: &TaskSeal, m: &Message, data: &str) -> Option<String> {
    memchr::memmem::find(data.as_bytes(), br#""taskId""#)?;
    let path: &[&str] = match m.kind {
        MessageKind::Response => &["result", "taskId"],
        MessageKind::Notification if m.method == "notifications/tasks" => &["params", "taskId"],
        _ => return None,
    };
    let at = splice::locate(data.as_bytes(), path).ok()??;
    let own: String = serde_json::from_slice(data.as_bytes().get(at)?).ok()?;
    let out = splice::replace(data.as_bytes(), path, &seal.seal(&own)?).ok()?;
    String::from_utf8(out).ok()
}

/// One SSE event's data with its task id sealed, if it names one.
fn seal_event(seal: &TaskSeal, data: &str) -> Option<String> {
    match scan(data.as_bytes()) {
        Ok(Scanned::Single(m)) => seal_in(seal, &m, data),
        _ => None,
    }
}

/// An answer with the task ids it carries sealed: each event of a stream
/// as it arrives, or a JSON answer of known length up to
/// [`MAX_JSON_ANSWER`] (a larger one passes untouched).
pub(crate) async fn seal_answer(seal: TaskSeal, res: Response) -> Response {
    if is_event_stream(res.headers()) {
        return map_events(res, move |e| {
            if let Some(data) = seal_event(&seal, &e.data) {
                e.data = data;
            }
        });
    }
    let small = res
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|h| h.to_str().ok())
        .and_then(|t| t.parse::<usize>().ok())
        .is_some_and(|n| n <= MAX_JSON_ANSWER);
    if !small {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_JSON_ANSWER).await {
        Ok(bytes) => bytes,
        // The upstream's answer broke off: so does the client's.
        Err(e) => {
            return Response::from_parts(
                parts,
                Body::from_stream(stream::once(async move { Err::<Bytes, _>(e) })),
            );
        }
    };
    let sealed = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| seal_event(&seal, text));
    let Some(text) = sealed else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(text.len()));
    Response::from_parts(parts, Body::from(text))
}

/// An SSE answer with `f` applied to each event as soon as it is complete;
/// a body error ends the stream after it.
pub(crate) fn map_events(res: Response, f: impl FnMut(&mut Event) + Send + 'static) -> Response {
    let (mut parts, body) = res.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    let encoded = events(body, f).map(|e| {
        e.map(|e| {
            let mut out = Vec::with_capacity(e.data.len() + 32);
            e.write_to(&mut out);
            Bytes::from(out)
        })
    });
    Response::from_parts(parts, Body::from_stream(encoded))
}

/// `body`'s SSE events, each changed by `f` and passed on as soon as it
/// is complete; a body error ends the stream after it.
pub(crate) fn events(
    body: Body,
    f: impl FnMut(&mut Event) + Send + 'static,
) -> impl futures_util::Stream<Item = Result<Event, axum::BoxError>> + Send + 'static {
    struct State<F> {
        data: axum::body::BodyDataStream,
        decoder: Decoder,
        done: bool,
        f: F,
    }
    let state = State {
        data: body.into_data_stream(),
        decoder: Decoder::new(MAX_EVENT_BYTES),
        done: false,
        f,
    };
    stream::unfold(Some(state), |state| async move {
        let mut s = state?;
        loop {
            match s.decoder.next_event() {
                Ok(Some(mut e)) => {
                    (s.f)(&mut e);
                    return Some((Ok(e), Some(s)));
                }
                Ok(None) if s.done => return None,
                Ok(None) => {}
                Err(e) => return Some((Err(e.into()), None)),
            }
            match s.data.next().await {
                Some(Ok(chunk)) => s.decoder.feed(&chunk),
                Some(Err(e)) => return Some((Err(e.into()), None)),
                None => s.done = true,
            }
        }
    })
}

#[cfg(test)]
impl TaskSeal {
    /// Alice's seal of server `demo`'s tasks on route `v`.
    pub(crate) fn for_tests() -> TaskSeal {
        let sealer = Sealer::new(&[&[3u8; 32]], std::time::Duration::from_secs(60));
        let alice = Principal::bare("https://idp", "alice", tollgate_core::PrincipalKind::User);
        TaskSeal {
            sealer: Arc::new(sealer.unwrap_or_else(|_| unreachable!("a 32-byte key"))),
            route: Arc::from("v"),
            principal: Some(Arc::new(alice)),
            server: Arc::from("demo"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The task a handle names, opened as alice on `v`.
    fn opened(seal: &TaskSeal, handle: &serde_json::Value) -> TaskClaims {
        let alice = Owner {
            route: "v",
            issuer: "https://idp",
            subject: "alice",
        };
        seal.sealer.unseal_task(handle.as_str().unwrap(), alice).unwrap()
    }

    fn rewritten(seal: &TaskSeal, data: &str) -> Option<serde_json::Value> {
        seal_event(seal, data).map(|t| serde_json::from_str(&t).unwrap())
    }

    #[test]
    fn created_tasks_statuses_and_notifications_are_sealed() {
        let seal = TaskSeal::for_tests();
        let t1 = TaskClaims {
            server: "demo".into(),
            task_id: "t1".into(),
        };
        let created = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t1","status":"working"}}"#;
        assert_eq!(
            opened(&seal, &rewritten(&seal, created).unwrap()["result"]["taskId"]),
            t1
        );
        let status =
            r#"{"jsonrpc":"2.0","id":2,"result":{"taskId":"t1","status":"completed","result":{"content":[]}}}"#;
        let v = rewritten(&seal, status).unwrap();
        assert_eq!(opened(&seal, &v["result"]["taskId"]), t1);
        assert_eq!(v["result"]["status"], "completed");
        let note = r#"{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t1","status":"working"}}"#;
        assert_eq!(opened(&seal, &rewritten(&seal, note).unwrap()["params"]["taskId"]), t1);
    }

    #[test]
    fn messages_naming_no_task_pass_untouched() {
        let seal = TaskSeal::for_tests();
        assert_eq!(
            rewritten(&seal, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#),
            None
        );
        // A tool's own output that happens to hold a taskId is not a task.
        let nested = r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"taskId":"x"}}}"#;
        assert_eq!(rewritten(&seal, nested), None);
        let other = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"taskId":"x"}}"#;
        assert_eq!(rewritten(&seal, other), None);
        assert_eq!(rewritten(&seal, "not json"), None);
    }
}
