//! Tasks (the tasks extension, SEP-2663) on a virtual server.
//!
//! A member that runs a call as a task answers with a task id of its own
//! choosing, and the client's later `tasks/get`, `tasks/update` and
//! `tasks/cancel` name only that id (in `Mcp-Name` and `params.taskId`).
//! Two members may choose the same id, so every task id a member's answer
//! or stream carries reaches the client as `tg:{server}:{id}` — spliced
//! over the original in the message, never rebuilding it — and a `tasks/*`
//! request for such an id is routed to that member with its own id spliced
//! back. The member's server name (which cannot hold `:`), not its
//! position, is in the id, so a task outlives a reload that reorders the
//! members. Nothing is stored: any replica routes any task.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::stream;
use http::HeaderValue;
use http::header::CONTENT_LENGTH;
use tollgate_core::Era;
use tollgate_mcp::sse::is_event_stream;
use tollgate_mcp::{Message, MessageKind, Scanned, scan, splice};

use super::exposed::Target;
use super::{Incoming, VirtualRoute, delegate, relay};
use crate::rescue::Rejection;

/// The tasks extension's id in capabilities.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The prefix of a namespaced task id.
const PREFIX: &str = "tg:";
/// The largest JSON answer read whole to find the task id in it (a task's
/// creation or status is small; a larger answer passes untouched).
const MAX_JSON_ANSWER: usize = 1024 * 1024;

/// The id member server `server`'s task `own` reaches the client under.
fn namespaced(server: &str, own: &str) -> String {
    format!("{PREFIX}{server}:{own}")
}

/// The member server and its own id, when `id` is one the virtual server
/// namespaced.
fn owner(id: &str) -> Option<(&str, &str)> {
    id.strip_prefix(PREFIX)?.split_once(':')
}

/// Route `tasks/get`, `tasks/update` or `tasks/cancel` to the member whose
/// task it names; an id no member of this virtual server owns is an
/// unknown name.
pub(crate) async fn route(v: &Arc<VirtualRoute>, incoming: &mut Incoming) -> Result<Response, Rejection> {
    let name = incoming.message.name.clone().unwrap_or_default();
    let found = owner(&name).and_then(|(server, own)| {
        v.members
            .iter()
            .position(|m| &*m.route.name == server)
            .map(|member| (member, own))
    });
    let (member, own) = found.ok_or_else(|| super::unknown("task", &name, incoming.message.id.clone()))?;
    let target = Target {
        member,
        exposed: &name,
        own,
    };
    Ok(delegate::forward(v, incoming, target, Some(&["params", "taskId"])).await)
}

/// Whether the answer to `incoming` may carry a task id: a `tasks/*`
/// request, or a tool call that may become a task (one that declared the
/// extension, or any in a legacy session, whose capabilities were declared
/// at `initialize`).
pub(crate) fn may_name_a_task(incoming: &Incoming) -> bool {
    match incoming.message.method.as_str() {
        "tasks/get" | "tasks/update" | "tasks/cancel" => true,
        "tools/call" => {
            incoming.era == Era::Legacy || memchr::memmem::find(&incoming.body, EXTENSION.as_bytes()).is_some()
        }
        _ => false,
    }
}

/// Member `member`'s answer with the task ids in it namespaced: each event
/// of a stream (its ids resumable in a legacy session, `relay`), or a JSON
/// answer of known length up to [`MAX_JSON_ANSWER`].
pub(crate) async fn answer(v: &VirtualRoute, member: usize, res: Response, resumable: bool) -> Response {
    if is_event_stream(res.headers()) {
        return relay::answer_from(v, member, res, resumable);
    }
    let Some(server) = v.members.get(member).map(|m| m.route.name.clone()) else {
        return res;
    };
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
        // The member's answer broke off: so does the client's.
        Err(e) => {
            return Response::from_parts(
                parts,
                Body::from_stream(stream::once(async move { Err::<Bytes, _>(e) })),
            );
        }
    };
    let rewritten = match (std::str::from_utf8(&bytes), scan(&bytes)) {
        (Ok(text), Ok(Scanned::Single(m))) => namespace_in(&server, &m, text),
        _ => None,
    };
    let Some(text) = rewritten else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(text.len()));
    Response::from_parts(parts, Body::from(text))
}

/// `data` (message `m`) with the task id it names namespaced under
/// `server`: `result.taskId` of an answer (a task created, or its status),
/// `params.taskId` of `notifications/tasks`. `None` when it names none.
pub(crate) fn namespace_in(server: &str, m: &Message, data: &str) -> Option<String> {
    memchr::memmem::find(data.as_bytes(), br#""taskId""#)?;
    let path: &[&str] = match m.kind {
        MessageKind::Response => &["result", "taskId"],
        MessageKind::Notification if m.method == "notifications/tasks" => &["params", "taskId"],
        _ => return None,
    };
    let at = splice::locate(data.as_bytes(), path).ok()??;
    let own: String = serde_json::from_slice(data.as_bytes().get(at)?).ok()?;
    let out = splice::replace(data.as_bytes(), path, &namespaced(server, &own)).ok()?;
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(data: &str) -> Option<serde_json::Value> {
        let Ok(Scanned::Single(m)) = scan(data.as_bytes()) else {
            panic!("not one message: {data}");
        };
        namespace_in("demo", &m, data).map(|t| serde_json::from_str(&t).unwrap())
    }

    #[test]
    fn task_ids_round_trip_through_their_namespace() {
        let id = namespaced("demo.eu", "a:b-1");
        assert_eq!(id, "tg:demo.eu:a:b-1");
        assert_eq!(owner(&id), Some(("demo.eu", "a:b-1")));
        assert_eq!(owner("a:b"), None);
        assert_eq!(owner("tg:nocolon"), None);
    }

    #[test]
    fn created_tasks_statuses_and_notifications_are_namespaced() {
        let created = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t1","status":"working"}}"#;
        assert_eq!(rewritten(created).unwrap()["result"]["taskId"], "tg:demo:t1");
        let status =
            r#"{"jsonrpc":"2.0","id":2,"result":{"taskId":"t1","status":"completed","result":{"content":[]}}}"#;
        let v = rewritten(status).unwrap();
        assert_eq!(v["result"]["taskId"], "tg:demo:t1");
        assert_eq!(v["result"]["status"], "completed");
        let note = r#"{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t1","status":"working"}}"#;
        assert_eq!(rewritten(note).unwrap()["params"]["taskId"], "tg:demo:t1");
    }

    #[test]
    fn messages_naming_no_task_pass_untouched() {
        assert_eq!(rewritten(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#), None);
        // A tool's own output that happens to hold a taskId is not a task.
        let nested = r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"taskId":"x"}}}"#;
        assert_eq!(rewritten(nested), None);
        let other = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"taskId":"x"}}"#;
        assert_eq!(rewritten(other), None);
    }
}
