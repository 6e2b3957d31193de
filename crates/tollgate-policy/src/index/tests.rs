//! The scope index selects exactly the policies whose scope matches:
//! checked against Cedar itself on generated scopes and requests.

use std::collections::HashSet;
use std::str::FromStr;
use std::sync::Arc;

use cedar_policy::{Authorizer, Decision, EntityUid, Policy, PolicyId, PolicySet};
use cedar_policy_core::ast::{Context, Entity};
use proptest::prelude::*;
use ref_cast::RefCast as _;
use tollgate_core::{Principal, PrincipalKind};

use super::*;
use crate::ids::Types;
use crate::principal::PrincipalFacts;
use crate::request;

fn uid(s: &str) -> EntityUid {
    EntityUid::from_str(s).unwrap()
}

#[test]
fn bitsets() {
    let mut a = Bits::empty(130);
    a.set(0);
    a.set(129);
    a.set(500);
    assert!(a.contains(129) && !a.contains(1) && !a.contains(500));
    assert_eq!(PolicyIndex::ones(&a), [0, 129]);
    let mut b = Bits::empty(130);
    b.set(129);
    assert_eq!(PolicyIndex::ones(&a.without(&b)), [0]);
    b.or(&a);
    b.and(&a);
    assert_eq!(b, a);
}

#[test]
fn scopes_admit_what_cedar_would() {
    let alice = uid(r#"T::User::"alice""#);
    let groups = [uid(r#"T::Group::"dev""#)];
    assert!(Scope::In(uid(r#"T::Group::"dev""#)).admits(&alice, &groups));
    assert!(Scope::In(alice.clone()).admits(&alice, &groups));
    assert!(!Scope::In(uid(r#"T::Group::"ops""#)).admits(&alice, &groups));
    assert!(!Scope::Eq(uid(r#"T::Group::"dev""#)).admits(&alice, &groups));
    let user = EntityTypeName::from_str("T::User").unwrap();
    assert!(Scope::Is(user.clone()).admits(&alice, &[]));
    assert!(!Scope::IsIn(user, uid(r#"T::Group::"ops""#)).admits(&alice, &groups));
}

const PRINCIPALS: [&str; 8] = [
    "principal",
    r#"principal in Tollgate::Group::"g1""#,
    r#"principal in Tollgate::Group::"g2""#,
    r#"principal in Tollgate::Team::"t1""#,
    r#"principal == Tollgate::User::"u1""#,
    "principal is Tollgate::User",
    r#"principal is Tollgate::Service in Tollgate::Group::"g1""#,
    r#"principal in Tollgate::Service::"u2""#,
];
const ACTIONS: [&str; 7] = [
    "action",
    r#"action == Tollgate::Action::"call_tool""#,
    r#"action in [Tollgate::Action::"call_tool", Tollgate::Action::"read_resource"]"#,
    r#"action in Tollgate::Action::"invoke""#,
    r#"action in [Tollgate::Action::"discover"]"#,
    r#"action == Tollgate::Action::"other_method""#,
    r#"action in [Tollgate::Action::"get_prompt", Tollgate::Action::"list_tools"]"#,
];
const RESOURCES: [&str; 12] = [
    "resource",
    r#"resource in Tollgate::Server::"s1""#,
    r#"resource in Tollgate::Server::"s2""#,
    r#"resource == Tollgate::Tool::"s1/x""#,
    "resource is Tollgate::Tool",
    r#"resource is Tollgate::Resource in Tollgate::Server::"s1""#,
    r#"resource == Tollgate::Server::"s1""#,
    r#"resource in Tollgate::Prompt::"s2/y""#,
    r#"resource in Tollgate::VirtualServer::"v1""#,
    r#"resource in Tollgate::VirtualServer::"v2""#,
    r#"resource is Tollgate::Tool in Tollgate::VirtualServer::"v1""#,
    r#"resource is Tollgate::Server in Tollgate::VirtualServer::"v1""#,
];

/// Every combination of the scopes above, as permits without conditions:
/// Cedar allows a request with one of them alone exactly when its scope
/// matches.
fn policies() -> Vec<Policy> {
    let mut out = Vec::new();
    for p in PRINCIPALS {
        for a in ACTIONS {
            for r in RESOURCES {
                let id = PolicyId::new(format!("p{}", out.len()));
                out.push(Policy::parse(Some(id), format!("permit ({p}, {a}, {r});")).unwrap());
            }
        }
    }
    out
}

fn action_groups(a: Action) -> Vec<EntityUid> {
    let group = |g: &str| uid(&format!(r#"Tollgate::Action::"{g}""#));
    match a {
        Action::CallTool | Action::ReadResource | Action::GetPrompt => vec![group("invoke")],
        Action::ListTools | Action::ListResources | Action::ListPrompts => vec![group("discover")],
        Action::OtherMethod => vec![],
    }
}

#[derive(Debug, Clone)]
struct Req {
    service: bool,
    subject: &'static str,
    groups: Vec<&'static str>,
    team: Option<&'static str>,
    action: Action,
    route: &'static str,
    name: &'static str,
    /// The virtual server the call comes through.
    via: Option<&'static str>,
}

fn req() -> impl Strategy<Value = Req> {
    (
        any::<bool>(),
        prop::sample::select(vec!["u1", "u2", "u3"]),
        prop::sample::subsequence(vec!["g1", "g2", "g3"], 0..=3),
        prop::option::of(prop::sample::select(vec!["t1", "t2"])),
        prop::sample::select(Action::ALL.to_vec()),
        prop::sample::select(vec!["s1", "s2", "s3"]),
        prop::sample::select(vec!["x", "y"]),
        prop::sample::select(vec![None, Some("v1"), Some("v2")]),
    )
        .prop_map(|(service, subject, groups, team, action, route, name, via)| Req {
            service,
            subject,
            groups,
            team,
            action,
            route,
            name,
            via,
        })
}

/// The policies the index selects for `r`, after checking that they are
/// exactly those Cedar's authorizer finds matching.
fn selected_like_cedar(r: &Req) -> HashSet<usize> {
    let types = Types::new().unwrap();
    let all = policies();
    let with_bodies = all.iter().cloned().map(|p| (p, None)).collect();
    let index = PolicyIndex::new(with_bodies, |a| types.action(a).clone(), action_groups);
    let principal = Principal {
        issuer: "i".into(),
        subject: r.subject.into(),
        client_id: None,
        token_id: None,
        audience: vec![],
        groups: r.groups.iter().map(|g| (*g).to_owned()).collect(),
        team: r.team.map(str::to_owned),
        cost_center: None,
        scopes: vec![],
        expires_at: 0,
        kind: if r.service {
            PrincipalKind::Service
        } else {
            PrincipalKind::User
        },
    };
    let facts = PrincipalFacts::new(&types, &principal);
    let within = match r.action.target() {
        Some(_) => request::Within::target(&types, r.route, r.via),
        None => request::Within::server(&types, r.via),
    };
    let (resource, entity) = match r.action.target() {
        Some(kind) => request::target_entity(&types, kind, r.route, r.name, &within),
        None => request::server_entity(&types, r.route, &within),
    };
    let parents: HashSet<_> = action_groups(r.action).into_iter().map(Into::into).collect();
    let action_entity = Arc::new(Entity::new_with_attr_partial_value(
        types.action(r.action).clone().into(),
        [],
        HashSet::new(),
        parents,
        [],
    ));
    let action = (types.action(r.action), &action_entity);
    let (request, entities) = request::assemble(&facts, action, (&resource, &entity), None, Context::empty()).unwrap();
    let request = cedar_policy::Request::ref_cast(&request);
    let entities = cedar_policy::Entities::ref_cast(&entities);
    let bits = index.principal_bits(&facts.uid, &facts.ancestors);
    let selected: HashSet<usize> = PolicyIndex::ones(&index.select(&bits, r.action, &resource, within.uids()))
        .into_iter()
        .collect();
    let authorizer = Authorizer::new();
    for (i, p) in all.iter().enumerate() {
        let alone = PolicySet::from_policies([p.clone()]).unwrap();
        let matches = authorizer.is_authorized(request, &alone, entities).decision() == Decision::Allow;
        assert_eq!(matches, selected.contains(&i), "policy {p} for {r:?}");
    }
    // The index narrows: most of the 672 combinations do not apply.
    assert!(selected.len() < all.len() / 2);
    selected
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_index_selects_every_policy_whose_scope_matches(r in req()) {
        selected_like_cedar(&r);
    }
}

/// Every action, on a route and through a virtual server: `resource in
/// VirtualServer::"v1"` matches exactly the calls and lists made through
/// `v1`, whatever the action.
#[test]
fn virtual_server_scopes_match_only_through_the_virtual_server() {
    let any_principal_and_action = |resource: &str| {
        let text = format!("permit (principal, action, {resource});");
        policies().iter().position(|p| p.to_string().contains(&text)).unwrap()
    };
    let in_v1 = any_principal_and_action(r#"resource in Tollgate::VirtualServer::"v1""#);
    let in_s1 = any_principal_and_action(r#"resource in Tollgate::Server::"s1""#);
    for action in Action::ALL {
        for via in [None, Some("v1"), Some("v2")] {
            let r = Req {
                service: false,
                subject: "u1",
                groups: vec!["g1"],
                team: None,
                action,
                route: "s1",
                name: "x",
                via,
            };
            let selected = selected_like_cedar(&r);
            assert_eq!(selected.contains(&in_v1), via == Some("v1"), "{r:?}");
            assert!(selected.contains(&in_s1), "{r:?}");
        }
    }
}
