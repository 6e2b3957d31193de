//! Console identity: only the console issuer's tokens, only for the
//! console's own audiences, and the development issuer's codes only for
//! the console.

use reqwest::StatusCode;
use reqwest::header::{LOCATION, SET_COOKIE};
use serde_json::{Value, json};

use crate::idp::Idp;
use crate::rig::{Rig, dev_console, no_redirects};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_another_trusted_issuer_is_refused_for_scripts_and_at_sign_in() {
    let idp = Idp::start().await;
    let console = dev_console(&format!("token_endpoint = \"{}/token\"", idp.issuer));
    let rig = Rig::start_with(&console, &idp.config(""), "").await;
    // The gateway trusts the provider: its token for the route is served.
    let for_the_route = idp.token("mallory", &[&rig.gw.url("demo")]);
    let echoed = rig.call(&for_the_route, 1, "echo", json!({"text": "hi"})).await;
    assert_eq!(echoed.status, 200, "{}", String::from_utf8_lossy(&echoed.body));

    let ours = rig
        .gw
        .mint("ci-bot", &["--console", "--group", "platform-admins"])
        .await;
    assert_eq!(rig.as_script(&ours, "me", None).await.status(), StatusCode::OK);
    // Its token for the console's URL, in the admin group: not a console token.
    let theirs = idp.token("mallory", &[&rig.console_url()]);
    let refused = rig.as_script(&theirs, "me", None).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    // A sign-in whose token endpoint hands back that token.
    idp.answer_with(&theirs);
    let (answer, _) = rig.callback("alice").await;
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    let session = answer
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .any(|c| c.to_str().unwrap().starts_with("tollgate_console="));
    assert!(!session, "no session is started");
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], "token_refused", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_token_accepted_for_every_route_is_not_a_console_token() {
    let idp = Idp::start().await;
    let secret = tempfile::tempdir().unwrap();
    let secret_file = secret.path().join("console-secret");
    std::fs::write(&secret_file, "s3cret\n").unwrap();
    let every_route = "https://mcp.example.com/every-route";
    let console = format!(
        "[console]\nenabled = true\nissuer = \"{}\"\nclient_secret = {{ file = \"{}\" }}\n\
         audiences = [\"tollgate-console-api\"]\n\n[console.roles]\nadmin = [\"platform-admins\"]\n",
        idp.issuer,
        secret_file.display()
    );
    let issuer_wide = format!("audiences = [\"{every_route}\"]");
    let rig = Rig::start_with(&console, &idp.config(&issuer_wide), "").await;
    let mcp = idp.token("ci-bot", &[every_route]);
    let echoed = rig.call(&mcp, 1, "echo", json!({"text": "hi"})).await;
    assert_eq!(echoed.status, 200, "an MCP access token, good on every route");
    let refused = rig.as_script(&mcp, "me", None).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    // The console's URL, or its own `[console] audiences`, make a console token.
    let url = rig.console_url();
    for audience in [url.as_str(), "tollgate-console-api"] {
        let token = idp.token("ci-bot", &[audience]);
        let me = rig.as_script(&token, "me", None).await;
        assert_eq!(me.status(), StatusCode::OK, "{audience}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_development_issuer_issues_codes_for_the_console_only() {
    let rig = Rig::start().await;
    let callback = format!("{}/callback", rig.console_url());
    let authorize = |resource: String| {
        no_redirects()
            .get(format!("{}/dev-issuer/authorize", rig.gw.admin))
            .query(&[
                ("response_type", "code"),
                ("client_id", "tollgate-console"),
                ("redirect_uri", callback.as_str()),
                ("code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"),
                ("code_challenge_method", "S256"),
                ("resource", resource.as_str()),
                ("login_hint", "alice"),
                ("state", "s1"),
            ])
            .send()
    };
    let for_the_route = authorize(rig.gw.url("demo")).await.unwrap();
    assert_eq!(for_the_route.status(), StatusCode::SEE_OTHER);
    let location = for_the_route.headers()[LOCATION].to_str().unwrap();
    assert!(location.starts_with(&callback), "{location}");
    assert!(location.contains("error=invalid_target"), "{location}");
    assert!(!location.contains("code="), "no code for an MCP route: {location}");

    let for_the_console = authorize(rig.console_url()).await.unwrap();
    let location = for_the_console.headers()[LOCATION].to_str().unwrap();
    assert!(
        location.contains("code=") && location.contains("state=s1"),
        "{location}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_secret_with_reserved_characters_is_form_encoded_for_basic() {
    // RFC 6749 §2.3.1: id and secret are form-urlencoded before HTTP Basic;
    // sent raw, the `:` would split the secret and the `%` fail to decode.
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("console-secret");
    std::fs::write(&secret_file, "p%25:ss w+rd/é\n").unwrap();
    let console = dev_console(&format!("client_secret = {{ file = \"{}\" }}", secret_file.display()));
    let rig = Rig::start_with(&console, "", "").await;
    let (signed, _) = rig.callback("alice").await;
    assert_eq!(signed.status(), StatusCode::OK, "{}", signed.text().await.unwrap());
}
