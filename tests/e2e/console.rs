//! The console's sign-in and JSON API against a real `tollgate serve` in
//! front of the demo server, signing in through the development issuer's
//! real authorization-code + PKCE flow, with the demo policies, an
//! enforced catalog whose lock leaves `get_weather` quarantined, captured
//! arguments on the route, and the gateway's audit indexer on.
//!
//! - `signin`: roles from groups, the session cookie's attributes, CSRF,
//!   CSP and bearer tokens from `tollgate token mint --console`.
//! - `actions`: an approval makes a quarantined tool callable; approvals
//!   and exports are audit records naming who did them.
//! - `reports`: search and one call's five answers against the trail, the
//!   spend report equal to `tollgate usage`, "would this be allowed".
//!
//! The same console in a real browser: `console_browser.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "console/actions.rs"]
mod actions;
#[path = "console/provider.rs"]
mod provider;
#[path = "console/reports.rs"]
mod reports;
#[path = "console/signin.rs"]
mod signin;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};
use tollgate_e2e::audit_support::{Exchange, modern};
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::{Demo, demo_lock_without, install_crypto_provider, modern_body, policy_dir, repo_root};

/// The demo server behind a gateway with the console on.
pub(crate) struct Rig {
    pub(crate) gw: ChildGateway,
    _demo: Demo,
    _files: tempfile::TempDir,
}

impl Rig {
    pub(crate) async fn start() -> Rig {
        let demo = Demo::spawn().await;
        let files = policy_dir(&std::fs::read_to_string(repo_root().join("policies/demo.cedar")).unwrap());
        let lock = files.path().join("catalog.lock");
        std::fs::write(&lock, demo_lock_without(&["get_weather"])).unwrap();
        let gw = ChildGateway::spawn(&format!(
            r#"{console}
[audit]
index = true

[policy]
dir = "{policies}"

[catalog]
mode = "enforce"
lock = "{lock}"

[[servers]]
name = "demo"
url = "{url}"
auth = {{ scopes = ["mcp:tools"] }}
audit = {{ server_version = "1.2.3", approved_by = "CHG-42", capture_arguments = true }}
"#,
            console = tollgate_e2e::CONSOLE,
            policies = files.path().display(),
            lock = lock.display(),
            url = demo.url,
        ))
        .await;
        Rig {
            gw,
            _demo: demo,
            _files: files,
        }
    }

    /// A `tools/call` of the demo route as alice (team payments).
    pub(crate) async fn call(&self, id: u64, tool: &str, args: Value) -> Exchange {
        let token = self
            .gw
            .mint("alice", &["--team", "payments", "--scope", "mcp:tools"])
            .await;
        let body = modern_body(id, "tools/call", json!({"name": tool, "arguments": args}));
        modern(self.gw.url("demo"), Some(&token), "tools/call", Some(tool), body).await
    }

    /// Sign in as `user` through the development issuer.
    pub(crate) async fn sign_in(&self, user: &str) -> Session {
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .unwrap();
        let start = http
            .get(format!("{}/console/login?login_hint={user}", self.gw.admin))
            .send()
            .await
            .unwrap();
        assert_eq!(start.status(), StatusCode::SEE_OTHER);
        let login_cookie = cookie_pair(&start);
        let authorize = start.headers()[LOCATION].to_str().unwrap().to_owned();
        assert!(authorize.contains("code_challenge_method=S256"), "{authorize}");
        let back = http.get(&authorize).send().await.unwrap();
        let callback = back.headers()[LOCATION].to_str().unwrap().to_owned();
        let signed = http.get(&callback).header(COOKIE, login_cookie).send().await.unwrap();
        assert_eq!(signed.status(), StatusCode::OK, "{}", signed.text().await.unwrap());
        let set_cookie: Vec<String> = signed
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        let session = set_cookie
            .iter()
            .find(|c| c.starts_with("tollgate_console="))
            .unwrap()
            .clone();
        let cookie = session.split(';').next().unwrap().to_owned();
        let page = http
            .get(format!("{}/console/", self.gw.admin))
            .header(COOKIE, &cookie)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let csrf = page
            .split("name=\"csrf-token\" content=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_owned();
        Session {
            http,
            admin: self.gw.admin.clone(),
            cookie,
            set_cookie: session,
            csrf,
        }
    }
}

/// The `name=value` of a response's first cookie.
fn cookie_pair(r: &reqwest::Response) -> String {
    let v = r.headers()[SET_COOKIE].to_str().unwrap();
    v.split(';').next().unwrap().to_owned()
}

/// A signed-in browser session.
pub(crate) struct Session {
    pub(crate) http: reqwest::Client,
    pub(crate) admin: String,
    pub(crate) cookie: String,
    /// The whole `Set-Cookie` of the session cookie.
    pub(crate) set_cookie: String,
    pub(crate) csrf: String,
}

impl Session {
    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.admin))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap()
    }

    pub(crate) async fn json(&self, path: &str) -> Value {
        let r = self.get(path).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        r.json().await.unwrap()
    }

    /// A POST with the session's CSRF token (`csrf: false` leaves it out).
    pub(crate) async fn post(&self, path: &str, body: &Value, csrf: bool) -> reqwest::Response {
        let mut req = self
            .http
            .post(format!("{}{path}", self.admin))
            .header(COOKIE, &self.cookie)
            .json(body);
        if csrf {
            req = req.header("x-csrf-token", &self.csrf);
        }
        req.send().await.unwrap()
    }
}

/// Wait until the audit index holds `n` records matching `query`.
pub(crate) async fn indexed(s: &Session, query: &str, n: usize) -> Value {
    for _ in 0..100 {
        let found = s.json(&format!("/console/api/audit?{query}")).await;
        if found["records"].as_array().unwrap().len() >= n {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} records matched {query}");
}

/// The trail's console-action records once there are `n` of them.
pub(crate) async fn admin_records(rig: &Rig, n: usize) -> Vec<tollgate_audit::CallRecord> {
    let mut found = Vec::new();
    for _ in 0..100 {
        found = tollgate_e2e::audit_support::records(&rig.gw.audit_dir())
            .into_iter()
            .filter(|r| r.phase == tollgate_audit::Phase::Admin)
            .collect();
        if found.len() >= n {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    found
}
