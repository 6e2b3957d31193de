//! The gateway under attack: `tollgate serve` in front of the demo server,
//! with the console on, an enforced catalog whose lock (in a directory of
//! its own, so it can be made read-only) leaves `get_weather` quarantined,
//! and the gateway's audit indexer on; and a browser session signed in
//! through the development issuer's real code + PKCE flow.

use std::path::PathBuf;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};
use tollgate_e2e::audit_support::{Exchange, modern};
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::{Demo, demo_lock_without, install_crypto_provider, modern_body};

/// Users of the development issuer and the console's roles; `console`
/// holds extra `[console]` keys.
pub(crate) fn dev_console(console: &str) -> String {
    format!(
        r#"
[dev_issuer]
enabled = true

[[dev_issuer.users]]
subject = "alice"
team = "platform"
groups = ["platform-admins"]

[console]
enabled = true
{console}

[console.roles]
admin = ["platform-admins"]
"#
    )
}

/// The demo server behind a gateway with the console on.
pub(crate) struct Rig {
    pub(crate) gw: ChildGateway,
    /// The lock file, alone in its directory.
    pub(crate) lock: PathBuf,
    _demo: Demo,
    _lock_dir: tempfile::TempDir,
}

impl Rig {
    /// With the development issuer as the console's.
    pub(crate) async fn start() -> Rig {
        Rig::start_with(&dev_console(""), "", "").await
    }

    /// With `console` (the identity and `[console]` tables), `extra`
    /// tables and `catalog`, more `[catalog]` keys.
    pub(crate) async fn start_with(console: &str, extra: &str, catalog: &str) -> Rig {
        let demo = Demo::spawn().await;
        let lock_dir = tempfile::tempdir().unwrap();
        let lock = lock_dir.path().join("catalog.lock");
        std::fs::write(&lock, demo_lock_without(&["get_weather"])).unwrap();
        let gw = ChildGateway::spawn(&format!(
            r#"{console}
{extra}
[audit]
index = true

[catalog]
mode = "enforce"
lock = "{lock}"
{catalog}

[[servers]]
name = "demo"
url = "{url}"
auth = {{ scopes = ["mcp:tools"] }}
"#,
            lock = lock.display(),
            url = demo.url,
        ))
        .await;
        Rig {
            gw,
            lock,
            _demo: demo,
            _lock_dir: lock_dir,
        }
    }

    /// The console's URL (the default: on the admin listener).
    pub(crate) fn console_url(&self) -> String {
        format!("{}/console", self.gw.admin)
    }

    /// A `tools/call` of the demo route with `token`.
    pub(crate) async fn call(&self, token: &str, id: u64, tool: &str, args: Value) -> Exchange {
        let body = modern_body(id, "tools/call", json!({"name": tool, "arguments": args}));
        modern(self.gw.url("demo"), Some(token), "tools/call", Some(tool), body).await
    }

    /// `GET /console/api/{path}` (or a POST of `body`) with a bearer token.
    pub(crate) async fn as_script(&self, token: &str, path: &str, body: Option<Value>) -> reqwest::Response {
        let url = format!("{}/console/api/{path}", self.gw.admin);
        let http = tollgate_e2e::http();
        let request = match body {
            Some(body) => http.post(url).json(&body),
            None => http.get(url),
        };
        request.bearer_auth(token).send().await.unwrap()
    }

    /// Sign in as `user`: the console's login, the development issuer's
    /// authorize, then the callback on the admin listener (whatever host
    /// `[console] url` names). Returns the callback's answer and the login
    /// cookie's `Set-Cookie`.
    pub(crate) async fn callback(&self, user: &str) -> (reqwest::Response, String) {
        let http = no_redirects();
        let start = http
            .get(format!("{}/console/login?login_hint={user}", self.gw.admin))
            .send()
            .await
            .unwrap();
        assert_eq!(start.status(), StatusCode::SEE_OTHER);
        let login_set = start.headers()[SET_COOKIE].to_str().unwrap().to_owned();
        let authorize = start.headers()[LOCATION].to_str().unwrap().to_owned();
        let back = http.get(&authorize).send().await.unwrap();
        let location = back.headers()[LOCATION].to_str().unwrap().to_owned();
        let query = location.split_once('?').unwrap().1;
        let cookie = login_set.split(';').next().unwrap().to_owned();
        let answer = http
            .get(format!("{}/console/callback?{query}", self.gw.admin))
            .header(COOKIE, cookie)
            .send()
            .await
            .unwrap();
        (answer, login_set)
    }

    /// A signed-in browser session as `user`.
    pub(crate) async fn sign_in(&self, user: &str) -> Session {
        let (signed, _) = self.callback(user).await;
        assert_eq!(signed.status(), StatusCode::OK, "{}", signed.text().await.unwrap());
        let cookie = signed
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap())
            .find(|c| c.starts_with("tollgate_console="))
            .and_then(|c| c.split(';').next())
            .unwrap()
            .to_owned();
        let mut session = Session {
            http: no_redirects(),
            admin: self.gw.admin.clone(),
            cookie,
            csrf: String::new(),
        };
        let page = session.get("/console/catalog").await.text().await.unwrap();
        let after = page.split("name=\"csrf-token\" content=\"").nth(1).unwrap();
        session.csrf = after.split('"').next().unwrap().to_owned();
        session
    }
}

/// A client that does not follow redirects.
pub(crate) fn no_redirects() -> reqwest::Client {
    install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap()
}

/// A signed-in browser session.
pub(crate) struct Session {
    pub(crate) http: reqwest::Client,
    pub(crate) admin: String,
    /// `tollgate_console=…`, as the browser sends it.
    pub(crate) cookie: String,
    pub(crate) csrf: String,
}

impl Session {
    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        let url = format!("{}{path}", self.admin);
        self.http.get(url).header(COOKIE, &self.cookie).send().await.unwrap()
    }

    pub(crate) async fn json(&self, path: &str) -> Value {
        let r = self.get(path).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        r.json().await.unwrap()
    }

    /// A POST of `body` with `csrf` in `X-CSRF-Token` (none: left out).
    pub(crate) async fn post(&self, path: &str, body: &Value, csrf: Option<&str>) -> reqwest::Response {
        let url = format!("{}{path}", self.admin);
        let mut req = self.http.post(url).header(COOKIE, &self.cookie).json(body);
        if let Some(token) = csrf {
            req = req.header("x-csrf-token", token);
        }
        req.send().await.unwrap()
    }

    /// Approve `key` (a demo tool) at `revision` (none: left out); the
    /// status and the error's `{code, message, command}`.
    pub(crate) async fn approve(&self, key: &str, revision: Option<&str>) -> (StatusCode, Value) {
        let mut body = json!({"server": "demo", "kind": "tool", "key": key});
        if let Some(revision) = revision {
            body["revision"] = json!(revision);
        }
        let answer = self.post("/console/api/catalog/approve", &body, Some(&self.csrf)).await;
        let status = answer.status();
        let body: Value = answer.json().await.unwrap();
        (status, body)
    }

    /// The live revision of demo tool `key`, as the catalog page shows it.
    /// Waits for the first sync.
    pub(crate) async fn live_revision(&self, key: &str) -> String {
        let mut catalog = Value::Null;
        for _ in 0..100 {
            catalog = self.json("/console/api/catalog").await;
            let server = &catalog["servers"]["demo"];
            let found = ["quarantined", "blocked", "approved"]
                .iter()
                .flat_map(|state| server[*state].as_array().cloned().unwrap_or_default())
                .find(|e| e["name"] == key)
                .and_then(|e| e["live_revision"].as_str().map(str::to_owned));
            if let Some(revision) = found {
                return revision;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("the catalog shows no {key}: {catalog}")
    }
}
