//! What a virtual server exposes: its members' governed definitions under
//! the names the virtual server gives them.
//!
//! Built from the approved lock entries of each member (or, for a member
//! whose catalog gate is off, from its latest sync), never from a live
//! upstream answer: a definition the member's gate would quarantine or
//! block is not exposed. Tools and prompts are renamed (prefix or rename
//! table, tools filtered by `tools` and `exclude`); resources and templates
//! keep their URIs. Two members exposing the same name is a collision:
//! both are left out, logged and counted until the configuration or the
//! catalogs change. The result is rebuilt only when the lock or a
//! member's snapshot changes, and holds each entry pre-serialized so that
//! a list page is a concatenation, plus the search index of its tools.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tollgate_catalog::{Kind, Lock, Mode, Snapshot, ToolIndex, template};
use tollgate_policy::ToolAnnotations;

use super::{VirtualRoute, describe};
use crate::catalog::annotations_of;

/// One exposed definition.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Which member (index into the virtual server's members).
    pub(crate) member: usize,
    /// Tool, prompt, resource or template.
    pub(crate) kind: Kind,
    /// The name (URI, template) the virtual server shows.
    pub(crate) exposed: String,
    /// The member's own name for it.
    pub(crate) own: String,
    /// The definition as exposed (renamed).
    pub(crate) definition: Value,
    /// The same, serialized.
    pub(crate) json: String,
    /// A tool's approved annotations, for policies.
    pub(crate) annotations: Option<ToolAnnotations>,
}

/// Everything a virtual server exposes at one lock and set of snapshots.
#[derive(Debug)]
pub(crate) struct Exposed {
    /// Every entry, by kind then exposed name.
    pub(crate) entries: Vec<Entry>,
    /// Positions by exposed name, one map per kind (looked up by `&str`,
    /// without allocating on the request path).
    by_name: [HashMap<String, usize>; 4],
    /// The search index over the tools (positions into `tools`).
    pub(crate) index: ToolIndex,
    /// Positions of the tool entries, in index order.
    pub(crate) tools: Vec<usize>,
    /// Exposed names two members claimed (left out), by kind.
    pub(crate) collisions: Vec<(Kind, String)>,
    /// Renamed or re-described definitions the lock does not approve as
    /// exposed (`rename`, `describe`): left out when the gate enforces.
    pub(crate) awaiting: Vec<(Kind, String)>,
    /// Whether a member declared the tasks extension (SEP-2663), which the
    /// virtual server then routes (`tasks`).
    pub(crate) tasks: bool,
    /// What it was built from.
    stamp: Stamp,
}

/// The inputs an [`Exposed`] was built from, held so that their identity
/// (not a reusable address) tells whether they changed.
#[derive(Debug)]
struct Stamp {
    lock: Arc<Lock>,
    snapshots: Vec<Arc<Snapshot>>,
}

impl Stamp {
    /// Whether `lock` and the members' snapshots in force are the ones
    /// this was built from (compared in place: the request path neither
    /// collects nor counts references).
    fn current(&self, lock: &Arc<Lock>, v: &VirtualRoute) -> bool {
        Arc::ptr_eq(&self.lock, lock)
            && self.snapshots.len() == v.members.len()
            && self
                .snapshots
                .iter()
                .zip(&v.members)
                .all(|(a, m)| m.route.catalog.is_snapshot(a))
    }
}

impl Entry {
    /// Where a message for this entry goes.
    pub(crate) fn target(&self) -> Target<'_> {
        Target {
            member: self.member,
            exposed: &self.exposed,
            own: &self.own,
        }
    }
}

/// Where a routed message goes: a member, and the name (URI, task id) the
/// virtual server shows and the member's own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// Which member (index into the virtual server's members).
    pub(crate) member: usize,
    /// The name the client used.
    pub(crate) exposed: &'a str,
    /// The member's own name for it.
    pub(crate) own: &'a str,
}

impl Exposed {
    /// The entry of `kind` exposed as `name`.
    pub(crate) fn get(&self, kind: Kind, name: &str) -> Option<&Entry> {
        let i = self.by_name.get(slot(kind))?.get(name)?;
        self.entries.get(*i)
    }

    /// The entries of one kind, in name order.
    pub(crate) fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.kind == kind)
    }

    /// The member serving resource `uri`: the one listing it, else the one
    /// template matching it. `None` when no member or more than one does.
    pub(crate) fn resource(&self, uri: &str) -> Option<&Entry> {
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

/// The exposed catalog in force, rebuilt when its inputs changed.
pub(crate) fn current(v: &VirtualRoute) -> Arc<Exposed> {
    let lock = v.shared.approvals.current();
    if let Some(built) = v.exposed.load_full()
        && built.stamp.current(&lock, v)
    {
        return built;
    }
    let snapshots: Vec<Arc<Snapshot>> = v.members.iter().map(|m| m.route.catalog.snapshot()).collect();
    let built = Arc::new(build(v, &lock, &snapshots));
    for (kind, name) in &built.collisions {
        tracing::warn!(
            virtual_server = %v.name,
            kind = kind.as_str(),
            name = %name,
            "two members expose the same name: both are left out until the configuration or a catalog changes"
        );
    }
    for (kind, name) in &built.awaiting {
        tracing::warn!(
            virtual_server = %v.name,
            kind = kind.as_str(),
            name = %name,
            gate = ?v.catalog,
            "a renamed or re-described definition awaits approval as exposed: tollgate catalog approve --server {}",
            v.name
        );
    }
    v.exposed.store(Some(built.clone()));
    built
}

fn build(v: &VirtualRoute, lock: &Arc<Lock>, snapshots: &[Arc<Snapshot>]) -> Exposed {
    let mut entries: Vec<Entry> = Vec::new();
    let mut awaiting = Vec::new();
    for (i, (member, snapshot)) in v.members.iter().zip(snapshots).enumerate() {
        let shown = member_exposed(&member.config, member.route.catalog.mode, lock, snapshot);
        for (kind, own, exposed, definition) in shown {
            if v.catalog != Mode::Off
                && describe::is_rewritten(&member.config, kind, &own)
                && !describe::approved(lock, &v.name, kind, &exposed, &definition)
            {
                awaiting.push((kind, exposed.clone()));
                if v.catalog == Mode::Enforce {
                    continue;
                }
            }
            entries.push(entry(i, kind, own, exposed, definition));
        }
    }
    entries.sort_by(|a, b| (a.kind, &a.exposed).cmp(&(b.kind, &b.exposed)));
    let mut collisions = Vec::new();
    let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut iter = entries.into_iter().peekable();
    while let Some(e) = iter.next() {
        let mut clash = false;
        while iter.peek().is_some_and(|n| n.kind == e.kind && n.exposed == e.exposed) {
            iter.next();
            clash = true;
        }
        if clash {
            collisions.push((e.kind, e.exposed));
        } else {
            kept.push(e);
        }
    }
    let by_name = names(&kept);
    let tools: Vec<usize> = (0..kept.len()).filter(|i| kept[*i].kind == Kind::Tool).collect();
    let index = ToolIndex::build(tools.iter().map(|i| (kept[*i].exposed.as_str(), &kept[*i].definition)));
    Exposed {
        entries: kept,
        by_name,
        index,
        tools,
        collisions,
        awaiting,
        tasks: snapshots
            .iter()
            .any(|s| s.extensions.iter().any(|e| e == crate::task_handle::EXTENSION)),
        stamp: Stamp {
            lock: lock.clone(),
            snapshots: snapshots.to_vec(),
        },
    }
}

/// A member's definitions a gate lets through: approved at the revision
/// the member lists (or approved and not yet seen by a sync); with the gate
/// off, what the member listed.
fn governed(mode: Mode, server: &str, lock: &Lock, snapshot: &Snapshot) -> Vec<(Kind, String, Value)> {
    if mode == Mode::Off {
        return snapshot
            .definitions
            .values()
            .map(|d| (d.kind, d.key.clone(), d.body.clone()))
            .collect();
    }
    let synced = snapshot.synced_at != std::time::SystemTime::UNIX_EPOCH;
    lock.of_server(server)
        .filter(|a| !synced || snapshot.get(a.kind, &a.key).is_some_and(|d| d.revision == a.revision))
        .map(|a| (a.kind, a.key.clone(), a.definition.clone()))
        .collect()
}

/// What member `m` (its gate in `mode`) exposes: each definition its gate
/// lets through and the virtual server does not leave out, as `(kind, own
/// name, exposed name, definition as exposed)`. The gateway and `tollgate
/// catalog` (`describe::rewritten`) both build on it.
pub(crate) fn member_exposed(
    m: &tollgate_config::Member,
    mode: Mode,
    lock: &Lock,
    snapshot: &Snapshot,
) -> Vec<(Kind, String, String, Value)> {
    governed(mode, &m.server, lock, snapshot)
        .into_iter()
        .filter_map(|(kind, own, definition)| {
            let exposed = exposed_name(m, kind, &own)?;
            let definition = describe::shown(m, kind, &own, &exposed, definition);
            Some((kind, own, exposed, definition))
        })
        .collect()
}

/// The name `kind` `own` is exposed under, or `None` when it is left out.
fn exposed_name(member: &tollgate_config::Member, kind: Kind, own: &str) -> Option<String> {
    match kind {
        Kind::Tool | Kind::Prompt => member.exposed(own),
        Kind::Resource | Kind::ResourceTemplate => Some(own.to_owned()),
    }
}

/// An entry of `definition` as exposed (`describe::shown`).
fn entry(member: usize, kind: Kind, own: String, exposed: String, definition: Value) -> Entry {
    let annotations = (kind == Kind::Tool).then(|| annotations_of(&definition));
    Entry {
        member,
        kind,
        exposed,
        own,
        json: definition.to_string(),
        definition,
        annotations,
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

/// The positions of `entries` by kind and exposed name.
fn names(entries: &[Entry]) -> [HashMap<String, usize>; 4] {
    let mut out: [HashMap<String, usize>; 4] = Default::default();
    for (i, e) in entries.iter().enumerate() {
        if let Some(map) = out.get_mut(slot(e.kind)) {
            map.insert(e.exposed.clone(), i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposed(entries: Vec<(Kind, &str)>, collisions: Vec<(Kind, &str)>) -> Exposed {
        let entries: Vec<Entry> = entries
            .into_iter()
            .map(|(kind, name)| entry(0, kind, name.to_owned(), name.to_owned(), serde_json::json!({})))
            .collect();
        let by_name = names(&entries);
        Exposed {
            entries,
            by_name,
            index: ToolIndex::default(),
            tools: Vec::new(),
            collisions: collisions.into_iter().map(|(k, n)| (k, n.to_owned())).collect(),
            awaiting: Vec::new(),
            tasks: false,
            stamp: Stamp {
                lock: Arc::new(Lock::default()),
                snapshots: Vec::new(),
            },
        }
    }

    #[test]
    fn resources_route_by_uri_then_by_one_matching_template() {
        let e = exposed(
            vec![
                (Kind::Resource, "docs://readme"),
                (Kind::ResourceTemplate, "docs://pages/{id}"),
                (Kind::ResourceTemplate, "repo://{owner}/{name}"),
                (Kind::ResourceTemplate, "repo://{owner}/{+path}"),
            ],
            vec![(Kind::Resource, "docs://pages/shared")],
        );
        assert_eq!(
            e.resource("docs://readme").map(|x| x.own.as_str()),
            Some("docs://readme")
        );
        assert_eq!(
            e.resource("docs://pages/7").map(|x| x.own.as_str()),
            Some("docs://pages/{id}")
        );
        assert!(e.resource("repo://a/b").is_none(), "two templates match: ambiguous");
        assert!(
            e.resource("docs://pages/shared").is_none(),
            "a collided URI is not served by a template"
        );
        assert!(e.resource("other://x").is_none());
    }
}
