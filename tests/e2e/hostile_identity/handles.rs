//! Session ids and task handles are bound to the issuer too: the two
//! `alice`s cannot continue each other's session or see each other's task.

use serde_json::json;
use tollgate_e2e::tasks::{self, client};
use tollgate_e2e::{Demo, TestGateway, legacy_request, legacy_session};

use super::{Issuers, SUB};

/// The demo behind route `demo`, which wants a token of either issuer.
async fn gateway(issuers: &Issuers, demo: &Demo) -> TestGateway {
    TestGateway::spawn(&format!(
        "{}\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\nauth = {{ required = true, scopes = [\"mcp:tools\"] }}\n",
        issuers.config(),
        demo.url
    ))
    .await
}

#[tokio::test]
async fn the_same_sub_at_another_issuer_cannot_continue_a_session() {
    let (issuers, demo) = (Issuers::start().await, Demo::spawn().await);
    let gw = gateway(&issuers, &demo).await;
    let dev = format!("Bearer {}", issuers.dev_token(SUB, &["demo"]));
    let partner = format!("Bearer {}", issuers.partner_token(SUB, &["demo"]));
    let session = legacy_session(&gw.url("demo"), Some(&dev)).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let status = |bearer: &str| {
        let req = legacy_request(&gw.url("demo"), Some(bearer), Some(&session), &ping);
        async move { req.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status(&dev).await, 200);
    assert_eq!(status(&partner).await, 404, "the partner's alice took over the session");
}

#[tokio::test]
async fn the_same_sub_at_another_issuer_cannot_see_a_task() {
    let (issuers, demo) = (Issuers::start().await, Demo::spawn().await);
    let gw = gateway(&issuers, &demo).await;
    let dev = issuers.dev_token(SUB, &["demo"]);
    let partner = issuers.partner_token(SUB, &["demo"]);
    let mine = client(gw.url("demo"), Some(&dev), false).await;
    let handle = tasks::start(&mine, "countdown", 20, 500).await;
    let theirs = client(gw.url("demo"), Some(&partner), false).await;
    tasks::refused(&theirs, &handle, "the partner's alice").await;
    mine.peer()
        .cancel_task(rmcp::model::CancelTaskParams::new(handle))
        .await
        .unwrap();
}
