//! A company identity provider for tests: `tests/fixtures/js/idp.mjs`
//! (the `oidc-provider` package, a certified OpenID Provider) as a child
//! process on a loopback port, with plain HTML sign-in pages and
//! Enterprise-Managed Authorization (RFC 8693 token exchange of an ID token
//! for an ID-JAG). See the comment at the top of `idp.mjs` for the
//! configuration; `idp-login.mjs` signs a user in with the authorization
//! code flow + PKCE through `browser.mjs`.
//!
//! `scripts/install-test-deps.sh` (run by `make test`) installs the package;
//! a test that needs it fails with that hint when it is missing.

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::{Child, ChildStdin, Command};

use crate::children::{ReadyChild, spawn_ready};
use crate::repo_root;

fn js() -> PathBuf {
    let js = repo_root().join("tests/fixtures/js");
    let package = js.join("node_modules/oidc-provider/package.json");
    assert!(
        package.exists(),
        "{} is missing: run scripts/install-test-deps.sh (make test does)",
        package.display()
    );
    js
}

/// `idp.mjs` running as a child process; it stops when this is dropped
/// (killed, and its stdin closes).
pub struct Idp {
    /// `http://127.0.0.1:PORT`, the issuer of its ID tokens and ID-JAGs.
    pub issuer: String,
    log: tempfile::NamedTempFile,
    _stdin: ChildStdin,
    _child: Child,
}

impl Idp {
    /// Start an IdP with `config` (the JSON `idp.mjs` documents: `clients`,
    /// `users`, `id_jag_ttl`, `signing_alg`, `ttl`) on a free loopback port,
    /// once it is ready to serve.
    pub async fn start(config: serde_json::Value) -> Idp {
        Idp::start_on(0, config).await
    }

    /// [`Idp::start`] on loopback port `port` (`0`: any free port), for a
    /// test that must name the issuer before the IdP can start (the
    /// gateway's configuration, when the IdP's clients need the gateway's
    /// address).
    pub async fn start_on(port: u16, config: serde_json::Value) -> Idp {
        js();
        let args = vec!["--port".into(), port.to_string(), "--config".into(), config.to_string()];
        let ReadyChild {
            child,
            stdin,
            ready: issuer,
            log,
        } = spawn_ready("idp.mjs", &args).await;
        Idp {
            issuer,
            log,
            _stdin: stdin,
            _child: child,
        }
    }

    /// What the IdP wrote to stderr so far (oidc-provider's warnings and
    /// server errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Sign `user` in as `client`, then exchange the ID token for an ID-JAG
    /// for the resource authorization server `audience` (its issuer URL)
    /// and the MCP server `resource` (`"-"`: none); returns the ID-JAG.
    #[allow(clippy::too_many_arguments, reason = "the flow's inputs, all strings")]
    pub async fn id_jag(
        &self,
        client: &str,
        secret: &str,
        redirect: &str,
        user: &str,
        password: &str,
        audience: &str,
        resource: &str,
    ) -> String {
        let out = self
            .login_cli(&[
                "--client",
                client,
                "--secret",
                secret,
                "--redirect",
                redirect,
                "--user",
                user,
                "--password",
                password,
                "--id-jag",
                audience,
                resource,
            ])
            .await;
        out["id_jag"].as_str().unwrap().to_owned()
    }

    /// Run `idp-login.mjs ISSUER ARGS` (see its comment: `--scope`,
    /// `--auth post`, `--consent deny`, `--id-jag AUDIENCE RESOURCE`,
    /// `--jag-scope`, ...); returns its JSON.
    pub async fn login_cli(&self, args: &[&str]) -> serde_json::Value {
        let mut cmd = Command::new("node");
        cmd.arg(js().join("idp-login.mjs"))
            .arg(&self.issuer)
            .args(args)
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .expect("idp-login.mjs timed out")
            .unwrap();
        assert!(
            out.status.success(),
            "idp-login.mjs failed: {}\n{}\nIdP log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "idp-login.mjs printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }
}

/// A headless browser run (`browse.mjs`): from `url`, follow redirects
/// and submit forms (filling `fields`, `name=value`) until the next request
/// would start with `stop_at`; `{"url": …}`, or `{"error", "status",
/// "body"}` when a page ended the way.
pub async fn browse(url: &str, stop_at: &str, fields: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new("node");
    cmd.arg(js().join("browse.mjs")).args([url, "--stop-at", stop_at]);
    for f in fields {
        cmd.args(["--field", f]);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.kill_on_drop(true).output())
        .await
        .expect("browse.mjs timed out")
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "browse.mjs printed no JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
