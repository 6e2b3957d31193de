//! The virtual server part of the configuration model: `[[virtual_servers]]`,
//! one MCP route composed of the tools and prompts of several `[[servers]]`
//! (its members), each under a prefix, some left out, some renamed or
//! re-described; and the
//! name mapping between exposed names and member names that the gateway
//! applies when it lists and routes.
//!
//! A virtual server is served at `/mcp/{name}` and shares that namespace with
//! `[[servers]]`. Its `auth`, `policy` and `audit` tables are a server's. The
//! checks that need the whole configuration (unknown members, statically
//! knowable name collisions) run at load with the other checks; collisions
//! that only the members' catalogs reveal are the gateway's to handle.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::auth::ServerAuth;
use crate::model::{Config, ServerName};

/// The tool a virtual server in search mode lists in place of its members'
/// tools; no member tool may be exposed under this name there.
pub const FIND_TOOLS: &str = "find_tools";

/// `[[virtual_servers]]`: one route composed of the tools and prompts of
/// several servers.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VirtualServer {
    /// Route name: served at `/mcp/{name}`, unique among `[[servers]]` and
    /// `[[virtual_servers]]`.
    pub name: ServerName,
    /// The servers composed, at least one, each at most once.
    pub members: Vec<Member>,
    /// What a caller needs to use this route.
    #[serde(default)]
    pub auth: ServerAuth,
    /// How policy decisions apply to calls through this route and to its
    /// lists: its own `mode` overrides the members'; unset, each call
    /// follows its member server's mode.
    #[serde(default)]
    pub policy: crate::ServerPolicy,
    /// Who approved this composition, and what its own answers (lists,
    /// `find_tools`) record; calls routed to a member are recorded with
    /// the member's settings.
    #[serde(default)]
    pub audit: crate::ServerAudit,
    /// `all` (default): list every exposed tool. `search`: list
    /// `find_tools` and the `pinned` tools.
    #[serde(default)]
    pub expose: Expose,
    /// Exposed tool names listed beside `find_tools` in search mode.
    #[serde(default)]
    pub pinned: Vec<String>,
}

/// How a virtual server lists its tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Expose {
    /// `tools/list` lists every exposed tool.
    #[default]
    All,
    /// `tools/list` lists `find_tools` (and the pinned tools); every tool it
    /// can find stays callable by its exposed name.
    Search,
}

impl Expose {
    /// A stable lowercase name for logs, metrics and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Expose::All => "all",
            Expose::Search => "search",
        }
    }
}

/// One member of a virtual server: a `[[servers]]` entry and how its tool
/// and prompt names are exposed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// The name of a `[[servers]]` entry.
    pub server: String,
    /// Written before each exposed name; default: `"{server}_"`.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Only these names (the member's own) are exposed; default: all.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Names (the member's own) left out.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Member name to exposed name, used as written (no prefix added). A
    /// renamed definition is approved as exposed, like a re-described one.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// Member name (a tool or prompt) to the description the virtual server
    /// shows in place of the member's own. A re-described definition is
    /// approved as exposed: under the virtual server's name in the lock,
    /// at the revision of the definition as exposed.
    #[serde(default)]
    pub describe: BTreeMap<String, String>,
}

impl Member {
    /// The prefix in force: `prefix`, else `"{server}_"`.
    pub fn prefix(&self) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => format!("{}_", self.server),
        }
    }

    /// Whether the member's tool or prompt `member_name` is exposed (not
    /// left out by `tools` or `exclude`).
    pub fn includes(&self, member_name: &str) -> bool {
        let listed = self
            .tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == member_name));
        listed && !self.exclude.iter().any(|e| e == member_name)
    }

    /// The exposed name of the member's tool or prompt `member_name`: its
    /// `rename` entry, else the prefix and the name; `None` when it is left
    /// out.
    pub fn exposed(&self, member_name: &str) -> Option<String> {
        if !self.includes(member_name) {
            return None;
        }
        Some(match self.rename.get(member_name) {
            Some(renamed) => renamed.clone(),
            None => format!("{}{member_name}", self.prefix()),
        })
    }

    /// The member's own names that could be exposed as `exposed`: the
    /// renamed names and the name after the prefix, each checked against
    /// [`Member::exposed`].
    fn candidates(&self, exposed: &str) -> Vec<String> {
        let renamed = self
            .rename
            .iter()
            .filter(|(_, to)| *to == exposed)
            .map(|(from, _)| from.clone());
        let prefixed = exposed
            .strip_prefix(self.prefix().as_str())
            .filter(|rest| !rest.is_empty())
            .map(str::to_owned);
        let mut out: Vec<String> = renamed
            .chain(prefixed)
            .filter(|name| self.exposed(name).as_deref() == Some(exposed))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

impl VirtualServer {
    /// The member and the member's own name behind the exposed tool or
    /// prompt name `exposed`. `listed(member, name)` says whether the
    /// member lists `name` (from its catalog). `None` when no member's
    /// listed name is exposed as `exposed`, or when more than one is (a
    /// collision: both are left out until the configuration changes).
    pub fn resolve<'a>(
        &'a self,
        exposed: &str,
        listed: impl Fn(&Member, &str) -> bool,
    ) -> Option<(&'a Member, String)> {
        let mut found = self.members.iter().flat_map(|m| {
            m.candidates(exposed)
                .into_iter()
                .filter(|name| listed(m, name))
                .map(move |name| (m, name))
        });
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }

    /// The member for `server`, if it is one.
    pub fn member(&self, server: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.server == server)
    }
}

impl Config {
    /// The virtual server served at `/mcp/{name}`.
    pub fn virtual_server(&self, name: &str) -> Option<&VirtualServer> {
        self.virtual_servers.iter().find(|v| v.name.as_str() == name)
    }

    /// Whether calls on the virtual server `v` need a token (the rule of
    /// [`Config::auth_required`]).
    pub fn virtual_auth_required(&self, v: &VirtualServer) -> bool {
        v.auth.required.unwrap_or(self.tokens_by_default())
    }

    /// The canonical URL of a virtual server's route, its OAuth resource
    /// identifier.
    pub fn virtual_resource_url(&self, v: &VirtualServer) -> Option<String> {
        self.public_base_url()
            .map(|base| format!("{base}/mcp/{}", v.name.as_str()))
    }
}

/// Whether `name` follows MCP's recommended tool name format: 1 to 128
/// characters, each an ASCII letter, digit, `_`, `-` or `.` (names are
/// case-sensitive).
pub fn is_valid_tool_name(name: &str) -> bool {
    let ok = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    (1..=128).contains(&name.len()) && name.bytes().all(ok)
}

#[cfg(test)]
mod tests;
