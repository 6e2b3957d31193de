//! The exposed catalog in force for each virtual server.
//!
//! What a virtual server exposes — its members' governed definitions under
//! the names it gives them, in the members' order, and where a name routes
//! — is the catalog's composition (`tollgate_catalog::compose`). This
//! module keeps it for the request path: cached in the virtual server
//! ([`current`]), rebuilt on the first request after the lock or a
//! member's snapshot changed, with the collisions and the definitions
//! awaiting approval logged then. It is also the one place where the
//! configuration's `[[virtual_servers]]` tables become the composition's
//! settings ([`virtual_spec`]), for the gateway and for `tollgate catalog`
//! (`describe`).

use std::sync::Arc;

pub(crate) use tollgate_catalog::compose::{Entry, Exposed, Target};
use tollgate_catalog::compose::{MemberSpec, VirtualSpec};
use tollgate_catalog::{Lock, Mode, Snapshot};

use super::VirtualRoute;

/// The exposed catalog in force, rebuilt when its inputs changed.
pub(crate) fn current(v: &VirtualRoute) -> Arc<Exposed> {
    let lock = v.shared.approvals.current();
    if let Some(built) = v.exposed.load_full()
        && is_current(&built, &lock, v)
    {
        return built;
    }
    let snapshots: Vec<Arc<Snapshot>> = v.members.iter().map(|m| m.route.catalog.snapshot()).collect();
    let spec = virtual_spec(
        &v.name,
        v.catalog,
        v.members.iter().map(|m| (&m.config, m.route.catalog.mode)),
    );
    let built = Arc::new(Exposed::build(&spec, lock, snapshots));
    for (kind, name) in &built.collisions {
        tracing::warn!(
            virtual_server = %v.name,
            kind = kind.as_str(),
            name = %name,
            "two members expose the same name: both are left out until the configuration or a catalog changes"
        );
    }
    for (kind, name) in &built.awaiting {
        tracing::warn!(
            virtual_server = %v.name,
            kind = kind.as_str(),
            name = %name,
            gate = ?v.catalog,
            "a renamed or re-described definition awaits approval as exposed: tollgate catalog approve --server {}",
            v.name
        );
    }
    v.exposed.store(Some(built.clone()));
    built
}

/// Whether `built` was built from `lock` and the members' snapshots in
/// force (compared in place: the request path neither collects nor counts
/// references).
fn is_current(built: &Exposed, lock: &Arc<Lock>, v: &VirtualRoute) -> bool {
    let (built_lock, snapshots) = built.built_from();
    Arc::ptr_eq(built_lock, lock)
        && snapshots.len() == v.members.len()
        && snapshots
            .iter()
            .zip(&v.members)
            .all(|(s, m)| m.route.catalog.is_snapshot(s))
}

/// The composition settings of virtual server `name`, whose renamed and
/// re-described definitions pass gate `gate`, over `members` (each member's
/// configuration with its server's own gate), in configuration order.
pub(crate) fn virtual_spec<'a>(
    name: &str,
    gate: Mode,
    members: impl IntoIterator<Item = (&'a tollgate_config::Member, Mode)>,
) -> VirtualSpec {
    VirtualSpec {
        name: name.to_owned(),
        gate,
        members: members.into_iter().map(|(m, gate)| member_spec(m, gate)).collect(),
    }
}

/// The members that list a definition of `kind` exposed as `name` (the
/// claimants of a collision).
pub(crate) fn claimants(v: &VirtualRoute, kind: tollgate_catalog::Kind, name: &str) -> Vec<Arc<str>> {
    v.members
        .iter()
        .filter(|m| {
            let spec = member_spec(&m.config, m.route.catalog.mode);
            m.route
                .catalog
                .snapshot()
                .of_kind(kind)
                .any(|d| spec.exposed_name(kind, &d.key).as_deref() == Some(name))
        })
        .map(|m| m.route.name.clone())
        .collect()
}

/// The composition settings of member `m`, its server's gate `gate`.
fn member_spec(m: &tollgate_config::Member, gate: Mode) -> MemberSpec {
    MemberSpec {
        server: m.server.clone(),
        gate,
        prefix: m.prefix(),
        tools: m.tools.clone(),
        exclude: m.exclude.clone(),
        rename: m.rename.clone(),
        describe: m.describe.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tollgate_catalog::Kind;

    use super::*;

    /// The composition names what the configuration's own name mapping
    /// names (which validation checks collisions with).
    #[test]
    fn members_are_named_as_the_configuration_names_them() {
        let members = [
            json!({"server": "jira", "tools": ["create", "search", "close"], "exclude": ["close"],
                   "rename": {"search": "find_tickets"}, "describe": {"create": "Opens a ticket."}}),
            json!({"server": "docs", "prefix": ""}),
            json!({"server": "wiki", "prefix": "w.", "exclude": ["drop"]}),
        ];
        for m in members {
            let m: tollgate_config::Member = serde_json::from_value(m).unwrap();
            let spec = member_spec(&m, Mode::Enforce);
            assert_eq!(spec.describe, m.describe);
            for own in ["create", "search", "close", "drop", "other", "find_tickets"] {
                assert_eq!(spec.exposed_name(Kind::Tool, own), m.exposed(own), "{} {own}", m.server);
                assert_eq!(
                    spec.exposed_name(Kind::Prompt, own),
                    m.exposed(own),
                    "{} {own}",
                    m.server
                );
            }
        }
    }
}
