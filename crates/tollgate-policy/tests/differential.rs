//! The engine decides exactly as Cedar's own authorizer does on the whole
//! policy set: same decision, same determining policies. Generated policy
//! sets (scopes and conditions) and requests, on a route and through a
//! virtual server; the reference builds its entities and context through
//! Cedar's public API, with the schema, and lets Cedar close the hierarchy.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::str::FromStr;
use std::time::{Duration, UNIX_EPOCH};

use cedar_policy::{
    Authorizer, Context, Decision, Entities, Entity, EntityUid, Policy, PolicyId, PolicySet, Request,
    RestrictedExpression as X, Schema,
};
use common::{policy_dir, repo_policies, user};
use proptest::prelude::*;
use tollgate_policy::{CallRequest, PolicyEngine, Reason, Settings, ToolAnnotations};

const PRINCIPALS: [&str; 5] = [
    "principal",
    r#"principal in Tollgate::Group::"g1""#,
    r#"principal in Tollgate::Team::"t1""#,
    r#"principal == Tollgate::User::"u1""#,
    "principal is Tollgate::User",
];
const SCOPES: [(&str, &str); 10] = [
    ("action", "resource"),
    (
        r#"action == Tollgate::Action::"call_tool""#,
        r#"resource in Tollgate::Server::"s1""#,
    ),
    (r#"action in Tollgate::Action::"invoke""#, "resource"),
    (
        r#"action == Tollgate::Action::"call_tool""#,
        r#"resource == Tollgate::Tool::"s1/x""#,
    ),
    (
        r#"action in Tollgate::Action::"discover""#,
        r#"resource == Tollgate::Server::"s2""#,
    ),
    (
        r#"action == Tollgate::Action::"read_resource""#,
        r#"resource is Tollgate::Resource in Tollgate::Server::"s1""#,
    ),
    ("action", r#"resource in Tollgate::VirtualServer::"v1""#),
    (
        r#"action == Tollgate::Action::"call_tool""#,
        r#"resource in Tollgate::VirtualServer::"v1""#,
    ),
    (
        r#"action in Tollgate::Action::"discover""#,
        r#"resource in Tollgate::VirtualServer::"v2""#,
    ),
    (
        r#"action == Tollgate::Action::"get_prompt""#,
        r#"resource is Tollgate::Prompt in Tollgate::VirtualServer::"v1""#,
    ),
];
const CONDITIONS: [&str; 8] = [
    "",
    "when { context.hour >= 12 }",
    r#"unless { context.scopes.contains("mcp:admin") }"#,
    r#"when { principal has team && principal.team == "t1" }"#,
    r#"when { context.args.hasTag("repo") && context.args.getTag("repo") like "prod-*" }"#,
    "when { context.annotations.read_only }",
    r#"when { resource in Tollgate::Server::"s1" && context.route == "s1" }"#,
    r#"unless { resource in Tollgate::VirtualServer::"v1" }"#,
];

fn policy_text(i: usize, (forbid, p, s, c): (bool, usize, usize, usize)) -> String {
    let effect = if forbid { "forbid" } else { "permit" };
    let (a, r) = SCOPES[s];
    format!(
        "@id(\"p{i}\")\n{effect} ({}, {a}, {r})\n{};\n",
        PRINCIPALS[p], CONDITIONS[c]
    )
}

#[derive(Debug, Clone)]
struct Call {
    subject: &'static str,
    group: bool,
    team: Option<&'static str>,
    admin: bool,
    method: &'static str,
    route: &'static str,
    name: &'static str,
    /// The virtual server the call comes through.
    via: Option<&'static str>,
    hour: u64,
    repo: Option<&'static str>,
    read_only: bool,
}

fn call() -> impl Strategy<Value = Call> {
    (
        (
            prop::sample::select(vec!["u1", "u2"]),
            any::<bool>(),
            prop::option::of(prop::sample::select(vec!["t1", "t2"])),
            any::<bool>(),
        ),
        prop::sample::select(vec![
            "tools/call",
            "resources/read",
            "prompts/get",
            "tools/list",
            "prompts/list",
            "ping",
        ]),
        (
            prop::sample::select(vec!["s1", "s2"]),
            prop::sample::select(vec!["x", "y"]),
            prop::sample::select(vec![None, Some("v1"), Some("v2")]),
        ),
        (
            0_u64..24,
            prop::option::of(prop::sample::select(vec!["prod-a", "dev-b"])),
            any::<bool>(),
        ),
    )
        .prop_map(
            |((subject, group, team, admin), method, (route, name, via), (hour, repo, read_only))| Call {
                subject,
                group,
                team,
                admin,
                method,
                route,
                name,
                via,
                hour,
                repo,
                read_only,
            },
        )
}

fn uid(t: &str, id: &str) -> EntityUid {
    let ty = cedar_policy::EntityTypeName::from_str(&format!("Tollgate::{t}")).unwrap();
    EntityUid::from_type_name_and_id(ty, cedar_policy::EntityId::new(id))
}

fn s(v: &str) -> X {
    X::new_string(v.to_owned())
}

/// The reference's entities (checked against the schema, the hierarchy
/// closed by Cedar: the resource under its server, the server under the
/// virtual server) and resource.
fn reference_entities(schema: &Schema, c: &Call) -> (Entities, EntityUid) {
    let mut attrs = HashMap::from([
        ("subject".to_owned(), s(c.subject)),
        ("issuer".to_owned(), s("https://idp.example.com")),
        ("client_id".to_owned(), s("cli")),
        ("groups".to_owned(), X::new_set(c.group.then(|| s("g1")))),
        ("scopes".to_owned(), X::new_set(c.admin.then(|| s("mcp:admin")))),
    ]);
    let mut parents: HashSet<EntityUid> = c.group.then(|| uid("Group", "g1")).into_iter().collect();
    if let Some(t) = c.team {
        attrs.insert("team".to_owned(), s(t));
        parents.insert(uid("Team", t));
    }
    let principal = Entity::new(uid("User", c.subject), attrs, parents).unwrap();
    let server = uid("Server", c.route);
    let via = c.via.map(|v| uid("VirtualServer", v)).into_iter().collect();
    let name = HashMap::from([("name".to_owned(), s(c.route))]);
    let server_entity = Entity::new(server.clone(), name, via).unwrap();
    let tags = c.repo.map(|r| ("repo".to_owned(), s(r)));
    let args = Entity::new_with_tags(uid("Arguments", ""), [], [], tags).unwrap();
    let mut entities = vec![principal, server_entity, args];
    let (ty, mut attrs) = match c.method {
        "tools/call" => ("Tool", vec![("name", c.name)]),
        "prompts/get" => ("Prompt", vec![("name", c.name)]),
        "resources/read" => ("Resource", vec![("uri", c.name), ("scheme", "")]),
        _ => return (Entities::from_entities(entities, Some(schema)).unwrap(), server),
    };
    attrs.push(("server", c.route));
    let resource = uid(ty, &format!("{}/{}", c.route, c.name));
    let attrs = attrs.into_iter().map(|(k, v)| (k.to_owned(), s(v))).collect();
    entities.push(Entity::new(resource.clone(), attrs, HashSet::from([server])).unwrap());
    (Entities::from_entities(entities, Some(schema)).unwrap(), resource)
}

fn reference_context(c: &Call) -> Context {
    let b = X::new_bool;
    let annotations = [
        ("read_only", b(c.read_only)),
        ("destructive", b(!c.read_only)),
        ("idempotent", b(c.read_only)),
        ("open_world", b(true)),
    ];
    Context::from_pairs([
        ("route".to_owned(), s(c.route)),
        ("method".to_owned(), s(c.method)),
        ("era".to_owned(), s("modern")),
        ("issuer".to_owned(), s("https://idp.example.com")),
        (
            "audience".to_owned(),
            X::new_set([s("https://gw.example.com/mcp/demo")]),
        ),
        ("scopes".to_owned(), X::new_set(c.admin.then(|| s("mcp:admin")))),
        ("client_ip".to_owned(), X::new_ip("10.0.0.1")),
        (
            "now".to_owned(),
            X::new_datetime(format!("2026-12-02T{:02}:00:00Z", c.hour)),
        ),
        ("hour".to_owned(), X::new_long(c.hour as i64)),
        ("minute".to_owned(), X::new_long(0)),
        ("weekday".to_owned(), X::new_long(3)),
        (
            "annotations".to_owned(),
            X::new_record(annotations.map(|(k, v)| (k.to_owned(), v))).unwrap(),
        ),
        ("args".to_owned(), X::new_entity_uid(uid("Arguments", ""))),
    ])
    .unwrap()
}

/// What Cedar's authorizer says, with everything built through its API.
fn reference(schema: &Schema, set: &PolicySet, c: &Call) -> (bool, BTreeSet<String>) {
    let (entities, resource) = reference_entities(schema, c);
    let action = match c.method {
        "tools/call" => "call_tool",
        "prompts/get" => "get_prompt",
        "resources/read" => "read_resource",
        "tools/list" => "list_tools",
        "prompts/list" => "list_prompts",
        _ => "other_method",
    };
    let principal = uid("User", c.subject);
    let request = Request::new(
        principal,
        uid("Action", action),
        resource,
        reference_context(c),
        Some(schema),
    )
    .unwrap();
    let response = Authorizer::new().is_authorized(&request, set, &entities);
    assert_eq!(response.diagnostics().errors().count(), 0);
    let ids = response.diagnostics().reason().map(ToString::to_string).collect();
    (response.decision() == Decision::Allow, ids)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_engine_decides_like_cedar(
        specs in prop::collection::vec((any::<bool>(), 0..PRINCIPALS.len(), 0..SCOPES.len(), 0..CONDITIONS.len()), 1..24),
        calls in prop::collection::vec(call(), 16),
    ) {
        let texts: Vec<String> = specs.iter().enumerate().map(|(i, s)| policy_text(i, *s)).collect();
        let dir = policy_dir(&[("gen.cedar", &texts.concat())]);
        let engine = PolicyEngine::load(Settings::new(dir.path())).unwrap_or_else(|e| panic!("{e}\n{}", texts.concat()));
        let schema_text = std::fs::read_to_string(repo_policies().join("schema.cedarschema")).unwrap();
        let (schema, _) = Schema::from_cedarschema_str(&schema_text).unwrap();
        let set = PolicySet::from_policies(
            texts.iter().enumerate().map(|(i, t)| Policy::parse(Some(PolicyId::new(format!("p{i}"))), t).unwrap()),
        ).unwrap();
        for c in &calls {
            let (allowed, ids) = reference(&schema, &set, c);
            let mut p = (*user(c.subject, if c.group { &["g1"] } else { &[] }, c.team, if c.admin { &["mcp:admin"] } else { &[] })).clone();
            p.audience = vec!["https://gw.example.com/mcp/demo".into()];
            let p = std::sync::Arc::new(p);
            let args = c.repo.map(|r| [("repo", r)]);
            let annotations = ToolAnnotations::from_hints(Some(c.read_only), None, None, None);
            let mut req = CallRequest::new(c.route, c.method).name(Some(c.name)).annotations(Some(annotations)).virtual_server(c.via);
            req = req.client_ip(Some("10.0.0.1".parse().unwrap())).at(UNIX_EPOCH + Duration::from_secs(1_796_169_600 + c.hour * 3600));
            if let Some(a) = &args {
                req = req.args(a);
            }
            // The second decision comes from the decision cache.
            for _ in 0..2 {
                let d = engine.decide(&p, &req);
                prop_assert!(!matches!(d.reason, Reason::Error { .. }), "{:?}", d);
                let got: BTreeSet<String> = d.determining_policy_ids.iter().map(ToString::to_string).collect();
                prop_assert_eq!((d.allowed, got), (allowed, ids.clone()), "{:?}\n{}", c, texts.concat());
            }
        }
    }
}
