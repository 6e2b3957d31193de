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

#[path = "back_door/assertion.rs"]
mod assertion;
#[path = "back_door/cimd.rs"]
mod cimd;
#[path = "back_door/elicit.rs"]
mod elicit;
#[path = "back_door/modern.rs"]
mod modern;
#[path = "back_door/policy.rs"]
mod policy;
#[path = "back_door/revoked.rs"]
mod revoked;
#[path = "back_door/virtual_server.rs"]
mod virtual_server;

const SECRET: &str = "tollgate-at-the-upstream";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"t","version":"1"}}}"#;

struct World {
    gw: ChildGateway,
    idp: Idp,
    upstream: ProtectedServer,
    resource: String,
    _files: tempfile::TempDir,
}

/// The configuration of a gateway in front of the OAuth-protected
/// upstream at `resource`, its files (secret, vault keys, vault file, dev
/// key) in `dir`, with `keys` as `[vault] keys` and `extra` appended.
/// Every gateway made from it names its development issuer alike, so a
/// grant kept by one is found by another.
fn config(dir: &std::path::Path, resource: &str, keys: &str, extra: &str) -> String {
    format!(
        "[dev_issuer]\nenabled = true\nkey_file = \"{dir}/dev.pem\"\nissuer = \"http://127.0.0.1:1/dev-issuer\"\n\
         [[dev_issuer.users]]\nsubject = \"alice\"\n[[dev_issuer.users]]\nsubject = \"bob\"\n\
         [authorization_server]\nenabled = true\ndevelopment = true\nkey_file = \"{dir}/as.pem\"\n\
         [vault]\nfile = \"{dir}/vault.json\"\nkeys = [{keys}]\n{extra}\n\
         [audit]\ndirectory = \"audit\"\n\
         [[servers]]\nname = \"github\"\nurl = \"{resource}\"\n\
         credential = {{ kind = \"user_oauth\", client_id = \"tollgate-upstream\", client_secret = {{ file = \"{dir}/secret\" }}, scopes = [\"repo\"], allow_insecure_http = true }}\n",
        dir = dir.display(),
    )
}

fn key(dir: &std::path::Path, id: &str) -> String {
    format!("{{ id = \"{id}\", key = {{ file = \"{}/{id}.key\" }} }}", dir.display())
}

/// The files of a world: the upstream client's secret and two vault keys.
fn files() -> tempfile::TempDir {
    let files = tempfile::tempdir().unwrap();
    let dir = files.path();
    std::fs::write(dir.join("secret"), SECRET).unwrap();
    for (id, byte) in [("k1", 7u8), ("k2", 9u8)] {
        std::fs::write(
            dir.join(format!("{id}.key")),
            base64::engine::general_purpose::STANDARD.encode([byte; 32]),
        )
        .unwrap();
    }
    files
}

/// The upstream's authorization server on `port`: a real IdP that knows
/// the gateway as the client `tollgate-upstream`, alice and bob, and issues
/// 4-second tokens for `resource`.
async fn idp(gw: &ChildGateway, port: u16, resource: &str) -> Idp {
    Idp::start_on(
        port,
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
            "resources": {resource: {"scopes": ["repo"], "access_token_ttl": 4}},
        }),
    )
    .await
}

/// A gateway in front of an OAuth-protected upstream, its authorization
/// server a real IdP; alice and bob sign in at Tollgate with the
/// development picker.
async fn world(extra: &str) -> World {
    world_with(extra, |_| (), &[]).await
}

/// [`world`] with files written by `prepare` in the world's directory
/// first, and further `protected-server.mjs` options.
async fn world_with(extra: &str, prepare: impl FnOnce(&std::path::Path), upstream_args: &[&str]) -> World {
    let (idp_port, upstream_port) = (free_port(), free_port());
    let files = files();
    let dir = files.path();
    prepare(dir);
    let resource = ProtectedServer::resource_for(upstream_port);
    let gw = ChildGateway::spawn(&config(dir, &resource, &key(dir, "k1"), extra)).await;
    let idp = idp(&gw, idp_port, &resource).await;
    let upstream = ProtectedServer::start_with(upstream_port, &idp.issuer, upstream_args).await;
    World {
        gw,
        idp,
        upstream,
        resource,
        _files: files,
    }
}

fn http() -> reqwest::Client {
    tollgate_e2e::http_no_redirect()
}

/// POST `body` to the route as `token` (in `session`); status, session id,
/// and the JSON-RPC message.
async fn post(gw: &ChildGateway, token: &str, session: Option<&str>, body: &str) -> (u16, Option<String>, Value) {
    post_to(gw, "github", token, session, body).await
}

/// [`post`] to the route or virtual server `route`.
async fn post_to(
    gw: &ChildGateway,
    route: &str,
    token: &str,
    session: Option<&str>,
    body: &str,
) -> (u16, Option<String>, Value) {
    let mut req = http()
        .post(gw.url(route))
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

/// A 2026-07-28 `tools/call` of `name` with `arguments` on the `github`
/// route as `token`, its client declaring `capabilities`.
async fn modern_tool_call(
    gw: &ChildGateway,
    token: &str,
    name: &str,
    arguments: Value,
    capabilities: Value,
) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
    "name": name, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }}});
    http()
        .post(gw.url("github"))
        .bearer_auth(token)
        .headers(tollgate_e2e::modern_headers("tools/call", Some(name)))
        .body(body.to_string())
        .send()
        .await
        .unwrap()
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
async fn connect(gw: &ChildGateway, url: &str, user: &str, password: &str) -> (u16, String) {
    let stop = format!("{}/oauth/upstream/callback", gw.base);
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

async fn whoami(gw: &ChildGateway, token: &str) -> Value {
    let (status, session, answer) = post(gw, token, None, INIT).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a session");
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;
    let (_, _, answer) = post(gw, token, Some(&session), call).await;
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
    let (status, _, answer) = post(&w.gw, &alice, None, INIT).await;
    assert_eq!(status, 200);
    let url = connect_url(&answer);
    assert!(
        url.starts_with(&format!("{}/oauth/connect?request=", w.gw.base)),
        "{url}"
    );
    assert!(w.upstream.subjects().is_empty(), "nothing reached the upstream");

    // Bob opens alice's link: refused, and the link still works for alice.
    let (status, page) = connect(&w.gw, &url, "bob", "builder").await;
    assert_eq!(status, 403, "{page}");
    let (status, page) = connect(&w.gw, &url, "alice", "wonderland").await;
    assert_eq!(status, 200, "{page}\n{}", w.idp.log());
    assert!(page.contains("Connected"), "{page}");
    // The link is single use.
    let (status, _) = connect(&w.gw, &url, "alice", "wonderland").await;
    assert_eq!(status, 404);

    assert_eq!(whoami(&w.gw, &alice).await["sub"], "alice");
    // Bob has no grant of his own yet; once he connects, his calls carry his.
    let (_, _, answer) = post(&w.gw, &bob, None, INIT).await;
    let (status, _) = connect(&w.gw, &connect_url(&answer), "bob", "builder").await;
    assert_eq!(status, 200);
    assert_eq!(whoami(&w.gw, &bob).await["sub"], "bob");
    assert_eq!(whoami(&w.gw, &alice).await["sub"], "alice");

    // The access token lives 4 s: the vault refreshes it, the client sees nothing.
    let before = whoami(&w.gw, &alice).await["jti"].clone();
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let after = whoami(&w.gw, &alice).await;
    assert_eq!(after["sub"], "alice");
    assert_ne!(after["jti"], before, "a refreshed token");

    let metrics = w.gw.metrics().await;
    for (event, n) in [("asked", 2), ("connected", 2), ("refused", 1)] {
        let line = format!("tollgate_upstream_grant_events_total{{event=\"{event}\",server=\"github\"}} {n}");
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    // At least alice's, after the sleep (a slow machine may refresh bob's too).
    let refreshed = "tollgate_upstream_grant_events_total{event=\"refreshed\",server=\"github\"} ";
    let count = metrics
        .lines()
        .find_map(|l| l.strip_prefix(refreshed))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(count.is_some_and(|n| n >= 1), "{refreshed} in\n{metrics}");

    // Nothing the client saw or the audit trail holds is an upstream token.
    w.gw.hangup().await;
    let trail = std::fs::read_dir(w.gw.audit_dir())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect::<String>();
    assert!(trail.contains("\"user_oauth\""), "records name the credential kind");
    assert!(!trail.contains("eyJ"), "no token in the audit trail");
    let records = tollgate_e2e::audit_support::records(&w.gw.audit_dir());
    let used = records
        .iter()
        .filter_map(|r| {
            r.upstream_grant
                .as_ref()
                .map(|g| (r.principal.as_ref().unwrap().subject.clone(), g))
        })
        .collect::<Vec<_>>();
    assert!(!used.is_empty(), "calls name the grant they went with");
    for (caller, grant) in used {
        assert_eq!(
            grant.subject.as_deref(),
            Some(caller.as_str()),
            "each call went with its caller's own grant"
        );
        assert_eq!(grant.issuer, w.idp.issuer);
        assert_eq!(grant.scopes, vec!["repo".to_owned()]);
    }
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
    let (_, _, answer) = post(&w.gw, &alice, None, INIT).await;
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

/// `tollgate grants …` against `gw`; its standard output.
async fn grants(gw: &ChildGateway, args: &[&str]) -> String {
    let config = gw.dir.path().join("gateway.toml");
    let mut all = vec!["grants"];
    all.extend(args);
    all.extend(["--config", config.to_str().unwrap()]);
    let out = tollgate_e2e::children::tollgate_cli(&all).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Alice connects on `gw`; her minted token.
async fn alice_connects(gw: &ChildGateway) -> String {
    let alice = gw.mint("alice", &[]).await;
    let (_, _, answer) = post(gw, &alice, None, INIT).await;
    let (status, page) = connect(gw, &connect_url(&answer), "alice", "wonderland").await;
    assert_eq!(status, 200, "{page}");
    alice
}

#[tokio::test]
async fn keys_rotate_by_restart_and_an_admin_revokes_a_users_grants() {
    let w = world("").await;
    let alice = alice_connects(&w.gw).await;
    assert_eq!(whoami(&w.gw, &alice).await["sub"], "alice");
    let listed = grants(&w.gw, &["list", "--subject", "alice"]).await;
    assert!(listed.contains("github") && listed.contains(" k1 "), "{listed}");
    w.gw.hangup().await;
    drop(w.gw);

    // A new key first, the old one still listed: the grant opens, and is
    // sealed again under the new key when used.
    let dir = w._files.path();
    let rotated = ChildGateway::spawn(&config(
        dir,
        &w.resource,
        &format!("{}, {}", key(dir, "k2"), key(dir, "k1")),
        "",
    ))
    .await;
    // (The same alice: each gateway's development issuer is named alike.)
    let alice = rotated.mint("alice", &[]).await;
    assert_eq!(whoami(&rotated, &alice).await["sub"], "alice");
    assert!(grants(&rotated, &["list"]).await.contains(" k2 "));
    rotated.hangup().await;
    drop(rotated);

    // The old key removed: nothing depended on it any more.
    let only_new = ChildGateway::spawn(&config(dir, &w.resource, &key(dir, "k2"), "")).await;
    let alice = only_new.mint("alice", &[]).await;
    assert_eq!(whoami(&only_new, &alice).await["sub"], "alice");

    // A user who left: every grant of theirs revoked, the next call asks again.
    let out = grants(&only_new, &["revoke", "--subject", "alice"]).await;
    assert!(out.contains("1 grant(s) revoked"), "{out}");
    let (_, _, answer) = post(&only_new, &alice, None, INIT).await;
    connect_url(&answer);
}

#[tokio::test]
async fn replicas_share_the_vault_in_redis_and_a_vault_down_fails_only_its_calls() {
    let redis = tollgate_e2e::children::RedisServer::start(None).await;
    let demo = tollgate_e2e::Demo::spawn().await;
    let shared = format!(
        "[limits.redis]\nurl = \"redis://127.0.0.1:{}\"\ntimeout = \"300ms\"\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        redis.port, demo.url
    );
    let w = world(&shared).await;
    let dir = w._files.path();
    let other = ChildGateway::spawn(&config(dir, &w.resource, &key(dir, "k1"), &shared)).await;

    // Connected through one replica, used through the other.
    alice_connects(&w.gw).await;
    let alice = other.mint("alice", &[]).await;
    assert_eq!(whoami(&other, &alice).await["sub"], "alice");

    // Redis down: calls that need the vault get a clear 503, others pass.
    drop(redis);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, _, answer) = post(&other, &alice, None, INIT).await;
    assert_eq!(status, 503, "{answer}");
    assert_eq!(answer["error"]["message"], "Token vault unavailable", "{answer}");
    let res = http()
        .post(other.url("demo"))
        .bearer_auth(&alice)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "a route without user_oauth is unaffected");
}

/// A TypeScript SDK client fixture (`tests/fixtures/js/SCRIPT`) for the
/// `github` route of `gw`, as `token`, signing in as alice.
fn node_client(script: &str, gw: &ChildGateway, token: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(tollgate_e2e::repo_root().join("tests/fixtures/js").join(script))
        .args([&gw.url("github"), "--token", token])
        .args(["--login", "alice", "--password", "wonderland"])
        .kill_on_drop(true);
    cmd
}

#[tokio::test]
async fn the_typescript_sdk_client_follows_the_url_elicitation_and_retries() {
    let w = world("").await;
    let alice = w.gw.mint("alice", &[]).await;
    let out = node_client("connect-client.mjs", &w.gw, &alice).output().await.unwrap();
    let out: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(out["elicited"]["code"], -32042, "{out}");
    assert_eq!(out["elicited"]["mode"], "url", "{out}");
    assert_eq!(out["connected"], true, "{out}\n{}", w.idp.log());
    assert_eq!(out["whoami"]["sub"], "alice", "{out}");
}
