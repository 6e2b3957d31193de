//! Tasks (the tasks extension, SEP-2663) on a virtual server.
//!
//! A member that runs a call as a task answers with a task id of its own
//! choosing, and the client's later `tasks/get`, `tasks/update` and
//! `tasks/cancel` name only that id (in `Mcp-Name` and `params.taskId`).
//! Two members may choose the same id, and the member sees every caller as
//! the gateway, so every task id a member's answer or stream carries
//! reaches the client sealed (`tollgate-session`): bound to this virtual
//! server and to the caller's issuer and subject, naming the member's
//! server and its own id — spliced over the original in the message, never
//! rebuilding it. A `tasks/*` request is resolved to the member the handle
//! names, and goes there with its own id spliced back; a handle another principal was
//! given, or one the gateway never made, is an unknown task. The member's
//! server name, not its position, is in the handle, so a task outlives a
//! reload that reorders the members. Nothing is stored: any replica routes
//! any task.

use std::sync::Arc;

use axum::response::Response;
use tollgate_core::Principal;
use tollgate_mcp::names_a_task;
use tollgate_mcp::sse::is_event_stream;

use super::{Incoming, VirtualRoute, relay};
use crate::rescue::Rejection;
use crate::task_handle::{self, TaskSeal, owner};

/// The seal of member `member`'s task ids for `principal` on `v`.
pub(crate) fn seal_for(v: &VirtualRoute, principal: Option<&Arc<Principal>>, member: usize) -> Option<TaskSeal> {
    let server = &v.members.get(member)?.route.name;
    Some(TaskSeal::new(&v.shared.sealer, &v.name, principal, server))
}

/// The member whose task a `tasks/get`, `tasks/update` or `tasks/cancel`
/// names, and the member's own task id (`resolve`).
///
/// # Errors
///
/// An unknown task: a handle that is not the caller's on this virtual
/// server, or that names no member of it.
pub(crate) fn resolve(v: &VirtualRoute, incoming: &Incoming) -> Result<(usize, String), Rejection> {
    let name = incoming.message.name.as_deref().unwrap_or_default();
    let caller = owner(&v.name, incoming.principal.as_ref());
    let task = task_handle::open(&v.shared.sealer, name, caller, incoming.message.id.clone())?;
    let member = v
        .members
        .iter()
        .position(|m| *m.route.name == task.server)
        .ok_or_else(|| task_handle::unknown(incoming.message.id.clone()))?;
    Ok((member, task.task_id))
}

/// Whether the answer to `incoming` may carry a task id: a `tasks/*`
/// request, or a tool call that may become a task (one that declared the
/// extension, or any in a legacy session, whose capabilities were declared
/// at `initialize`).
pub(crate) fn may_name_a_task(incoming: &Incoming) -> bool {
    let method = incoming.message.method.as_str();
    names_a_task(method) || (method == "tools/call" && task_handle::may_become_a_task(incoming.era, &incoming.body))
}

/// Member `member`'s answer with the task ids in it sealed: each event of
/// a stream (its ids resumable in a legacy session, `relay`), or a JSON
/// answer.
pub(crate) async fn answer(
    v: &VirtualRoute,
    incoming: &Incoming,
    member: usize,
    res: Response,
    resumable: bool,
) -> Response {
    if is_event_stream(res.headers()) {
        return relay::answer_from(v, incoming.principal.as_ref(), member, res, resumable);
    }
    match seal_for(v, incoming.principal.as_ref(), member) {
        Some(seal) => task_handle::seal_answer(seal, res).await,
        None => res,
    }
}
