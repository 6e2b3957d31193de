//! What one upstream listed at one sync: every definition of every kind,
//! the protocol versions it announced, and when.

use std::collections::BTreeMap;
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
    /// The protocol versions the upstream announced (`server/discover`'s
    /// `supportedVersions`, or the version it answered `initialize` with).
    pub versions: Vec<String>,
    /// `serverInfo` as announced.
    pub server_info: Option<Value>,
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
            versions: Vec::new(),
            server_info: None,
            extensions: Vec::new(),
            synced_at: SystemTime::UNIX_EPOCH,
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

    /// Whether the upstream announced 2026-07-28.
    pub fn speaks_modern(&self) -> bool {
        self.versions.iter().any(|v| v == "2026-07-28")
    }
}
