//! Task handles and session ids belong to one principal on one route.

use std::time::Duration;

use rmcp::model::{CancelTaskParams, GetTaskParams};
use serde_json::json;
use tollgate_e2e::audit_support::trail_lines;
use tollgate_e2e::tasks::{self, Client};
use tollgate_e2e::{Demo, TestGateway, TestIssuer, legacy_request, legacy_session};

/// The demo server behind routes `demo` and `demo2` and virtual servers
/// `eng` and `eng2` over `demo`, every one requiring a token.
async fn gateway() -> (TestGateway, Demo, TestIssuer) {
    let issuer = TestIssuer::new();
    let demo = Demo::spawn().await;
    let auth = "auth = { required = true, scopes = [\"mcp:tools\"] }";
    let gw = TestGateway::spawn(&format!(
        "{}\n\
         [[servers]]\nname = \"demo\"\nurl = \"{url}\"\n{auth}\n\n\
         [[servers]]\nname = \"demo2\"\nurl = \"{url}\"\n{auth}\n\n\
         [[virtual_servers]]\nname = \"eng\"\n{auth}\nmembers = [{{ server = \"demo\" }}]\n\n\
         [[virtual_servers]]\nname = \"eng2\"\n{auth}\nmembers = [{{ server = \"demo\" }}]\n",
        issuer.config(),
        url = demo.url,
    ))
    .await;
    gw.wait_synced("demo").await;
    (gw, demo, issuer)
}

/// `sub`'s token for every route of [`gateway`].
fn token(issuer: &TestIssuer, sub: &str) -> String {
    issuer.token(sub, &["mcp:tools"], &["demo", "demo2", "eng", "eng2"])
}

/// An rmcp client (2026-07-28, tasks declared) of `url` with `token`.
async fn client(url: String, token: &str) -> Client {
    tasks::client(url, Some(token), false).await
}

/// Start `tool` as a long task; its handle.
async fn start(c: &Client, tool: &str) -> String {
    tasks::start(c, tool, 20, 500).await
}

/// Assert that `c` polls task `handle` and that it is still running.
async fn still_running(c: &Client, handle: &str) {
    let got = c.peer().get_task(GetTaskParams::new(handle.to_owned())).await.unwrap();
    assert_eq!(got.task.task.task_id, handle);
    assert!(!got.task.status().is_terminal(), "the owner's task was ended: {got:?}");
}

#[tokio::test]
async fn a_task_handle_serves_only_its_principal_on_its_route() {
    let (gw, _demo, issuer) = gateway().await;
    let (alice, bob) = (token(&issuer, "alice"), token(&issuer, "bob"));
    for (route, tool, elsewhere) in [("eng", "demo_countdown", "eng2"), ("demo", "countdown", "demo2")] {
        let mine = client(gw.url(route), &alice).await;
        let handle = start(&mine, tool).await;
        assert!(handle.starts_with("tgt1."), "{route}: {handle}");
        tasks::refused(&client(gw.url(route), &bob).await, &handle, "bob").await;
        tasks::refused(&client(gw.url(elsewhere), &alice).await, &handle, "alice elsewhere").await;
        still_running(&mine, &handle).await;
        // Not a handle at all, and a handle of the old namespaced form.
        tasks::refused(&mine, "1", "a raw id").await;
        tasks::refused(&mine, "tg:demo:1", "a namespaced id").await;
        mine.peer()
            .cancel_task(CancelTaskParams::new(handle.clone()))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let trail = trail_lines(&gw.audit_dir()).join("\n");
        assert!(!trail.contains(&handle), "{route}: the trail holds a task handle");
    }
}

#[tokio::test]
async fn a_session_id_serves_only_its_principal_on_its_route() {
    let (gw, _demo, issuer) = gateway().await;
    let alice = format!("Bearer {}", token(&issuer, "alice"));
    let bob = format!("Bearer {}", token(&issuer, "bob"));
    let session = legacy_session(&gw.url("demo"), Some(&alice)).await;
    let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let status = |url: String, bearer: String, id: u64| {
        let session = session.clone();
        async move {
            let res = legacy_request(&url, Some(&bearer), Some(&session), &ping(id))
                .send()
                .await
                .unwrap();
            res.status().as_u16()
        }
    };
    assert_eq!(status(gw.url("demo"), alice.clone(), 1).await, 200);
    assert_eq!(status(gw.url("demo"), bob.clone(), 2).await, 404, "another principal");
    assert_eq!(status(gw.url("demo2"), alice.clone(), 3).await, 404, "another route");
    assert_eq!(status(gw.url("eng"), alice.clone(), 4).await, 404, "a virtual server");
}
