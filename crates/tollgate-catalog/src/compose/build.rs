//! Building an [`Exposed`]: each member's governed definitions in the
//! member's order, renamed; renamed or re-described ones the lock does not
//! approve as exposed set aside; collisions left out; the name maps and
//! the search index made once, so that the request path only looks up.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;

use super::describe::{approved, shown};
use super::spec::{MemberSpec, VirtualSpec};
use super::{Announced, Entry, Exposed, slot};
use crate::definition::{Hints, Kind};
use crate::gate::Mode;
use crate::lock::{Approval, Lock};
use crate::search::ToolIndex;
use crate::snapshot::Snapshot;

/// A definition as a member exposes it: (kind, own name, exposed name,
/// definition as exposed).
pub(super) type Shown = (Kind, String, String, Value);

/// What `spec` exposes at `lock` from `snapshots` (one per member).
pub(super) fn build(spec: &VirtualSpec, lock: Arc<Lock>, snapshots: Vec<Arc<Snapshot>>) -> Exposed {
    let mut entries: Vec<Entry> = Vec::new();
    let mut awaiting = Vec::new();
    for (i, (member, snapshot)) in spec.members.iter().zip(&snapshots).enumerate() {
        for (kind, own, exposed, definition) in member_exposed(member, &lock, snapshot) {
            if spec.gate != Mode::Off
                && member.is_rewritten(kind, &own)
                && !approved(&lock, &spec.name, kind, &exposed, &definition)
            {
                awaiting.push((kind, exposed.clone()));
                if spec.gate == Mode::Enforce {
                    continue;
                }
            }
            entries.push(entry(i, kind, own, exposed, definition));
        }
    }
    // Stable: within a kind, members and their entries keep their order.
    entries.sort_by_key(|e| e.kind);
    let (entries, collisions) = without_collisions(entries);
    let by_name = names(&entries);
    let mut tools: Vec<usize> = (0..entries.len()).filter(|i| entries[*i].kind == Kind::Tool).collect();
    // The index ranks ties by position: by name, whatever the list order.
    tools.sort_by(|a, b| entries[*a].exposed.cmp(&entries[*b].exposed));
    let index = ToolIndex::build(
        tools
            .iter()
            .map(|i| (entries[*i].exposed.as_str(), &entries[*i].definition)),
    );
    let announced = snapshots
        .iter()
        .fold(Announced::default(), |a, s| a.or(Announced::of(&s.capabilities)));
    let tasks = snapshots
        .iter()
        .any(|s| s.extensions.iter().any(|e| e == tollgate_mcp::TASKS_EXTENSION));
    Exposed {
        entries,
        by_name,
        index,
        tools,
        collisions,
        awaiting,
        tasks,
        announced,
        lock,
        snapshots,
        live: spec
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.gate == Mode::Off)
            .map(|(i, m)| (i, m.clone()))
            .collect(),
    }
}

/// What member `m` exposes: each definition its gate lets through and the
/// virtual server does not leave out, in the member's order, as exposed.
/// The gateway and `tollgate catalog` ([`super::rewritten`]) both build
/// on it.
pub(super) fn member_exposed(m: &MemberSpec, lock: &Lock, snapshot: &Snapshot) -> Vec<Shown> {
    governed(m, lock, snapshot)
        .into_iter()
        .filter_map(|(kind, own, definition)| {
            let exposed = m.exposed_name(kind, &own)?;
            let definition = shown(m, kind, &own, &exposed, definition);
            Some((kind, own, exposed, definition))
        })
        .collect()
}

/// A member's definitions its gate lets through, in the order the member
/// listed them: approved at the revision the member lists (or approved
/// and not yet seen by a sync, in the lock's order); with the gate off,
/// what the member listed.
fn governed(m: &MemberSpec, lock: &Lock, snapshot: &Snapshot) -> Vec<(Kind, String, Value)> {
    let listed = snapshot.in_listed_order();
    if m.gate == Mode::Off {
        return listed
            .into_iter()
            .map(|d| (d.kind, d.key.clone(), d.body.clone()))
            .collect();
    }
    let synced = snapshot.synced_at != SystemTime::UNIX_EPOCH;
    let mut approvals: Vec<&Approval> = lock
        .of_server(&m.server)
        .filter(|a| !synced || snapshot.get(a.kind, &a.key).is_some_and(|d| d.revision == a.revision))
        .collect();
    let position: HashMap<(Kind, &str), usize> = listed
        .iter()
        .enumerate()
        .map(|(i, d)| ((d.kind, d.key.as_str()), i))
        .collect();
    approvals.sort_by_key(|a| position.get(&(a.kind, a.key.as_str())).copied().unwrap_or(usize::MAX));
    approvals
        .into_iter()
        .map(|a| (a.kind, a.key.clone(), a.definition.clone()))
        .collect()
}

/// An entry of `definition` as exposed.
pub(super) fn entry(member: usize, kind: Kind, own: String, exposed: String, definition: Value) -> Entry {
    let hints = (kind == Kind::Tool).then(|| Hints::of(&definition));
    Entry {
        member,
        kind,
        exposed,
        own,
        json: definition.to_string(),
        definition,
        hints,
    }
}

/// `entries` without those whose kind and exposed name another entry
/// shares, and those names (sorted).
fn without_collisions(entries: Vec<Entry>) -> (Vec<Entry>, Vec<(Kind, String)>) {
    let mut claims: HashMap<(Kind, &str), usize> = HashMap::with_capacity(entries.len());
    for e in &entries {
        *claims.entry((e.kind, e.exposed.as_str())).or_default() += 1;
    }
    let mut collisions: Vec<(Kind, String)> = claims
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|((kind, name), _)| (*kind, (*name).to_owned()))
        .collect();
    collisions.sort();
    let alone: Vec<bool> = entries
        .iter()
        .map(|e| claims.get(&(e.kind, e.exposed.as_str())) == Some(&1))
        .collect();
    let kept = entries
        .into_iter()
        .zip(alone)
        .filter_map(|(e, alone)| alone.then_some(e))
        .collect();
    (kept, collisions)
}

/// The positions of `entries` by kind and exposed name.
pub(super) fn names(entries: &[Entry]) -> [HashMap<String, usize>; 4] {
    let mut out: [HashMap<String, usize>; 4] = Default::default();
    for (i, e) in entries.iter().enumerate() {
        if let Some(map) = out.get_mut(slot(e.kind)) {
            map.insert(e.exposed.clone(), i);
        }
    }
    out
}
