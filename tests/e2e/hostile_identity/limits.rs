//! Rate limits and budgets: one count per (issuer, subject), and a rule on
//! a member route that a virtual server cannot side-step.

use serde_json::json;
use tollgate_e2e::audit_support::{Exchange, metric, modern, tool, wait_record};
use tollgate_e2e::{Demo, TestGateway, modern_body};

use super::{Issuers, SUB};

const DEMO: &str = "[[servers]]\nname = \"demo\"\nurl = \"{demo}\"\nauth = { scopes = [\"mcp:tools\"] }\n";

async fn gateway(issuers: &Issuers, demo: &Demo, limits: &str) -> TestGateway {
    TestGateway::spawn(&format!(
        "{}\n{limits}\n{}",
        issuers.config(),
        DEMO.replace("{demo}", &demo.url)
    ))
    .await
}

async fn echo(gw: &TestGateway, token: &str, id: u64, text: &str) -> Exchange {
    tool(gw.url("demo"), token, id, "echo", json!({"text": text})).await
}

#[tokio::test]
async fn two_issuers_with_the_same_sub_have_their_own_rate_limit_counts() {
    let (issuers, demo) = (Issuers::start().await, Demo::spawn().await);
    let gw = gateway(
        &issuers,
        &demo,
        "[[limits.rules]]\nid = \"per-user\"\nroutes = [\"demo\"]\nmethods = [\"tools/call\"]\nrate = 2\nperiod = \"1h\"\n",
    )
    .await;
    let ours = issuers.dev_token(SUB, &["demo"]);
    let theirs = issuers.partner_token(SUB, &["demo"]);
    for (who, token) in [("dev", &ours), ("partner", &theirs)] {
        for id in 1..=2 {
            let ex = echo(&gw, token, id, "hi").await;
            assert_eq!(ex.status, 200, "{who} call {id}: {ex:?}");
        }
        let ex = echo(&gw, token, 3, "hi").await;
        assert_eq!(ex.status, 429, "{who}: {ex:?}");
        assert_eq!(ex.message()["error"]["data"]["rule"], "per-user");
    }
    // The partner's alice was counted as the partner's.
    let ex = echo(&gw, &theirs, 4, "hi").await;
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    let p = rec.principal.as_deref().unwrap();
    assert_eq!(
        (p.issuer.as_str(), p.subject.as_str()),
        (issuers.partner_url.as_str(), SUB)
    );
}

#[tokio::test]
async fn two_issuers_with_the_same_sub_have_their_own_budgets() {
    let (issuers, demo) = (Issuers::start().await, Demo::spawn().await);
    let gw = gateway(
        &issuers,
        &demo,
        "[[limits.budgets]]\nid = \"per-user-daily\"\nper = \"principal\"\nperiod = \"day\"\ntokens = 300\n",
    )
    .await;
    let ours = issuers.dev_token(SUB, &["demo"]);
    let text = "x".repeat(300);
    let mut refused = None;
    for id in 0..40 {
        let ex = echo(&gw, &ours, id, &text).await;
        if ex.status == 429 {
            refused = Some(ex);
            break;
        }
    }
    let refused = refused.expect("the development issuer's alice spends her budget");
    assert_eq!(refused.message()["error"]["code"], -32030, "{refused:?}");

    // The partner's alice has spent nothing.
    let theirs = issuers.partner_token(SUB, &["demo"]);
    let ex = echo(&gw, &theirs, 100, "hi").await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(ex.budget_remaining, Some(300), "{ex:?}");
    let m = gw.metrics().await;
    let key = Issuers::dev_key();
    let labels = [("budget", "per-user-daily"), ("key", key.as_str())];
    assert!(metric(&m, "tollgate_budget_spent_tokens", &labels) >= 300.0);
}

#[tokio::test]
async fn a_rule_on_a_member_route_holds_through_a_virtual_server() {
    let (issuers, demo) = (Issuers::start().await, Demo::spawn().await);
    let gw = gateway(
        &issuers,
        &demo,
        "[[limits.rules]]\nid = \"demo-route\"\nroutes = [\"demo\"]\nper = \"route\"\n\
         methods = [\"tools/call\"]\nrate = 2\nperiod = \"1h\"\n\n\
         [[virtual_servers]]\nname = \"eng\"\nauth = { scopes = [\"mcp:tools\"] }\nmembers = [{ server = \"demo\" }]\n",
    )
    .await;
    let alice = issuers.dev_token("alice", &["demo", "eng"]);
    let bob = issuers.dev_token("bob", &["demo", "eng"]);
    // Lists are not counted: wait for the member's catalog through them.
    let mut listed = false;
    for id in 0..100 {
        let body = modern_body(id, "tools/list", json!({}));
        let ex = modern(gw.url("eng"), Some(&alice), "tools/list", None, body).await;
        if ex.message()["result"]["tools"].to_string().contains("\"demo_add\"") {
            listed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(listed, "the virtual server lists the member's tools");

    let add = |a| json!({"a": a, "b": 1});
    assert_eq!(tool(gw.url("demo"), &alice, 1, "add", add(1)).await.status, 200);
    assert_eq!(tool(gw.url("eng"), &bob, 2, "demo_add", add(2)).await.status, 200);
    // The member's count is used up: the virtual server is no way around it.
    let ex = tool(gw.url("eng"), &bob, 3, "demo_add", add(3)).await;
    assert_eq!(ex.status, 429, "{ex:?}");
    assert_eq!(ex.message()["error"]["data"]["rule"], "demo-route");
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!(rec.virtual_server.as_deref(), Some("eng"));
    assert_eq!(rec.rate_limit_rule.as_deref(), Some("demo-route"));
    // And the calls through it counted on the member's own route.
    let ex = tool(gw.url("demo"), &alice, 4, "add", add(4)).await;
    assert_eq!(ex.status, 429, "{ex:?}");
}
