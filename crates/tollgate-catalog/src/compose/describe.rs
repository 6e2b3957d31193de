//! Definitions as a virtual server exposes them: prefixed, renamed where a
//! member's `rename` says so, and re-described where its `describe` does.
//!
//! A name and a description are what a model reads to choose and use a
//! tool, so a definition renamed or re-described is not covered by the
//! member's approval: the catalog approves it as exposed — under the
//! virtual server's name in the lock, keyed by the exposed name, at the
//! revision (hash) of the definition as exposed. Until then it awaits
//! approval: left out under the virtual server's gate `enforce`, exposed
//! and reported under `observe`. A definition only prefixed stays covered
//! by the member's approval: the prefix namespaces the member's own name.
//!
//! The gateway ([`super::Exposed::build`]) and `tollgate catalog
//! diff|approve --server <virtual server>` ([`rewritten`]) build exposed
//! definitions with the same functions, so both hash the same bytes.

use std::time::SystemTime;

use serde_json::Value;

use super::build::member_exposed;
use super::spec::{MemberSpec, VirtualSpec};
use crate::definition::{Definition, Kind};
use crate::lock::Lock;
use crate::snapshot::Snapshot;

/// Member `m`'s definition `kind` `own` as exposed under `exposed`: a tool
/// or prompt takes the exposed name and, when `describe` names it, the
/// description given there.
pub(super) fn shown(m: &MemberSpec, kind: Kind, own: &str, exposed: &str, mut definition: Value) -> Value {
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

/// Whether the lock approves `definition` as virtual server `v` exposes it
/// under `exposed`.
pub(super) fn approved(lock: &Lock, v: &str, kind: Kind, exposed: &str, definition: &Value) -> bool {
    let Some(approval) = lock.get(v, kind, exposed) else {
        return false;
    };
    Definition::new(kind, definition.clone()).is_ok_and(|d| d.revision == approval.revision)
}

/// The renamed and re-described definitions of virtual server `v`, as
/// exposed, in list order, from its members' live catalogs `members` (one
/// snapshot per member server, found by name; a member without one adds
/// nothing): the catalog `tollgate catalog diff` compares with the lock's
/// approvals under `v`'s name and `approve` approves.
pub fn rewritten(v: &VirtualSpec, lock: &Lock, members: &[Snapshot]) -> Snapshot {
    let mut out = Snapshot::empty(&v.name);
    out.synced_at = SystemTime::now();
    for m in &v.members {
        let Some(snapshot) = members.iter().find(|s| s.server == m.server) else {
            continue;
        };
        for (kind, own, _, definition) in member_exposed(m, lock, snapshot) {
            if m.is_rewritten(kind, &own)
                && let Ok(d) = Definition::new(kind, definition)
            {
                out.insert(d);
            }
        }
    }
    out
}
