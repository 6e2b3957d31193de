//! The shared store against a real `redis-server` on loopback: two
//! limiters (two replicas) share one count, and a Redis restart is a store
//! error the rules survive, then recover from by themselves.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tollgate_config::{OnStoreError, RateKey, RateRule};
use tollgate_limit::{Call, Identity, Limiter, StoreSettings};

const CORP: &str = "https://idp.corp.example";

/// A `redis-server` on a free loopback port, killed on drop.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    async fn start(port: Option<u16>) -> Redis {
        Redis::start_with(port, &[]).await
    }

    /// Start one with extra server arguments (`--requirepass`, …).
    async fn start_with(port: Option<u16>, extra: &[&str]) -> Redis {
        let port = port.unwrap_or_else(|| TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
        let mut child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (scripts/install-test-deps.sh installs it)");
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Redis { child, port };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("redis-server did not start on {port}");
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rule(on_store_error: OnStoreError) -> RateRule {
    RateRule {
        id: "per-user".into(),
        routes: Vec::new(),
        methods: Vec::new(),
        tools: Vec::new(),
        principals: Vec::new(),
        teams: Vec::new(),
        cost_centers: Vec::new(),
        per: RateKey::Principal,
        rate: 4,
        period: Duration::from_secs(60),
        burst: None,
        on_store_error,
    }
}

fn settings(port: u16) -> StoreSettings {
    StoreSettings {
        url: format!("redis://127.0.0.1:{port}"),
        password: None,
        timeout: Duration::from_millis(200),
        key_prefix: format!("t{port}"),
        tls: None,
    }
}

fn call(who: &str) -> Call<'_> {
    Call {
        route: "github",
        method: "tools/call",
        name: Some("create_issue"),
        principal: Some(Identity {
            issuer: CORP,
            subject: who,
        }),
        ..Call::default()
    }
}

/// Wait until the limiter's store is connected.
async fn connected(limiter: &Limiter) {
    for _ in 0..100 {
        if limiter.store_health().is_some_and(|h| h.up) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never connected: {:?}", limiter.store_health());
}

#[tokio::test]
async fn two_replicas_share_one_count_and_survive_a_restart() {
    let redis = Redis::start(None).await;
    let rules = [rule(OnStoreError::Deny)];
    let one = Limiter::with_store(&rules, &settings(redis.port), 2).unwrap();
    let two = Limiter::with_store(&rules, &settings(redis.port), 2).unwrap();
    connected(&one).await;
    connected(&two).await;

    // 4 a minute for alice, whichever replica she reaches.
    let mut allowed = 0;
    for i in 0..8 {
        let limiter = if i % 2 == 0 { &one } else { &two };
        if limiter.check(&call("alice")).await.is_ok() {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 4);
    let refusal = two.check(&call("alice")).await.unwrap_err();
    assert!(!refusal.store_unavailable);
    assert!(refusal.retry_after > Duration::from_secs(10) && refusal.retry_after <= Duration::from_secs(15));
    one.check(&call("bob")).await.unwrap();

    // Redis goes away: the rule denies, and says why.
    let port = redis.port;
    drop(redis);
    let refusal = one.check(&call("carol")).await.unwrap_err();
    assert!(refusal.store_unavailable, "{refusal:?}");
    assert!(!one.store_health().unwrap().up);

    // It comes back (empty): the same connection recovers by itself.
    let _redis = Redis::start(Some(port)).await;
    let mut recovered = false;
    for _ in 0..100 {
        if one.check(&call("carol")).await.is_ok() {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "{:?}", one.store_health());
    assert!(one.store_health().unwrap().up);
}

#[tokio::test]
async fn a_budget_spent_on_one_replica_is_spent_on_the_other() {
    let redis = Redis::start(None).await;
    let budget = tollgate_config::Budget {
        id: "team-daily".into(),
        per: tollgate_config::BudgetKey::Team,
        keys: Vec::new(),
        routes: Vec::new(),
        period: tollgate_config::BudgetPeriod::Day,
        tokens: 500,
        warn_at: 0.5,
        on_store_error: OnStoreError::Deny,
    };
    let one = Limiter::with_store(&[], &settings(redis.port), 2)
        .unwrap()
        .with_budgets(std::slice::from_ref(&budget), "UTC");
    let two = Limiter::with_store(&[], &settings(redis.port), 2)
        .unwrap()
        .with_budgets(&[budget], "UTC");
    connected(&one).await;
    connected(&two).await;
    let who = tollgate_limit::Spender {
        route: "github",
        principal: Some(Identity {
            issuer: CORP,
            subject: "alice",
        }),
        team: Some("payments"),
        ..tollgate_limit::Spender::default()
    };
    one.spend(&who, 300);
    let mut standing = None;
    for _ in 0..50 {
        standing = two.check_budgets(&who).await.unwrap();
        if standing.as_ref().is_some_and(|s| s.remaining == 200) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(standing.map(|s| (s.remaining, s.warn)), Some((200, true)));
    two.spend(&who, 200);
    for _ in 0..50 {
        if one.check_budgets(&who).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = one.check_budgets(&who).await.unwrap_err();
    assert_eq!((&*refused.budget, refused.store_unavailable), ("team-daily", false));
    drop(redis);
    let refused = one.check_budgets(&who).await.unwrap_err();
    assert!(refused.store_unavailable, "deny while the store is down");
}

#[tokio::test]
async fn a_password_from_the_settings_authenticates_and_a_wrong_one_leaves_the_store_down() {
    let redis = Redis::start_with(None, &["--requirepass", "s3cret-pw"]).await;
    let rules = [rule(OnStoreError::Deny)];
    let mut good = settings(redis.port);
    good.password = Some("s3cret-pw".into());
    let limiter = Limiter::with_store(&rules, &good, 1).unwrap();
    connected(&limiter).await;
    limiter.check(&call("alice")).await.unwrap();

    let mut bad = settings(redis.port);
    bad.password = Some("wrong".into());
    let refused = Limiter::with_store(&rules, &bad, 1).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refusal = refused.check(&call("alice")).await.unwrap_err();
    assert!(refusal.store_unavailable, "{refusal:?}");
    let health = refused.store_health().unwrap();
    assert!(!health.up && health.last_error.is_some(), "{health:?}");
}

#[tokio::test]
async fn principal_budgets_key_by_issuer_and_still_read_spend_under_the_old_key() {
    let redis = Redis::start(None).await;
    let budget = tollgate_config::Budget {
        id: "per-user".into(),
        per: tollgate_config::BudgetKey::Principal,
        keys: Vec::new(),
        routes: Vec::new(),
        period: tollgate_config::BudgetPeriod::Day,
        tokens: 500,
        warn_at: 0.9,
        on_store_error: OnStoreError::Deny,
    };
    let limiter = Limiter::with_store(&[], &settings(redis.port), 1)
        .unwrap()
        .with_budgets(&[budget], "UTC");
    connected(&limiter).await;
    let (start, _) =
        tollgate_limit::period_bounds(tollgate_config::BudgetPeriod::Day, "UTC", std::time::SystemTime::now()).unwrap();
    let start = start.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let prefix = format!("t{}:budget:per-user", redis.port);
    // Spend recorded before issuers were part of the key.
    let client = redis::Client::open(format!("redis://127.0.0.1:{}", redis.port)).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let () = redis::cmd("SET")
        .arg(format!("{prefix}:alice:{start}"))
        .arg(300)
        .query_async(&mut conn)
        .await
        .unwrap();
    let who = |issuer| tollgate_limit::Spender {
        route: "github",
        principal: Some(Identity {
            issuer,
            subject: "alice",
        }),
        ..tollgate_limit::Spender::default()
    };
    let (corp, partner) = (who(CORP), who("https://partner.example"));
    let left = |s: Option<tollgate_limit::Standing>| s.map(|s| s.remaining);
    assert_eq!(left(limiter.check_budgets(&corp).await.unwrap()), Some(200));
    assert_eq!(left(limiter.check_budgets(&partner).await.unwrap()), Some(200));
    limiter.spend(&corp, 100);
    let key = format!("{prefix}:{CORP}#alice:{start}");
    let mut stored: Option<u64> = None;
    for _ in 0..50 {
        stored = redis::cmd("GET").arg(&key).query_async(&mut conn).await.unwrap();
        if stored.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stored, Some(100), "{key}");
    assert_eq!(left(limiter.check_budgets(&corp).await.unwrap()), Some(100));
    assert_eq!(left(limiter.check_budgets(&partner).await.unwrap()), Some(200));
}
