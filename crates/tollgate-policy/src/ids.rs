//! The names of the Cedar model and the mapping of MCP names to entity ids.
//!
//! Every entity id is built through the Cedar API ([`EntityId::new`]), never
//! by putting a name into policy text, so a tool called
//! `x"); permit(principal, action, resource); //` is just an odd id. Ids of
//! named objects are `<route>/<name>`: route names cannot contain `/`, so
//! the first `/` splits them unambiguously. A virtual server's id is its
//! name.

use std::str::FromStr;

use cedar_policy::{EntityId, EntityTypeName, EntityUid};

use crate::error::Error;
use crate::model::{Action, TargetKind};

/// The namespace of every Tollgate entity type and action.
pub const NAMESPACE: &str = "Tollgate";

/// The parsed entity type names and action ids of the model.
#[derive(Debug, Clone)]
pub(crate) struct Types {
    pub(crate) user: EntityTypeName,
    pub(crate) service: EntityTypeName,
    pub(crate) group: EntityTypeName,
    pub(crate) team: EntityTypeName,
    pub(crate) server: EntityTypeName,
    pub(crate) virtual_server: EntityTypeName,
    pub(crate) tool: EntityTypeName,
    pub(crate) resource: EntityTypeName,
    pub(crate) prompt: EntityTypeName,
    pub(crate) arguments: EntityTypeName,
    actions: Vec<EntityUid>,
}

impl Types {
    pub(crate) fn new() -> Result<Types, Error> {
        let ty = |name: &str| {
            EntityTypeName::from_str(&format!("{NAMESPACE}::{name}"))
                .map_err(|e| Error::Internal(format!("entity type {name}: {e}")))
        };
        let action = ty("Action")?;
        Ok(Types {
            user: ty("User")?,
            service: ty("Service")?,
            group: ty("Group")?,
            team: ty("Team")?,
            server: ty("Server")?,
            virtual_server: ty("VirtualServer")?,
            tool: ty("Tool")?,
            resource: ty("Resource")?,
            prompt: ty("Prompt")?,
            arguments: ty("Arguments")?,
            actions: Action::ALL
                .iter()
                .map(|a| EntityUid::from_type_name_and_id(action.clone(), EntityId::new(a.as_str())))
                .collect(),
        })
    }

    /// `Tollgate::Action::"<action>"`.
    pub(crate) fn action(&self, action: Action) -> &EntityUid {
        // `actions` holds one uid per `Action::ALL` entry, in order.
        &self.actions[action.index()]
    }

    pub(crate) fn uid(ty: &EntityTypeName, id: &str) -> EntityUid {
        EntityUid::from_type_name_and_id(ty.clone(), EntityId::new(id))
    }

    /// `Tollgate::Server::"<route>"`.
    pub(crate) fn server_uid(&self, route: &str) -> EntityUid {
        Types::uid(&self.server, route)
    }

    /// `Tollgate::VirtualServer::"<name>"`.
    pub(crate) fn virtual_server_uid(&self, name: &str) -> EntityUid {
        Types::uid(&self.virtual_server, name)
    }

    pub(crate) fn target_type(&self, kind: TargetKind) -> &EntityTypeName {
        match kind {
            TargetKind::Tool => &self.tool,
            TargetKind::Resource => &self.resource,
            TargetKind::Prompt => &self.prompt,
        }
    }

    /// `Tollgate::Tool::"<route>/<name>"` (or `Resource`, `Prompt`).
    pub(crate) fn target_uid(&self, kind: TargetKind, route: &str, name: &str) -> EntityUid {
        Types::uid(self.target_type(kind), &target_id(route, name))
    }
}

/// The entity id of a named object on a route: `<route>/<name>`.
pub fn target_id(route: &str, name: &str) -> String {
    let mut id = String::with_capacity(route.len() + 1 + name.len());
    id.push_str(route);
    id.push('/');
    id.push_str(name);
    id
}

#[cfg(test)]
mod tests {
    use cedar_policy::PolicySet;
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn ids_name_route_and_object() {
        let t = Types::new().unwrap();
        let uid = t.target_uid(TargetKind::Tool, "github", "delete_repository");
        assert_eq!(uid.to_string(), r#"Tollgate::Tool::"github/delete_repository""#);
        let uri = t.target_uid(TargetKind::Resource, "files", "file:///a/b");
        assert_eq!(uri.id().unescaped(), "files/file:///a/b");
        assert_eq!(
            t.action(Action::ListPrompts).to_string(),
            r#"Tollgate::Action::"list_prompts""#
        );
    }

    proptest! {
        /// Any name, however hostile, maps to an id that round-trips through
        /// Cedar's syntax as exactly that id, and never becomes policy text.
        #[test]
        fn any_name_maps_to_exactly_one_entity(name in any::<String>(), route in "[A-Za-z0-9_.-]{1,16}") {
            let t = Types::new().unwrap();
            let uid = t.target_uid(TargetKind::Tool, &route, &name);
            prop_assert_eq!(uid.id().unescaped(), target_id(&route, &name));
            let printed = uid.to_string();
            let parsed = EntityUid::from_str(&printed).unwrap();
            prop_assert_eq!(&parsed, &uid);
            // Used in a policy, the printed uid is one literal: the policy
            // set has exactly one policy, scoped to exactly this resource.
            let text = format!("forbid (principal, action, resource == {printed});");
            let set = PolicySet::from_str(&text).unwrap();
            prop_assert_eq!(set.policies().count(), 1);
        }

        #[test]
        fn hostile_names_cannot_inject_policies(suffix in ".{0,24}") {
            let t = Types::new().unwrap();
            let name = format!("x\"); permit(principal, action, resource); //{suffix}");
            let uid = t.target_uid(TargetKind::Prompt, "demo", &name);
            let text = format!("forbid (principal, action, resource == {uid});");
            let set = PolicySet::from_str(&text).unwrap();
            prop_assert_eq!(set.policies().count(), 1);
            prop_assert!(set.policies().all(|p| p.effect() == cedar_policy::Effect::Forbid));
        }
    }
}
