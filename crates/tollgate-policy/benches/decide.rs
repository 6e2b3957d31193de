//! Decision cost with 100 policies, request and entity building included.
//!
//! `cargo bench -p tollgate-policy`. The policy set mixes what a security
//! team writes: team-owned servers, group grants with conditions, per-user
//! grants, kill switches and argument rules on single tools, and the global
//! rules of `policies/examples/` (contractors, destructive tools, after
//! hours, plumbing). `naive/*` is the same decision through Cedar's public
//! API with everything built per call, for comparison.

#![allow(missing_docs, clippy::unwrap_used, reason = "benchmark")]

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use cedar_policy::{
    Authorizer, Context, Entities, Entity, EntityUid, PolicySet, Request, RestrictedExpression, Schema,
};
use criterion::{Criterion, criterion_group, criterion_main};
use tollgate_core::{Principal, PrincipalKind};
use tollgate_policy::{CallRequest, ListItem, ListRequest, PolicyEngine, Settings, TargetKind, ToolAnnotations};

fn policies() -> String {
    let mut p = String::new();
    let mut add = |text: String| p.push_str(&text);
    for i in 0..40 {
        add(format!(
            "@id(\"team{i}\") permit (principal in Tollgate::Team::\"team{i}\", action, resource in Tollgate::Server::\"srv{i}\");\n"
        ));
    }
    for i in 0..20 {
        add(format!(
            "@id(\"kill{i}\") forbid (principal, action == Tollgate::Action::\"call_tool\", resource == Tollgate::Tool::\"srv{i}/dangerous{i}\");\n"
        ));
    }
    for i in 0..15 {
        add(format!(
            "@id(\"group{i}\") permit (principal in Tollgate::Group::\"g{i}\", action in Tollgate::Action::\"invoke\", resource in Tollgate::Server::\"shared{i}\")
             when {{ context.annotations.read_only || context.scopes.contains(\"mcp:write\") }};\n"
        ));
    }
    for i in 0..10 {
        add(format!(
            "@id(\"user{i}\") permit (principal == Tollgate::User::\"user{i}\", action, resource in Tollgate::Server::\"srv{i}\");\n"
        ));
    }
    for i in 0..10 {
        add(format!(
            "@id(\"args{i}\") forbid (principal, action == Tollgate::Action::\"call_tool\", resource == Tollgate::Tool::\"srv{i}/push\")
             when {{ context.args.hasTag(\"repo\") && context.args.getTag(\"repo\") like \"prod-*\" }};\n"
        ));
    }
    add(GLOBAL.to_owned());
    p
}

/// Five global rules: every call evaluates them.
const GLOBAL: &str = r#"
@id("plumbing") permit (principal, action == Tollgate::Action::"other_method", resource);
@id("contractors") forbid (principal in Tollgate::Group::"contractors", action == Tollgate::Action::"call_tool", resource)
  unless { context.annotations.read_only };
@id("no-delete-repo") forbid (principal, action == Tollgate::Action::"call_tool", resource is Tollgate::Tool)
  when { resource.name == "delete_repository" };
@id("destructive") @scope("mcp:admin") forbid (principal, action == Tollgate::Action::"call_tool", resource)
  when { context.annotations.destructive } unless { context.scopes.contains("mcp:admin") };
@id("after-hours") forbid (principal, action == Tollgate::Action::"call_tool", resource)
  unless { context.annotations.read_only } unless { context.weekday <= 5 && context.hour >= 8 && context.hour < 18 };
"#;

fn alice() -> Arc<Principal> {
    Arc::new(Principal {
        issuer: "https://idp.example.com".into(),
        subject: "alice".into(),
        client_id: Some("cli".into()),
        token_id: Some("t1".into()),
        audience: vec!["https://gw.example.com/mcp/srv5".into()],
        groups: vec!["engineering".into(), "g3".into()],
        team: Some("team5".into()),
        cost_center: Some("cc-5".into()),
        scopes: vec!["mcp:tools".into()],
        expires_at: u64::MAX,
        kind: PrincipalKind::User,
    })
}

fn engine(dir: &Path, decision_cache: bool) -> PolicyEngine {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/schema.cedarschema");
    std::fs::copy(schema, dir.join("schema.cedarschema")).unwrap();
    std::fs::write(dir.join("bench.cedar"), policies()).unwrap();
    let mut settings = Settings::new(dir);
    settings.decision_cache_entries = if decision_cache { 100_000 } else { 0 };
    let e = PolicyEngine::load(settings).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.status().policies, 100);
    e
}

/// A Wednesday, 10:00 UTC: inside the business hours of `after-hours`.
fn wednesday_morning() -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_796_205_600)
}

fn read_only() -> Option<ToolAnnotations> {
    Some(ToolAnnotations::from_hints(Some(true), None, None, None))
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let uncached = engine(dir.path(), false);
    let cached = engine(dir.path(), true);
    decisions(c, &uncached, &cached);
    lists(c, &uncached, &cached);
    naive(c);
}

fn decisions(c: &mut Criterion, uncached: &PolicyEngine, cached: &PolicyEngine) {
    let alice = alice();
    let tool = |name| {
        CallRequest::new("srv5", "tools/call")
            .name(Some(name))
            .at(wednesday_morning())
    };
    let allow = tool("get_balance").annotations(read_only());
    let destructive = tool("refund");
    let args = [("repo", "prod-ledger")];
    let pushed = tool("push").args(&args).annotations(read_only());
    let list = CallRequest::new("srv5", "tools/list").at(wednesday_morning());
    assert!(uncached.decide(&alice, &allow).allowed);
    assert!(uncached.decide(&alice, &destructive).missing_scopes().is_some());
    assert!(!uncached.decide(&alice, &pushed).allowed);
    assert!(uncached.decide(&alice, &list).allowed);
    for (name, req) in [
        ("allow", &allow),
        ("deny_missing_scope", &destructive),
        ("argument_rule", &pushed),
        ("list_method", &list),
    ] {
        c.bench_function(&format!("decide/uncached/{name}"), |b| {
            b.iter(|| uncached.decide(black_box(&alice), black_box(req)))
        });
    }
    c.bench_function("decide/uncached/first_sight_of_a_token", |b| {
        b.iter(|| uncached.decide(&alice_clone(&alice), black_box(&allow)))
    });
    c.bench_function("decide/cached/allow", |b| {
        b.iter(|| cached.decide(black_box(&alice), black_box(&allow)))
    });
}

fn lists(c: &mut Criterion, uncached: &PolicyEngine, cached: &PolicyEngine) {
    let alice = alice();
    let names: Vec<String> = (0..50).map(|i| format!("tool_{i}")).collect();
    let items: Vec<ListItem<'_>> = names
        .iter()
        .enumerate()
        .map(|(i, n)| ListItem {
            name: n,
            annotations: read_only().filter(|_| i % 2 == 0),
        })
        .collect();
    let mut tools = ListRequest::new("srv5", TargetKind::Tool);
    tools.time = Some(wednesday_morning());
    assert_eq!(uncached.filter(&alice, &tools, &items).hidden(), 25);
    for (name, e) in [("uncached", uncached), ("cached", cached)] {
        c.bench_function(&format!("filter/{name}/50_tools"), |b| {
            b.iter(|| e.filter(black_box(&alice), &tools, black_box(&items)))
        });
    }
}

fn alice_clone(p: &Arc<Principal>) -> Arc<Principal> {
    Arc::new(Principal::clone(p))
}

fn uid(s: &str) -> EntityUid {
    EntityUid::from_str(s).unwrap()
}

fn string(v: &str) -> RestrictedExpression {
    RestrictedExpression::new_string(v.to_owned())
}

fn naive_entities(schema: &Schema) -> Entities {
    let s = string;
    let principal = Entity::new(
        uid(r#"Tollgate::User::"alice""#),
        HashMap::from([
            ("subject".to_owned(), s("alice")),
            ("issuer".to_owned(), s("https://idp.example.com")),
            (
                "groups".to_owned(),
                RestrictedExpression::new_set([s("engineering"), s("g3")]),
            ),
            ("team".to_owned(), s("team5")),
            ("scopes".to_owned(), RestrictedExpression::new_set([s("mcp:tools")])),
        ]),
        HashSet::from([uid(r#"Tollgate::Team::"team5""#), uid(r#"Tollgate::Group::"g3""#)]),
    )
    .unwrap();
    let tool = Entity::new(
        uid(r#"Tollgate::Tool::"srv5/get_balance""#),
        HashMap::from([("name".to_owned(), s("get_balance")), ("server".to_owned(), s("srv5"))]),
        HashSet::from([uid(r#"Tollgate::Server::"srv5""#)]),
    )
    .unwrap();
    Entities::from_entities([principal, tool], Some(schema)).unwrap()
}

fn naive_context() -> Context {
    let hint = RestrictedExpression::new_bool;
    let annotations = [
        ("read_only", true),
        ("destructive", false),
        ("idempotent", true),
        ("open_world", true),
    ];
    Context::from_pairs([
        (
            "scopes".to_owned(),
            RestrictedExpression::new_set([string("mcp:tools")]),
        ),
        ("hour".to_owned(), RestrictedExpression::new_long(10)),
        ("weekday".to_owned(), RestrictedExpression::new_long(3)),
        (
            "annotations".to_owned(),
            RestrictedExpression::new_record(annotations.map(|(k, v)| (k.to_owned(), hint(v)))).unwrap(),
        ),
        (
            "args".to_owned(),
            RestrictedExpression::new_entity_uid(uid(r#"Tollgate::Arguments::"""#)),
        ),
    ])
    .unwrap()
}

/// The same allow decision through the public API, everything built per call.
fn naive(c: &mut Criterion) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/schema.cedarschema"))
        .unwrap();
    let (schema, _) = Schema::from_cedarschema_str(&text).unwrap();
    let set = PolicySet::from_str(&policies()).unwrap();
    let authorizer = Authorizer::new();
    c.bench_function("naive/allow", |b| {
        b.iter(|| {
            let entities = naive_entities(&schema);
            let request = Request::new(
                uid(r#"Tollgate::User::"alice""#),
                uid(r#"Tollgate::Action::"call_tool""#),
                uid(r#"Tollgate::Tool::"srv5/get_balance""#),
                naive_context(),
                None,
            )
            .unwrap();
            authorizer.is_authorized(&request, &set, &entities)
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
