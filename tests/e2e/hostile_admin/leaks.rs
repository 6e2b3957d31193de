//! What the gateway says about its configuration never repeats a secret or
//! a URL credential: `validate`, a failed start, a refused reload; and an
//! upstream URL is shown without its query wherever it appears.

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tollgate_e2e::audit_support::{tool, trail_lines, wait_record};
use tollgate_e2e::children::{ChildGateway, tollgate_cli};
use tollgate_e2e::{CONSOLE, Demo};

use super::{TOKEN, admin_json, admin_table, get, secret_file};

/// Planted in every secret and URL credential; no output may contain it.
const MARKER: &str = "LEAKMARKER5e1f";

const LISTEN: &str = "[listen]\npublic = \"127.0.0.1:18080\"\nadmin = \"127.0.0.1:19090\"\n";

/// Tables (without `[listen]`) whose secrets, read from files in `dir`,
/// and URLs all carry the marker, each in a way validation refuses.
fn poisoned(dir: &Path) -> String {
    let admin = secret_file(dir, "bad-admin-token", &format!("{MARKER} with spaces"));
    let session = secret_file(dir, "session-key", &format!("{MARKER}!"));
    let upstream = secret_file(dir, "upstream-token", &format!("{MARKER}\u{1}"));
    format!(
        "[admin]\ntoken = {{ file = {admin} }}\n\n[sessions]\nkey = {{ file = {session} }}\n\n\
         [security]\nallowed_origins = [\"https://u:{MARKER}@app.example.com/?k={MARKER}\"]\n\n\
         [[servers]]\nname = \"leaky\"\nurl = \"https://svc:{MARKER}@mcp.example.com/mcp?api_key={MARKER}\"\n\
         credential = {{ kind = \"static\", scheme = \"Bearer\", value = {{ file = {upstream} }} }}\n"
    )
}

/// The keys [`poisoned`] gets refused at.
const POISONED_KEYS: [&str; 5] = [
    "admin.token",
    "sessions.key",
    "security.allowed_origins[0]",
    "servers[0].url",
    "servers[0].credential.value",
];

/// A URL the deserializer itself refuses (the port), which serde would
/// quote whole.
fn unparsable() -> String {
    format!("[[servers]]\nname = \"leaky\"\nurl = \"https://svc:{MARKER}@mcp.example.com:99999/mcp?k={MARKER}\"\n")
}

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(MARKER), "{what} repeats a configured secret:\n{text}");
}

/// `tollgate ARGS` on `config` written to `dir`; its exit code and output.
async fn run(dir: &Path, args: &[&str], config: &str) -> (Option<i32>, String) {
    let file = dir.join("gateway.toml");
    std::fs::write(&file, format!("{LISTEN}{config}")).unwrap();
    let args = [args, &["--config", file.to_str().unwrap()]].concat();
    let out = tokio::time::timeout(Duration::from_secs(60), tollgate_cli(&args))
        .await
        .expect("tollgate exits on an invalid configuration");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[tokio::test]
async fn validate_and_a_failed_start_name_keys_not_values() {
    let dir = tempfile::tempdir().unwrap();
    let poisoned = poisoned(dir.path());
    for command in [&["validate"][..], &["serve"]] {
        let (code, text) = run(dir.path(), command, &poisoned).await;
        assert_eq!(code, Some(2), "{command:?}: {text}");
        assert_clean(&format!("{command:?}"), &text);
        for key in POISONED_KEYS {
            assert!(
                text.contains(&format!("key `{key}`")),
                "{command:?}: no {key} in\n{text}"
            );
        }
        let (code, text) = run(dir.path(), command, &unparsable()).await;
        assert_eq!(code, Some(2), "{command:?}: {text}");
        assert_clean(&format!("{command:?}"), &text);
        assert!(text.contains("gateway.toml:6:"), "the line is named: {text}");
        assert!(text.contains("key `servers[0].url`"), "{text}");
    }
}

#[tokio::test]
async fn validate_refuses_credentials_in_an_upstream_url() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[[servers]]\nname = \"a\"\nurl = \"https://svc-user:s3cret-pass@mcp.example.com/mcp\"\n";
    let (code, text) = run(dir.path(), &["validate"], config).await;
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("gateway.toml:6:1: key `servers[0].url`: must not carry a user name or password"),
        "{text}"
    );
    assert!(!text.contains("svc-user") && !text.contains("s3cret-pass"), "{text}");
}

/// Poll `/readyz?detail` until `done` holds (10 s at most).
async fn detail_until(gw: &ChildGateway, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        last = gw.ready_detail().await;
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("waited 10 s for {what}; /readyz?detail says {last:#}\n{}", gw.log());
}

#[tokio::test]
async fn a_refused_reload_names_keys_not_values() {
    let demo = Demo::spawn().await;
    let files = tempfile::tempdir().unwrap();
    let good = format!(
        "{}\n[[servers]]\nname = \"demo\"\nurl = \"{}?api_key={MARKER}\"\n",
        admin_table(files.path()),
        demo.url
    );
    let mut gw = ChildGateway::spawn_logging(&good, "info").await;
    gw.admin_token = Some(TOKEN.to_owned());
    for (n, bad) in [poisoned(files.path()), unparsable()].into_iter().enumerate() {
        gw.rewrite(&bad);
        let refused = detail_until(&gw, "the reload to be refused", |d| {
            d["config"]["reload_failures"].as_u64() == Some(n as u64 + 1)
        })
        .await;
        assert_clean("/readyz?detail", &refused.to_string());
        let error = refused["config"]["last_error"].as_str().unwrap();
        assert!(error.contains("gateway.toml:"), "{error}");
        assert!(error.contains("key `servers[0].url`"), "{error}");
    }
    let log = gw.log();
    assert!(log.contains("configuration reload refused"), "{log}");
    assert!(log.contains("key `admin.token`"), "{log}");
    assert_clean("the log", &log);
}

#[tokio::test]
async fn an_upstream_query_string_is_shown_redacted() {
    let demo = Demo::spawn().await;
    let files = tempfile::tempdir().unwrap();
    let mut gw = ChildGateway::spawn_logging(
        &format!(
            "{CONSOLE}\n{}\n[[servers]]\nname = \"demo\"\nurl = \"{}?api_key={MARKER}\"\n",
            admin_table(files.path()),
            demo.url
        ),
        "info",
    )
    .await;
    gw.admin_token = Some(TOKEN.to_owned());
    let shown = format!("{}?<redacted>", demo.url);

    let user = gw.mint("alice", &[]).await;
    let call = tool(gw.url("demo"), &user, 1, "echo", json!({"text": "hello"})).await;
    assert_eq!(call.status, 200, "{}", String::from_utf8_lossy(&call.body));
    let record = wait_record(&gw.audit_dir(), &call).await;
    assert_eq!(record.upstream.as_deref(), Some(shown.as_str()), "the audit record");
    assert_clean("the audit trail", &trail_lines(&gw.audit_dir()).join("\n"));

    let detail = gw.ready_detail().await;
    assert_eq!(detail["upstreams"]["demo"]["url"], shown.as_str(), "{detail:#}");
    assert_clean("/readyz?detail", &detail.to_string());
    let catalog = admin_json(&format!("{}/catalog", gw.admin)).await;
    assert_eq!(catalog["servers"]["demo"]["upstream"], shown.as_str(), "{catalog:#}");
    assert_clean("/catalog", &catalog.to_string());

    let console = gw.mint("alice", &["--console", "--group", "platform-admins"]).await;
    let res = get(
        &format!("{}/console/api/upstreams", gw.admin),
        Some(&format!("Bearer {console}")),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let upstreams: Value = res.json().await.unwrap();
    let demo_entry = upstreams["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "demo")
        .unwrap_or_else(|| panic!("{upstreams:#}"));
    assert_eq!(demo_entry["url"], shown.as_str(), "the console");
    assert_clean("the console", &upstreams.to_string());

    let log = gw.log();
    assert!(log.contains(&shown), "the route is logged with its upstream:\n{log}");
    assert_clean("the log", &log);
}
