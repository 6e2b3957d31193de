//! The settings a composition is built from: a virtual server's members,
//! in configuration order, and how each exposes its definitions (prefix,
//! filters, renames, new descriptions).
//!
//! These are the catalog's own settings, not the configuration file's: the
//! server maps its `[[virtual_servers]]` tables to them, in one place.

use std::collections::BTreeMap;

use crate::definition::Kind;
use crate::gate::Mode;

/// A virtual server as its composition needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualSpec {
    /// Its name: the lock approves its renamed and re-described
    /// definitions under it.
    pub name: String,
    /// The catalog gate of its renamed and re-described definitions.
    pub gate: Mode,
    /// The members, in configuration order.
    pub members: Vec<MemberSpec>,
}

/// One member of a virtual server: a server, the gate its definitions
/// pass, and the names they are exposed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    /// The member server's name (its snapshots and lock entries).
    pub server: String,
    /// The member server's own catalog gate.
    pub gate: Mode,
    /// Written before each tool and prompt name (`""` keeps the member's
    /// names).
    pub prefix: String,
    /// Only these tools and prompts (the member's own names) are exposed;
    /// `None`: all.
    pub tools: Option<Vec<String>>,
    /// Tools and prompts (the member's own names) left out.
    pub exclude: Vec<String>,
    /// Member name to exposed name, used as written (no prefix added).
    pub rename: BTreeMap<String, String>,
    /// Member name to the description shown in place of the member's own.
    pub describe: BTreeMap<String, String>,
}

impl MemberSpec {
    /// A member exposing every definition of `server` under `prefix`,
    /// nothing renamed or re-described.
    pub fn new(server: &str, gate: Mode, prefix: &str) -> MemberSpec {
        MemberSpec {
            server: server.to_owned(),
            gate,
            prefix: prefix.to_owned(),
            tools: None,
            exclude: Vec::new(),
            rename: BTreeMap::new(),
            describe: BTreeMap::new(),
        }
    }

    /// Whether the tool or prompt `own` is exposed (not left out by
    /// `tools` or `exclude`).
    pub fn includes(&self, own: &str) -> bool {
        let listed = self.tools.as_ref().is_none_or(|only| only.iter().any(|t| t == own));
        listed && !self.exclude.iter().any(|e| e == own)
    }

    /// The name `kind` `own` is exposed under: a tool's or prompt's
    /// `rename` entry, else the prefix and its name; a resource's or
    /// template's own URI. `None` when it is left out.
    pub fn exposed_name(&self, kind: Kind, own: &str) -> Option<String> {
        match kind {
            Kind::Resource | Kind::ResourceTemplate => Some(own.to_owned()),
            Kind::Tool | Kind::Prompt if !self.includes(own) => None,
            Kind::Tool | Kind::Prompt => Some(match self.rename.get(own) {
                Some(renamed) => renamed.clone(),
                None => format!("{}{own}", self.prefix),
            }),
        }
    }

    /// The member's own name for the `kind` it exposes as `exposed`: the
    /// reverse of [`exposed_name`](Self::exposed_name), for a member whose
    /// definitions are not all known in advance (its gate is off). `None`
    /// when no name of the member's would be exposed so.
    pub fn own_name(&self, kind: Kind, exposed: &str) -> Option<String> {
        if matches!(kind, Kind::Resource | Kind::ResourceTemplate) {
            return Some(exposed.to_owned());
        }
        if let Some((own, _)) = self.rename.iter().find(|(_, to)| *to == exposed) {
            return self.includes(own).then(|| own.clone());
        }
        let own = exposed.strip_prefix(self.prefix.as_str())?;
        (self.includes(own) && !self.rename.contains_key(own)).then(|| own.to_owned())
    }

    /// Whether the member renames or re-describes its `kind` `own`: new
    /// text a model reads, which the member's approval does not cover.
    pub fn is_rewritten(&self, kind: Kind, own: &str) -> bool {
        matches!(kind, Kind::Tool | Kind::Prompt) && (self.describe.contains_key(own) || self.rename.contains_key(own))
    }
}
