//! Console roles and how a signed-in user's groups map to them
//! (`[console.roles]`).

use serde::{Deserialize, Serialize};
use tollgate_config::ConsoleRoles;

/// What a console user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Traffic, spend, catalog, policies, audit records without captures.
    Viewer,
    /// Also captured arguments and results.
    Auditor,
    /// Also approves catalog definitions.
    Approver,
    /// Every role.
    Admin,
}

impl Role {
    /// Its name in config and answers.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Auditor => "auditor",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }
}

/// The roles `groups` hold under `map`: a role is held when one of its
/// groups is among them, or it lists `"*"`.
pub fn roles_of(groups: &[String], map: &ConsoleRoles) -> Vec<Role> {
    let holds = |names: &[String]| names.iter().any(|n| n == "*" || groups.contains(n));
    [
        (Role::Viewer, &map.viewer),
        (Role::Auditor, &map.auditor),
        (Role::Approver, &map.approver),
        (Role::Admin, &map.admin),
    ]
    .into_iter()
    .filter(|(_, names)| holds(names))
    .map(|(role, _)| role)
    .collect()
}

/// Whether `roles` allow what `needed` allows: admin holds every role, and
/// every role can view.
pub(crate) fn allows(roles: &[Role], needed: Role) -> bool {
    roles.contains(&Role::Admin) || roles.contains(&needed) || (needed == Role::Viewer && !roles.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_map_to_roles_and_admin_holds_all() {
        let map = ConsoleRoles {
            viewer: vec!["*".into()],
            auditor: vec!["security".into()],
            approver: vec!["platform".into()],
            admin: vec!["root".into()],
        };
        assert_eq!(roles_of(&[], &map), vec![Role::Viewer]);
        let sec = roles_of(&["security".into()], &map);
        assert!(allows(&sec, Role::Auditor) && !allows(&sec, Role::Approver));
        let root = roles_of(&["root".into()], &map);
        assert!(
            [Role::Viewer, Role::Auditor, Role::Approver]
                .iter()
                .all(|r| allows(&root, *r))
        );
        let none = roles_of(&["x".into()], &ConsoleRoles::default());
        assert!(none.is_empty() && !allows(&none, Role::Viewer));
    }
}
