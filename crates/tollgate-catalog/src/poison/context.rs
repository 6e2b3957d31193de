//! What the poisoning checks know about a definition's surroundings: its
//! server's other tools and description lengths, the other configured
//! servers and, when the caller knows them, their tools.

use crate::definition::Kind;
use crate::snapshot::Snapshot;

/// What the checks know about the definition's surroundings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckContext {
    /// The median length, in characters, of the descriptions of the
    /// server's definitions.
    pub median_description_len: usize,
    /// The names of the server's tools and prompts (a definition's own name
    /// is skipped when it is checked).
    pub tools: Vec<String>,
    /// The names of the other configured servers.
    pub other_servers: Vec<String>,
    /// The names of other servers' tools, when known.
    pub other_tools: Vec<String>,
}

impl CheckContext {
    /// The context of the definitions of `snapshot`, with the names of the
    /// other configured servers (the snapshot's own is left out).
    pub fn for_snapshot(snapshot: &Snapshot, other_servers: &[String]) -> CheckContext {
        let mut lengths: Vec<usize> = snapshot
            .definitions
            .values()
            .filter_map(|d| d.description().map(|s| s.chars().count()))
            .collect();
        lengths.sort_unstable();
        let median = match lengths.len() {
            0 => 0,
            n if n % 2 == 1 => lengths[n / 2],
            n => (lengths[n / 2 - 1] + lengths[n / 2]) / 2,
        };
        CheckContext {
            median_description_len: median,
            tools: snapshot
                .definitions
                .values()
                .filter(|d| matches!(d.kind, Kind::Tool | Kind::Prompt))
                .map(|d| d.key.clone())
                .collect(),
            other_servers: other_servers
                .iter()
                .filter(|s| **s != snapshot.server)
                .cloned()
                .collect(),
            other_tools: Vec::new(),
        }
    }

    /// The same context knowing the names of other servers' tools too.
    pub fn with_other_tools(mut self, names: impl IntoIterator<Item = String>) -> CheckContext {
        self.other_tools.extend(names);
        self
    }

    /// Whether `name` is one of this server's tools or prompts (any case).
    pub(super) fn is_own_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.eq_ignore_ascii_case(name))
    }
}
