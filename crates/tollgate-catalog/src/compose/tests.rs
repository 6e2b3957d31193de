//! Composition: the members' order, names (prefix, filters, renames),
//! approval as exposed, collisions, routing by URI, announced capabilities.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Value, json};

use super::build::{entry, names};
use super::describe::{approved, shown};
use super::*;
use crate::definition::Definition;
use crate::gate::Mode;

fn tool(name: &str) -> Definition {
    Definition::new(
        Kind::Tool,
        json!({"name": name, "description": format!("{name} things")}),
    )
    .unwrap()
}

/// A synced snapshot of `server` listing `definitions` in that order.
fn snapshot(server: &str, definitions: &[Definition]) -> Snapshot {
    let mut s = Snapshot::empty(server);
    for d in definitions {
        s.insert(d.clone());
    }
    s.synced_at = SystemTime::now();
    s
}

/// `lock` with every definition of `snapshot` approved for its server.
fn approve_all(lock: &mut Lock, snapshot: &Snapshot) {
    for d in snapshot.definitions.values() {
        lock.approve(&snapshot.server, d, "platform@example.com", SystemTime::now(), None);
    }
}

fn virtual_server(gate: Mode, members: Vec<MemberSpec>) -> VirtualSpec {
    VirtualSpec {
        name: "eng".into(),
        gate,
        members,
    }
}

fn build(spec: &VirtualSpec, lock: &Lock, snapshots: &[Snapshot]) -> Exposed {
    let snapshots = snapshots.iter().cloned().map(Arc::new).collect();
    Exposed::build(spec, Arc::new(lock.clone()), snapshots)
}

fn listed(e: &Exposed, kind: Kind) -> Vec<&str> {
    e.of_kind(kind).map(|x| x.exposed.as_str()).collect()
}

#[test]
fn lists_keep_the_members_order_and_each_members_own_order() {
    let prompt = Definition::new(Kind::Prompt, json!({"name": "greet"})).unwrap();
    let b = snapshot("b", &[tool("zeta"), prompt, tool("alpha")]);
    let a = snapshot("a", &[tool("mid"), tool("beta")]);
    let mut lock = Lock::default();
    approve_all(&mut lock, &b);
    approve_all(&mut lock, &a);
    for gate in [Mode::Off, Mode::Observe, Mode::Enforce] {
        let spec = virtual_server(
            Mode::Enforce,
            vec![MemberSpec::new("b", gate, ""), MemberSpec::new("a", gate, "a_")],
        );
        let e = build(&spec, &lock, &[b.clone(), a.clone()]);
        assert_eq!(listed(&e, Kind::Tool), ["zeta", "alpha", "a_mid", "a_beta"], "{gate:?}");
        assert_eq!(listed(&e, Kind::Prompt), ["greet"]);
        let kinds: Vec<Kind> = e.entries.iter().map(|x| x.kind).collect();
        assert!(kinds.is_sorted(), "grouped by kind: {kinds:?}");
        assert_eq!(
            e.get(Kind::Tool, "a_beta").map(|x| (x.member, x.own.as_str())),
            Some((1, "beta"))
        );
    }
}

#[test]
fn before_a_first_sync_the_approved_entries_follow_the_lock() {
    let mut lock = Lock::default();
    approve_all(&mut lock, &snapshot("a", &[tool("mid"), tool("beta")]));
    let spec = virtual_server(Mode::Enforce, vec![MemberSpec::new("a", Mode::Enforce, "a_")]);
    let e = build(&spec, &lock, &[Snapshot::empty("a")]);
    assert_eq!(listed(&e, Kind::Tool), ["a_beta", "a_mid"]);
}

#[test]
fn the_search_index_ranks_ties_by_name_whatever_the_list_order() {
    let s = snapshot("a", &[tool("zeta"), tool("alpha")]);
    let e = build(
        &virtual_server(Mode::Off, vec![MemberSpec::new("a", Mode::Off, "")]),
        &Lock::default(),
        &[s],
    );
    let names: Vec<&str> = e.tools.iter().map(|i| e.entries[*i].exposed.as_str()).collect();
    assert_eq!(names, ["alpha", "zeta"]);
}

#[test]
fn an_empty_prefix_exposes_the_members_definitions_unchanged() {
    let s = snapshot("everything", &[tool("echo"), tool("add")]);
    let mut lock = Lock::default();
    approve_all(&mut lock, &s);
    let spec = virtual_server(Mode::Enforce, vec![MemberSpec::new("everything", Mode::Enforce, "")]);
    let e = build(&spec, &lock, std::slice::from_ref(&s));
    let bodies: Vec<&Value> = e.of_kind(Kind::Tool).map(|x| &x.definition).collect();
    let own: Vec<&Value> = s.in_listed_order().into_iter().map(|d| &d.body).collect();
    assert_eq!(bodies, own);
    assert!(
        e.of_kind(Kind::Tool)
            .all(|x| x.exposed == x.own && serde_json::from_str::<Value>(&x.json).unwrap() == x.definition)
    );
    assert!(e.awaiting.is_empty() && e.collisions.is_empty());
}

#[test]
fn members_name_their_tools_by_prefix_filters_and_renames() {
    let mut m = MemberSpec::new("jira", Mode::Enforce, "jira_");
    m.tools = Some(vec!["create".into(), "search".into(), "close".into()]);
    m.exclude = vec!["close".into()];
    m.rename.insert("search".into(), "find_tickets".into());
    assert_eq!(m.exposed_name(Kind::Tool, "create").as_deref(), Some("jira_create"));
    assert_eq!(m.exposed_name(Kind::Prompt, "search").as_deref(), Some("find_tickets"));
    assert_eq!(m.exposed_name(Kind::Tool, "close"), None, "excluded");
    assert_eq!(m.exposed_name(Kind::Tool, "delete"), None, "not in tools");
    assert_eq!(m.exposed_name(Kind::Resource, "jira://x").as_deref(), Some("jira://x"));
    assert!(m.is_rewritten(Kind::Tool, "search"));
    assert!(!m.is_rewritten(Kind::Tool, "create"), "only prefixed");
}

/// A member of `docs` renaming `find` and re-describing `read`.
fn docs() -> MemberSpec {
    let mut m = MemberSpec::new("docs", Mode::Enforce, "docs_");
    m.rename.insert("find".into(), "search_docs".into());
    m.describe
        .insert("read".into(), "Reads one page of the handbook.".into());
    m
}

#[test]
fn renamed_and_re_described_definitions_wait_for_approval_as_exposed() {
    let s = snapshot("docs", &[tool("read"), tool("find"), tool("list")]);
    let mut lock = Lock::default();
    approve_all(&mut lock, &s);
    let waiting = vec![
        (Kind::Tool, "docs_read".to_owned()),
        (Kind::Tool, "search_docs".to_owned()),
    ];

    let e = build(
        &virtual_server(Mode::Enforce, vec![docs()]),
        &lock,
        std::slice::from_ref(&s),
    );
    assert_eq!(listed(&e, Kind::Tool), ["docs_list"]);
    assert_eq!(e.awaiting, waiting);

    let e = build(
        &virtual_server(Mode::Observe, vec![docs()]),
        &lock,
        std::slice::from_ref(&s),
    );
    assert_eq!(listed(&e, Kind::Tool), ["docs_read", "search_docs", "docs_list"]);
    assert_eq!(e.awaiting, waiting);
    let read = e.get(Kind::Tool, "docs_read").unwrap();
    assert_eq!(read.definition["description"], "Reads one page of the handbook.");
    assert_eq!(e.get(Kind::Tool, "search_docs").unwrap().own, "find");

    let spec = virtual_server(Mode::Enforce, vec![docs()]);
    let rewritten = rewritten(&spec, &lock, std::slice::from_ref(&s));
    let keys: Vec<&str> = rewritten.in_listed_order().iter().map(|d| d.key.as_str()).collect();
    assert_eq!(
        keys,
        ["docs_read", "search_docs"],
        "only the rewritten ones, in list order"
    );
    for d in rewritten.definitions.values() {
        lock.approve("eng", d, "platform@example.com", SystemTime::now(), None);
    }
    let e = build(&spec, &lock, &[s]);
    assert_eq!(listed(&e, Kind::Tool), ["docs_read", "search_docs", "docs_list"]);
    assert!(e.awaiting.is_empty());
}

#[test]
fn exposed_definitions_are_renamed_and_re_described() {
    let m = docs();
    let own = json!({"name": "read", "description": "Reads a page.", "inputSchema": {"type": "object"}});
    let read = shown(&m, Kind::Tool, "read", "docs_read", own.clone());
    assert_eq!(read["name"], "docs_read");
    assert_eq!(read["description"], "Reads one page of the handbook.");
    assert_eq!(read["inputSchema"], own["inputSchema"]);
    let other = shown(
        &m,
        Kind::Tool,
        "list",
        "docs_list",
        json!({"name": "list", "description": "Lists."}),
    );
    assert_eq!(other["description"], "Lists.");
    let resource = shown(&m, Kind::Resource, "read", "read", json!({"uri": "read", "name": "x"}));
    assert_eq!(resource["name"], "x", "resources keep their own names");
}

#[test]
fn an_approval_holds_for_the_exposed_revision_only() {
    let m = docs();
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

#[test]
fn two_members_exposing_one_name_are_both_left_out() {
    let uri = Definition::new(Kind::Resource, json!({"uri": "docs://shared", "name": "s"})).unwrap();
    let a = snapshot("a", &[tool("x"), uri.clone(), tool("only_a")]);
    let b = snapshot("b", &[tool("b_x"), uri]);
    let mut a_spec = MemberSpec::new("a", Mode::Off, "");
    a_spec.rename.insert("x".into(), "b_b_x".into());
    let spec = virtual_server(Mode::Off, vec![a_spec, MemberSpec::new("b", Mode::Off, "b_")]);
    let e = build(&spec, &Lock::default(), &[a, b]);
    assert_eq!(listed(&e, Kind::Tool), ["only_a"]);
    assert_eq!(
        e.collisions,
        vec![
            (Kind::Tool, "b_b_x".to_owned()),
            (Kind::Resource, "docs://shared".to_owned())
        ]
    );
    assert!(e.resource("docs://shared").is_none());
    assert_eq!(
        e.get(Kind::Tool, "only_a").map(|x| x.member),
        Some(0),
        "names map to the entries kept"
    );
}

#[test]
fn capabilities_the_members_announce_are_kept() {
    let mut a = snapshot("a", &[tool("x")]);
    a.capabilities = json!({"tools": {"listChanged": true}, "prompts": {}});
    let mut b = snapshot("b", &[tool("y")]);
    b.capabilities = json!({"resources": {"subscribe": true, "listChanged": false}});
    b.extensions = vec![tollgate_mcp::TASKS_EXTENSION.to_owned()];
    let spec = virtual_server(
        Mode::Off,
        vec![
            MemberSpec::new("a", Mode::Off, "a_"),
            MemberSpec::new("b", Mode::Off, "b_"),
        ],
    );
    let lock = Arc::new(Lock::default());
    let snapshots: Vec<Arc<Snapshot>> = vec![Arc::new(a), Arc::new(b)];
    let e = Exposed::build(&spec, lock.clone(), snapshots.clone());
    let want = Announced {
        tools_list_changed: true,
        subscribe: true,
        ..Announced::default()
    };
    assert_eq!(e.announced, want);
    assert!(e.tasks);
    let (built_lock, built_snapshots) = e.built_from();
    assert!(Arc::ptr_eq(built_lock, &lock));
    assert!(built_snapshots.iter().zip(&snapshots).all(|(x, y)| Arc::ptr_eq(x, y)));
}

/// An [`Exposed`] of `entries` (member 0, exposed as named) and `collisions`.
fn exposed(entries: Vec<(Kind, &str)>, collisions: Vec<(Kind, &str)>) -> Exposed {
    let entries: Vec<Entry> = entries
        .into_iter()
        .map(|(kind, name)| entry(0, kind, name.to_owned(), name.to_owned(), json!({})))
        .collect();
    let by_name = names(&entries);
    Exposed {
        entries,
        by_name,
        index: ToolIndex::default(),
        tools: Vec::new(),
        collisions: collisions.into_iter().map(|(k, n)| (k, n.to_owned())).collect(),
        awaiting: Vec::new(),
        tasks: false,
        announced: Announced::default(),
        lock: Arc::new(Lock::default()),
        snapshots: Vec::new(),
        live: Vec::new(),
    }
}

#[test]
fn resources_route_by_uri_then_by_one_matching_template() {
    let e = exposed(
        vec![
            (Kind::Resource, "docs://readme"),
            (Kind::ResourceTemplate, "docs://pages/{id}"),
            (Kind::ResourceTemplate, "repo://{owner}/{name}"),
            (Kind::ResourceTemplate, "repo://{owner}/{+path}"),
        ],
        vec![(Kind::Resource, "docs://pages/shared")],
    );
    let own = |uri: &str| e.resource(uri).map(|x| x.own.clone());
    assert_eq!(own("docs://readme").as_deref(), Some("docs://readme"));
    assert_eq!(own("docs://pages/7").as_deref(), Some("docs://pages/{id}"));
    assert!(own("repo://a/b").is_none(), "two templates match: ambiguous");
    assert!(
        own("docs://pages/shared").is_none(),
        "a collided URI is not served by a template"
    );
    assert!(own("other://x").is_none());
}

#[test]
fn a_gate_off_member_owns_names_by_its_prefix_and_renames_alone() {
    let mut m = MemberSpec::new("jira", Mode::Off, "jira_");
    m.exclude = vec!["close".into()];
    m.rename.insert("search".into(), "find_tickets".into());
    assert_eq!(m.own_name(Kind::Tool, "jira_create").as_deref(), Some("create"));
    assert_eq!(m.own_name(Kind::Tool, "find_tickets").as_deref(), Some("search"));
    assert_eq!(
        m.own_name(Kind::Tool, "jira_search"),
        None,
        "exposed as its rename only"
    );
    assert_eq!(m.own_name(Kind::Tool, "jira_close"), None, "excluded");
    assert_eq!(m.own_name(Kind::Tool, "github_create"), None, "another prefix");
    let enforced = MemberSpec::new("github", Mode::Enforce, "github_");
    let one = virtual_server(Mode::Off, vec![m.clone(), enforced]);
    let e = build(
        &one,
        &Lock::default(),
        &[Snapshot::empty("jira"), Snapshot::empty("github")],
    );
    assert_eq!(e.live_target(Kind::Tool, "jira_new"), Some((0, "new".to_owned())));
    assert_eq!(
        e.live_target(Kind::Tool, "github_new"),
        None,
        "that member's gate is on"
    );
    let two = virtual_server(
        Mode::Off,
        vec![MemberSpec::new("a", Mode::Off, ""), MemberSpec::new("b", Mode::Off, "")],
    );
    let e = build(&two, &Lock::default(), &[Snapshot::empty("a"), Snapshot::empty("b")]);
    assert_eq!(e.live_target(Kind::Tool, "x"), None, "two members could own it");
}
