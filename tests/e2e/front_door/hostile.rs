//! The authorization server's hostile table: each attack, and the exact
//! answer that meets it.

use serde_json::Value;
use tollgate_e2e::Demo;

use crate::oauth::{
    REDIRECT, authorize_url, browse, call, client, gateway, param, pkce, refresh, register, sign_in, token,
};

fn code_form<'a>(code: &'a str, verifier: &'a str, client_id: &'a str) -> [(&'a str, &'a str); 5] {
    [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
        ("client_id", client_id),
    ]
}

#[tokio::test]
async fn a_replayed_code_is_refused_and_revokes_its_grant() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    let (client_id, answer, code) = sign_in(&gw, "demo").await;
    let access = answer["access_token"].as_str().unwrap();
    assert_eq!(call(&gw, "demo", access).await, 200);
    let (_, verifier_again) = (0, crate::oauth::pkce("flow").0);
    let (status, err) = token(&gw, &code_form(&code, &verifier_again, &client_id)).await;
    assert_eq!((status, err["error"].as_str()), (400, Some("invalid_grant")), "{err}");
    assert_eq!(
        call(&gw, "demo", access).await,
        401,
        "the grant the code produced is revoked"
    );
}

#[tokio::test]
async fn pkce_is_required_s256_only_and_checked() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    let reg: Value = register(&gw, &[REDIRECT]).await.json().await.unwrap();
    let client_id = reg["client_id"].as_str().unwrap();
    let (verifier, challenge) = pkce("pkce");
    let http = client();
    // Downgrade to `plain`, and no challenge at all: back to the client.
    for extra in [vec![("code_challenge_method", "plain")], vec![]] {
        let mut url = authorize_url(&gw, client_id, &challenge, &gw.url("demo"), &[]);
        if extra.is_empty() {
            url = url.replace(&format!("code_challenge={challenge}&"), "");
        } else {
            url = url.replace("code_challenge_method=S256", "code_challenge_method=plain");
        }
        let res = http.get(&url).send().await.unwrap();
        assert_eq!(res.status(), 303);
        let back = res.headers()["location"].to_str().unwrap();
        assert_eq!(param(back, "error").as_deref(), Some("invalid_request"), "{back}");
        assert_eq!(param(back, "iss").as_deref(), Some(gw.base.as_str()));
    }
    // A wrong verifier.
    let back = browse(
        &gw,
        &authorize_url(&gw, client_id, &challenge, &gw.url("demo"), &[]),
        "alice",
        "allow",
    )
    .await;
    let code = param(&back, "code").unwrap();
    let wrong = format!("{}x", &verifier[..verifier.len() - 1]);
    let (status, err) = token(&gw, &code_form(&code, &wrong, client_id)).await;
    assert_eq!((status, err["error"].as_str()), (400, Some("invalid_grant")), "{err}");
}

#[tokio::test]
async fn redirect_uris_must_match_exactly_and_follow_the_policy() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    let res = register(&gw, &["https://evil.example/cb"]).await;
    assert_eq!(res.status(), 400);
    let err: Value = res.json().await.unwrap();
    assert_eq!(err["error"], "invalid_redirect_uri", "{err}");

    let reg: Value = register(&gw, &[REDIRECT]).await.json().await.unwrap();
    let client_id = reg["client_id"].as_str().unwrap();
    let (_, challenge) = pkce("redirect");
    let url = authorize_url(&gw, client_id, &challenge, &gw.url("demo"), &[])
        .replace("%3A9%2Fcallback", "%3A9%2Fcallback%2Fmore");
    let res = client().get(&url).send().await.unwrap();
    assert_eq!(
        res.status(),
        400,
        "an error page here, never a redirect to an unregistered URI"
    );
    assert!(res.headers().get("location").is_none());
    assert!(res.text().await.unwrap().contains("not registered"));

    let res = client()
        .get(authorize_url(&gw, "tgc_unknown", &challenge, &gw.url("demo"), &[]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
}

#[tokio::test]
async fn a_token_for_a_route_not_served_is_refused() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    let reg: Value = register(&gw, &[REDIRECT]).await.json().await.unwrap();
    let client_id = reg["client_id"].as_str().unwrap();
    let (_, challenge) = pkce("target");
    for resource in ["https://elsewhere.example/mcp/demo".to_owned(), gw.url("nope")] {
        let res = client()
            .get(authorize_url(&gw, client_id, &challenge, &resource, &[]))
            .send()
            .await
            .unwrap();
        let back = res.headers()["location"].to_str().unwrap();
        assert_eq!(param(back, "error").as_deref(), Some("invalid_target"), "{back}");
    }
    // At the token endpoint: a resource not granted.
    let (_, answer, _) = sign_in(&gw, "demo").await;
    let (status, err) = token(
        &gw,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", answer["refresh_token"].as_str().unwrap()),
            ("client_id", &client_id_of(&answer)),
            ("resource", &gw.url("other")),
        ],
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(err["error"], "invalid_target", "{err}");
}

fn client_id_of(answer: &Value) -> String {
    crate::oauth::claims(answer["access_token"].as_str().unwrap())["client_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_reused_refresh_token_revokes_the_grant() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    let (client_id, first, _) = sign_in(&gw, "demo").await;
    let old = first["refresh_token"].as_str().unwrap();
    let (status, second) = refresh(&gw, old, &client_id).await;
    assert_eq!(status, 200);
    // An attacker replays the old one: refused, and the whole grant dies.
    let (status, err) = refresh(&gw, old, &client_id).await;
    assert_eq!((status, err["error"].as_str()), (400, Some("invalid_grant")), "{err}");
    let (status, _) = refresh(&gw, second["refresh_token"].as_str().unwrap(), &client_id).await;
    assert_eq!(status, 400, "the rotated token died with its grant");
    assert_eq!(call(&gw, "demo", second["access_token"].as_str().unwrap()).await, 401);
}

#[tokio::test]
async fn a_metadata_document_at_a_private_address_is_refused() {
    let demo = Demo::spawn().await;
    // Outside development mode.
    let gw = gateway(&demo, "").await;
    drop(gw);
    let gw = tollgate_e2e::children::ChildGateway::spawn(&format!(
        "[dev_issuer]\nenabled = true\nkey_file = \"dev.pem\"\n[[dev_issuer.users]]\nsubject = \"alice\"\n\
         [authorization_server]\nenabled = true\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    ))
    .await;
    let (_, challenge) = pkce("cimd");
    for client_id in [
        "https://127.0.0.1/client.json",
        "https://169.254.169.254/latest/meta-data",
        "https://10.1.2.3/c.json",
    ] {
        let res = client()
            .get(authorize_url(&gw, client_id, &challenge, &gw.url("demo"), &[]))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401, "{client_id}");
        assert!(res.headers().get("location").is_none());
        let page = res.text().await.unwrap();
        assert!(page.contains("invalid_client"), "{page}");
    }
}

#[tokio::test]
async fn registrations_past_the_per_minute_limit_are_refused() {
    let demo = Demo::spawn().await;
    let gw = gateway(
        &demo,
        "[authorization_server.registration]\nmax_registrations_per_minute = 3\n",
    )
    .await;
    // Seven registrations within a second span at most two minutes of
    // three each: at least one is refused, whatever the clock says.
    let mut refused = None;
    let mut passed = 0;
    for _ in 0..7 {
        let res = register(&gw, &[REDIRECT]).await;
        match res.status().as_u16() {
            201 => passed += 1,
            429 => refused = Some(res.json::<Value>().await.unwrap()),
            other => panic!("status {other}"),
        }
    }
    assert!(passed >= 3, "{passed} passed");
    assert_eq!(refused.expect("one refused")["error"], "slow_down");
}
