//! What a local rate-limit decision and a budget check cost per call
//! (target: a local limit decision adds ≤ 1 µs CPU per call).
//!
//! - `check/no_rules`: the limiter of a configuration without rules (the
//!   phase's fast path).
//! - `check/three_rules_one_match`: three rules, of which the call matches
//!   one (a per-user rule on `tools/call`), over 1,000 principals
//!   round-robin so the counters' map is realistic.
//! - `check/three_rules_three_match`: every rule matches (three counters).
//! - `budgets/check`: a team budget's standing, local counts.
//! - `budgets/spend`: adding an answer's tokens to it (the spend observer).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "benchmark harness")]

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tollgate_config::{Budget, BudgetKey, BudgetPeriod, OnStoreError, RateKey, RateRule};
use tollgate_limit::{Call, Identity, Limiter, Spender};

const ISSUER: &str = "https://idp.example.com";

fn rule(id: &str, tools: &[&str], methods: &[&str]) -> RateRule {
    RateRule {
        id: id.into(),
        routes: vec!["github".into()],
        methods: methods.iter().map(|s| (*s).to_owned()).collect(),
        tools: tools.iter().map(|s| (*s).to_owned()).collect(),
        principals: Vec::new(),
        teams: Vec::new(),
        cost_centers: Vec::new(),
        per: RateKey::Principal,
        rate: 1_000_000_000,
        period: Duration::from_secs(60),
        burst: None,
        on_store_error: OnStoreError::Local,
    }
}

/// The output of a future that completes on its first poll (local
/// decisions never wait), without a runtime's overhead in the figure.
fn ready<T>(f: impl Future<Output = T>) -> T {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a local decision waited"),
    }
}

fn bench(c: &mut Criterion) {
    let users: Vec<String> = (0..1000).map(|i| format!("user-{i}")).collect();
    let call = |i: usize| Call {
        route: "github",
        method: "tools/call",
        name: Some("create_issue"),
        principal: Some(Identity {
            issuer: ISSUER,
            subject: users[i % users.len()].as_str(),
        }),
        team: Some("payments"),
        ..Call::default()
    };
    let mut group = c.benchmark_group("check");
    let empty = Limiter::new(&[]);
    group.bench_function("no_rules", |b| {
        b.iter(|| ready(empty.check(black_box(&call(0)))).unwrap());
    });
    let one = Limiter::new(&[
        rule("per-user", &[], &["tools/call"]),
        rule("deletes", &["delete_*"], &[]),
        rule("prompts", &[], &["prompts/get"]),
    ]);
    let mut i = 0;
    group.bench_function("three_rules_one_match", |b| {
        b.iter(|| {
            i += 1;
            ready(one.check(black_box(&call(i)))).unwrap();
        });
    });
    let all = Limiter::new(&[
        rule("per-user", &[], &["tools/call"]),
        rule("creates", &["create_*"], &[]),
        rule("route", &[], &[]),
    ]);
    group.bench_function("three_rules_three_match", |b| {
        b.iter(|| {
            i += 1;
            ready(all.check(black_box(&call(i)))).unwrap();
        });
    });
    group.finish();

    let budget = Budget {
        id: "payments-monthly".into(),
        per: BudgetKey::Team,
        keys: Vec::new(),
        routes: Vec::new(),
        period: BudgetPeriod::Month,
        tokens: u64::MAX,
        warn_at: 0.8,
        on_store_error: OnStoreError::Local,
    };
    let budgets = Limiter::new(&[]).with_budgets(&[budget], "Europe/Berlin");
    let who = Spender {
        route: "github",
        principal: Some(Identity {
            issuer: ISSUER,
            subject: "alice",
        }),
        team: Some("payments"),
        ..Spender::default()
    };
    let mut group = c.benchmark_group("budgets");
    group.bench_function("check", |b| {
        b.iter(|| ready(budgets.check_budgets(black_box(&who))).unwrap());
    });
    group.bench_function("spend", |b| b.iter(|| budgets.spend(black_box(&who), 100)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
