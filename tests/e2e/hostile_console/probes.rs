//! Probes the console already withstands, kept that way: state changes
//! without the session's CSRF token, the session cookie's attributes,
//! the security headers on every answer, and paths that climb out of the
//! embedded assets or the audit directory.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, COOKIE, SET_COOKIE};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::rig::{Rig, dev_console};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_change_without_the_csrf_token_is_refused() {
    let rig = Rig::start().await;
    let alice = rig.sign_in("alice").await;
    let live = alice.live_revision("get_weather").await;
    let before = std::fs::read_to_string(&rig.lock).unwrap();
    let approve = json!({"server": "demo", "kind": "tool", "key": "get_weather", "revision": live});
    let check = json!({"subject": "bob", "server": "demo", "kind": "tool", "name": "echo"});
    for token in [None, Some(""), Some("forged-token")] {
        for (path, body) in [
            ("/console/api/catalog/approve", &approve),
            ("/console/api/policies/check", &check),
        ] {
            let refused = alice.post(path, body, token).await;
            assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{path} with {token:?}");
            let body: Value = refused.json().await.unwrap();
            assert_eq!(body["error"]["code"], "csrf");
        }
    }
    // Signing out, as a form on another site would post it.
    let logout = format!("{}/console/logout", rig.gw.admin);
    let forged = alice
        .http
        .post(&logout)
        .header(COOKIE, &alice.cookie)
        .form(&[("csrf", "x")]);
    assert_eq!(forged.send().await.unwrap().status(), StatusCode::FORBIDDEN);
    assert_eq!(
        alice.get("/console/api/me").await.status(),
        StatusCode::OK,
        "still signed in"
    );
    assert_eq!(std::fs::read_to_string(&rig.lock).unwrap(), before, "nothing approved");
    let with_token = alice
        .post("/console/api/catalog/approve", &approve, Some(&alice.csrf))
        .await;
    assert_eq!(with_token.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_cookies_are_http_only_strict_to_the_console_and_secure_over_https() {
    let rig = Rig::start().await;
    let (signed, login) = rig.callback("alice").await;
    let session = set_cookie(&signed, "tollgate_console=");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(session.contains(attribute), "{session}");
    }
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/console", "Max-Age=600"] {
        assert!(login.contains(attribute), "the sign-in state: {login}");
    }
    assert!(!session.contains("Secure") && !login.contains("Secure"), "plain HTTP");
    let alice = rig.sign_in("alice").await;
    let logout = format!("{}/console/logout", rig.gw.admin);
    let out = alice.http.post(&logout).header(COOKIE, &alice.cookie);
    let out = out.form(&[("csrf", alice.csrf.as_str())]).send().await.unwrap();
    assert!(set_cookie(&out, "tollgate_console=").contains("Max-Age=0"), "cleared");

    let https = dev_console("url = \"https://console.example.com/console\"");
    let rig = Rig::start_with(&https, "", "").await;
    let (signed, login) = rig.callback("alice").await;
    assert_eq!(signed.status(), StatusCode::OK);
    let session = set_cookie(&signed, "tollgate_console=");
    for attribute in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(session.contains(attribute), "{session}");
    }
    assert!(login.contains("Secure"), "{login}");
}

fn set_cookie(answer: &reqwest::Response, prefix: &str) -> String {
    let all = answer.headers().get_all(SET_COOKIE);
    let found = all.iter().map(|v| v.to_str().unwrap()).find(|c| c.starts_with(prefix));
    found.unwrap_or_else(|| panic!("no {prefix} cookie")).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_forbids_framing_and_foreign_scripts() {
    let rig = Rig::start().await;
    let alice = rig.sign_in("alice").await;
    let anonymous = crate::rig::no_redirects();
    let mut answers = Vec::new();
    for path in [
        "/console/",
        "/console/catalog",
        "/console/api/me",
        "/console/assets/console.js",
    ] {
        answers.push((path, alice.get(path).await));
    }
    for path in [
        "/console/",
        "/console/api/me",
        "/console/assets/nope.js",
        "/console/login",
    ] {
        let answer = anonymous.get(format!("{}{path}", rig.gw.admin)).send().await.unwrap();
        answers.push((path, answer));
    }
    for (path, answer) in answers {
        let h = answer.headers();
        let csp = h[CONTENT_SECURITY_POLICY].to_str().unwrap();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{path}: {csp}"
        );
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_out_of_the_assets_or_the_audit_directory_are_refused() {
    let rig = Rig::start().await;
    let alice = rig.sign_in("alice").await;
    // Sent as written: an HTTP client would resolve the dot segments.
    for target in [
        "/console/assets/../../Cargo.toml",
        "/console/assets/..%2f..%2fCargo.toml",
        "/console/assets/%2e%2e/%2e%2e/gateway.toml",
        "/console/assets/vendor/../../../gateway.toml",
        "/console/assets//etc/passwd",
        "/console/assets/%2fetc%2fpasswd",
        "/console/assets/..\\..\\gateway.toml",
        "/console/assets/shell.html",
    ] {
        let (status, answer) = raw_get(&rig.gw.admin, target, &alice.cookie).await;
        assert!((400..500).contains(&status), "{target}: {status}\n{answer}");
        assert!(
            !answer.contains("[listen]") && !answer.contains("root:"),
            "{target}: {answer}"
        );
        assert!(!answer.contains("{{csrf}}"), "{target}: the page template");
    }
    for file in ["../gateway.toml", "..%2fgateway.toml", "/etc/passwd", "index.sqlite"] {
        let path = format!("/console/api/audit/call?file={file}&line=1");
        assert_eq!(alice.get(&path).await.status(), StatusCode::NOT_FOUND, "{file}");
    }
}

/// `GET target` on `base` over a plain connection, with `cookie`: the
/// status and the whole answer.
async fn raw_get(base: &str, target: &str, cookie: &str) -> (u16, String) {
    let host = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer)
}
