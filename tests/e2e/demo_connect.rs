//! `make run`'s connect step, as a newcomer walks it: the Notes demo
//! SaaS (`tollgate-demo --notes`, its own OAuth authorization server)
//! behind a gateway with `credential = { kind = "user_oauth" }`. A user's
//! first call is answered with a connect link; they sign in at Tollgate
//! (the development picker) and at Notes (its sign-in page); their next
//! call reaches Notes with their own grant, and each user's notes are
//! their own.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tollgate_e2e::children::{ChildGateway, free_port, wait_for_port};
use tollgate_e2e::idp::browse;

const SECRET: &str = "tollgate-at-notes";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"t","version":"1"}}}"#;

/// The `tollgate-demo` binary, built (or found up to date) once per test
/// process: `cargo nextest run -p tollgate-e2e` builds no other package's
/// binaries.
fn demo_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_owned();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "tollgate-demo", "--bin", "tollgate-demo"])
            .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
            .current_dir(tollgate_e2e::repo_root());
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        profile_dir.join("tollgate-demo")
    })
    .clone()
}

/// The gateway's configuration: the development issuer (alice, bob), its
/// sign-in, a vault, and Notes at `notes` as a `user_oauth` server whose
/// client secret and vault key are files in `dir`.
fn config(dir: &Path, notes: &str) -> String {
    format!(
        "[dev_issuer]\nenabled = true\nkey_file = \"{dir}/dev.pem\"\n\
         [[dev_issuer.users]]\nsubject = \"alice\"\n[[dev_issuer.users]]\nsubject = \"bob\"\n\
         [authorization_server]\nenabled = true\ndevelopment = true\nkey_file = \"{dir}/as.pem\"\n\
         [vault]\nfile = \"{dir}/vault.json\"\nkeys = [{{ id = \"demo\", key = {{ file = \"{dir}/vault-key\" }} }}]\n\
         [[servers]]\nname = \"notes\"\nurl = \"{notes}\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n\
         credential = {{ kind = \"user_oauth\", client_id = \"tollgate-demo\", client_secret = {{ file = \"{dir}/notes-secret\" }}, allow_insecure_http = true }}\n",
        dir = dir.display(),
    )
}

struct World {
    gw: ChildGateway,
    _notes: Child,
    _files: tempfile::TempDir,
}

/// Notes on a free port, its access tokens lasting `ttl` seconds, the
/// gateway in front of it; as `run-demo.sh` starts them, with bob for victor.
async fn world(ttl: u64) -> World {
    let files = tempfile::tempdir().unwrap();
    let dir = files.path();
    std::fs::write(dir.join("notes-secret"), format!("{SECRET}\n")).unwrap();
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    std::fs::write(dir.join("vault-key"), key).unwrap();
    let port = free_port();
    let gw = ChildGateway::spawn(&config(dir, &format!("http://127.0.0.1:{port}/mcp"))).await;
    let notes = Command::new(demo_bin())
        .args(["--notes", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--client-id", "tollgate-demo", "--client-secret-file"])
        .arg(dir.join("notes-secret"))
        .args(["--redirect-uri", &format!("{}/oauth/upstream/callback", gw.base)])
        .args(["--user", "alice", "--user", "bob", "--token-ttl", &ttl.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;
    World {
        gw,
        _notes: notes,
        _files: files,
    }
}

/// POST `body` to the notes route as `token`, in the legacy era (in
/// `session`); the session id answered, and the JSON-RPC message.
async fn post(gw: &ChildGateway, token: &str, session: Option<&str>, body: &str) -> (Option<String>, Value) {
    let mut req = tollgate_e2e::http_no_redirect()
        .post(gw.url("notes"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let res = req.body(body.to_owned()).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let session = res
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (session, tollgate_e2e::rpc_message(res).await)
}

/// A 2026-07-28 `tools/call` of `tool` on the notes route as `token`.
async fn call(gw: &ChildGateway, token: &str, tool: &str, arguments: Value) -> Value {
    let body = tollgate_e2e::modern_body(3, "tools/call", json!({"name": tool, "arguments": arguments}));
    let res = tollgate_e2e::http()
        .post(gw.url("notes"))
        .bearer_auth(token)
        .headers(tollgate_e2e::modern_headers("tools/call", Some(tool)))
        .body(body)
        .send()
        .await
        .unwrap();
    tollgate_e2e::rpc_message(res).await
}

/// Opens the connect link as `user`: Tollgate's development picker, then
/// Notes' sign-in page, both take `login`. The page the callback shows.
async fn connect(gw: &ChildGateway, url: &str, user: &str) -> (u16, String) {
    let stop = format!("{}/oauth/upstream/callback", gw.base);
    let out = browse(url, &stop, &[&format!("login={user}")]).await;
    let back = out["url"].as_str().unwrap_or_else(|| panic!("{out}"));
    assert!(back.contains("iss="), "Notes names itself (RFC 9207): {back}");
    let res = tollgate_e2e::http_no_redirect().get(back).send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// `whoami`'s user, from a 2026-07-28 call.
async fn whoami(gw: &ChildGateway, token: &str) -> Value {
    let answer = call(gw, token, "whoami", json!({})).await;
    answer["result"]["structuredContent"]["user"].clone()
}

#[tokio::test]
async fn each_user_connects_notes_once_and_then_calls_it_as_themselves() {
    let w = world(3600).await;
    let alice = w.gw.mint("alice", &["--scope", "mcp:tools"]).await;
    let bob = w.gw.mint("bob", &["--scope", "mcp:tools"]).await;

    // A legacy client: its session asks for the grant from the start.
    let (_, answer) = post(&w.gw, &alice, None, INIT).await;
    assert_eq!(answer["error"]["code"], -32042, "{answer}");
    let asked = &answer["error"]["data"]["elicitations"][0];
    assert_eq!(asked["mode"], "url", "{answer}");
    let url = asked["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/oauth/connect?request=", w.gw.base)),
        "{url}"
    );

    let (status, page) = connect(&w.gw, url, "alice").await;
    assert_eq!(status, 200, "{page}\n{}", w.gw.log());
    assert!(page.contains("Connected") && page.contains("notes"), "{page}");

    // Connected: the session opens and whoami is alice's, at Notes.
    let (session, answer) = post(&w.gw, &alice, None, INIT).await;
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    let who = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;
    let (_, answer) = post(&w.gw, &alice, session.as_deref(), who).await;
    assert_eq!(answer["result"]["structuredContent"]["user"], "alice", "{answer}");
    let kept = call(&w.gw, &alice, "add_note", json!({"text": "ship the demo"})).await;
    assert_eq!(kept["result"]["isError"], false, "{kept}");

    // Bob, a 2026-07-28 client: asked for his own grant, by a result.
    let answer = call(&w.gw, &bob, "whoami", json!({})).await;
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    let asked = &answer["result"]["inputRequests"]["tollgate.connect.notes"]["params"];
    let (status, page) = connect(&w.gw, asked["url"].as_str().unwrap(), "bob").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(whoami(&w.gw, &bob).await, "bob");
    assert_eq!(whoami(&w.gw, &alice).await, "alice");

    // Each user's notes are their own at Notes.
    let listed = call(&w.gw, &bob, "list_notes", json!({})).await;
    assert_eq!(listed["result"]["structuredContent"]["notes"], json!([]), "{listed}");
    let listed = call(&w.gw, &alice, "list_notes", json!({})).await;
    assert_eq!(
        listed["result"]["structuredContent"]["notes"],
        json!(["ship the demo"]),
        "{listed}"
    );

    // The administrator sees both grants, at Notes' issuer.
    let config = w.gw.dir.path().join("gateway.toml");
    let out = tollgate_e2e::children::tollgate_cli(&["grants", "list", "--config", config.to_str().unwrap()]).await;
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for user in ["alice", "bob"] {
        assert!(
            listed.lines().any(|l| l.contains("notes") && l.contains(user)),
            "{user} in\n{listed}"
        );
    }
}

#[tokio::test]
async fn the_gateway_refreshes_an_expired_notes_token_and_notes_rotates_it() {
    let w = world(1).await;
    let alice = w.gw.mint("alice", &["--scope", "mcp:tools"]).await;
    let answer = call(&w.gw, &alice, "whoami", json!({})).await;
    let asked = &answer["result"]["inputRequests"]["tollgate.connect.notes"]["params"];
    let (status, page) = connect(&w.gw, asked["url"].as_str().unwrap(), "alice").await;
    assert_eq!(status, 200, "{page}");
    // Notes' access tokens last a second; the real clock has to pass it
    // (Notes is another process). Each call after it needs a refresh, and
    // Notes takes each refresh token once.
    for _ in 0..2 {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        assert_eq!(whoami(&w.gw, &alice).await, "alice", "{}", w.gw.log());
    }
    let metrics = w.gw.metrics().await;
    let refreshed = "tollgate_upstream_grant_events_total{event=\"refreshed\",server=\"notes\"} ";
    let count = metrics.lines().find_map(|l| l.strip_prefix(refreshed));
    assert!(
        count.and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n >= 2),
        "{refreshed} in\n{metrics}"
    );
}
