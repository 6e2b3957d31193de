//! Limits shared by three gateway replicas (real `tollgate serve`
//! processes) through one real Redis: a per-user limit holds across them,
//! and when Redis dies each rule follows its `on_store_error` until Redis
//! is back.

use std::time::Duration;

use serde_json::json;
use tollgate_e2e::audit_support::{Exchange, metric, tool};
use tollgate_e2e::children::{ChildGateway, RedisServer};
use tollgate_e2e::{Demo, TestIssuer};

fn config(issuer: &TestIssuer, demo: &Demo, redis: &RedisServer) -> String {
    format!(
        "{}\n[limits.redis]\nurl = \"{}\"\nreplicas = 3\ntimeout = \"200ms\"\n\n\
         [[limits.rules]]\nid = \"echo-per-user\"\ntools = [\"echo\"]\nrate = 6\nperiod = \"1m\"\n\n\
         [[limits.rules]]\nid = \"add-strict\"\ntools = [\"add\"]\nrate = 100\nperiod = \"1m\"\non_store_error = \"deny\"\n\n\
         [[limits.rules]]\nid = \"weather-open\"\ntools = [\"get_weather\"]\nrate = 1\nperiod = \"1h\"\non_store_error = \"allow\"\n\n\
         [[limits.budgets]]\nid = \"dave-daily\"\nper = \"principal\"\nkeys = [\"dave\"]\nperiod = \"day\"\ntokens = 50\n\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n",
        issuer.config(),
        redis.url(),
        demo.url
    )
}

fn error(ex: &Exchange) -> (u16, String) {
    let m = ex.message();
    (ex.status, m["error"]["message"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn three_replicas_share_one_limit_through_redis_and_ride_out_its_restart() {
    let issuer = TestIssuer::new();
    let demo = Demo::spawn().await;
    let redis = RedisServer::start(None).await;
    let port = redis.port;
    let text = config(&issuer, &demo, &redis);
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(ChildGateway::spawn(&text).await);
    }
    for gw in &replicas {
        for _ in 0..100 {
            if gw.ready_detail().await["limit_store"]["up"] == true {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(gw.ready_detail().await["limit_store"]["up"], true, "{}", gw.log());
    }
    let token = |sub: &str| issuer.token(sub, &["mcp:tools"], &["demo"]);
    let alice = token("alice");

    // Round-robin over the replicas: 6 echo calls a minute for alice in all.
    let mut statuses = Vec::new();
    for i in 0..12 {
        let gw = &replicas[i % 3];
        let ex = tool(gw.url("demo"), &alice, i as u64, "echo", json!({"text": "hi"})).await;
        statuses.push(ex.status);
        if ex.status == 429 {
            assert_eq!(error(&ex).1, "Rate limit exceeded: echo-per-user");
        }
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 6, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 6, "{statuses:?}");
    let bob = token("bob");
    let ex = tool(replicas[2].url("demo"), &bob, 1, "echo", json!({"text": "hi"})).await;
    assert_eq!(ex.status, 200, "another user has their own count");
    assert_eq!(
        metric(&replicas[0].metrics().await, "tollgate_limit_store_up", &[]),
        1.0
    );

    // dave spends his daily budget on one replica: every replica refuses him.
    let dave = token("dave");
    let big = "y".repeat(400);
    let ex = tool(replicas[0].url("demo"), &dave, 1, "echo", json!({"text": big})).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    for gw in &replicas {
        let mut last = (0, String::new());
        for i in 0..40 {
            let ex = tool(gw.url("demo"), &dave, 10 + i, "add", json!({"a": 1, "b": 2})).await;
            last = error(&ex);
            if ex.status == 429 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(last, (429, "Budget exhausted: dave-daily".into()));
    }

    // Redis dies: "deny" refuses, "local" counts a third of the rate here,
    // "allow" does not count.
    redis.kill().await;
    let ex = tool(replicas[0].url("demo"), &alice, 20, "add", json!({"a": 1, "b": 2})).await;
    assert_eq!(
        error(&ex),
        (429, "Rate limit store unavailable: add-strict".into()),
        "{ex:?}"
    );
    let carol = token("carol");
    let mut local = Vec::new();
    for i in 0..3 {
        let ex = tool(replicas[1].url("demo"), &carol, 30 + i, "echo", json!({"text": "x"})).await;
        local.push(ex.status);
    }
    assert_eq!(local, [200, 200, 429], "6 a minute over 3 replicas: 2 on this one");
    // "allow" lets calls through uncounted while the store is away.
    for i in 0..3 {
        let ex = tool(
            replicas[2].url("demo"),
            &carol,
            40 + i,
            "get_weather",
            json!({"city": "Lisbon"}),
        )
        .await;
        assert_eq!(ex.status, 200, "{ex:?}");
    }
    let down = replicas[0].ready_detail().await;
    assert_eq!(down["limit_store"]["up"], false, "{down:#}");
    assert_eq!(
        down["ready"], true,
        "a store that is down does not take the gateway out"
    );
    let m = replicas[0].metrics().await;
    assert_eq!(metric(&m, "tollgate_limit_store_up", &[]), 0.0);
    assert!(metric(&m, "tollgate_limit_store_errors_total", &[]) >= 1.0);

    // Redis comes back on the same port: every replica recovers by itself.
    let _redis = RedisServer::start(Some(port)).await;
    for (r, gw) in replicas.iter().enumerate() {
        let mut ok = false;
        for i in 0..100 {
            let ex = tool(gw.url("demo"), &alice, 100 + i, "add", json!({"a": 1, "b": 2})).await;
            if ex.status == 200 {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ok, "replica {r} did not recover: {}", gw.log());
        assert_eq!(gw.ready_detail().await["limit_store"]["up"], true);
    }
}
