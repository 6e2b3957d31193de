//! Members whose upstream acts for each user (`user_oauth`, `id_jag`):
//! what such a member offers depends on the caller's own grant there (a
//! SaaS lists the tools the user's grant allows). A member with its
//! catalog gate off is asked live in the caller's session already
//! (`live`), with the caller's grant; here, the approved entries of such a
//! member with its gate on are narrowed to what it lists for the caller —
//! never a tool their grant cannot call — once they have connected.
//! Until then its approved entries stay listed (calling one asks them to
//! connect, by the member's name), and `find_tools` says which tools need
//! a connection first.

use std::collections::HashSet;

use tollgate_catalog::{Kind, Mode};

use tollgate_core::{Era, ErrorKind};
use tollgate_mcp::headers::SESSION_ID;

use super::exposed::Entry;
use super::{Incoming, VirtualRoute, live, session};
use crate::rescue::Rejection;

/// Whether member `member`'s upstream acts per user.
pub(crate) fn acts_per_user(v: &VirtualRoute, member: usize) -> bool {
    let vault = v.shared.vault.as_ref();
    v.members
        .get(member)
        .is_some_and(|m| vault.is_some_and(|vault| vault.serves(&m.route.name)))
}

/// A legacy call to a per-user member left out of the caller's virtual
/// session (it could not open one before they connected): once they have
/// connected, `404` so that the client starts a new session, which the
/// member joins; until then the call goes on, and the member's own phases
/// ask them to connect.
pub(crate) async fn rejoin(v: &VirtualRoute, incoming: &Incoming, member: usize) -> Option<Rejection> {
    if incoming.era != Era::Legacy || !acts_per_user(v, member) {
        return None;
    }
    if !incoming.parts.headers.contains_key(&SESSION_ID) {
        return None;
    }
    let joined = session::members(v, &incoming.parts, incoming.principal.as_ref())
        .is_ok_and(|all| all.iter().any(|(i, _, _)| *i == member));
    if joined || standing(v, incoming, member).await != Standing::Connected {
        return None;
    }
    let name = v.members.get(member).map_or("the member", |m| &*m.route.name);
    let message = format!("Session not found: {name} is connected now; start a new session to reach it");
    Some(Rejection::new(ErrorKind::SessionNotFound, message).with_id(incoming.message.id.clone()))
}

/// The caller's standing at one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// The member's upstream does not act per user.
    Shared,
    /// Per user, and the caller has not connected (or it cannot be told).
    Unconnected,
    /// Per user, and the caller has a grant there.
    Connected,
}

/// The caller's standing at member `member`.
pub(crate) async fn standing(v: &VirtualRoute, incoming: &Incoming, member: usize) -> Standing {
    let (Some(m), Some(vault)) = (v.members.get(member), v.shared.vault.as_ref()) else {
        return Standing::Shared;
    };
    if !vault.serves(&m.route.name) {
        return Standing::Shared;
    }
    let Some(p) = incoming.principal.as_ref() else {
        return Standing::Unconnected;
    };
    match vault.peek(&p.issuer, &p.subject, &m.route.name).await {
        Ok(Some(_)) => Standing::Connected,
        Ok(None) => Standing::Unconnected,
        Err(e) => {
            tracing::warn!(error = %e, member = %m.route.name, "grant standing unknown: treated as not connected");
            Standing::Unconnected
        }
    }
}

/// `entries` (of `kind`, for a list the caller asked) without what a
/// per-user member whose gate is on does not list for the caller.
pub(crate) async fn narrowed<'e>(
    v: &VirtualRoute,
    incoming: &Incoming,
    kind: Kind,
    mut entries: Vec<&'e Entry>,
) -> Vec<&'e Entry> {
    for (i, m) in v.members.iter().enumerate() {
        if m.route.catalog.mode == Mode::Off || !entries.iter().any(|e| e.member == i) {
            continue;
        }
        if standing(v, incoming, i).await != Standing::Connected {
            continue;
        }
        // The member's own list for the caller; none: nothing of it listed.
        let names = live::own_names(v, incoming, i, kind).await.unwrap_or_default();
        entries.retain(|e| e.member != i || names.contains(&e.own));
    }
    entries
}

/// The members of `members` the caller has to connect before calling.
pub(crate) async fn unconnected(v: &VirtualRoute, incoming: &Incoming, members: &HashSet<usize>) -> HashSet<usize> {
    let mut out = HashSet::new();
    for &i in members {
        if standing(v, incoming, i).await == Standing::Unconnected {
            out.insert(i);
        }
    }
    out
}
