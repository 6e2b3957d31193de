//! The whole dance with real software: the company IdP is `oidc-provider`
//! (a certified OpenID provider, started by the test), the clients are the
//! TypeScript SDK's and the Python SDK's own OAuth machinery, and the
//! tools they call are decided by a Cedar policy on the team the IdP's
//! claims carried into the route token.

use serde_json::{Value, json};
use tollgate_e2e::children::{ChildGateway, free_port};
use tollgate_e2e::idp::Idp;
use tollgate_e2e::oauth_clients::{CimdClient, python_oauth_client, ts_oauth_client};
use tollgate_e2e::{Demo, policy_dir};

const SECRET: &str = "tollgate-at-the-idp";

/// Only the platform team calls tools; everyone lists and connects.
const POLICY: &str = r#"
@id("plumbing") permit (principal, action == Tollgate::Action::"other_method", resource);
@id("discover") permit (principal, action in Tollgate::Action::"discover", resource);
@id("platform-calls") permit (principal in Tollgate::Team::"platform", action == Tollgate::Action::"call_tool", resource);
"#;

fn users() -> Value {
    json!([
        {"subject": "alice", "password": "wonderland", "email": "alice@example.com",
         "team": "platform", "cost_center": "cc-1001", "groups": ["platform-admins"]},
        {"subject": "bob", "password": "builder", "email": "bob@example.com",
         "team": "support", "cost_center": "cc-2002", "groups": ["support"]}
    ])
}

/// A gateway whose authorization server signs users in at an IdP on
/// `idp_port`, then that IdP (Tollgate registered as its client).
struct World {
    gw: ChildGateway,
    idp: Idp,
    _policies: tempfile::TempDir,
    _demo: Demo,
}

async fn world(extra: &str) -> World {
    world_on(free_port(), extra).await
}

async fn world_on(idp_port: u16, extra: &str) -> World {
    let demo = Demo::spawn().await;
    let policies = policy_dir(POLICY);
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), SECRET).unwrap();
    let gw = ChildGateway::spawn(&format!(
        "[authorization_server]\nenabled = true\ndevelopment = true\naccess_token_ttl = \"4s\"\n\
         [authorization_server.identity_provider]\nissuer = \"http://127.0.0.1:{idp_port}\"\n\
         client_id = \"tollgate\"\nclient_secret = {{ file = \"{secret}\" }}\n\
         scopes = [\"openid\", \"email\", \"profile\", \"org\"]\nallow_insecure_http = true\n\
         {extra}\n\
         [policy]\ndir = \"{policies}\"\n[audit]\ndirectory = \"audit\"\n\
         [[servers]]\nname = \"demo\"\nurl = \"{url}\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n",
        secret = secret.path().display(),
        policies = policies.path().display(),
        url = demo.url,
    ))
    .await;
    let idp = Idp::start_on(
        idp_port,
        json!({
            "clients": [{
                "client_id": "tollgate", "client_secret": SECRET,
                "redirect_uris": [format!("{}/oauth/callback", gw.base)],
            }],
            "users": users(),
        }),
    )
    .await;
    World {
        gw,
        idp,
        _policies: policies,
        _demo: demo,
    }
}

/// Arguments of an SDK client registering by DCR and signing `user` in.
fn dcr<'a>(user: &'a str, password: &'a str, plan: &'a str) -> [&'a str; 8] {
    ["--mode", "dcr", "--user", user, "--password", password, "--plan", plan]
}

fn plan(steps: Value) -> String {
    steps.to_string()
}

fn call_echo() -> Value {
    json!({"call": "echo", "arguments": {"text": "hi"}})
}

#[tokio::test]
async fn the_typescript_sdk_registers_signs_in_at_the_idp_and_calls_as_the_mapped_team() {
    let w = world("").await;
    let steps = plan(json!(["list_tools", call_echo(), {"sleep": 5500}, call_echo()]));
    let out = ts_oauth_client(&w.gw.url("demo"), &dcr("alice", "wonderland", &steps)).await;
    assert_eq!(out["ok"], true, "{out}\n{}", w.idp.log());
    assert_eq!(out["registered"], true, "{out}");
    assert_eq!(out["authorizationServer"], w.gw.base.as_str());
    assert_eq!(out["authorizations"][0]["response"]["iss"], w.gw.base.as_str());
    let claims = &out["claims"];
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["team"], "platform");
    assert_eq!(claims["cost_center"], "cc-1001");
    assert_eq!(claims["email"], "alice@example.com");
    assert_eq!(claims["aud"][0], w.gw.url("demo"));
    assert_eq!(claims["client_id"], out["clientId"]);
    assert_eq!(out["steps"][1]["isError"], false, "{out}");
    assert!(
        out["refreshes"].as_u64().unwrap() >= 1,
        "the SDK refreshed after expiry: {out}"
    );

    // Bob is in another team: he connects and lists, the policy refuses his calls.
    let out = ts_oauth_client(&w.gw.url("demo"), &dcr("bob", "builder", &plan(json!([call_echo()])))).await;
    assert_eq!(out["connected"], true, "{out}");
    assert_eq!(out["claims"]["team"], "support");
    let step = &out["steps"][0];
    assert!(step["error"].is_object() || step["isError"] == true, "{out}");
}

#[tokio::test]
async fn the_typescript_sdk_uses_a_client_id_metadata_document() {
    let cimd = CimdClient::prepare().await;
    let w = world(&format!(
        "[authorization_server.registration]\nmetadata_ca_file = \"{}\"\n",
        cimd.ca_file.display()
    ))
    .await;
    let args = cimd.args(&[
        "--user",
        "alice",
        "--password",
        "wonderland",
        "--plan",
        &plan(json!([call_echo()])),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ts_oauth_client(&w.gw.url("demo"), &args).await;
    assert_eq!(out["ok"], true, "{out}\n{}", w.idp.log());
    assert_eq!(out["clientIdIsCimdUrl"], true, "{out}");
    assert_eq!(
        out["registered"], false,
        "no registration with a metadata document: {out}"
    );
    assert_eq!(out["claims"]["client_id"], cimd.url.as_str());
    assert!(
        !out["cimd"]["fetches"].as_array().unwrap().is_empty(),
        "the gateway fetched it: {out}"
    );
}

#[tokio::test]
async fn the_python_sdk_registers_and_signs_in_at_the_idp() {
    let w = world("").await;
    let out = python_oauth_client(
        &w.gw.url("demo"),
        &dcr("alice", "wonderland", &plan(json!(["list_tools", call_echo()]))),
    )
    .await;
    assert_eq!(out["ok"], true, "{out}\n{}", w.idp.log());
    assert_eq!(out["claims"]["team"], "platform");
    assert_eq!(out["claims"]["aud"][0], w.gw.url("demo"));
}

#[tokio::test]
async fn an_identity_assertion_from_the_idp_is_redeemed_without_a_browser() {
    let idp_port = free_port();
    let w = world_on(idp_port, &format!(
        "[[authorization_server.trusted_assertion_issuers]]\nissuer = \"http://127.0.0.1:{idp_port}\"\nallow_insecure_http = true\n"
    ))
    .await;
    // The enterprise-managed client: registered at Tollgate (confidential),
    // and known to the IdP, which issues ID-JAGs naming that client id.
    let http = crate::oauth::client();
    let (id, secret) = tollgate_e2e::oauth_clients::register_confidential(&w.gw.base, "Agent").await;
    let (id, secret) = (id.as_str(), secret.as_str());
    drop(w.idp);
    let idp = Idp::start_on(
        idp_port,
        json!({
            "clients": [
                {"client_id": "tollgate", "client_secret": SECRET, "redirect_uris": [format!("{}/oauth/callback", w.gw.base)]},
                {"client_id": "agent", "client_secret": "agent-secret", "redirect_uris": ["http://127.0.0.1:9/cb"],
                 "id_jag_client_ids": {"*": id}}
            ],
            "users": users(),
        }),
    )
    .await;
    let jag = idp
        .id_jag(
            "agent",
            "agent-secret",
            "http://127.0.0.1:9/cb",
            "alice",
            "wonderland",
            &w.gw.base,
            &w.gw.url("demo"),
        )
        .await;
    let redeem = |assertion: String| {
        let http = http.clone();
        let url = format!("{}/token", w.gw.base);
        let (id, secret) = (id.to_owned(), secret.to_owned());
        async move {
            let res = http
                .post(url)
                .basic_auth(id, Some(secret))
                .form(&[
                    ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                    ("assertion", &assertion),
                ])
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        }
    };
    let (status, answer) = redeem(jag.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.get("refresh_token").is_none());
    let claims = crate::oauth::claims(answer["access_token"].as_str().unwrap());
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["team"], "platform");
    assert_eq!(claims["aud"][0], w.gw.url("demo"));
    assert_eq!(
        crate::oauth::call(&w.gw, "demo", answer["access_token"].as_str().unwrap()).await,
        200
    );
    // The same assertion again: replay.
    let (status, err) = redeem(jag).await;
    assert_eq!((status, err["error"].as_str()), (400, Some("invalid_grant")), "{err}");
}
