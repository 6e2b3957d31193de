//! Sign-in, roles, the session cookie, CSRF, CSP and bearer tokens.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, LOCATION};
use serde_json::json;

use crate::Rig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_sign_in_with_their_roles_and_state_changes_need_the_csrf_token() {
    let rig = Rig::start().await;
    let alice = rig.sign_in("alice").await;
    let me = alice.json("/console/api/me").await;
    assert_eq!(me["subject"], "alice");
    assert_eq!(me["can"], json!({"captures": true, "approve": true}));
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(alice.set_cookie.contains(attribute), "{}", alice.set_cookie);
    }
    assert!(!alice.set_cookie.contains("Secure"), "plain HTTP on loopback");

    let victor = rig.sign_in("victor").await;
    let me = victor.json("/console/api/me").await;
    assert_eq!(me["roles"], json!(["viewer"]));
    assert_eq!(me["can"], json!({"captures": false, "approve": false}));
    let approve = json!({"server": "demo", "kind": "tool", "key": "get_weather"});
    let refused = victor.post("/console/api/catalog/approve", &approve, true).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    // A state change without the session's token is refused, whoever asks.
    let check = json!({"subject": "bob", "server": "demo", "kind": "tool", "name": "echo"});
    let forged = alice.post("/console/api/policies/check", &check, false).await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let body: serde_json::Value = forged.json().await.unwrap();
    assert_eq!(body["error"]["code"], "csrf");
    assert_eq!(
        alice.post("/console/api/policies/check", &check, true).await.status(),
        StatusCode::OK
    );

    // Every answer carries the strict policy; pages without a session send
    // the browser to sign in, the API answers 401.
    let page = alice.get("/console/audit").await;
    let csp = page.headers()[CONTENT_SECURITY_POLICY].to_str().unwrap().to_owned();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let anonymous = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = anonymous
        .get(format!("{}/console/spend", rig.gw.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(page.headers()[LOCATION], "/console/login");
    let api = anonymous
        .get(format!("{}/console/api/me", rig.gw.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED);
    let forged_cookie = anonymous
        .get(format!("{}/console/api/me", rig.gw.admin))
        .header(
            "cookie",
            "tollgate_console=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(forged_cookie.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_use_the_api_with_a_bearer_token_for_the_console() {
    let rig = Rig::start().await;
    let token = rig
        .gw
        .mint("ci-bot", &["--console", "--group", "platform-admins"])
        .await;
    let me: serde_json::Value = as_script(&rig, &token, "me", None).await.json().await.unwrap();
    assert_eq!(me["subject"], "ci-bot");
    // No CSRF token needed: browsers never send bearer tokens on their own.
    let check = json!({"subject": "bob", "server": "demo", "kind": "tool", "name": "delete_item"});
    let decided: serde_json::Value = as_script(&rig, &token, "policies/check", Some(check))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(decided["decision"], "deny");

    // A token for the MCP routes is not a console token.
    let route_token = rig
        .gw
        .mint("ci-bot", &["--group", "platform-admins", "--scope", "mcp:tools"])
        .await;
    let refused = as_script(&rig, &route_token, "me", None).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    // Nor is a console token of someone without a role.
    let nobody = rig.gw.mint("mallory", &["--console"]).await;
    let refused = as_script(&rig, &nobody, "me", None).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}

/// `/console/api/{path}` with a bearer token: a POST of `body`, else a GET.
async fn as_script(rig: &Rig, token: &str, path: &str, body: Option<serde_json::Value>) -> reqwest::Response {
    let url = format!("{}/console/api/{path}", rig.gw.admin);
    let http = tollgate_e2e::http();
    let request = match body {
        Some(body) => http.post(url).json(&body),
        None => http.get(url),
    };
    request.bearer_auth(token).send().await.unwrap()
}
