//! `tollgate catalog diff|approve --server <virtual server>`: the renamed
//! and re-described definitions of a virtual server as exposed, which the
//! lock approves under the virtual server's name. The catalog builds them
//! (`tollgate_catalog::compose::rewritten`) with the same functions the
//! gateway exposes them with, so both hash the same bytes; this maps the
//! configuration to its settings.

use tollgate_catalog::{Lock, Snapshot};
use tollgate_config::{Config, VirtualServer};

use crate::catalog::catalog_mode;

/// The renamed and re-described definitions of virtual server `v`, as
/// exposed, from its members' live catalogs `members` (one snapshot per
/// member server; the definitions a member's gate lets through, as the
/// gateway exposes them): the catalog `tollgate catalog diff` compares with
/// the lock's approvals under `v`'s name and `approve` approves.
pub fn rewritten(config: &Config, v: &VirtualServer, lock: &Lock, members: &[Snapshot]) -> Snapshot {
    let configured = v.members.iter().filter_map(|m| {
        let server = config.servers.iter().find(|s| s.name.as_str() == m.server)?;
        Some((m, catalog_mode(config.catalog_mode(server))))
    });
    let spec = super::exposed::virtual_spec(v.name.as_str(), catalog_mode(config.catalog.mode), configured);
    tollgate_catalog::compose::rewritten(&spec, lock, members)
}
