//! What one upstream listed at one sync: every definition of every kind,
//! in the order the upstream listed them, the capabilities and protocol
//! versions it announced, and when.

use std::collections::{BTreeMap, HashSet};
use std::time::SystemTime;

use serde_json::Value;

use crate::definition::{Definition, Kind};

/// The live catalog of one server.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The server (route) name.
    pub server: String,
    /// Every definition listed, by kind and key.
    pub definitions: BTreeMap<(Kind, String), Definition>,
    /// The keys of `definitions` in the order the upstream listed them
    /// (kinds in [`Kind::ALL`] order, each list page after page), kept by
    /// [`Snapshot::insert`]; what a virtual server lists follows it.
    pub listed: Vec<(Kind, String)>,
    /// The protocol versions the upstream announced (`server/discover`'s
    /// `supportedVersions`, or the version it answered `initialize` with).
    pub versions: Vec<String>,
    /// `serverInfo` as announced.
    pub server_info: Option<Value>,
    /// The capabilities as announced (`Null` when not known).
    pub capabilities: Value,
    /// The ids of the extensions its capabilities declared (for example
    /// `io.modelcontextprotocol/tasks`), sorted.
    pub extensions: Vec<String>,
    /// When the sync finished.
    pub synced_at: SystemTime,
}

impl Snapshot {
    /// An empty catalog of `server` (nothing synced yet).
    pub fn empty(server: &str) -> Snapshot {
        Snapshot {
            server: server.to_owned(),
            definitions: BTreeMap::new(),
            listed: Vec::new(),
            versions: Vec::new(),
            server_info: None,
            capabilities: Value::Null,
            extensions: Vec::new(),
            synced_at: SystemTime::UNIX_EPOCH,
        }
    }

    /// Add `definition` after those listed so far, or replace the one of
    /// the same kind and key where it stands.
    pub fn insert(&mut self, definition: Definition) {
        let key = (definition.kind, definition.key.clone());
        if self.definitions.insert(key.clone(), definition).is_none() {
            self.listed.push(key);
        }
    }

    /// The definition of `kind` named `key`.
    pub fn get(&self, kind: Kind, key: &str) -> Option<&Definition> {
        self.definitions.get(&(kind, key.to_owned()))
    }

    /// The definitions of one kind, in key order.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Definition> {
        self.definitions.values().filter(move |d| d.kind == kind)
    }

    /// Every definition in the order the upstream listed it; any not in
    /// [`Snapshot::listed`] (put in `definitions` directly) follows, in
    /// kind and key order.
    pub fn in_listed_order(&self) -> Vec<&Definition> {
        let mut seen: HashSet<(Kind, &str)> = HashSet::with_capacity(self.definitions.len());
        let mut out = Vec::with_capacity(self.definitions.len());
        for key in &self.listed {
            if let Some(d) = self.definitions.get(key)
                && seen.insert((d.kind, d.key.as_str()))
            {
                out.push(d);
            }
        }
        out.extend(
            self.definitions
                .values()
                .filter(|d| !seen.contains(&(d.kind, d.key.as_str()))),
        );
        out
    }

    /// Whether the upstream announced 2026-07-28.
    pub fn speaks_modern(&self) -> bool {
        self.versions.iter().any(|v| v == "2026-07-28")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str) -> Definition {
        Definition::new(Kind::Tool, json!({"name": name, "description": description})).unwrap()
    }

    #[test]
    fn definitions_keep_the_order_they_were_listed_in() {
        let mut s = Snapshot::empty("docs");
        for name in ["zeta", "alpha", "mid"] {
            s.insert(tool(name, "first"));
        }
        s.insert(tool("alpha", "changed"));
        let direct = tool("beta", "not listed");
        s.definitions.insert((Kind::Tool, "beta".into()), direct);
        let order: Vec<&str> = s.in_listed_order().iter().map(|d| d.key.as_str()).collect();
        assert_eq!(order, ["zeta", "alpha", "mid", "beta"]);
        assert_eq!(s.get(Kind::Tool, "alpha").unwrap().description(), Some("changed"));
    }
}
