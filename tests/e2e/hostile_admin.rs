//! The admin listener against a hostile reader, black-box:
//!
//! - `[admin] token` guards `/readyz?detail` and `/catalog`: no token, a
//!   wrong one (near misses included) or another scheme gets 401 with a
//!   `Bearer` challenge and a JSON error; the right one gets the detail; a
//!   reload rotates it. Without a token, the listener is open as before.
//! - `/healthz`, `/readyz` and `/metrics` stay open for probes and
//!   scrapers; the console keeps its own sign-in (the admin token is no
//!   console credential).
//! - `leaks`: a marker planted in every secret and URL credential of a
//!   configuration never appears in `tollgate validate`'s output, a failed
//!   start or a refused reload (log and `/readyz?detail`); `validate`
//!   refuses `user:password@` in an upstream URL; an upstream URL's query
//!   string is shown as `?<redacted>` in the audit record, `/readyz?detail`,
//!   `/catalog`, the console's API and the log.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "hostile_admin/leaks.rs"]
mod leaks;

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::{CONSOLE, Demo, TestGateway, http};

/// The admin token of these tests.
pub(crate) const TOKEN: &str = "admin-token-0123456789abcdef";

/// Write `text` to `dir/name`; its path, as a TOML string.
pub(crate) fn secret_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    format!("{:?}", path.display().to_string())
}

/// `[admin]` naming a file that holds `TOKEN`, kept in `dir`.
pub(crate) fn admin_table(dir: &Path) -> String {
    format!(
        "[admin]\ntoken = {{ file = {} }}\n",
        secret_file(dir, "admin-token", TOKEN)
    )
}

/// GET `url` with `Authorization: {authorization}` when given.
pub(crate) async fn get(url: &str, authorization: Option<&str>) -> reqwest::Response {
    let mut req = http().get(url);
    if let Some(value) = authorization {
        req = req.header("authorization", value);
    }
    req.send().await.unwrap()
}

/// GET `url` with the admin token; its JSON.
pub(crate) async fn admin_json(url: &str) -> Value {
    let res = get(url, Some(&format!("Bearer {TOKEN}"))).await;
    assert_eq!(res.status(), StatusCode::OK, "{url}");
    res.json().await.unwrap()
}

/// A gateway in front of the demo server with `extra` tables.
async fn gateway(demo: &Demo, extra: &str) -> TestGateway {
    TestGateway::spawn(&format!(
        "{extra}\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    ))
    .await
}

/// Assert a refusal: 401, the challenge, a JSON error.
async fn assert_refused(res: reqwest::Response, error: &str) {
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let challenge = res.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.starts_with("Bearer realm=\"tollgate-admin\""), "{challenge}");
    assert_eq!(
        challenge.contains("invalid_token"),
        error == "invalid_token",
        "{challenge}"
    );
    assert_eq!(res.headers()["content-type"], "application/json");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], error, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.contains(TOKEN)), "{body}");
}

#[tokio::test]
async fn the_admin_detail_wants_the_admin_token() {
    let demo = Demo::spawn().await;
    let files = tempfile::tempdir().unwrap();
    let gw = gateway(&demo, &admin_table(files.path())).await;
    let upper = TOKEN.to_uppercase();
    let short = &TOKEN[..TOKEN.len() - 1];
    for path in ["/readyz?detail", "/readyz?x=1&detail", "/catalog"] {
        let url = format!("{}{path}", gw.admin);
        assert_refused(get(&url, None).await, "unauthorized").await;
        assert_refused(get(&url, Some(&format!("Basic {TOKEN}"))).await, "unauthorized").await;
        assert_refused(get(&url, Some("Bearer")).await, "unauthorized").await;
        for wrong in [upper.as_str(), short, &format!("{TOKEN}x"), &format!("{TOKEN} {TOKEN}")] {
            let res = get(&url, Some(&format!("Bearer {wrong}"))).await;
            assert_refused(res, "invalid_token").await;
        }
        let detail = admin_json(&url).await;
        assert!(detail.is_object(), "{path}: {detail}");
        let lower = get(&url, Some(&format!("bearer {TOKEN}"))).await;
        assert_eq!(lower.status(), StatusCode::OK, "the scheme is case-insensitive");
    }
    let detail = admin_json(&format!("{}/readyz?detail", gw.admin)).await;
    assert!(detail["checks"].is_object(), "{detail}");
    let catalog = admin_json(&format!("{}/catalog", gw.admin)).await;
    assert!(catalog["servers"]["demo"].is_object(), "{catalog}");
}

#[tokio::test]
async fn probes_and_scrapers_stay_open_and_the_console_keeps_its_own_sign_in() {
    let demo = Demo::spawn().await;
    let files = tempfile::tempdir().unwrap();
    let gw = gateway(&demo, &format!("{}\n{CONSOLE}", admin_table(files.path()))).await;
    let mut ready = None;
    for _ in 0..100 {
        let res = get(&format!("{}/readyz", gw.admin), None).await;
        if res.status() == StatusCode::OK {
            ready = Some(res.text().await.unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ready.as_deref(), Some("ready\n"), "/readyz answers without a token");
    let health = get(&format!("{}/healthz", gw.admin), None).await;
    assert_eq!(health.status(), StatusCode::OK);
    let metrics = get(&format!("{}/metrics", gw.admin), None).await;
    assert_eq!(metrics.status(), StatusCode::OK);
    assert!(metrics.text().await.unwrap().contains("tollgate_config_generation"));
    let jwks = get(&format!("{}/dev-issuer/jwks.json", gw.admin), None).await;
    assert_eq!(jwks.status(), StatusCode::OK, "the issuer's keys are public");
    let api = format!("{}/console/api/upstreams", gw.admin);
    for authorization in [None, Some(format!("Bearer {TOKEN}"))] {
        let res = get(&api, authorization.as_deref()).await;
        assert_eq!(
            res.status(),
            StatusCode::UNAUTHORIZED,
            "the console signs its users in itself; the admin token is not one of its credentials"
        );
    }
}

#[tokio::test]
async fn without_a_token_the_admin_listener_is_open_as_before() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    for path in ["/readyz?detail", "/catalog"] {
        let res = get(&format!("{}{path}", gw.admin), None).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn a_reload_rotates_the_admin_token() {
    let demo = Demo::spawn().await;
    let files = tempfile::tempdir().unwrap();
    let table = admin_table(files.path());
    let gw = ChildGateway::spawn(&format!(
        "{table}\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    ))
    .await;
    let catalog = format!("{}/catalog", gw.admin);
    admin_json(&catalog).await;
    let next = "the-next-admin-token-fedcba9876543210";
    secret_file(files.path(), "admin-token", next);
    gw.hangup().await;
    let with = |token: &str| format!("Bearer {token}");
    for _ in 0..200 {
        if get(&catalog, Some(&with(next))).await.status() == StatusCode::OK {
            assert_refused(get(&catalog, Some(&with(TOKEN))).await, "invalid_token").await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the new token was not in force 10 s after SIGHUP:\n{}", gw.log());
}
