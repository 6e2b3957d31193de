//! Both eras of clients through Tollgate to one dual-era upstream: the
//! Python SDK server, which serves 2026-07-28 statelessly and the legacy
//! revisions through `initialize` on the same URL, while its
//! `server/discover` answer names 2026-07-28 only.
//!
//! What `server/discover` omits must never make the gateway refuse an era:
//! after the catalog sync has read that answer, the TypeScript SDK client
//! (legacy: `initialize`, `Mcp-Session-Id`, SSE progress, the session's
//! DELETE) and the Python SDK client (auto: 2026-07-28) each get through
//! Tollgate what they get direct, on routes in both `header_trust` modes,
//! and each client enters a virtual server over that upstream.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::{Value, json};
use tollgate_e2e::children::{python_client, python_modern_server, ts_plan_client};
use tollgate_e2e::{TestGateway, http, modern_body, modern_call};

/// Two routes to `url`, one per header-trust mode, and a virtual server
/// over the first (whose catalog is synced for it, gate off); the second's
/// gate observes. Returns once both routes' catalogs have synced and a
/// modern client's `server/discover` has passed through each (so the
/// gateway has read the upstream's answer both ways).
async fn gateway(url: &str) -> TestGateway {
    let config = format!(
        "[[servers]]\nname = \"verify\"\nurl = \"{url}\"\nheader_trust = \"verify\"\n\n\
         [[servers]]\nname = \"trusted\"\nurl = \"{url}\"\nheader_trust = \"upstream\"\ncatalog = \"observe\"\n\n\
         [[virtual_servers]]\nname = \"both\"\nmembers = [{{ server = \"verify\", prefix = \"py_\" }}]\n\n\
         [[virtual_servers]]\nname = \"plain\"\nmembers = [{{ server = \"verify\", prefix = \"\" }}]\n"
    );
    let gw = TestGateway::spawn(&config).await;
    for route in ["verify", "trusted"] {
        gw.wait_synced(route).await;
        let discover = modern_body(1, "server/discover", json!({}));
        let res = modern_call(gw.url(route), "server/discover", None, discover).await;
        assert_eq!(res.status(), 200, "server/discover through {route}");
    }
    gw
}

/// The legacy client's plan over the fixture's tools, prompt and resource,
/// with the tools and prompt named with `prefix`.
fn plan(prefix: &str) -> Value {
    json!({
        "calls": [
            {"name": format!("{prefix}echo"), "arguments": {"text": "hello"}},
            {"name": format!("{prefix}add"), "arguments": {"a": 2, "b": 40}},
            {"name": format!("{prefix}progress"), "arguments": {"steps": 3}, "progress": true},
        ],
        "prompts": [{"name": format!("{prefix}review"), "arguments": {"code": "print('hi')"}}],
        "resources": ["fixture://greeting"],
    })
}

#[tokio::test]
async fn a_legacy_client_gets_through_what_it_gets_direct() {
    let upstream = python_modern_server().await;
    let gw = gateway(&upstream.url).await;
    let direct = ts_plan_client(&upstream.url, &plan(""), &[]).await;
    assert!(
        direct["protocolVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("2025")),
        "the fixture client is legacy: {direct}"
    );
    assert_eq!(direct["calls"][2]["progress"], json!([1, 2, 3]), "{direct}");
    for route in ["verify", "trusted"] {
        let via = ts_plan_client(&gw.url(route), &plan(""), &[]).await;
        assert_eq!(
            direct, via,
            "route {route}: a legacy client's answers differ from direct"
        );
    }
}

#[tokio::test]
async fn a_modern_client_gets_through_what_it_gets_direct() {
    let upstream = python_modern_server().await;
    let gw = gateway(&upstream.url).await;
    let mut direct = python_client(&upstream.url, &[], &[]).await;
    assert_eq!(direct["protocolVersion"], "2026-07-28", "{direct}");
    direct["whoami"] = Value::Null;
    for route in ["verify", "trusted"] {
        let mut via = python_client(&gw.url(route), &[], &[]).await;
        via["whoami"] = Value::Null;
        assert_eq!(
            direct, via,
            "route {route}: a modern client's answers differ from direct"
        );
    }
}

#[tokio::test]
async fn a_legacy_client_enters_a_virtual_server_over_a_dual_era_upstream() {
    let upstream = python_modern_server().await;
    let gw = gateway(&upstream.url).await;
    let out = ts_plan_client(&gw.url("both"), &plan("py_"), &[]).await;
    assert!(
        out["protocolVersion"].as_str().is_some_and(|v| v.starts_with("2025")),
        "{out}"
    );
    assert!(out["tools"].as_array().unwrap().contains(&json!("py_echo")), "{out}");
    assert_eq!(out["calls"][0]["content"][0]["text"], "hello", "{out}");
    assert_eq!(out["calls"][1]["content"][0]["text"], "42", "{out}");
    assert_eq!(out["calls"][2]["progress"], json!([1, 2, 3]), "{out}");
    let prompt = out["prompt"][0]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(prompt.contains("print('hi')"), "{out}");
    assert_eq!(
        out["read"][0]["contents"][0]["text"],
        "Hello from the Tollgate modern fixture."
    );
    assert_eq!(out["sessionTerminated"], "ok", "{out}");
}

#[tokio::test]
async fn a_legacy_initialize_is_answered_by_the_upstream_not_refused() {
    let upstream = python_modern_server().await;
    let gw = gateway(&upstream.url).await;
    for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        let res = http()
            .post(gw.url("verify"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "initialize {version} refused");
        let text = res.text().await.unwrap();
        assert!(text.contains("\"protocolVersion\""), "{version}: {text}");
    }
}

#[tokio::test]
async fn a_modern_client_enters_a_virtual_server_over_a_dual_era_upstream() {
    let upstream = python_modern_server().await;
    let gw = gateway(&upstream.url).await;
    let mut direct = python_client(&upstream.url, &[], &[]).await;
    let mut via = python_client(&gw.url("plain"), &[], &[]).await;
    assert_eq!(via["protocolVersion"], "2026-07-28", "{via}");
    // The virtual server names itself; what its member answers is the same.
    for out in [&mut direct, &mut via] {
        out["whoami"] = Value::Null;
        out["server"] = Value::Null;
    }
    assert_eq!(
        direct, via,
        "a modern client's answers through a virtual server differ from direct"
    );
}
