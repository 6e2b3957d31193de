#![allow(clippy::unwrap_used, reason = "tests")]

use std::time::Duration;

use tollgate_config::{RateKey, RateRule};

use super::{Call, Limiter, wildcard};

fn rule(id: &str, rate: u32, period: Duration) -> RateRule {
    RateRule {
        id: id.into(),
        routes: Vec::new(),
        methods: Vec::new(),
        tools: Vec::new(),
        principals: Vec::new(),
        teams: Vec::new(),
        per: RateKey::Principal,
        rate,
        period,
        burst: None,
    }
}

fn call<'a>(who: &'a str, tool: &'a str) -> Call<'a> {
    Call {
        route: "github",
        method: "tools/call",
        name: Some(tool),
        principal: Some(who),
        team: Some("payments"),
        ..Call::default()
    }
}

#[test]
fn a_burst_is_allowed_then_refused_with_the_time_until_room() {
    let limiter = Limiter::new(&[rule("per-user", 3, Duration::from_secs(60))]);
    for _ in 0..3 {
        limiter.check(&call("alice", "create_issue")).unwrap();
    }
    let refusal = limiter.check(&call("alice", "create_issue")).unwrap_err();
    assert_eq!(&*refusal.rule, "per-user");
    assert!(
        refusal.retry_after > Duration::from_secs(15) && refusal.retry_after <= Duration::from_secs(20),
        "{refusal:?}"
    );
    // Counted per principal: bob has his own room.
    limiter.check(&call("bob", "create_issue")).unwrap();
}

#[test]
fn rules_match_routes_methods_tools_principals_and_teams() {
    let mut deletes = rule("deletes", 1, Duration::from_secs(60));
    deletes.tools = vec!["delete_*".into()];
    deletes.routes = vec!["github".into()];
    deletes.methods = vec!["tools/call".into()];
    let limiter = Limiter::new(&[deletes]);
    limiter.check(&call("alice", "delete_repo")).unwrap();
    assert!(limiter.check(&call("alice", "delete_branch")).is_err());
    for _ in 0..10 {
        limiter.check(&call("alice", "create_issue")).unwrap();
    }
    let other = Call {
        route: "jira",
        ..call("alice", "delete_ticket")
    };
    limiter.check(&other).unwrap();
    // A virtual server's exposed name and name both count.
    let via = Call {
        route: "jira",
        via: Some("github"),
        exposed: Some("gh_delete_x"),
        ..call("carol", "delete_x")
    };
    limiter.check(&via).unwrap();
    assert!(limiter.check(&via).is_err(), "routes match the virtual server too");

    let mut team = rule("team", 2, Duration::from_secs(3600));
    team.per = RateKey::Team;
    team.teams = vec!["payments".into()];
    let limiter = Limiter::new(&[team]);
    limiter.check(&call("alice", "x")).unwrap();
    limiter.check(&call("bob", "x")).unwrap();
    assert!(limiter.check(&call("carol", "x")).is_err(), "one count per team");
    let outsider = Call {
        team: None,
        ..call("dave", "x")
    };
    limiter.check(&outsider).unwrap();
}

#[test]
fn an_empty_limiter_allows_everything() {
    let limiter = Limiter::new(&[]);
    assert!(limiter.is_empty());
    for _ in 0..100 {
        limiter.check(&call("alice", "x")).unwrap();
    }
}

#[test]
fn wildcards_match_runs_of_characters() {
    assert!(wildcard("delete_*", "delete_repo"));
    assert!(wildcard("*", ""));
    assert!(wildcard("*_admin", "user_admin"));
    assert!(wildcard("a*b*c", "axxbyyc"));
    assert!(wildcard("exact", "exact"));
    assert!(!wildcard("exact", "exactly"));
    assert!(!wildcard("delete_*", "undelete_repo"));
    assert!(!wildcard("a*bc", "abc_"));
    assert!(!wildcard("ab*ba", "aba"));
}
