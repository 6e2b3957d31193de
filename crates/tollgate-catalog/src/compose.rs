//! Virtual-server composition: what a virtual server exposes — its
//! members' governed definitions under the names it gives them — and where
//! a message for an exposed name goes.
//!
//! Built from the approved lock entries of each member (or, for a member
//! whose catalog gate is off, from its latest snapshot), never from a live
//! upstream answer: a definition the member's gate would quarantine or
//! block is not exposed. Tools and prompts are renamed (prefix or rename
//! table, filtered by `tools` and `exclude`, re-described by `describe`);
//! resources and templates keep their URIs. Two members exposing the same
//! name is a collision: both are left out. A renamed or re-described
//! definition is approved as exposed, under the virtual server's name (see
//! `compose/describe.rs`; [`rewritten`] lists them for review).
//!
//! Lists keep the members' own order: members in configuration order, each
//! member's entries in the order the member listed them ([`Snapshot::listed`]),
//! so a one-member virtual server with an empty prefix lists what its
//! member lists, as its member does.
//!
//! Where it sits in the request path: the server's virtual-server endpoint
//! takes the [`Exposed`] in force for every request (the server caches it
//! and asks for a new one only when the lock or a member's snapshot
//! changed, [`Exposed::built_from`]); it answers the lists, `find_tools`,
//! `server/discover` and `initialize` from it, and routes a call by its
//! exposed name to the member's own name ([`Target`]). The binary's
//! `tollgate catalog diff|approve --server <virtual server>` builds the
//! rewritten definitions with the same functions ([`rewritten`]), so both
//! hash the same bytes. Settings come in as [`VirtualSpec`] and
//! [`MemberSpec`]; the server maps its configuration to them.

mod build;
mod describe;
mod spec;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

pub use self::describe::rewritten;
pub use self::spec::{MemberSpec, VirtualSpec};
use crate::definition::{Hints, Kind};
use crate::lock::Lock;
use crate::search::ToolIndex;
use crate::snapshot::Snapshot;
use crate::template;

/// One exposed definition.
#[derive(Debug)]
pub struct Entry {
    /// Which member (index into the virtual server's members).
    pub member: usize,
    /// Tool, prompt, resource or template.
    pub kind: Kind,
    /// The name (URI, template) the virtual server shows.
    pub exposed: String,
    /// The member's own name for it.
    pub own: String,
    /// The definition as exposed (renamed, re-described).
    pub definition: Value,
    /// The same, serialized: a list page is a concatenation of these.
    pub json: String,
    /// A tool's approved annotations' hints, for policies.
    pub hints: Option<Hints>,
}

/// Where a routed message goes: a member, and the name (URI, task id) the
/// virtual server shows and the member's own.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// Which member (index into the virtual server's members).
    pub member: usize,
    /// The name the client used.
    pub exposed: &'a str,
    /// The member's own name for it.
    pub own: &'a str,
}

/// What the members' capabilities announce that the virtual server
/// announces too: list changes per kind, and resource subscriptions (the
/// members' notifications reach the client on their streams).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Announced {
    /// `tools.listChanged`.
    pub tools_list_changed: bool,
    /// `prompts.listChanged`.
    pub prompts_list_changed: bool,
    /// `resources.listChanged`.
    pub resources_list_changed: bool,
    /// `resources.subscribe`.
    pub subscribe: bool,
}

/// Everything a virtual server exposes at one lock and set of snapshots.
#[derive(Debug)]
pub struct Exposed {
    /// Every entry, grouped by kind (in [`Kind::ALL`] order); within a
    /// kind, members in configuration order, each member's entries in the
    /// order it listed them.
    pub entries: Vec<Entry>,
    /// Positions by exposed name, one map per kind (looked up by `&str`,
    /// without allocating on the request path).
    by_name: [HashMap<String, usize>; 4],
    /// The search index over the tools (positions into `tools`).
    pub index: ToolIndex,
    /// Positions of the tool entries, in index order (by exposed name).
    pub tools: Vec<usize>,
    /// Exposed names two members claimed (left out), by kind and name.
    pub collisions: Vec<(Kind, String)>,
    /// Renamed or re-described definitions the lock does not approve as
    /// exposed (`rename`, `describe`): left out when the virtual server's
    /// gate enforces.
    pub awaiting: Vec<(Kind, String)>,
    /// Whether a member declared the tasks extension (SEP-2663), which the
    /// virtual server then routes.
    pub tasks: bool,
    /// List changes and subscriptions some member announced.
    pub announced: Announced,
    /// The lock it was built from.
    lock: Arc<Lock>,
    /// The members' snapshots it was built from, in member order.
    snapshots: Vec<Arc<Snapshot>>,
    /// The members whose gate is off, by index: what they list and serve
    /// is whatever they list and serve in the caller's own session, not
    /// only what a sync saw.
    pub live: Vec<(usize, MemberSpec)>,
}

impl Entry {
    /// Where a message for this entry goes.
    pub fn target(&self) -> Target<'_> {
        Target {
            member: self.member,
            exposed: &self.exposed,
            own: &self.own,
        }
    }
}

impl Announced {
    /// What a member's `capabilities` announce.
    pub fn of(capabilities: &Value) -> Announced {
        let flag = |cap: &str, key: &str| capabilities[cap][key].as_bool().unwrap_or(false);
        Announced {
            tools_list_changed: flag("tools", "listChanged"),
            prompts_list_changed: flag("prompts", "listChanged"),
            resources_list_changed: flag("resources", "listChanged"),
            subscribe: flag("resources", "subscribe"),
        }
    }

    /// What either announces.
    #[must_use]
    pub fn or(self, other: Announced) -> Announced {
        Announced {
            tools_list_changed: self.tools_list_changed || other.tools_list_changed,
            prompts_list_changed: self.prompts_list_changed || other.prompts_list_changed,
            resources_list_changed: self.resources_list_changed || other.resources_list_changed,
            subscribe: self.subscribe || other.subscribe,
        }
    }
}

impl Exposed {
    /// What `spec` exposes at `lock`, from its members' snapshots
    /// (`snapshots[i]` is member `i`'s).
    pub fn build(spec: &VirtualSpec, lock: Arc<Lock>, snapshots: Vec<Arc<Snapshot>>) -> Exposed {
        build::build(spec, lock, snapshots)
    }

    /// The lock and the members' snapshots this was built from: it is
    /// current while they are the ones in force (compared by identity).
    pub fn built_from(&self) -> (&Arc<Lock>, &[Arc<Snapshot>]) {
        (&self.lock, &self.snapshots)
    }

    /// The entry of `kind` exposed as `name`.
    pub fn get(&self, kind: Kind, name: &str) -> Option<&Entry> {
        let i = self.by_name.get(slot(kind))?.get(name)?;
        self.entries.get(*i)
    }

    /// The entries of one kind, in list order.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.kind == kind)
    }

    /// The member whose gate is off that would expose `kind` `name`, and
    /// its own name for it, when the exposed catalog does not list it (a
    /// definition that member offers in the caller's session only). `None`
    /// when no such member, or more than one, could own the name.
    pub fn live_target(&self, kind: Kind, name: &str) -> Option<(usize, String)> {
        let mut found = self
            .live
            .iter()
            .filter_map(|(i, m)| m.own_name(kind, name).map(|own| (*i, own)));
        let first = found.next()?;
        // Two members that could own the name: neither is guessed at.
        found.next().is_none().then_some(first)
    }

    /// The member serving resource `uri`: the one listing it, else the one
    /// template matching it. `None` when no member or more than one does.
    pub fn resource(&self, uri: &str) -> Option<&Entry> {
        if let Some(e) = self.get(Kind::Resource, uri) {
            return Some(e);
        }
        // A URI two members list is left out, not served by a template.
        if self.collisions.iter().any(|(k, c)| *k == Kind::Resource && c == uri) {
            return None;
        }
        let mut matching = self
            .of_kind(Kind::ResourceTemplate)
            .filter(|e| template::matches(&e.own, uri));
        let first = matching.next()?;
        matching.next().is_none().then_some(first)
    }
}

/// The position of `kind`'s map in [`Exposed::by_name`].
fn slot(kind: Kind) -> usize {
    match kind {
        Kind::Tool => 0,
        Kind::Prompt => 1,
        Kind::Resource => 2,
        Kind::ResourceTemplate => 3,
    }
}
