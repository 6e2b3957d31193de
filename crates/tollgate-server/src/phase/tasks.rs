//! The tasks phase (tasks extension, SEP-2663): a route's task ids are
//! handles bound to the caller (`task_handle`).
//!
//! Before the catalog gate, a `tasks/get`, `tasks/update` or
//! `tasks/cancel` must name a handle this route sealed for this caller
//! (issuer and subject); the upstream's own id is spliced back into
//! `params.taskId` and `Mcp-Name`. Another caller's handle, another
//! route's, or a raw upstream id is an unknown task, answered without
//! reaching the upstream. After the upstream answers, the task ids an
//! answer to a call that may name a task carries are sealed for the caller.
//!
//! A call a virtual server resolved to its member route skips this phase:
//! the virtual server opened its handle and seals its answer for its own
//! callers (`phases::call_resolved`).

use axum::body::Body;
use bytes::Bytes;
use http::HeaderValue;
use http::header::CONTENT_LENGTH;
use http::request::Parts;
use tollgate_core::{Era, ErrorKind};
use tollgate_mcp::headers::NAME;
use tollgate_mcp::{encode_header_value, names_a_task, splice};

use crate::rescue::Rejection;
use crate::route::Route;
use crate::stage::{Identified, Stage, Stop};
use crate::task_handle::owner;
use crate::task_handle::{self, EXTENSION, TaskSeal};

/// The body to forward: for a `tasks/*` request, with the task's own id in
/// place of the caller's handle (and in `Mcp-Name`); otherwise `body`.
///
/// # Errors
///
/// The stop of a batched task request, or of a handle that is not this
/// caller's on this route (an unknown task).
pub(crate) fn open(
    route: &Route,
    identified: Identified,
    parts: &mut Parts,
    body: Body,
) -> Result<(Identified, Body), Stop> {
    let opened = handle(route, &identified, parts, body);
    identified.check(opened)
}

/// The body with the task's own id, when the call names a task handle.
fn handle(route: &Route, identified: &Identified, parts: &mut Parts, body: Body) -> Result<Body, Rejection> {
    let facts = &identified.facts;
    let messages = identified.messages();
    if !messages.iter().any(|m| names_a_task(&m.method)) {
        return Ok(body);
    }
    let [m] = messages else {
        return Err(Rejection::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: task requests cannot be batched",
        ));
    };
    let unknown = || task_handle::unknown(m.id.clone());
    let handle = m.name.as_deref().ok_or_else(unknown)?;
    let caller = owner(&route.name, facts.principal.as_ref());
    let task = task_handle::open(&route.shared.sealer, handle, caller, m.id.clone())?;
    if *task.server != *route.name {
        return Err(unknown());
    }
    // The body was scanned: a task request is never forwarded unread.
    let bytes = facts.body.bytes.as_deref().ok_or_else(unknown)?;
    let spliced = splice::replace(bytes, &["params", "taskId"], &task.task_id)
        .map_err(|e| Rejection::from(e).with_id(m.id.clone()))?;
    if parts.headers.contains_key(&NAME) {
        let name = HeaderValue::from_str(&encode_header_value(&task.task_id)).map_err(|_| unknown())?;
        parts.headers.insert(NAME, name);
    }
    parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(spliced.len()));
    Ok(Body::from(Bytes::from(spliced)))
}

/// How the answer's task ids are sealed for the caller, when the call may
/// name a task: a `tasks/*` request, or a `tools/call` that may become a
/// task (in a legacy session, whose capabilities were declared at
/// `initialize`; one that declared the extension; or one forwarded unread
/// to an upstream that offers tasks).
pub(crate) fn sealing(route: &Route, call: &Identified) -> Option<TaskSeal> {
    let [m] = call.messages() else {
        return None;
    };
    let may = names_a_task(&m.method) || (m.method == "tools/call" && may_become_a_task(route, call, call.call.era));
    may.then(|| TaskSeal::new(&route.shared.sealer, &route.name, call.principal(), &route.name))
}

/// Whether the tool call may be answered with a task: as it declares, or,
/// forwarded unread, when the upstream offers tasks.
fn may_become_a_task(route: &Route, call: &Identified, era: Era) -> bool {
    match call.facts.body.bytes.as_deref() {
        Some(body) => task_handle::may_become_a_task(era, body),
        None => route.catalog.snapshot().extensions.iter().any(|e| e == EXTENSION),
    }
}
