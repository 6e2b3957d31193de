//! The whole dance with the development sign-in: metadata, registration,
//! authorization, consent, code, token, calls, refresh and revocation.

use serde_json::Value;
use tollgate_e2e::Demo;
use tollgate_e2e::audit_support::records;

use crate::oauth::{
    REDIRECT, authorize_url, browse, call, claims, client, gateway, param, pkce, refresh, register, sign_in,
};

#[tokio::test]
async fn a_registered_client_gets_a_route_token_for_the_signed_in_user() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    let http = client();

    // The route's challenge names its metadata; the metadata names Tollgate.
    let res = http.post(gw.url("demo")).body("{}").send().await.unwrap();
    assert_eq!(res.status(), 401);
    let prm: Value = http
        .get(format!("{}/.well-known/oauth-protected-resource/mcp/demo", gw.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(prm["authorization_servers"][0], gw.base.as_str(), "{prm}");
    // Other issuers keep working side by side: here the development issuer.
    let dev = format!("http://{}/dev-issuer", gw.admin.trim_start_matches("http://"));
    assert_eq!(prm["authorization_servers"][1], dev.as_str(), "{prm}");
    let minted = gw.mint("carol", &["--scope", "mcp:tools", "--server", "demo"]).await;
    assert_eq!(call(&gw, "demo", &minted).await, 200);
    // Every metadata path a client of any revision tries.
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server/mcp/demo",
    ] {
        let doc: Value = http
            .get(format!("{}{path}", gw.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(doc["issuer"], gw.base.as_str(), "{path}");
        assert_eq!(doc["code_challenge_methods_supported"][0], "S256");
        assert_eq!(doc["authorization_response_iss_parameter_supported"], true);
        assert_eq!(doc["client_id_metadata_document_supported"], true);
    }

    let (client_id, answer, _) = sign_in(&gw, "demo").await;
    let access = answer["access_token"].as_str().unwrap();
    let c = claims(access);
    assert_eq!(c["iss"], gw.base.as_str());
    assert_eq!(c["aud"][0], gw.url("demo"));
    assert_eq!(c["sub"], "alice");
    assert_eq!(c["client_id"], client_id.as_str());
    assert_eq!(c["team"], "payments");
    assert_eq!(c["cost_center"], "cc-7");
    assert_eq!(c["scope"], "mcp:tools");
    assert_eq!(answer["expires_in"], 300);
    assert_eq!(call(&gw, "demo", access).await, 200);
    assert_eq!(call(&gw, "other", access).await, 401, "bound to the route requested");
    gw.hangup().await;
    let audit = records(&gw.audit_dir());
    let record = audit
        .iter()
        .find(|r| r.principal.as_ref().is_some_and(|p| p.subject == "alice"))
        .unwrap();
    let principal = record.principal.as_ref().unwrap();
    assert_eq!(principal.client_id.as_deref(), Some(client_id.as_str()));
    assert_eq!(principal.issuer, gw.base);

    // The refresh token rotates; the new access token works.
    let first = answer["refresh_token"].as_str().unwrap();
    let (status, next) = refresh(&gw, first, &client_id).await;
    assert_eq!(status, 200, "{next}");
    assert_ne!(next["refresh_token"], answer["refresh_token"]);
    let access2 = next["access_token"].as_str().unwrap();
    assert_eq!(call(&gw, "demo", access2).await, 200);

    // Revoking the grant stops its refresh and access tokens.
    let res = http
        .post(format!("{}/revoke", gw.base))
        .form(&[
            ("token", next["refresh_token"].as_str().unwrap()),
            ("client_id", &client_id),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(call(&gw, "demo", access2).await, 401);
    assert_eq!(call(&gw, "demo", access).await, 401);
    let (status, err) = refresh(&gw, next["refresh_token"].as_str().unwrap(), &client_id).await;
    assert_eq!((status, err["error"].as_str()), (400, Some("invalid_grant")));
}

#[tokio::test]
async fn consent_is_remembered_and_a_denial_goes_back_to_the_client() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    let reg: Value = register(&gw, &[REDIRECT]).await.json().await.unwrap();
    let client_id = reg["client_id"].as_str().unwrap();
    let (_, challenge) = pkce("deny");
    let url = authorize_url(&gw, client_id, &challenge, &gw.url("demo"), &[]);
    let back = browse(&gw, &url, "alice", "deny").await;
    assert_eq!(param(&back, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&back, "state").as_deref(), Some("st-1"));
    assert_eq!(param(&back, "iss").as_deref(), Some(gw.base.as_str()));

    let back = browse(&gw, &url, "alice", "allow").await;
    assert!(param(&back, "code").is_some());
    // Asked again for the same scopes and route: no consent page.
    let back = browse(&gw, &url, "alice", "never-shown").await;
    assert!(param(&back, "code").is_some(), "{back}");

    // Revoking the grant forgets the consent: the next sign-in asks again.
    let (_, answer, _) = crate::oauth::sign_in(&gw, "demo").await;
    let token = answer["refresh_token"].as_str().unwrap();
    let cid = claims(answer["access_token"].as_str().unwrap())["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = client()
        .post(format!("{}/revoke", gw.base))
        .form(&[("token", token), ("client_id", &cid)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let (_, challenge) = pkce("again");
    let again = browse(
        &gw,
        &authorize_url(&gw, &cid, &challenge, &gw.url("demo"), &[]),
        "alice",
        "deny",
    )
    .await;
    assert_eq!(
        param(&again, "error").as_deref(),
        Some("access_denied"),
        "the consent page was shown: {again}"
    );
}

#[tokio::test]
async fn administrators_list_disable_and_delete_clients_and_revoke_a_users_grants() {
    let demo = Demo::spawn().await;
    let gw = gateway(&demo, "").await;
    let (client_id, answer, _) = sign_in(&gw, "demo").await;
    let config = gw.dir.path().join("gateway.toml");
    let config = config.to_str().unwrap();
    let cli = |args: Vec<String>| async move {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["--config", config]);
        let out = tollgate_e2e::children::tollgate_cli(&all).await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        text
    };
    let list = cli(vec!["clients".into(), "list".into()]).await;
    assert!(
        list.contains(&client_id) && list.contains("registered") && list.contains("Test client"),
        "{list}"
    );
    let grants = cli(vec!["grants".into(), "list".into(), "--subject".into(), "alice".into()]).await;
    assert!(
        grants.contains(&client_id) && grants.contains(&gw.url("demo")),
        "{grants}"
    );

    // A disabled client is refused at the token endpoint and at authorize.
    cli(vec!["clients".into(), "disable".into(), client_id.clone()]).await;
    assert!(cli(vec!["clients".into(), "list".into()]).await.contains("disabled"));
    let (status, err) = refresh(&gw, answer["refresh_token"].as_str().unwrap(), &client_id).await;
    assert_eq!((status, err["error"].as_str()), (401, Some("invalid_client")), "{err}");
    let (_, challenge) = pkce("disabled");
    let res = client()
        .get(authorize_url(&gw, &client_id, &challenge, &gw.url("demo"), &[]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    cli(vec!["clients".into(), "enable".into(), client_id.clone()]).await;

    // A user who left: every grant revoked, tokens refused at once.
    let access = answer["access_token"].as_str().unwrap();
    assert_eq!(call(&gw, "demo", access).await, 200);
    let out = cli(vec![
        "grants".into(),
        "revoke".into(),
        "--subject".into(),
        "alice".into(),
    ])
    .await;
    assert!(out.contains("1 grant(s) revoked"), "{out}");
    assert_eq!(call(&gw, "demo", access).await, 401);

    cli(vec!["clients".into(), "delete".into(), client_id.clone()]).await;
    assert!(!cli(vec!["clients".into(), "list".into()]).await.contains(&client_id));
}
