//! Decisions: default deny, forbid wins, errors deny, the missing-scope
//! convention, observe mode, list filtering, and names that try to inject.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, UNIX_EPOCH};

use common::{engine, policy_dir, user};
use tollgate_config::PolicyMode;
use tollgate_core::{Era, PrincipalKind};
use tollgate_policy::{
    CallRequest, ListItem, ListRequest, PolicyEngine, Reason, Settings, TargetKind, ToolAnnotations, UpstreamGrantFacts,
};

const BASE: &str = r#"
@id("demo-tools")
permit (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::Server::"demo");

@id("no-delete")
forbid (principal, action == Tollgate::Action::"call_tool", resource == Tollgate::Tool::"demo/delete_item")
unless { principal in Tollgate::Group::"admins" };
"#;

fn call<'a>(name: &'a str) -> CallRequest<'a> {
    CallRequest::new("demo", "tools/call").name(Some(name))
}

#[test]
fn default_deny_and_forbid_wins() {
    let (_d, e) = engine(&[("base.cedar", BASE)]);
    let alice = user("alice", &[], None, &[]);
    let d = e.decide(&alice, &call("echo"));
    assert!(d.allowed && d.enforced && d.proceeds());
    assert_eq!(d.reason, Reason::Allow);
    assert_eq!(d.determining_policy_ids, ["demo-tools".into()]);
    assert_eq!(d.generation, 1);

    let d = e.decide(&alice, &call("delete_item"));
    assert_eq!((d.allowed, &d.reason), (false, &Reason::Deny));
    assert_eq!(d.determining_policy_ids, ["no-delete".into()]);
    let admin = user("root", &["admins"], None, &[]);
    assert!(e.decide(&admin, &call("delete_item")).allowed);

    // Nothing permits other routes or other actions: default deny, no ids.
    let d = e.decide(&alice, &CallRequest::new("other", "tools/call").name(Some("echo")));
    assert_eq!(
        (d.allowed, &d.reason, d.determining_policy_ids.len()),
        (false, &Reason::Deny, 0)
    );
    assert!(!e.decide(&alice, &CallRequest::new("demo", "tools/list")).allowed);
    // A named action without a name cannot be decided: denied.
    let d = e.decide(&alice, &CallRequest::new("demo", "tools/call"));
    assert!(matches!(d.reason, Reason::Error { .. }) && !d.allowed);

    let (_d, empty) = engine(&[]);
    assert!(!empty.decide(&alice, &call("echo")).allowed);
}

#[test]
fn an_evaluation_error_denies_even_when_a_permit_matches() {
    let (_d, e) = engine(&[
        ("base.cedar", BASE),
        (
            "ip.cedar",
            r#"@id("office-only")
            forbid (principal, action, resource)
            unless { context.client_ip.isInRange(ip("10.0.0.0/8")) };"#,
        ),
    ]);
    let alice = user("alice", &[], None, &[]);
    // No client address: the forbid cannot be evaluated, and that denies.
    let d = e.decide(&alice, &call("echo"));
    assert!(!d.allowed, "{d:?}");
    match &d.reason {
        Reason::Error { messages } => assert!(messages[0].contains("office-only"), "{messages:?}"),
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(d.determining_policy_ids, ["office-only".into()]);
    let inside: IpAddr = "10.1.2.3".parse().unwrap();
    let outside: IpAddr = "192.0.2.1".parse().unwrap();
    assert!(e.decide(&alice, &call("echo").client_ip(Some(inside))).allowed);
    let d = e.decide(&alice, &call("echo").client_ip(Some(outside)));
    assert_eq!((d.allowed, d.reason), (false, Reason::Deny));
}

#[test]
fn a_policy_can_require_a_read_only_upstream_grant() {
    let (_d, e) = engine(&[
        ("base.cedar", BASE),
        (
            "grant.cedar",
            r#"@id("read-only-github")
            forbid (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::Server::"demo")
            when { context has upstream_grant && context.upstream_grant.present
                   && context.upstream_grant.scopes.contains("repo:write") };"#,
        ),
    ]);
    assert!(e.reads_upstream_grant());
    let alice = user("alice", &[], None, &[]);
    let read = ["repo:read".to_owned()];
    let write = ["repo:read".to_owned(), "repo:write".to_owned()];
    assert!(e.decide(&alice, &with(&read)).allowed);
    let d = e.decide(&alice, &with(&write));
    assert_eq!(
        (d.allowed, &d.determining_policy_ids[..]),
        (false, &["read-only-github".into()][..])
    );
    // The same call again is decided afresh (grants change without the token).
    assert!(e.decide(&alice, &with(&read)).allowed);
    // Not connected yet, or a route without per-user grants: not refused here.
    let none = call("echo").upstream_grant(Some(UpstreamGrantFacts::default()));
    assert!(e.decide(&alice, &none).allowed);
    assert!(e.decide(&alice, &call("echo")).allowed);
    let (_d, plain) = engine(&[("base.cedar", BASE)]);
    assert!(!plain.reads_upstream_grant());
}

/// A call of `echo` with a grant holding `scopes`.
fn with(scopes: &[String]) -> CallRequest<'_> {
    call("echo").upstream_grant(Some(UpstreamGrantFacts { present: true, scopes }))
}

const SCOPED: &str = r#"
@id("demo-tools")
permit (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::Server::"demo");

@id("destructive-needs-admin")
@scope("mcp:admin")
forbid (principal, action == Tollgate::Action::"call_tool", resource)
when { context.annotations.destructive }
unless { context.scopes.contains("mcp:admin") };

@id("writes-need-write")
@scope("mcp:write mcp:admin")
forbid (principal, action == Tollgate::Action::"call_tool", resource)
when { !context.annotations.read_only }
unless { context.scopes.contains("mcp:write") || context.scopes.contains("mcp:admin") };

@id("no-secrets")
forbid (principal, action == Tollgate::Action::"call_tool", resource)
when { resource.name == "leak_secrets" };
"#;

#[test]
fn missing_scope_denials_name_the_scopes_and_only_when_they_would_help() {
    let (_d, e) = engine(&[("scoped.cedar", SCOPED)]);
    let destructive = Some(ToolAnnotations::default());
    let bob = user("bob", &[], None, &["mcp:tools"]);
    let d = e.decide(&bob, &call("drop").annotations(destructive));
    assert!(!d.allowed);
    // Both scope rules determine it; the scopes bob lacks, in policy order.
    assert_eq!(
        d.missing_scopes().unwrap(),
        ["mcp:admin".to_owned(), "mcp:write".to_owned()]
    );
    let mut ids = d.determining_policy_ids.clone();
    ids.sort();
    assert_eq!(ids, ["destructive-needs-admin".into(), "writes-need-write".into()]);

    // With mcp:write only the admin scope is still missing.
    let writer = user("w", &[], None, &["mcp:write"]);
    let d = e.decide(&writer, &call("drop").annotations(destructive));
    assert_eq!(d.missing_scopes().unwrap(), ["mcp:admin".to_owned()]);
    let admin = user("a", &[], None, &["mcp:admin"]);
    assert!(e.decide(&admin, &call("drop").annotations(destructive)).allowed);

    // A plain forbid among the determining policies: a plain denial.
    let d = e.decide(&bob, &call("leak_secrets").annotations(destructive));
    assert_eq!(d.reason, Reason::Deny);
    // Where no permit applies, the scope would not help: a plain denial,
    // so a caller cannot probe which tools exist elsewhere.
    let d = e.decide(&bob, &CallRequest::new("other", "tools/call").name(Some("drop")));
    assert_eq!(d.reason, Reason::Deny);
    assert!(!d.determining_policy_ids.is_empty());
}

#[test]
fn scope_annotations_are_checked_at_load() {
    let dir = policy_dir(&[(
        "bad.cedar",
        "@id(\"p\")\n@scope(\"mcp:admin\")\npermit (principal, action, resource);\n@id(\"f\")\n@scope(\"bad\\\"scope\")\nforbid (principal, action, resource);",
    )]);
    let errors = PolicyEngine::load(Settings::new(dir.path())).unwrap_err().0;
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].message.contains("cannot be on a permit"), "{}", errors[0]);
    assert_eq!(errors[0].line, Some(1));
    assert_eq!(errors[1].line, Some(4));
}

#[test]
fn observe_mode_decides_but_does_not_enforce() {
    let dir = policy_dir(&[("base.cedar", BASE)]);
    let mut settings = Settings::new(dir.path());
    settings.route_modes = HashMap::from([("demo".to_owned(), PolicyMode::Observe)]);
    let e = PolicyEngine::load(settings).unwrap();
    let alice = user("alice", &[], None, &[]);
    let d = e.decide(&alice, &call("delete_item"));
    assert!(!d.allowed && !d.enforced && d.proceeds());
    assert_eq!(d.determining_policy_ids, ["no-delete".into()]);
    let list = e.filter(
        &alice,
        &ListRequest::new("demo", TargetKind::Tool),
        &[ListItem::from("echo"), ListItem::from("delete_item")],
    );
    assert_eq!((list.allowed.clone(), list.enforced), (vec![true, false], false));
    assert!(list.keeps(1));
    assert_eq!(e.mode("demo", None), PolicyMode::Observe);
    assert_eq!(e.mode("other", None), PolicyMode::Enforce);
    assert!(e.decide(&alice, &CallRequest::new("other", "ping")).enforced);

    // A virtual server's own mode overrides its member's; a reload's modes
    // replace the start's.
    let mut modes = std::collections::HashMap::from([("demo".to_owned(), PolicyMode::Observe)]);
    modes.insert("trial".to_owned(), PolicyMode::Observe);
    modes.insert("strict".to_owned(), PolicyMode::Enforce);
    e.set_route_modes(modes);
    assert_eq!(e.mode("other", Some("trial")), PolicyMode::Observe);
    assert_eq!(e.mode("demo", Some("strict")), PolicyMode::Enforce);
    assert_eq!(e.mode("demo", Some("unset")), PolicyMode::Observe);
    let through = CallRequest {
        virtual_server: Some("trial"),
        ..CallRequest::new("other", "ping")
    };
    assert!(!e.decide(&alice, &through).enforced);
}

#[test]
fn lists_show_only_what_the_caller_may_use() {
    let (_d, e) = engine(&[("scoped.cedar", SCOPED)]);
    let bob = user("bob", &[], None, &["mcp:tools"]);
    let read_only = Some(ToolAnnotations::from_hints(Some(true), None, None, None));
    let items = [
        ListItem {
            name: "get",
            annotations: read_only,
        },
        ListItem::from("drop"),
        ListItem {
            name: "leak_secrets",
            annotations: read_only,
        },
        ListItem {
            name: "get",
            annotations: read_only,
        },
    ];
    let list = e.filter(&bob, &ListRequest::new("demo", TargetKind::Tool), &items);
    assert_eq!(list.allowed, [true, false, false, true]);
    assert_eq!((list.errors, list.hidden(), list.generation), (0, 2, 1));
    // The second time from the decision cache; a call agrees with the list.
    assert_eq!(
        e.filter(&bob, &ListRequest::new("demo", TargetKind::Tool), &items),
        list
    );
    assert!(e.decide(&bob, &call("get").annotations(read_only)).allowed);
    assert!(!e.decide(&bob, &call("drop")).allowed);
    let names = e.filter_names(&bob, &ListRequest::new("demo", TargetKind::Tool), &["a", "b"]);
    assert!(names.is_empty(), "unknown annotations are destructive: {names:?}");
    let other = e.filter_names(&bob, &ListRequest::new("other", TargetKind::Tool), &["a"]);
    assert!(other.is_empty());
}

/// Through `eng` the demo's entities are also in `VirtualServer::"eng"`;
/// on the demo's own route, and through another virtual server, they are
/// not.
const THROUGH_ENG: &str = r#"
@id("demo-tools")
permit (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::Server::"demo");

@id("no-add-through-eng")
forbid (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::VirtualServer::"eng")
when { resource.name == "add" };

@id("eng-everything-else")
permit (principal, action, resource in Tollgate::VirtualServer::"eng")
unless { action == Tollgate::Action::"call_tool" };
"#;

#[test]
fn a_virtual_server_holds_the_entities_of_calls_through_it() {
    let (_d, e) = engine(&[("eng.cedar", THROUGH_ENG)]);
    let alice = user("alice", &[], None, &[]);
    let add = call("add");
    // Decided (and cached) on the route first: a call through `eng` must
    // not find that decision.
    assert!(e.decide(&alice, &add).allowed);
    let d = e.decide(&alice, &add.virtual_server(Some("eng")));
    assert_eq!(
        (d.allowed, &*d.determining_policy_ids),
        (false, &["no-add-through-eng".into()][..])
    );
    assert!(e.decide(&alice, &add).allowed);
    assert!(e.decide(&alice, &add.virtual_server(Some("ops"))).allowed);
    assert!(e.decide(&alice, &call("echo").virtual_server(Some("eng"))).allowed);
    // Every other action: the objects and the server itself are in `eng`.
    for (method, name) in [
        ("resources/read", Some("demo://readme")),
        ("prompts/get", Some("greeting")),
        ("tools/list", None),
        ("ping", None),
    ] {
        let req = CallRequest::new("demo", method).name(name);
        assert!(!e.decide(&alice, &req).allowed, "{method} on the route");
        let d = e.decide(&alice, &req.virtual_server(Some("eng")));
        assert!(d.allowed, "{method} through eng: {d:?}");
        assert_eq!(d.determining_policy_ids, ["eng-everything-else".into()]);
        assert!(
            !e.decide(&alice, &req.virtual_server(Some("ops"))).allowed,
            "{method} through ops"
        );
    }
    // Lists agree with calls, from the decision cache the second time.
    let items = [ListItem::from("add"), ListItem::from("echo")];
    let mut list = ListRequest::new("demo", TargetKind::Tool);
    assert_eq!(e.filter(&alice, &list, &items).allowed, [true, true]);
    list.virtual_server = Some("eng");
    for _ in 0..2 {
        assert_eq!(e.filter(&alice, &list, &items).allowed, [false, true]);
    }
    list.virtual_server = None;
    assert_eq!(e.filter(&alice, &list, &items).allowed, [true, true]);
}

#[test]
fn hostile_names_are_only_names() {
    let (_d, e) = engine(&[(
        "p.cedar",
        r#"@id("echo-only")
        permit (principal, action == Tollgate::Action::"call_tool", resource == Tollgate::Tool::"demo/echo");
        @id("weird")
        forbid (principal, action, resource == Tollgate::Tool::"demo/x\"); permit(principal, action, resource); //");"#,
    )]);
    let alice = user("alice", &[], None, &[]);
    for name in [
        "x\"); permit(principal, action, resource); //",
        "echo\"",
        "*",
        "../echo",
        "demo/echo",
        "",
    ] {
        let d = e.decide(&alice, &call(name));
        assert!(!d.allowed, "{name:?} allowed");
    }
    let d = e.decide(&alice, &call("x\"); permit(principal, action, resource); //"));
    assert_eq!(d.determining_policy_ids, ["weird".into()]);
    assert!(e.decide(&alice, &call("echo")).allowed);
}

#[test]
fn context_facts_reach_the_policies() {
    let (_d, e) = engine(&[(
        "ctx.cedar",
        r#"@id("facts")
        permit (principal is Tollgate::Service, action == Tollgate::Action::"call_tool", resource)
        when {
          context.route == "demo" && context.method == "tools/call" && context.era == "legacy" &&
          context.issuer == "https://idp.example.com" && context.audience.contains("https://gw.example.com/mcp/demo") &&
          context.args.hasTag("repo") && context.args.getTag("repo") == "acme/x" &&
          context.now >= datetime("2026-12-02T00:00:00Z") && context.weekday == 3 && context.hour == 9 &&
          context.minute == 30 && principal has cost_center && principal.cost_center == "cc-7" &&
          principal has client_id && principal.client_id == "cli" &&
          principal.groups.contains("bots") && resource.server == "demo"
        };"#,
    )]);
    let mut bot = (*user("ci", &["bots"], Some("infra"), &[])).clone();
    bot.kind = PrincipalKind::Service;
    bot.cost_center = Some("cc-7".into());
    let bot = std::sync::Arc::new(bot);
    // 2026-12-02T09:30:00Z, a Wednesday.
    let when = UNIX_EPOCH + Duration::from_secs(1_796_203_800);
    let args = [("Repo", "acme/x")];
    let req = call("t").era(Era::Legacy).args(&args).at(when);
    let d = e.decide(&bot, &req);
    assert!(d.allowed, "{d:?}");
    let other = [("repo", "acme/y")];
    assert!(!e.decide(&bot, &req.args(&other)).allowed);
    assert!(!e.decide(&bot, &req.era(Era::Modern)).allowed);
}
