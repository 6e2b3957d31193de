//! Test harness for Tollgate's black-box tests.
//!
//! Starts the gateway in-process on loopback port 0 with a real
//! configuration, starts upstreams (the demo server in-process, recording
//! stubs, or real MCP servers as child processes from `tests/fixtures`), and
//! runs real MCP clients against them. Nothing here is used by the gateway.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test harness: a panic is a failed test"
)]

pub mod audit_support;
pub mod children;
pub mod idp;
pub mod oauth_clients;
pub mod postgres;
pub mod protected;
mod rpc;
pub mod stub;
pub mod tasks;

pub use rpc::*;

use std::path::{Path, PathBuf};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// A gateway running in this process.
pub struct TestGateway {
    /// `http://127.0.0.1:PORT` of the public listener.
    pub base: String,
    /// `http://127.0.0.1:PORT` of the admin listener.
    pub admin: String,
    /// The directory the configuration is read from: relative paths (the
    /// audit trail's `audit/`, by default) resolve here.
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestGateway {
    /// Start a gateway from configuration text without `[listen]` (both
    /// listeners are bound to loopback port 0).
    pub async fn spawn(config: &str) -> TestGateway {
        TestGateway::spawn_with_registry(config, prometheus::Registry::new()).await
    }

    /// [`TestGateway::spawn`], with metrics on `registry`.
    pub async fn spawn_with_registry(config: &str, registry: prometheus::Registry) -> TestGateway {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("[listen]\npublic = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n{config}");
        let path = dir.path().join("test.toml");
        // On disk too, for the CLI (`tollgate catalog approve --config`).
        std::fs::write(&path, &text).unwrap();
        let loaded = tollgate_config::load_str(&path, &text, &tollgate_config::ProcessEnvironment)
            .unwrap_or_else(|e| panic!("test config is invalid:\n{e}"));
        let gateway = tollgate_server::Gateway::new(&loaded, registry).unwrap();
        let public = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", public.local_addr().unwrap());
        let admin_base = format!("http://{}", admin.local_addr().unwrap());
        let (tx, rx) = oneshot::channel();
        let task = tokio::spawn(gateway.run(public, admin, async move {
            let _ = rx.await;
        }));
        TestGateway {
            base,
            admin: admin_base,
            dir,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// The URL of a route.
    pub fn url(&self, route: &str) -> String {
        format!("{}/mcp/{route}", self.base)
    }

    /// Signal shutdown without waiting.
    pub fn begin_shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    /// Shut down and wait for the drain to finish.
    pub async fn stop(mut self) {
        self.shutdown().await;
    }

    /// Shut down and wait for the drain (and the audit trail's last sync),
    /// keeping the directory for inspection.
    pub async fn shutdown(&mut self) {
        self.begin_shutdown();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// The admin listener's `/metrics` text.
    pub async fn metrics(&self) -> String {
        let res = http().get(format!("{}/metrics", self.admin)).send().await.unwrap();
        res.text().await.unwrap()
    }

    /// Wait until `route`'s first catalog sync succeeded (10 s at most):
    /// the gateway has then read the upstream's `server/discover` answer
    /// and its lists.
    pub async fn wait_synced(&self, route: &str) {
        let mut last = serde_json::Value::Null;
        for _ in 0..100 {
            last = get_json(&format!("{}/catalog", self.admin)).await;
            if last["servers"][route]["sync"]["state"] == "ok" {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("{route} did not sync: {last:#}");
    }

    /// The default audit directory (`[audit] directory` unset).
    pub fn audit_dir(&self) -> PathBuf {
        self.dir.path().join("audit")
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.begin_shutdown();
    }
}

/// The demo MCP server running in this process.
pub struct Demo {
    /// Its MCP endpoint URL.
    pub url: String,
    _stop: oneshot::Sender<()>,
}

impl Demo {
    /// Start the demo server on a loopback port.
    pub async fn spawn() -> Demo {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{}", listener.local_addr().unwrap(), tollgate_demo::MCP_PATH);
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = tollgate_demo::serve(listener, async move {
                let _ = rx.await;
            })
            .await;
        });
        Demo { url, _stop: tx }
    }
}

/// The development issuer and the console (configuration text, without
/// `[listen]`): alice (group `platform-admins`: every role) and victor
/// (group `finance`: viewer) sign in; anyone else has no role.
pub const CONSOLE: &str = r#"
[dev_issuer]
enabled = true

[[dev_issuer.users]]
subject = "alice"
team = "platform"
cost_center = "cc-1001"
groups = ["platform-admins"]

[[dev_issuer.users]]
subject = "victor"
team = "finance"
groups = ["finance"]

[console]
enabled = true

[console.roles]
viewer = ["finance"]
admin = ["platform-admins"]
"#;

/// The demo's committed lock (`examples/catalog.lock`) for the route
/// `demo` only, without the definitions named `left_out`: those are
/// quarantined until someone approves them.
pub fn demo_lock_without(left_out: &[&str]) -> String {
    let text = std::fs::read_to_string(repo_root().join("examples/catalog.lock")).unwrap();
    let mut blocks = text.split("\n[[approval]]\n");
    let mut out = blocks.next().unwrap().to_owned();
    let mut kept = 0;
    for block in blocks {
        let dropped = left_out.iter().any(|n| block.contains(&format!("\nname = \"{n}\"\n")));
        if block.starts_with("server = \"demo\"\n") && !dropped {
            out.push_str("\n[[approval]]\n");
            out.push_str(block);
            kept += 1;
        }
    }
    assert!(
        kept >= 5,
        "examples/catalog.lock has fewer demo approvals than expected:\n{text}"
    );
    out
}

/// A development issuer for tests, its key in a temporary directory. The
/// gateway trusts it through `[dev_issuer]` ([`TestIssuer::config`]).
pub struct TestIssuer {
    dir: std::path::PathBuf,
    dev: tollgate_auth::DevIssuer,
}

/// Issuer URL of [`TestIssuer`].
pub const TEST_ISSUER: &str = "http://127.0.0.1/dev-issuer";
/// Public base URL of gateways using [`TestIssuer::config`].
pub const TEST_BASE_URL: &str = "https://gateway.test";

impl TestIssuer {
    /// A fresh key.
    pub fn new() -> TestIssuer {
        let dir = std::env::temp_dir().join(format!(
            "tollgate-issuer-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let pem = tollgate_auth::DevIssuer::generate_pem().unwrap();
        std::fs::write(dir.join("dev.pem"), &pem).unwrap();
        let dev = tollgate_auth::DevIssuer::from_pem(TEST_ISSUER, &pem).unwrap();
        TestIssuer { dir, dev }
    }

    /// Configuration tables trusting this issuer.
    pub fn config(&self) -> String {
        format!(
            "[auth]\npublic_base_url = \"{TEST_BASE_URL}\"\n\n[dev_issuer]\nenabled = true\nissuer = \"{TEST_ISSUER}\"\nkey_file = \"{}\"\n",
            self.dir.join("dev.pem").display()
        )
    }

    /// A token for `sub` with `scopes`, valid for `routes`.
    pub fn token(&self, sub: &str, scopes: &[&str], routes: &[&str]) -> String {
        let scopes: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
        let aud: Vec<String> = routes.iter().map(|r| format!("{TEST_BASE_URL}/mcp/{r}")).collect();
        self.dev
            .mint(
                sub,
                Some("payments"),
                &scopes,
                std::time::Duration::from_secs(600),
                &aud,
            )
            .unwrap()
    }

    /// Sign arbitrary `claims` with this issuer's key and key id (for
    /// hostile tokens: expired, not yet valid, wrong issuer, ...).
    pub fn sign(&self, claims: &serde_json::Value) -> String {
        let pem = std::fs::read(self.dir.join("dev.pem")).unwrap();
        let key = jsonwebtoken::EncodingKey::from_ec_pem(&pem).unwrap();
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.typ = Some("at+jwt".into());
        header.kid = Some(self.dev.key_id().to_owned());
        jsonwebtoken::encode(&header, claims, &key).unwrap()
    }

    /// Claims of a valid token for `routes`, to be altered.
    pub fn claims(&self, sub: &str, scope: &str, routes: &[&str]) -> serde_json::Value {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let aud: Vec<String> = routes.iter().map(|r| format!("{TEST_BASE_URL}/mcp/{r}")).collect();
        serde_json::json!({
            "iss": TEST_ISSUER, "sub": sub, "aud": aud, "scope": scope,
            "iat": now, "nbf": now, "exp": now + 600, "jti": format!("{sub}-{now}"),
        })
    }

    /// A file in the issuer's directory holding `contents` (for secrets).
    pub fn secret_file(&self, name: &str, contents: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, contents).unwrap();
        path.display().to_string()
    }
}

impl Default for TestIssuer {
    fn default() -> TestIssuer {
        TestIssuer::new()
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
