//! What the gateway has learned of each upstream's tools from the
//! `tools/list` answers it filtered (request path step 12): each tool's
//! annotations, for the policies of later calls (step 8), and the set of
//! known names, which bounds the `tool` label of metrics.
//!
//! The upstream is an approved server, so its own declarations are the best
//! knowledge the gateway has until a governed catalog pins them. A tool
//! never listed has unknown annotations: the cautious MCP defaults apply
//! (not read-only, destructive).

use std::collections::HashMap;
use std::sync::Arc;

use dashmap::DashMap;
use tollgate_policy::ToolAnnotations;

/// Most tools remembered per route; further names are not learned (their
/// calls get default annotations and the metrics label `other`).
pub(crate) const MAX_TOOLS_PER_ROUTE: usize = 4096;

/// Learned tools, per route.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    routes: DashMap<Arc<str>, HashMap<Arc<str>, ToolAnnotations>>,
}

impl Catalog {
    /// The annotations `route`'s upstream declared for `tool`.
    pub(crate) fn annotations(&self, route: &str, tool: &str) -> Option<ToolAnnotations> {
        self.routes.get(route)?.get(tool).copied()
    }

    /// Whether `tool` has been listed by `route`'s upstream.
    pub(crate) fn knows(&self, route: &str, tool: &str) -> bool {
        self.routes.get(route).is_some_and(|t| t.contains_key(tool))
    }

    /// Remember the tools of one `tools/list` page.
    pub(crate) fn learn<'a>(&self, route: &str, tools: impl IntoIterator<Item = (&'a str, ToolAnnotations)>) {
        let mut entry = self.routes.entry(Arc::from(route)).or_default();
        for (name, annotations) in tools {
            if let Some(known) = entry.get_mut(name) {
                *known = annotations;
            } else if entry.len() < MAX_TOOLS_PER_ROUTE {
                entry.insert(Arc::from(name), annotations);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learned_tools_are_known_and_updated() {
        let c = Catalog::default();
        assert!(!c.knows("demo", "echo"));
        let ro = ToolAnnotations::from_hints(Some(true), None, None, None);
        c.learn("demo", [("echo", ro)]);
        assert!(c.knows("demo", "echo"));
        assert_eq!(c.annotations("demo", "echo"), Some(ro));
        c.learn("demo", [("echo", ToolAnnotations::default())]);
        assert_eq!(c.annotations("demo", "echo"), Some(ToolAnnotations::default()));
        assert_eq!(c.annotations("other", "echo"), None);
    }
}
