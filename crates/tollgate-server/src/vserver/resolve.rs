//! The resolve phase of a virtual server: where an identified call goes.
//!
//! Between `identify` and the member route's catalog gate: the one message
//! of the call is resolved, by its method and the name it targets, to the
//! member that exposes that name (with the member's own name and where it
//! sits in the body), to the member a task handle names, to a member whose
//! gate is off by the name it would expose (a definition it offers in the
//! caller's session that no sync saw), or to an answer
//! the virtual server gives itself. Nothing is sent here; a name no member
//! exposes, a method the virtual server does not serve, or a legacy
//! request outside a session of ours is refused.

use tollgate_catalog::Kind;
use tollgate_config::Expose;
use tollgate_core::{Era, ErrorKind};
use tollgate_mcp::{CompletionRef, MessageKind, names_a_task};

use super::exposed::{Exposed, Target};
use super::{FIND_TOOLS, Incoming, VirtualRoute, session, tasks, unknown};
use crate::rescue::Rejection;

/// Where a name sits in a body, for the splice of the member's own name.
pub(crate) type NamePath = Option<&'static [&'static str]>;

/// Where a call on a virtual server goes.
#[derive(Debug)]
pub(crate) enum Resolved<'e> {
    /// To the member exposing its target, renamed at the path in the body
    /// when the member's own name differs.
    Member(Target<'e>, NamePath),
    /// To a member by a name the exposed catalog does not list: a
    /// `tasks/*` request to the member whose task its handle names, or a
    /// definition of a member whose gate is off, offered in the caller's
    /// session only.
    Named {
        /// The member's index.
        member: usize,
        /// The member's own name (or task id).
        own: String,
        /// Where the name sits in the body.
        path: NamePath,
    },
    /// Answered by the virtual server itself.
    Here(Here),
}

/// The answers a virtual server gives itself (`answer::here`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Here {
    /// `initialize`: a session with every member.
    Initialize,
    /// `ping`.
    Ping,
    /// `server/discover`.
    Discover,
    /// One of the four lists, from the exposed catalog.
    List,
    /// `find_tools`, in search mode.
    FindTools,
    /// `logging/setLevel` in a legacy session: set on every member session.
    SetLevel,
    /// A client's answer to a member's request: back to that member.
    ClientAnswer,
    /// A notification in a legacy session: to every member session.
    Notify,
    /// A notification outside a session: accepted, reaching no member.
    Accept,
}

/// Resolve `incoming` on `v`, whose exposed catalog is `exposed`.
///
/// # Errors
///
/// A legacy request outside a session of ours, a name no member exposes,
/// a task handle that is not the caller's, or a method not served.
pub(crate) fn resolve<'e>(
    v: &VirtualRoute,
    exposed: &'e Exposed,
    incoming: &Incoming,
) -> Result<Resolved<'e>, Rejection> {
    let m = &incoming.message;
    if incoming.era == Era::Legacy && m.method != "initialize" {
        session::check(v, incoming)?;
    }
    let id = || m.id.clone();
    let name = m.name.as_deref().unwrap_or_default();
    let by_name = |kind: Kind, path: NamePath| match exposed.get(kind, name) {
        Some(e) => Ok(Resolved::Member(e.target(), path)),
        None => exposed
            .live_target(kind, name)
            .map(|(member, own)| Resolved::Named { member, own, path })
            .ok_or_else(|| unknown(kind.as_str(), name, id())),
    };
    match (m.kind, m.method.as_str()) {
        (MessageKind::Request, "initialize") => Ok(Resolved::Here(Here::Initialize)),
        (MessageKind::Request, "ping") => Ok(Resolved::Here(Here::Ping)),
        (MessageKind::Request, "server/discover") => Ok(Resolved::Here(Here::Discover)),
        (MessageKind::Request, "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list") => {
            Ok(Resolved::Here(Here::List))
        }
        (MessageKind::Request, "tools/call") if v.expose == Expose::Search && name == FIND_TOOLS => {
            Ok(Resolved::Here(Here::FindTools))
        }
        (MessageKind::Request, "tools/call") => by_name(Kind::Tool, Some(&["params", "name"])),
        (MessageKind::Request, "prompts/get") => by_name(Kind::Prompt, Some(&["params", "name"])),
        (MessageKind::Request, "resources/read" | "resources/subscribe" | "resources/unsubscribe") => {
            match exposed.resource(name) {
                Some(e) => Ok(Resolved::Member(e.target(), None)),
                None => by_name(Kind::Resource, None),
            }
        }
        (MessageKind::Request, method) if names_a_task(method) && exposed.tasks => {
            let (member, own) = tasks::resolve(v, incoming)?;
            Ok(Resolved::Named {
                member,
                own,
                path: Some(&["params", "taskId"]),
            })
        }
        (MessageKind::Request, "completion/complete") => complete(exposed, incoming),
        (MessageKind::Request, "logging/setLevel") if incoming.era == Era::Legacy => Ok(Resolved::Here(Here::SetLevel)),
        (MessageKind::Request, _) => Err(Rejection::new(ErrorKind::MethodNotFound, "Method not found").with_id(id())),
        (MessageKind::Response, _) => Ok(Resolved::Here(Here::ClientAnswer)),
        (MessageKind::Notification, _) if incoming.era == Era::Legacy => Ok(Resolved::Here(Here::Notify)),
        (MessageKind::Notification, _) => Ok(Resolved::Here(Here::Accept)),
    }
}

/// `completion/complete`: resolved by its `ref` (a prompt by exposed
/// name, a resource template by URI).
fn complete<'e>(exposed: &'e Exposed, incoming: &Incoming) -> Result<Resolved<'e>, Rejection> {
    let id = || incoming.message.id.clone();
    let reference = tollgate_mcp::completion_ref(&incoming.body, 0).ok_or_else(|| {
        Rejection::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: completion/complete needs params.ref",
        )
        .with_id(id())
    })?;
    match reference {
        CompletionRef::Prompt(name) => exposed
            .get(Kind::Prompt, &name)
            .map(|e| Resolved::Member(e.target(), Some(&["params", "ref", "name"])))
            .ok_or_else(|| unknown("prompt", &name, id())),
        CompletionRef::Resource(uri) => exposed
            .get(Kind::ResourceTemplate, &uri)
            .or_else(|| exposed.resource(&uri))
            .map(|e| Resolved::Member(e.target(), None))
            .ok_or_else(|| unknown("resource", &uri, id())),
    }
}
