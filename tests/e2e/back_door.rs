//! Each user's own upstream credential (`credential = { kind =
//! "user_oauth" }`), over real HTTP with real software: the upstream is an
//! OAuth-protected MCP server (the TypeScript SDK, `protected-server.mjs`)
//! whose authorization server is a real `oidc-provider`; the gateway finds
//! that server from the upstream's 401 challenge, asks each user to
//! connect by a URL elicitation, keeps their grant sealed in the vault,
//! refreshes it, and forwards their calls with their own token.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use base64::Engine as _;
use serde_json::{Value, json};
use tollgate_e2e::children::{ChildGateway, free_port};
use tollgate_e2e::idp::{Idp, browse};
use tollgate_e2e::protected::ProtectedServer;

const SECRET: &str = "tollgate-at-the-upstream";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"t","version":"1"}}}"#;

struct World {
    gw: ChildGateway,
    idp: Idp,
    upstream: ProtectedServer,
    _files: tempfile::TempDir,
}

/// A gateway in front of an OAuth-protected upstream at `upstream_port`,
/// its authorization server an IdP on `idp_port`; alice and bob sign in
/// at Tollgate with the development picker.
async fn world(extra: &str) -> World {
    let (idp_port, upstream_port) = (free_port(), free_port());
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("secret"), SECRET).unwrap();
    std::fs::write(
        files.path().join("vault.key"),
        base64::engine::general_purpose::STANDARD.encode([7u8; 32]),
    )
    .unwrap();
    let resource = ProtectedServer::resource_for(upstream_port);
    let gw = ChildGateway::spawn(&format!(
        "[dev_issuer]\nenabled = true\nkey_file = \"dev.pem\"\n\
         [[dev_issuer.users]]\nsubject = \"alice\"\n[[dev_issuer.users]]\nsubject = \"bob\"\n\
         [authorization_server]\nenabled = true\ndevelopment = true\n\
         [vault]\nkeys = [{{ id = \"k1\", key = {{ file = \"{dir}/vault.key\" }} }}]\n{extra}\n\
         [audit]\ndirectory = \"audit\"\n\
         [[servers]]\nname = \"github\"\nurl = \"{resource}\"\n\
         credential = {{ kind = \"user_oauth\", client_id = \"tollgate-upstream\", client_secret = {{ file = \"{dir}/secret\" }}, scopes = [\"repo\"], allow_insecure_http = true }}\n",
        dir = files.path().display(),
    ))
    .await;
    let idp = Idp::start_on(
        idp_port,
        json!({
            "clients": [{
                "client_id": "tollgate-upstream", "client_secret": SECRET,
                "redirect_uris": [format!("{}/oauth/upstream/callback", gw.base)],
                "grant_types": ["authorization_code", "refresh_token"],
            }],
            "users": [
                {"subject": "alice", "password": "wonderland"},
                {"subject": "bob", "password": "builder"}
            ],
            "resources": {resource.clone(): {"scopes": ["repo"], "access_token_ttl": 4}},
        }),
    )
    .await;
    let upstream = ProtectedServer::start_on(upstream_port, &idp.issuer).await;
    World {
        gw,
        idp,
        upstream,
        _files: files,
    }
}

fn http() -> reqwest::Client {
    tollgate_e2e::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// POST `body` to the route as `token` (in `session`); status, session id,
/// and the JSON-RPC message.
async fn post(w: &World, token: &str, session: Option<&str>, body: &str) -> (u16, Option<String>, Value) {
    let mut req = http()
        .post(w.gw.url("github"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let res = req.body(body.to_owned()).send().await.unwrap();
    let status = res.status().as_u16();
    let session = res
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, session, tollgate_e2e::rpc_message(res).await)
}

/// The connect URL of a call answered with a URL elicitation.
fn connect_url(answer: &Value) -> String {
    assert_eq!(answer["error"]["code"], -32042, "{answer}");
    let e = &answer["error"]["data"]["elicitations"][0];
    assert_eq!(e["mode"], "url", "{answer}");
    e["url"].as_str().unwrap().to_owned()
}

/// Open the connect link as `user` (signing in at Tollgate, then at the
/// upstream's authorization server); the final page's status.
async fn connect(w: &World, url: &str, user: &str, password: &str) -> (u16, String) {
    let stop = format!("{}/oauth/upstream/callback", w.gw.base);
    let login = format!("login={user}");
    let pass = format!("password={password}");
    let out = browse(url, &stop, &[&login, &pass]).await;
    let Some(back) = out["url"].as_str() else {
        return (
            out["status"].as_u64().unwrap_or(0) as u16,
            out["body"].as_str().unwrap_or("").to_owned(),
        );
    };
    let res = http().get(back).send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

async fn whoami(w: &World, token: &str) -> Value {
    let (status, session, answer) = post(w, token, None, INIT).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a session");
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;
    let (_, _, answer) = post(w, token, Some(&session), call).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn each_user_connects_their_own_grant_and_the_upstream_sees_their_token() {
    let w = world("").await;
    let alice = w.gw.mint("alice", &[]).await;
    let bob = w.gw.mint("bob", &[]).await;

    // No grant yet: the call is answered with the connect URL, and does not reach the upstream.
    let (status, _, answer) = post(&w, &alice, None, INIT).await;
    assert_eq!(status, 200);
    let url = connect_url(&answer);
    assert!(
        url.starts_with(&format!("{}/oauth/connect?request=", w.gw.base)),
        "{url}"
    );
    assert!(w.upstream.subjects().is_empty(), "nothing reached the upstream");

    // Bob opens alice's link: refused, and the link still works for alice.
    let (status, page) = connect(&w, &url, "bob", "builder").await;
    assert_eq!(status, 403, "{page}");
    let (status, page) = connect(&w, &url, "alice", "wonderland").await;
    assert_eq!(status, 200, "{page}\n{}", w.idp.log());
    assert!(page.contains("Connected"), "{page}");
    // The link is single use.
    let (status, _) = connect(&w, &url, "alice", "wonderland").await;
    assert_eq!(status, 404);

    assert_eq!(whoami(&w, &alice).await["sub"], "alice");
    // Bob has no grant of his own yet; once he connects, his calls carry his.
    let (_, _, answer) = post(&w, &bob, None, INIT).await;
    let (status, _) = connect(&w, &connect_url(&answer), "bob", "builder").await;
    assert_eq!(status, 200);
    assert_eq!(whoami(&w, &bob).await["sub"], "bob");
    assert_eq!(whoami(&w, &alice).await["sub"], "alice");

    // The access token lives 4 s: the vault refreshes it, the client sees nothing.
    let before = whoami(&w, &alice).await["jti"].clone();
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let after = whoami(&w, &alice).await;
    assert_eq!(after["sub"], "alice");
    assert_ne!(after["jti"], before, "a refreshed token");

    // Nothing the client saw or the audit trail holds is an upstream token.
    w.gw.hangup().await;
    let trail = std::fs::read_dir(w.gw.audit_dir())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect::<String>();
    assert!(trail.contains("\"user_oauth\""), "records name the credential kind");
    assert!(!trail.contains("eyJ"), "no token in the audit trail");
}

#[tokio::test]
async fn a_forged_or_replayed_state_is_refused() {
    let w = world("").await;
    let res = http()
        .get(format!("{}/oauth/upstream/callback?state=forged&code=x", w.gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let alice = w.gw.mint("alice", &[]).await;
    let (_, _, answer) = post(&w, &alice, None, INIT).await;
    let stop = format!("{}/oauth/upstream/callback", w.gw.base);
    let out = browse(&connect_url(&answer), &stop, &["login=alice", "password=wonderland"]).await;
    let back = out["url"].as_str().unwrap().to_owned();
    assert_eq!(http().get(&back).send().await.unwrap().status(), 200);
    assert_eq!(
        http().get(&back).send().await.unwrap().status(),
        400,
        "state is single use"
    );
}
