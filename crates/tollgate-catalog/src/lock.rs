//! The lock file, `catalog.lock`: which revision of each definition of each
//! server was approved, by whom and when — reviewed and committed like any
//! lock file.
//!
//! (Skeleton: parsing and writing are to be implemented; see the types.)

use std::collections::BTreeMap;
use std::time::SystemTime;

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

    /// Approve `definition` of `server` (replacing an earlier approval of
    /// the same definition).
    pub fn approve(&mut self, server: &str, definition: &Definition, by: &str, at: SystemTime, note: Option<&str>) {
        let approval = Approval {
            server: server.to_owned(),
            kind: definition.kind,
            key: definition.key.clone(),
            revision: definition.revision.clone(),
            approved_by: by.to_owned(),
            approved_at: at,
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
}
