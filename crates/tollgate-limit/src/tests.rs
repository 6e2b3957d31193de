#![allow(clippy::unwrap_used, reason = "tests")]

use std::time::Duration;

use tollgate_config::{OnStoreError, RateKey, RateRule};

use super::key::wildcard;
use super::{Call, Identity, Limiter, StoreSettings};

fn rule(id: &str, rate: u32, period: Duration) -> RateRule {
    RateRule {
        id: id.into(),
        routes: Vec::new(),
        methods: Vec::new(),
        tools: Vec::new(),
        principals: Vec::new(),
        teams: Vec::new(),
        cost_centers: Vec::new(),
        per: RateKey::Principal,
        rate,
        period,
        burst: None,
        on_store_error: OnStoreError::Local,
    }
}

const CORP: &str = "https://idp.corp.example";
const PARTNER: &str = "https://partner.example";

/// `who` of the corporate issuer.
fn corp(who: &str) -> Option<Identity<'_>> {
    Some(Identity {
        issuer: CORP,
        subject: who,
    })
}

fn call<'a>(who: &'a str, tool: &'a str) -> Call<'a> {
    Call {
        route: "github",
        method: "tools/call",
        name: Some(tool),
        principal: corp(who),
        team: Some("payments"),
        ..Call::default()
    }
}

#[tokio::test]
async fn a_burst_is_allowed_then_refused_with_the_time_until_room() {
    let limiter = Limiter::new(&[rule("per-user", 3, Duration::from_secs(60))]);
    for _ in 0..3 {
        limiter.check(&call("alice", "create_issue")).await.unwrap();
    }
    let refusal = limiter.check(&call("alice", "create_issue")).await.unwrap_err();
    assert_eq!(&*refusal.rule, "per-user");
    assert!(
        refusal.retry_after > Duration::from_secs(15) && refusal.retry_after <= Duration::from_secs(20),
        "{refusal:?}"
    );
    // Counted per principal: bob has his own room.
    limiter.check(&call("bob", "create_issue")).await.unwrap();
}

#[tokio::test]
async fn rules_match_routes_methods_tools_principals_and_teams() {
    let mut deletes = rule("deletes", 1, Duration::from_secs(60));
    deletes.tools = vec!["delete_*".into()];
    deletes.routes = vec!["github".into()];
    deletes.methods = vec!["tools/call".into()];
    let limiter = Limiter::new(&[deletes]);
    limiter.check(&call("alice", "delete_repo")).await.unwrap();
    assert!(limiter.check(&call("alice", "delete_branch")).await.is_err());
    for _ in 0..10 {
        limiter.check(&call("alice", "create_issue")).await.unwrap();
    }
    let other = Call {
        route: "jira",
        ..call("alice", "delete_ticket")
    };
    limiter.check(&other).await.unwrap();
    // A virtual server's exposed name and name both count.
    let via = Call {
        route: "jira",
        via: Some("github"),
        exposed: Some("gh_delete_x"),
        ..call("carol", "delete_x")
    };
    limiter.check(&via).await.unwrap();
    assert!(
        limiter.check(&via).await.is_err(),
        "routes match the virtual server too"
    );

    let mut team = rule("team", 2, Duration::from_secs(3600));
    team.per = RateKey::Team;
    team.teams = vec!["payments".into()];
    let limiter = Limiter::new(&[team]);
    limiter.check(&call("alice", "x")).await.unwrap();
    limiter.check(&call("bob", "x")).await.unwrap();
    assert!(limiter.check(&call("carol", "x")).await.is_err(), "one count per team");
    let outsider = Call {
        team: None,
        ..call("dave", "x")
    };
    limiter.check(&outsider).await.unwrap();

    let mut finance = rule("finance", 1, Duration::from_secs(3600));
    finance.cost_centers = vec!["cc-42".into()];
    let limiter = Limiter::new(&[finance]);
    let billed = Call {
        cost_center: Some("cc-42"),
        ..call("erin", "x")
    };
    limiter.check(&billed).await.unwrap();
    assert!(limiter.check(&billed).await.is_err(), "counted in the cost centre");
    limiter.check(&call("erin", "x")).await.unwrap();
    limiter.check(&call("erin", "x")).await.unwrap();
}

#[tokio::test]
async fn an_empty_limiter_allows_everything() {
    let limiter = Limiter::new(&[]);
    assert!(limiter.is_empty());
    for _ in 0..100 {
        limiter.check(&call("alice", "x")).await.unwrap();
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

/// A store that never answers: nothing listens on the port.
fn unreachable() -> StoreSettings {
    StoreSettings {
        url: "redis://127.0.0.1:1".into(),
        password: None,
        timeout: Duration::from_millis(20),
        key_prefix: "test".into(),
        tls: None,
    }
}

#[tokio::test]
async fn without_the_store_each_rule_follows_its_on_store_error() {
    let mut allow = rule("allow", 1, Duration::from_secs(60));
    allow.on_store_error = OnStoreError::Allow;
    allow.tools = vec!["read_*".into()];
    let mut deny = rule("deny", 100, Duration::from_secs(60));
    deny.on_store_error = OnStoreError::Deny;
    deny.tools = vec!["delete_*".into()];
    let mut local = rule("local", 6, Duration::from_secs(60));
    local.tools = vec!["create_*".into()];
    let limiter = Limiter::with_store(&[allow, deny, local], &unreachable(), 3).unwrap();
    for _ in 0..5 {
        limiter.check(&call("alice", "read_file")).await.unwrap();
    }
    let refusal = limiter.check(&call("alice", "delete_repo")).await.unwrap_err();
    assert_eq!((&*refusal.rule, refusal.store_unavailable), ("deny", true));
    // 6 a minute over 3 replicas: 2 here.
    limiter.check(&call("alice", "create_issue")).await.unwrap();
    limiter.check(&call("alice", "create_issue")).await.unwrap();
    let refusal = limiter.check(&call("alice", "create_issue")).await.unwrap_err();
    assert_eq!((&*refusal.rule, refusal.store_unavailable), ("local", false));
    let health = limiter.store_health().unwrap();
    assert!(!health.up && health.errors >= 8, "{health:?}");
    assert!(health.last_error.is_some());
}

#[test]
fn a_store_url_the_client_cannot_use_is_refused() {
    let mut settings = unreachable();
    settings.url = "http://example".into();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    assert!(Limiter::with_store(&[], &settings, 1).is_err());
}

fn budget(tokens: u64) -> tollgate_config::Budget {
    tollgate_config::Budget {
        id: "payments-monthly".into(),
        per: tollgate_config::BudgetKey::Team,
        keys: vec!["payments".into()],
        routes: Vec::new(),
        period: tollgate_config::BudgetPeriod::Month,
        tokens,
        warn_at: 0.8,
        on_store_error: OnStoreError::Local,
    }
}

fn spender(team: &str) -> super::Spender<'_> {
    super::Spender {
        route: "github",
        principal: corp("alice"),
        team: Some(team),
        ..super::Spender::default()
    }
}

#[tokio::test]
async fn a_budget_warns_past_its_share_then_refuses_until_the_period_ends() {
    let limiter = Limiter::new(&[]).with_budgets(&[budget(1000)], "Europe/Berlin");
    let s = limiter.check_budgets(&spender("payments")).await.unwrap().unwrap();
    assert_eq!((s.remaining, s.warn), (1000, false));
    limiter.spend(&spender("payments"), 850);
    let s = limiter.check_budgets(&spender("payments")).await.unwrap().unwrap();
    assert_eq!((&*s.budget, s.remaining, s.warn), ("payments-monthly", 150, true));
    // Another team is not under this budget.
    assert_eq!(limiter.check_budgets(&spender("search")).await.unwrap(), None);
    limiter.spend(&spender("payments"), 150);
    let e = limiter.check_budgets(&spender("payments")).await.unwrap_err();
    assert_eq!(&*e.budget, "payments-monthly");
    assert!(e.resets_in > Duration::ZERO && e.resets_in <= Duration::from_secs(31 * 86_400));
    assert!(!e.store_unavailable);
    let counts = limiter.budget_counts();
    assert_eq!((counts[0].spent, counts[0].tokens), (1000, 1000));
}

#[tokio::test]
async fn a_reload_keeps_the_counters_and_spend_of_what_did_not_change() {
    let minute = Duration::from_secs(60);
    let old = Limiter::new(&[rule("kept", 1, minute), rule("changed", 1, minute)]).with_budgets(&[budget(100)], "UTC");
    old.check(&call("alice", "x")).await.unwrap();
    old.spend(&spender("payments"), 70);
    let new = Limiter::new(&[rule("kept", 1, minute), rule("changed", 2, minute)])
        .with_budgets(&[budget(80)], "UTC")
        .inherit(&old);
    // "kept" still has alice's call; "changed" starts afresh but "kept"
    // refuses first.
    let refusal = new.check(&call("alice", "x")).await.unwrap_err();
    assert_eq!(&*refusal.rule, "kept");
    assert_eq!(new.refusals().find(|(id, _)| *id == "kept").map(|(_, n)| n), Some(1));
    // The spend carries over to the budget's new cap.
    let s = new.check_budgets(&spender("payments")).await.unwrap().unwrap();
    assert_eq!((s.remaining, s.warn), (10, true));
}

#[tokio::test]
async fn two_issuers_equal_subjects_are_two_principals() {
    let limiter = Limiter::new(&[rule("per-user", 1, Duration::from_secs(60))]);
    limiter.check(&call("alice", "x")).await.unwrap();
    assert!(limiter.check(&call("alice", "x")).await.is_err());
    let partner = Call {
        principal: Some(Identity {
            issuer: PARTNER,
            subject: "alice",
        }),
        ..call("alice", "x")
    };
    limiter.check(&partner).await.unwrap();
    assert!(limiter.check(&partner).await.is_err());

    // A listed subject is that subject of every issuer; a listed issuer
    // and subject, of that issuer only.
    let mut listed = rule("listed", 1, Duration::from_secs(60));
    listed.principals = vec![
        "bob".into(),
        tollgate_config::KeyName::Principal(tollgate_config::IssuedSubject {
            issuer: PARTNER.into(),
            subject: "alice".into(),
        }),
    ];
    let limiter = Limiter::new(&[listed]);
    for _ in 0..3 {
        limiter.check(&call("alice", "x")).await.unwrap();
    }
    limiter.check(&partner).await.unwrap();
    assert!(limiter.check(&partner).await.is_err());
    let partner_bob = Call {
        principal: Some(Identity {
            issuer: PARTNER,
            subject: "bob",
        }),
        ..call("bob", "x")
    };
    for bob in [call("bob", "x"), partner_bob] {
        limiter.check(&bob).await.unwrap();
        assert!(limiter.check(&bob).await.is_err(), "each bob has his own count");
    }
}

#[tokio::test]
async fn a_route_rule_counts_every_call_that_ends_up_on_its_route() {
    let mut member = rule("github", 2, Duration::from_secs(3600));
    (member.per, member.routes) = (RateKey::Route, vec!["github".into()]);
    let mut front = rule("eng", 3, Duration::from_secs(3600));
    (front.per, front.routes) = (RateKey::Route, vec!["eng".into()]);
    let limiter = Limiter::new(&[member, front]);
    let through = Call {
        via: Some("eng"),
        ..call("bob", "x")
    };
    limiter.check(&call("alice", "x")).await.unwrap();
    limiter.check(&through).await.unwrap();
    let refusal = limiter.check(&through).await.unwrap_err();
    assert_eq!(&*refusal.rule, "github", "the virtual server is no way around it");
    assert!(limiter.check(&call("carol", "x")).await.is_err());
    // The virtual server's own count: one call went through it (the
    // refused one stopped at the first rule, uncounted by the next).
    let jira = Call {
        route: "jira",
        ..through
    };
    limiter.check(&jira).await.unwrap();
    limiter.check(&jira).await.unwrap();
    assert_eq!(&*limiter.check(&jira).await.unwrap_err().rule, "eng");

    // Every route: a call through a virtual server counts for both.
    let mut each = rule("each", 1, Duration::from_secs(3600));
    each.per = RateKey::Route;
    let limiter = Limiter::new(&[each]);
    limiter.check(&through).await.unwrap();
    assert!(limiter.check(&call("alice", "x")).await.is_err(), "github is used up");
    assert!(limiter.check(&jira).await.is_err(), "so is eng");
    limiter
        .check(&Call {
            route: "docs",
            ..call("alice", "x")
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_principal_budget_counts_each_issuer_apart() {
    let mut per_user = budget(100);
    per_user.per = tollgate_config::BudgetKey::Principal;
    per_user.keys = Vec::new();
    let limiter = Limiter::new(&[]).with_budgets(&[per_user], "UTC");
    let partner = super::Spender {
        principal: Some(Identity {
            issuer: PARTNER,
            subject: "alice",
        }),
        ..spender("payments")
    };
    limiter.spend(&spender("payments"), 100);
    assert!(limiter.check_budgets(&spender("payments")).await.is_err());
    let s = limiter.check_budgets(&partner).await.unwrap().unwrap();
    assert_eq!(s.remaining, 100, "the partner's alice has spent nothing");
    let keys: Vec<String> = limiter.budget_counts().into_iter().map(|c| c.key).collect();
    assert!(keys.contains(&format!("{CORP}#alice")), "{keys:?}");
}
