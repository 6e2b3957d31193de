//! The lock file, `catalog.lock`: which revision of each definition of each
//! server was approved, by whom and when — reviewed and committed like any
//! lock file.
//!
//! The gate (request path, between `identify` and `authorize`) judges every
//! call and list entry against a [`Lock`]; `tollgate catalog approve` adds
//! approvals and writes the file with [`Lock::to_toml`]; the server reloads
//! it with [`Lock::parse`] and keeps the old lock when the new text is
//! refused. This module only parses and prints text: `tollgate-config`
//! reads and writes the file.
//!
//! The format is TOML, one `[[approval]]` table per server and definition,
//! sorted by server, kind and key, each carrying the approved definition as
//! pretty-printed JSON with sorted keys, so that a change reads as a small
//! diff in review:
//!
//! ```toml
//! [[approval]]
//! server = "demo"
//! kind = "tool"
//! name = "echo"
//! revision = "sha256:…"
//! approved_by = "alice@example.com"
//! approved_at = "2026-12-03T14:00:00Z"
//! note = "CHG-42"
//! definition = '''
//! { "name": "echo", … }
//! '''
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

mod error;
mod parse;
mod write;

pub use error::{LockError, LockErrors};

use serde_json::Value;

use crate::definition::{Definition, Kind, Revision};

/// One approved definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// The server (route) name.
    pub server: String,
    /// Tool, prompt, resource or template.
    pub kind: Kind,
    /// Its name, URI or URI template.
    pub key: String,
    /// The approved revision.
    pub revision: Revision,
    /// Who approved it.
    pub approved_by: String,
    /// When.
    pub approved_at: SystemTime,
    /// Why, or a ticket reference.
    pub note: Option<String>,
    /// The approved definition itself (so that policies and `Mcp-Param`
    /// checks use what was approved, and a diff needs no history).
    pub definition: Value,
}

/// Every approval, by server, kind and key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lock {
    approvals: BTreeMap<(String, Kind, String), Approval>,
}

impl Lock {
    /// The approval of `server`'s definition of `kind` named `key`.
    pub fn get(&self, server: &str, kind: Kind, key: &str) -> Option<&Approval> {
        self.approvals.get(&(server.to_owned(), kind, key.to_owned()))
    }

    /// The approvals of one server, in kind and key order.
    pub fn of_server<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a Approval> + 'a {
        self.approvals.values().filter(move |a| a.server == server)
    }

    /// Every approval, in server, kind and key order.
    pub fn iter(&self) -> impl Iterator<Item = &Approval> {
        self.approvals.values()
    }

    /// Read a lock file's text; `path` names the file in errors.
    ///
    /// # Errors
    ///
    /// Every problem found (TOML syntax, unknown or missing keys, a bad
    /// kind, revision or time, a definition that is not a JSON object or
    /// does not match its `name` and `revision`, duplicate entries), each
    /// with file, line, column and key.
    pub fn parse(path: &Path, text: &str) -> Result<Lock, LockErrors> {
        parse::parse(path, text)
    }

    /// The lock file's text: deterministic (sorted by server, kind and
    /// key), so that [`Lock::parse`] of it gives this lock back and writing
    /// that again gives the same text.
    pub fn to_toml(&self) -> String {
        write::to_toml(self)
    }

    /// How many approvals.
    pub fn len(&self) -> usize {
        self.approvals.len()
    }

    /// Whether there is no approval at all.
    pub fn is_empty(&self) -> bool {
        self.approvals.is_empty()
    }

    /// The servers with at least one approval, in order.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        let mut last: Option<&str> = None;
        self.approvals.keys().filter_map(move |(server, _, _)| {
            let new = last != Some(server.as_str());
            last = Some(server.as_str());
            new.then_some(server.as_str())
        })
    }

    /// Add an approval as it stands (replacing an earlier approval of the
    /// same definition, which is returned). Unlike [`Lock::approve`] this
    /// does not check that `approval.revision` is the definition's.
    pub fn insert(&mut self, approval: Approval) -> Option<Approval> {
        let key = (approval.server.clone(), approval.kind, approval.key.clone());
        self.approvals.insert(key, approval)
    }

    /// Approve `definition` of `server` (replacing an earlier approval of
    /// the same definition). The time is kept to the second, as the lock
    /// file writes it.
    pub fn approve(&mut self, server: &str, definition: &Definition, by: &str, at: SystemTime, note: Option<&str>) {
        let approval = Approval {
            server: server.to_owned(),
            kind: definition.kind,
            key: definition.key.clone(),
            revision: definition.revision.clone(),
            approved_by: by.to_owned(),
            approved_at: whole_seconds(at),
            note: note.map(str::to_owned),
            definition: definition.body.clone(),
        };
        self.approvals
            .insert((server.to_owned(), definition.kind, definition.key.clone()), approval);
    }

    /// Forget the approval of a definition (it was removed upstream).
    pub fn remove(&mut self, server: &str, kind: Kind, key: &str) -> Option<Approval> {
        self.approvals.remove(&(server.to_owned(), kind, key.to_owned()))
    }

    /// The union of this lock and `other`, each definition approved as the
    /// newer of its two approvals says (by `approved_at`; on a tie,
    /// `other`'s). The gateway puts the lock file (this) and the fleet
    /// store's approvals (`other`) in force this way.
    #[must_use]
    pub fn union_newest(&self, other: &Lock) -> Lock {
        let mut out = self.clone();
        for (key, theirs) in &other.approvals {
            let newer = out
                .approvals
                .get(key)
                .is_none_or(|ours| theirs.approved_at >= ours.approved_at);
            if newer {
                out.approvals.insert(key.clone(), theirs.clone());
            }
        }
        out
    }
}

/// `at` without its fraction of a second.
fn whole_seconds(at: SystemTime) -> SystemTime {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| SystemTime::UNIX_EPOCH + Duration::from_secs(d.as_secs()))
        .unwrap_or(at)
}

#[cfg(test)]
mod tests;
