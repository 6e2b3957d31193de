//! Real MCP software from `tests/fixtures`, run as child processes:
//! `@modelcontextprotocol/server-everything` (Node), the Python SDK's
//! modern-era server, and the TypeScript and Python clients; and the
//! `tollgate` binary itself (`tollgate serve`, `tollgate audit ...`).
//!
//! `scripts/install-test-deps.sh` (run by `make test`) installs them; a test
//! that needs them fails with that hint when they are missing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::repo_root;

pub(crate) fn fixtures() -> PathBuf {
    repo_root().join("tests/fixtures")
}

pub(crate) fn require(path: &Path) {
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh (make test does)",
        path.display()
    );
}

fn python() -> PathBuf {
    let py = fixtures().join("py/.venv/bin/python");
    require(&py);
    py
}

/// A server child process, killed on drop.
pub struct ChildServer {
    /// Its MCP endpoint URL.
    pub url: String,
    _child: Child,
}

/// Start `@modelcontextprotocol/server-everything` in Streamable HTTP mode.
pub async fn everything_server() -> ChildServer {
    let js = fixtures().join("js");
    let entry = js.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    require(&entry);
    let port = free_port();
    let child = Command::new("node")
        .arg("--require")
        .arg(js.join("loopback.cjs"))
        .arg(entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;
    ChildServer {
        url: format!("http://127.0.0.1:{port}/mcp"),
        _child: child,
    }
}

/// Start the Python SDK's modern-era server fixture.
pub async fn python_modern_server() -> ChildServer {
    python_server("py/modern_server.py").await
}

/// Start the Python SDK server with a multi-round-trip tool
/// (`mrtr_server.py`: `delete_item` asks for confirmation through
/// `input_required`).
pub async fn python_mrtr_server() -> ChildServer {
    python_server("py/mrtr_server.py").await
}

/// Run the Python SDK client of `mrtr_server.py` against `url`, calling
/// `tool` and answering its elicitation; returns its JSON.
pub async fn python_mrtr_client(url: &str, headers: &[&str], tool: &str) -> serde_json::Value {
    let mut cmd = Command::new(python());
    cmd.arg(fixtures().join("py/mrtr_client.py")).arg(url);
    for h in headers {
        cmd.args(["--header", h]);
    }
    cmd.args(["--tool", tool]);
    run_json(cmd).await
}

/// Start the Python SDK server whose catalog changes on request
/// (`catalog_server.py`; `POST {base}/control`, see its doc).
pub async fn python_catalog_server() -> ChildServer {
    python_server("py/catalog_server.py").await
}

/// Start the Python SDK's OAuth-protected modern-era server
/// (`protected_server.py`) on loopback `port`, trusting `issuer`'s JWT
/// access tokens for `http://127.0.0.1:{port}/mcp`.
pub async fn python_protected_server(port: u16, issuer: &str) -> ChildServer {
    let port = port.to_string();
    python_server_with("py/protected_server.py", &["--port", &port, "--issuer", issuer]).await
}

/// Run the Python SDK client that follows a gateway's URL elicitation
/// (`connect_client.py`) against `url` as `token`, signing in as
/// `login`; returns its JSON.
pub async fn python_connect_client(url: &str, token: &str, login: &str, password: &str) -> serde_json::Value {
    let mut cmd = Command::new(python());
    cmd.arg(fixtures().join("py/connect_client.py")).arg(url);
    cmd.args(["--token", token, "--login", login, "--password", password]);
    run_json(cmd).await
}

/// Start a Python fixture server that prints `READY <port>`.
async fn python_server(script: &str) -> ChildServer {
    python_server_with(script, &["--port", "0"]).await
}

/// [`python_server`] with its arguments.
async fn python_server_with(script: &str, args: &[&str]) -> ChildServer {
    let mut child = Command::new(python())
        .arg(fixtures().join(script))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(port) = line.strip_prefix("READY ") {
                return port.trim().to_owned();
            }
        }
        panic!("{script} exited before READY");
    })
    .await
    .unwrap_or_else(|_| panic!("{script} did not become ready"));
    ChildServer {
        url: format!("http://127.0.0.1:{ready}/mcp"),
        _child: child,
    }
}

/// Run the TypeScript SDK client scenario against `url` with `headers` and
/// further fixture options `extra` (e.g. `--denied TOOL`); returns its JSON.
pub async fn ts_client(url: &str, scenario: &str, headers: &[&str], extra: &[&str]) -> serde_json::Value {
    let script = fixtures().join("js/everything-client.mjs");
    require(&fixtures().join("js/node_modules"));
    let mut cmd = Command::new("node");
    cmd.arg(script).arg(url).args(["--scenario", scenario]);
    for h in headers {
        cmd.args(["--header", h]);
    }
    cmd.args(extra);
    run_json(cmd).await
}

/// Run the TypeScript SDK plan client (`plan-client.mjs`, legacy era)
/// against `url`: connect, list, run `plan`'s calls, prompts and reads,
/// end the session; returns its JSON.
pub async fn ts_plan_client(url: &str, plan: &serde_json::Value, headers: &[&str]) -> serde_json::Value {
    ts_plan_client_env(url, plan, headers, &[]).await
}

/// [`ts_plan_client`] with environment variables `env` (e.g.
/// `NODE_EXTRA_CA_CERTS` for a gateway with a private CA).
pub async fn ts_plan_client_env(
    url: &str,
    plan: &serde_json::Value,
    headers: &[&str],
    env: &[(&str, &str)],
) -> serde_json::Value {
    let script = fixtures().join("js/plan-client.mjs");
    require(&fixtures().join("js/node_modules"));
    let mut cmd = Command::new("node");
    cmd.arg(script).arg(url).arg(plan.to_string());
    cmd.envs(env.iter().copied());
    for h in headers {
        cmd.args(["--header", h]);
    }
    run_json(cmd).await
}

/// Run the Python SDK client (auto mode) against `url` with `headers` and
/// further fixture options `extra`; returns its JSON.
pub async fn python_client(url: &str, headers: &[&str], extra: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(python());
    cmd.arg(fixtures().join("py/modern_client.py")).arg(url);
    for h in headers {
        cmd.args(["--header", h]);
    }
    cmd.args(extra);
    run_json(cmd).await
}

/// Run the Python SDK catalog client (`catalog_client.py`) against `url`:
/// list the tools, call `lookup(region, query)`; returns its JSON.
pub async fn python_catalog_client(url: &str, headers: &[&str], region: &str, query: &str) -> serde_json::Value {
    let mut cmd = Command::new(python());
    cmd.arg(fixtures().join("py/catalog_client.py")).arg(url);
    for h in headers {
        cmd.args(["--header", h]);
    }
    cmd.args(["--region", region, "--query", query]);
    run_json(cmd).await
}

async fn run_json(mut cmd: Command) -> serde_json::Value {
    cmd.kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("client timed out")
        .unwrap();
    assert!(
        out.status.success(),
        "client failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("client printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// A free loopback port below 32768 (see TESTING-NOTES: ports recently used
/// for outgoing connections may not be reusable for listening).
pub fn free_port() -> u16 {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        ^ std::process::id();
    for i in 0..2000u32 {
        let port = 20000 + (seed.wrapping_add(i.wrapping_mul(7919)) % 12000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in 20000..32000");
}

/// Wait until something listens on `port`.
pub async fn wait_for_port(port: u16) {
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on port {port} after 15 s");
}

/// The `tollgate` binary next to this test's target directory, built (or
/// found up to date) once per test process: `cargo nextest run -p
/// tollgate-e2e` does not build other packages' binaries.
pub fn tollgate_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // .../target/debug/deps/audit-HASH
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_owned();
        let target = profile_dir.parent().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "tollgate", "--bin", "tollgate"])
            .env("CARGO_TARGET_DIR", target)
            .current_dir(repo_root());
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "cargo build -p tollgate failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        profile_dir.join("tollgate")
    })
    .clone()
}

/// Run `tollgate ARGS` to completion.
pub async fn tollgate_cli(args: &[&str]) -> std::process::Output {
    Command::new(tollgate_bin()).args(args).output().await.unwrap()
}

/// `tollgate serve` as a child process on free loopback ports; killed on
/// drop.
pub struct ChildGateway {
    /// `http://127.0.0.1:PORT` of the public listener.
    pub base: String,
    /// `http://127.0.0.1:PORT` of the admin listener.
    pub admin: String,
    /// The configuration's directory (the audit trail is `audit/` in it).
    pub dir: tempfile::TempDir,
    /// The process.
    pub child: Child,
    /// The `[admin] token` its configuration names, sent by
    /// [`ChildGateway::ready_detail`]; set it after spawning.
    pub admin_token: Option<String>,
}

impl ChildGateway {
    /// Write `config` (without `[listen]`) and start serving it, logging
    /// warnings and errors to `gateway.log` in its directory.
    pub async fn spawn(config: &str) -> ChildGateway {
        ChildGateway::spawn_logging(config, "warn").await
    }

    /// [`ChildGateway::spawn`] with the log filter `log`.
    pub async fn spawn_logging(config: &str, log: &str) -> ChildGateway {
        let bin = tollgate_bin();
        let dir = tempfile::tempdir().unwrap();
        let public = free_port();
        let admin = std::iter::repeat_with(free_port).find(|p| *p != public).unwrap();
        let path = dir.path().join("gateway.toml");
        let text = format!("[listen]\npublic = \"127.0.0.1:{public}\"\nadmin = \"127.0.0.1:{admin}\"\n{config}");
        std::fs::write(&path, text).unwrap();
        let log_file = std::fs::File::create(dir.path().join("gateway.log")).unwrap();
        let mut child = Command::new(bin)
            .arg("serve")
            .arg("--config")
            .arg(&path)
            .args(["--log", log])
            .stdout(Stdio::null())
            .stderr(Stdio::from(log_file))
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        for _ in 0..300 {
            if let Some(status) = child.try_wait().unwrap() {
                let log = std::fs::read_to_string(dir.path().join("gateway.log")).unwrap_or_default();
                panic!("tollgate serve exited with {status}:\n{log}");
            }
            if tokio::net::TcpStream::connect(("127.0.0.1", public)).await.is_ok() {
                return ChildGateway {
                    base: format!("http://127.0.0.1:{public}"),
                    admin: format!("http://127.0.0.1:{admin}"),
                    dir,
                    child,
                    admin_token: None,
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("tollgate serve did not listen on {public} within 15 s");
    }

    /// The URL of a route.
    pub fn url(&self, route: &str) -> String {
        format!("{}/mcp/{route}", self.base)
    }

    /// The audit directory.
    pub fn audit_dir(&self) -> PathBuf {
        self.dir.path().join("audit")
    }

    /// A token from its development issuer (`tollgate token mint --config
    /// … --sub SUB` with the flags `extra`).
    pub async fn mint(&self, sub: &str, extra: &[&str]) -> String {
        let config = self.dir.path().join("gateway.toml");
        let config = config.to_str().unwrap();
        let out = tollgate_cli(&[&["token", "mint", "--config", config, "--sub", sub][..], extra].concat()).await;
        assert!(
            out.status.success(),
            "tollgate token mint failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// What the gateway has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("gateway.log")).unwrap_or_default()
    }

    /// Replace the configuration file with `config` (without `[listen]`:
    /// the running listeners are kept), atomically as a deployment tool
    /// would: written beside it, then renamed over it.
    pub fn rewrite(&self, config: &str) {
        let path = self.dir.path().join("gateway.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let listen: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
        let next = self.dir.path().join("gateway.toml.next");
        std::fs::write(&next, format!("{listen}{config}")).unwrap();
        std::fs::rename(next, path).unwrap();
    }

    /// Send SIGHUP (reload the configuration, policies and lock).
    pub async fn hangup(&self) {
        let pid = self.child.id().unwrap().to_string();
        let status = Command::new("kill").args(["-HUP", &pid]).status().await.unwrap();
        assert!(status.success());
    }

    /// The JSON of `/readyz?detail` (with the admin token, when set).
    pub async fn ready_detail(&self) -> serde_json::Value {
        let mut req = crate::http().get(format!("{}/readyz?detail", self.admin));
        if let Some(token) = &self.admin_token {
            req = req.bearer_auth(token);
        }
        req.send().await.unwrap().json().await.unwrap()
    }

    /// The text of `/metrics`.
    pub async fn metrics(&self) -> String {
        let url = format!("{}/metrics", self.admin);
        crate::http().get(url).send().await.unwrap().text().await.unwrap()
    }
}

/// A `redis-server` (Debian's package, installed by
/// `scripts/install-test-deps.sh`) on a loopback port, without
/// persistence; killed on drop.
pub struct RedisServer {
    /// Its port.
    pub port: u16,
    child: Child,
}

impl RedisServer {
    /// Start one on `port`, or on a free port.
    pub async fn start(port: Option<u16>) -> RedisServer {
        let port = port.unwrap_or_else(free_port);
        RedisServer::spawn(port, &["--port", &port.to_string()]).await
    }

    /// `redis-server` with `args`, on loopback and without persistence,
    /// once it accepts connections on `port`.
    async fn spawn(port: u16, args: &[&str]) -> RedisServer {
        let child = Command::new("redis-server")
            .args(args)
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server on PATH (scripts/install-test-deps.sh installs it)");
        wait_for_port(port).await;
        RedisServer { port, child }
    }

    /// One that only speaks TLS, with the certificate `server.pem` /
    /// `server.key` in `dir`, requiring client certificates signed by
    /// `client-ca.pem` there.
    pub async fn start_tls(dir: &Path) -> RedisServer {
        let port = free_port();
        let (cert, key, ca) = (
            dir.join("server.pem"),
            dir.join("server.key"),
            dir.join("client-ca.pem"),
        );
        let tls = [
            ("--tls-cert-file", cert.to_str()),
            ("--tls-key-file", key.to_str()),
            ("--tls-ca-cert-file", ca.to_str()),
        ];
        let mut args = vec!["--port", "0", "--tls-auth-clients", "yes"];
        for (flag, path) in tls {
            args.extend([flag, path.unwrap()]);
        }
        let port_arg = port.to_string();
        args.extend(["--tls-port", &port_arg]);
        RedisServer::spawn(port, &args).await
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stop it now (SIGKILL) and wait until it is gone.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// A node fixture that prints `ready VALUE` once it serves and exits when
/// its stdin closes: the child (killed on drop), its stdin, VALUE, and the
/// file its stderr goes to.
pub(crate) struct ReadyChild {
    pub(crate) child: Child,
    pub(crate) stdin: tokio::process::ChildStdin,
    pub(crate) ready: String,
    pub(crate) log: tempfile::NamedTempFile,
}

/// Spawn `script` (under `tests/fixtures/js`) with `args` and wait, at most
/// 30 s, for its `ready` line.
pub(crate) async fn spawn_ready(script: &str, args: &[String]) -> ReadyChild {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new("node")
        .arg(fixtures().join("js").join(script))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log.reopen().unwrap()))
        .kill_on_drop(true)
        .spawn()
        .expect("node on PATH");
    let stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(value) = line.strip_prefix("ready ") {
                return Some(value.trim().to_owned());
            }
        }
        None
    })
    .await;
    let log_text = || std::fs::read_to_string(log.path()).unwrap_or_default();
    let ready = match ready {
        Ok(Some(value)) => value,
        Ok(None) => panic!("{script} exited before it was ready:\n{}", log_text()),
        Err(_) => panic!("{script} was not ready within 30 s:\n{}", log_text()),
    };
    // Keep reading stdout so that the child never writes to a closed pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    ReadyChild {
        child,
        stdin,
        ready,
        log,
    }
}
