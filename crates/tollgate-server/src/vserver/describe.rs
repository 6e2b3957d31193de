//! Definitions as a virtual server exposes them: prefixed, renamed where a
//! member's `rename` says so, and re-described where its `describe` does.
//!
//! A name and a description are what a model reads to choose and use a
//! tool, so a definition renamed or re-described is not covered by the
//! member's approval: the catalog approves it as exposed — under the
//! virtual server's name in the lock, keyed by the exposed name, at the
//! revision (hash) of the definition as exposed. Until then it awaits
//! approval: left out under `[catalog] mode = "enforce"`, exposed and
//! reported under `observe`. A definition only prefixed stays covered by
//! the member's approval: the prefix namespaces the member's own name.
//!
//! The gateway (`exposed`) and `tollgate catalog diff|approve --server
//! <virtual server>` ([`rewritten`]) build exposed definitions with the
//! same functions, so both hash the same bytes.

use serde_json::Value;
use tollgate_catalog::{Definition, Kind, Lock, Snapshot};
use tollgate_config::{Config, Member, VirtualServer};

/// Member `m`'s definition `kind` `own` as exposed under `exposed`: a tool
/// or prompt takes the exposed name and, when `describe` names it, the
/// description given there.
pub(crate) fn shown(m: &Member, kind: Kind, own: &str, exposed: &str, mut definition: Value) -> Value {
    if matches!(kind, Kind::Tool | Kind::Prompt)
        && let Some(object) = definition.as_object_mut()
    {
        object.insert("name".into(), Value::from(exposed));
        if let Some(text) = m.describe.get(own) {
            object.insert("description".into(), Value::from(text.as_str()));
        }
    }
    definition
}

/// Whether member `m` renames or re-describes its `kind` `own`.
pub(crate) fn is_rewritten(m: &Member, kind: Kind, own: &str) -> bool {
    matches!(kind, Kind::Tool | Kind::Prompt) && (m.describe.contains_key(own) || m.rename.contains_key(own))
}

/// Whether the lock approves `definition` as virtual server `v` exposes it
/// under `exposed`.
pub(crate) fn approved(lock: &Lock, v: &str, kind: Kind, exposed: &str, definition: &Value) -> bool {
    let Some(approval) = lock.get(v, kind, exposed) else {
        return false;
    };
    Definition::new(kind, definition.clone()).is_ok_and(|d| d.revision == approval.revision)
}

/// The renamed and re-described definitions of virtual server `v`, as
/// exposed, from its members' live catalogs `members` (one snapshot per
/// member server; the definitions a member's gate lets through, as the
/// gateway exposes them): the catalog `tollgate catalog diff` compares with
/// the lock's approvals under `v`'s name and `approve` approves.
pub fn rewritten(config: &Config, v: &VirtualServer, lock: &Lock, members: &[Snapshot]) -> Snapshot {
    let mut out = Snapshot::empty(v.name.as_str());
    out.synced_at = std::time::SystemTime::now();
    for m in &v.members {
        let (Some(server), Some(snapshot)) = (
            config.servers.iter().find(|s| s.name.as_str() == m.server),
            members.iter().find(|s| s.server == m.server),
        ) else {
            continue;
        };
        let mode = crate::catalog::catalog_mode(config.catalog_mode(server));
        for (kind, own, _, definition) in super::exposed::member_exposed(m, mode, lock, snapshot) {
            if is_rewritten(m, kind, &own)
                && let Ok(d) = Definition::new(kind, definition)
            {
                out.definitions.insert((kind, d.key.clone()), d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use serde_json::json;

    use super::*;

    fn member() -> Member {
        serde_json::from_value(json!({
            "server": "docs",
            "describe": {"read": "Reads one page of the handbook."},
            "rename": {"find": "search_docs"},
        }))
        .unwrap()
    }

    #[test]
    fn exposed_definitions_are_renamed_and_re_described() {
        let m = member();
        let own = json!({"name": "read", "description": "Reads a page.", "inputSchema": {"type": "object"}});
        let shown_read = shown(&m, Kind::Tool, "read", "docs_read", own.clone());
        assert_eq!(shown_read["name"], "docs_read");
        assert_eq!(shown_read["description"], "Reads one page of the handbook.");
        assert_eq!(shown_read["inputSchema"], own["inputSchema"]);
        let other = shown(
            &m,
            Kind::Tool,
            "list",
            "docs_list",
            json!({"name": "list", "description": "Lists."}),
        );
        assert_eq!(other["description"], "Lists.");
        assert!(is_rewritten(&m, Kind::Tool, "read"));
        assert!(is_rewritten(&m, Kind::Prompt, "find"), "renamed");
        assert!(!is_rewritten(&m, Kind::Tool, "list"), "only prefixed");
        assert!(!is_rewritten(&m, Kind::Resource, "read"));
        let resource = shown(&m, Kind::Resource, "read", "read", json!({"uri": "read", "name": "x"}));
        assert_eq!(resource["name"], "x", "resources keep their own names");
    }

    #[test]
    fn an_approval_holds_for_the_exposed_revision_only() {
        let m = member();
        let exposed = shown(&m, Kind::Tool, "read", "docs_read", json!({"name": "read"}));
        let mut lock = Lock::default();
        assert!(!approved(&lock, "eng", Kind::Tool, "docs_read", &exposed));
        let d = Definition::new(Kind::Tool, exposed.clone()).unwrap();
        lock.approve("eng", &d, "platform@example.com", SystemTime::now(), None);
        assert!(approved(&lock, "eng", Kind::Tool, "docs_read", &exposed));
        assert!(!approved(&lock, "other", Kind::Tool, "docs_read", &exposed));
        let changed = shown(
            &m,
            Kind::Tool,
            "read",
            "docs_read",
            json!({"name": "read", "title": "Read"}),
        );
        assert!(!approved(&lock, "eng", Kind::Tool, "docs_read", &changed));
    }
}
