//! Rate limits through the real gateway in front of the demo server, with
//! real signed tokens: counted per verified principal, on a route and on a
//! virtual server, refused with 429, `Retry-After` and the documented
//! JSON-RPC error, recorded with the rule's id and counted per rule;
//! `shared`: three replicas sharing their counters through Redis;
//! `budgets`: a team's token budget warns, then refuses; `resilience`:
//! an upstream's circuit breaker and concurrency cap; `tls`: TLS on the
//! listeners, reloaded, with client certificates; `reload`: configuration
//! reload under load.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "limits/budgets.rs"]
mod budgets;
#[path = "limits/reload.rs"]
mod reload;
#[path = "limits/resilience.rs"]
mod resilience;
#[path = "limits/shared.rs"]
mod shared;
#[path = "limits/tls.rs"]
mod tls;

use serde_json::json;
use tollgate_e2e::audit_support::{Exchange, metric, tool, wait_record};
use tollgate_e2e::{Demo, TestGateway, TestIssuer};

const RULES: &str = r#"
[[limits.rules]]
id = "echo-per-user"
routes = ["demo"]
methods = ["tools/call"]
tools = ["ec*"]
rate = 3
period = "1m"

[[limits.rules]]
id = "workspace"
routes = ["eng"]
per = "route"
rate = 2
period = "1h"
"#;

async fn gateway(issuer: &TestIssuer, demo: &Demo) -> TestGateway {
    TestGateway::spawn(&format!(
        "{}\n[limits]\nmax_body_bytes = 1048576\n{RULES}\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n\n\
         [[virtual_servers]]\nname = \"eng\"\nauth = {{ scopes = [\"mcp:tools\"] }}\nmembers = [{{ server = \"demo\" }}]\n",
        issuer.config(),
        demo.url
    ))
    .await
}

fn echo(ex: &Exchange) -> String {
    ex.message()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn calls_over_a_rule_get_429_per_principal_with_the_rule_recorded() {
    let issuer = TestIssuer::new();
    let demo = Demo::spawn().await;
    let gw = gateway(&issuer, &demo).await;
    let alice = issuer.token("alice", &["mcp:tools"], &["demo", "eng"]);
    let bob = issuer.token("bob", &["mcp:tools"], &["demo", "eng"]);

    for i in 0..3 {
        let ex = tool(gw.url("demo"), &alice, i, "echo", json!({"text": "hi"})).await;
        assert_eq!((ex.status, echo(&ex).as_str()), (200, "hi"), "{ex:?}");
    }
    // Other tools do not match the rule's pattern.
    let ex = tool(gw.url("demo"), &alice, 9, "add", json!({"a": 1, "b": 2})).await;
    assert_eq!(ex.status, 200, "{ex:?}");

    let ex = tool(gw.url("demo"), &alice, 4, "echo", json!({"text": "hi"})).await;
    assert_eq!(ex.status, 429, "{ex:?}");
    let m = ex.message();
    assert_eq!(m["id"], 4);
    assert_eq!(m["error"]["code"], -32029);
    assert_eq!(m["error"]["message"], "Rate limit exceeded: echo-per-user");
    assert_eq!(m["error"]["data"]["rule"], "echo-per-user");
    let retry = m["error"]["data"]["retryAfter"].as_u64().unwrap();
    assert!((1..=20).contains(&retry), "one call every 20 s: {m}");
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!(rec.rate_limit_rule.as_deref(), Some("echo-per-user"));
    assert_eq!(rec.error.as_deref(), Some("rate_limited"));
    assert_eq!(rec.status, Some(429));

    // Counted by the verified principal: bob has his own room.
    let ex = tool(gw.url("demo"), &bob, 5, "echo", json!({"text": "bob"})).await;
    assert_eq!((ex.status, echo(&ex).as_str()), (200, "bob"), "{ex:?}");

    let m = gw.metrics().await;
    assert_eq!(
        metric(&m, "tollgate_rate_limit_refusals_total", &[("rule", "echo-per-user")]),
        1.0
    );
}

#[tokio::test]
async fn a_rule_on_a_virtual_server_counts_the_calls_through_it() {
    let issuer = TestIssuer::new();
    let demo = Demo::spawn().await;
    let gw = gateway(&issuer, &demo).await;
    let alice = issuer.token("alice", &["mcp:tools"], &["demo", "eng"]);
    let bob = issuer.token("bob", &["mcp:tools"], &["demo", "eng"]);
    // Wait for the member's catalog (the virtual server lists from it).
    for _ in 0..100 {
        let ex = tool(gw.url("eng"), &alice, 1, "demo_add", json!({"a": 1, "b": 1})).await;
        if ex.status == 200 && ex.message()["result"].is_object() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The first call above counted; one more fits, across callers (per route).
    let ex = tool(gw.url("eng"), &bob, 2, "demo_add", json!({"a": 2, "b": 2})).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    let ex = tool(gw.url("eng"), &bob, 3, "demo_add", json!({"a": 3, "b": 3})).await;
    assert_eq!(ex.status, 429, "{ex:?}");
    assert_eq!(ex.message()["error"]["data"]["rule"], "workspace");
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!(rec.virtual_server.as_deref(), Some("eng"));
    assert_eq!(rec.rate_limit_rule.as_deref(), Some("workspace"));
    // The member's own route is not limited by the virtual server's rule.
    let ex = tool(gw.url("demo"), &bob, 4, "add", json!({"a": 4, "b": 4})).await;
    assert_eq!(ex.status, 200, "{ex:?}");
}
