//! What changed in one server's catalog since the lock: new definitions
//! (awaiting approval), changed ones (a possible rug pull: the approved
//! revision is not the one listed), removed ones, and renames (a removed
//! and a new definition of the same kind identical but for their key).
//!
//! Not on the request path: `tollgate catalog diff` prints a [`CatalogDiff`]
//! per server ([`CatalogDiff::render_text`] for a terminal or a pull
//! request, `Serialize` for `--format json`), and the console shows it
//! before an approval. A changed definition carries a word-level diff of
//! its description and a structural diff (JSON pointers) of everything
//! else; every live definition carries its poisoning [`Finding`]s.

use serde::Serialize;
use serde_json::Value;

use crate::definition::{Definition, Kind, Revision};
use crate::lock::{Approval, Lock};
use crate::poison::{CheckContext, Finding, check};
use crate::snapshot::Snapshot;

mod render;
mod structure;

pub use structure::{Change, FieldChange, WordChange, WordOp};

/// The difference between the lock and one server's live catalog.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogDiff {
    /// The server (route) name.
    pub server: String,
    /// Listed, not approved.
    pub added: Vec<Added>,
    /// Listed at another revision than the approved one.
    pub changed: Vec<Changed>,
    /// Approved, no longer listed.
    pub removed: Vec<Removed>,
    /// Approved under one key, listed under another with the same content.
    pub renamed: Vec<Renamed>,
}

/// A definition the lock does not know.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Added {
    /// Its kind.
    pub kind: Kind,
    /// Its name, URI or URI template.
    pub key: String,
    /// Its live revision.
    pub revision: Revision,
    /// The definition as listed.
    pub definition: Value,
    /// What the poisoning checks found in it.
    pub findings: Vec<Finding>,
}

/// A definition listed at another revision than the approved one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changed {
    /// Its kind.
    pub kind: Kind,
    /// Its name, URI or URI template.
    pub key: String,
    /// The approved revision.
    pub approved: Revision,
    /// The live revision.
    pub live: Revision,
    /// The description, word by word, when it changed (a missing one reads
    /// as empty).
    pub description: Option<Vec<WordChange>>,
    /// Everything else that changed, by JSON pointer.
    pub fields: Vec<FieldChange>,
    /// What the poisoning checks found in the live definition.
    pub findings: Vec<Finding>,
}

/// An approved definition the server no longer lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Removed {
    /// Its kind.
    pub kind: Kind,
    /// Its name, URI or URI template.
    pub key: String,
    /// The approved revision.
    pub revision: Revision,
    /// Who approved it.
    pub approved_by: String,
}

/// An approved definition listed under another key, otherwise unchanged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Renamed {
    /// Its kind.
    pub kind: Kind,
    /// The approved key.
    pub from: String,
    /// The live key.
    pub to: String,
    /// The approved revision.
    pub approved: Revision,
    /// The live revision.
    pub live: Revision,
    /// What the poisoning checks found in the live definition.
    pub findings: Vec<Finding>,
}

impl CatalogDiff {
    /// Whether the live catalog is exactly what the lock approves.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty() && self.renamed.is_empty()
    }

    /// The difference as a reviewer reads it in a terminal or a pull
    /// request: plain text, no colour, invisible characters made visible,
    /// descriptions as `[-removed-]{+added+}` word diffs.
    pub fn render_text(&self) -> String {
        render::text(self)
    }
}

/// The difference between `lock`'s approvals of the snapshot's server and
/// the snapshot, with poisoning findings judged against the snapshot alone
/// (no other servers known).
pub fn diff(lock: &Lock, snapshot: &Snapshot) -> CatalogDiff {
    diff_with(lock, snapshot, &CheckContext::for_snapshot(snapshot, &[]))
}

/// [`diff`] with the poisoning checks run in `context` (e.g. knowing the
/// other configured servers and their tools).
pub fn diff_with(lock: &Lock, snapshot: &Snapshot, context: &CheckContext) -> CatalogDiff {
    let mut out = CatalogDiff {
        server: snapshot.server.clone(),
        added: Vec::new(),
        changed: Vec::new(),
        removed: Vec::new(),
        renamed: Vec::new(),
    };
    let mut new: Vec<&Definition> = Vec::new();
    for live in snapshot.definitions.values() {
        match lock.get(&snapshot.server, live.kind, &live.key) {
            None => new.push(live),
            Some(approval) if approval.revision != live.revision => {
                out.changed.push(changed(approval, live, context));
            }
            Some(_) => {}
        }
    }
    let gone = lock
        .of_server(&snapshot.server)
        .filter(|a| snapshot.get(a.kind, &a.key).is_none());
    for approval in gone {
        let twin = new
            .iter()
            .position(|d| d.kind == approval.kind && same_but_key(&approval.definition, &d.body, d.kind));
        match twin.map(|i| new.remove(i)) {
            Some(live) => out.renamed.push(Renamed {
                kind: live.kind,
                from: approval.key.clone(),
                to: live.key.clone(),
                approved: approval.revision.clone(),
                live: live.revision.clone(),
                findings: check(live, context),
            }),
            None => out.removed.push(Removed {
                kind: approval.kind,
                key: approval.key.clone(),
                revision: approval.revision.clone(),
                approved_by: approval.approved_by.clone(),
            }),
        }
    }
    out.added = new.into_iter().map(|live| added(live, context)).collect();
    out
}

fn added(live: &Definition, context: &CheckContext) -> Added {
    Added {
        kind: live.kind,
        key: live.key.clone(),
        revision: live.revision.clone(),
        definition: live.body.clone(),
        findings: check(live, context),
    }
}

fn changed(approval: &Approval, live: &Definition, context: &CheckContext) -> Changed {
    let text = |v: &Value| {
        v.get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (old, new) = (text(&approval.definition), text(&live.body));
    Changed {
        kind: live.kind,
        key: live.key.clone(),
        approved: approval.revision.clone(),
        live: live.revision.clone(),
        description: (old != new).then(|| structure::words(&old, &new)),
        fields: structure::fields(&approval.definition, &live.body, &["description"]),
        findings: check(live, context),
    }
}

/// Whether two entries of `kind` are equal once their keys are left out.
fn same_but_key(a: &Value, b: &Value, kind: Kind) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove(kind.key_field());
        }
        v
    };
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests;
