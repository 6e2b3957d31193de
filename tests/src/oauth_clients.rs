//! Real MCP SDK clients that sign in by OAuth through the gateway's
//! authorization server: `tests/fixtures/js/oauth-client.mjs` (TypeScript
//! SDK 1.32.2) and `tests/fixtures/py/oauth_client.py` (Python SDK `mcp`
//! 2.3.0). Each discovers the authorization server from the route's 401,
//! registers (`--mode dcr`) or presents a Client ID Metadata Document
//! (`--mode cimd`), signs the user in through the browser fixture (login
//! form, consent `decision=allow` unless `--decision deny`), runs a plan and
//! prints one JSON object; see the scripts' headers for the arguments and
//! the output (`ok`, `clientId`, `registration`, `authorizations`,
//! `tokenRequests`, `refreshes`, `steps`, `claims`, ...).
//!
//! A client run exits 0 whenever it printed its JSON, also when the
//! authorization or a step failed: tests assert on `ok`, `error` and
//! `steps[i].error`.

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::Command;

use crate::children::{fixtures, free_port, require};

/// How long one client run may take; the script's own limit
/// (`FIXTURE_TIMEOUT_MS`) is a little shorter, so it reports first.
const RUN_LIMIT: Duration = Duration::from_secs(90);
const FIXTURE_TIMEOUT_MS: &str = "80000";

/// Run the TypeScript SDK OAuth client against the route `url` with the
/// further arguments `args` (e.g. `["--mode", "dcr", "--user", "alice",
/// "--password", "pw", "--plan", PLAN]`); returns its JSON.
pub async fn ts_oauth_client(url: &str, args: &[&str]) -> serde_json::Value {
    let js = fixtures().join("js");
    require(&js.join("node_modules"));
    let mut cmd = Command::new("node");
    cmd.arg(js.join("oauth-client.mjs")).args(["--url", url]).args(args);
    run_json(cmd).await
}

/// Run the Python SDK OAuth client against the route `url` with the further
/// arguments `args` (the same as [`ts_oauth_client`]'s, plus `--era
/// auto|legacy|VERSION`); returns its JSON.
pub async fn python_oauth_client(url: &str, args: &[&str]) -> serde_json::Value {
    let py = fixtures().join("py/.venv/bin/python");
    require(&py);
    let mut cmd = Command::new(py);
    cmd.arg(fixtures().join("py/oauth_client.py"))
        .args(["--url", url])
        .args(args);
    run_json(cmd).await
}

/// What a CIMD run needs decided before the gateway starts: the https port
/// the client will serve its metadata document on, and the test CA the
/// gateway must trust to fetch it.
///
/// ```ignore
/// let cimd = CimdClient::prepare().await;
/// // gateway configuration: trust cimd.ca_file for client metadata fetches
/// let args = cimd.args(&["--user", "alice", "--password", "pw"]);
/// let out = ts_oauth_client(&gw.url("demo"), &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
/// assert_eq!(out["clientId"], cimd.url);
/// ```
pub struct CimdClient {
    /// Holds `ca.pem`, `cert.pem` and `key.pem`.
    pub dir: tempfile::TempDir,
    /// The loopback port the document will be served on.
    pub port: u16,
    /// The client_id: `https://127.0.0.1:PORT/client-metadata.json`.
    pub url: String,
    /// The CA (PEM) that signed the document server's certificate.
    pub ca_file: PathBuf,
}

impl CimdClient {
    /// Make the certificates (`oauth-client.mjs --make-cert`) and pick a port.
    pub async fn prepare() -> CimdClient {
        let dir = tempfile::tempdir().unwrap();
        let js = fixtures().join("js");
        require(&js.join("node_modules"));
        let mut cmd = Command::new("node");
        cmd.arg(js.join("oauth-client.mjs")).arg("--make-cert").arg(dir.path());
        let made = run_json(cmd).await;
        let ca_file = PathBuf::from(made["caFile"].as_str().expect("--make-cert names caFile"));
        let port = free_port();
        CimdClient {
            url: format!("https://127.0.0.1:{port}/client-metadata.json"),
            dir,
            port,
            ca_file,
        }
    }

    /// `--mode cimd --cert-dir DIR --cimd-port PORT` followed by `extra`, for
    /// either client.
    pub fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "--mode".into(),
            "cimd".into(),
            "--cert-dir".into(),
            self.dir.path().display().to_string(),
            "--cimd-port".into(),
            self.port.to_string(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    }
}

async fn run_json(mut cmd: Command) -> serde_json::Value {
    cmd.env("FIXTURE_TIMEOUT_MS", FIXTURE_TIMEOUT_MS).kill_on_drop(true);
    let out = tokio::time::timeout(RUN_LIMIT, cmd.output())
        .await
        .expect("OAuth client timed out")
        .unwrap();
    assert!(
        out.status.success(),
        "OAuth client failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "OAuth client printed no JSON ({e}): {}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Register a confidential client named `name` at the authorization server
/// `base` (RFC 7591, `client_secret_basic`, a loopback redirect nothing
/// listens on); its client id and secret.
pub async fn register_confidential(base: &str, name: &str) -> (String, String) {
    let reg: serde_json::Value = crate::http_no_redirect()
        .post(format!("{base}/register"))
        .json(
            &serde_json::json!({"client_name": name, "redirect_uris": ["http://127.0.0.1:9/cb"],
                                  "token_endpoint_auth_method": "client_secret_basic"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let field = |k: &str| reg[k].as_str().unwrap_or_else(|| panic!("no {k}: {reg}")).to_owned();
    (field("client_id"), field("client_secret"))
}
