//! The console signs users in through a real OpenID Provider, not only the
//! gateway's development issuer: `oidc-provider` (`idp.mjs`), trusted as
//! one of `[[auth.issuers]]` and named by `[console] issuer`, with the
//! console registered there as a confidential client. A user signs in at
//! the provider's own login form (the authorization code flow with PKCE,
//! `resource` = the console's URL); the console redeems the code with its
//! secret, accepts the provider's JWT access token for its audience and
//! maps the token's groups to roles. A user whose groups hold no role gets
//! no session.

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::json;
use tollgate_e2e::children::{ChildGateway, free_port};
use tollgate_e2e::idp::{Idp, browse};
use tollgate_e2e::{Demo, install_crypto_provider};

const CLIENT: &str = "tollgate-console";
const SECRET: &str = "console-at-the-idp";

/// The gateway, the IdP it trusts, and what they need kept alive.
struct World {
    gw: ChildGateway,
    idp: Idp,
    http: reqwest::Client,
    _secret: tempfile::NamedTempFile,
    _demo: Demo,
}

/// A gateway whose console signs users in at an IdP on a port chosen
/// first, then that IdP: its client's redirect URI and resource need the
/// gateway's admin address.
async fn world() -> World {
    install_crypto_provider();
    let demo = Demo::spawn().await;
    let idp_port = free_port();
    let issuer = format!("http://127.0.0.1:{idp_port}");
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), SECRET).unwrap();
    let gw = ChildGateway::spawn(&format!(
        r#"[[auth.issuers]]
issuer = "{issuer}"
allow_insecure_http = true

[console]
enabled = true
issuer = "{issuer}"
client_id = "{CLIENT}"
client_secret = {{ file = "{secret}" }}

[console.roles]
auditor = ["security"]

[[servers]]
name = "demo"
url = "{url}"
"#,
        secret = secret.path().display(),
        url = demo.url,
    ))
    .await;
    let console = format!("{}/console", gw.admin);
    let idp = Idp::start_on(
        idp_port,
        json!({
            "clients": [{
                "client_id": CLIENT, "client_secret": SECRET,
                "redirect_uris": [format!("{console}/callback")],
                "grant_types": ["authorization_code"],
            }],
            "users": [
                {"subject": "sam", "password": "s3cure", "team": "secops", "groups": ["security"]},
                {"subject": "carl", "password": "contract", "team": "vendors", "groups": ["contractors"]},
            ],
            // Access tokens for the console's URL: JWTs with that audience,
            // carrying the user's groups and team.
            "resources": {console: {"scopes": [], "claims": ["groups", "team"]}},
        }),
    )
    .await;
    // The gateway started before the IdP: wait until it has its keys.
    let mut ready = false;
    for _ in 0..300 {
        let r = tollgate_e2e::http().get(format!("{}/readyz", gw.admin)).send().await;
        if r.is_ok_and(|r| r.status() == StatusCode::OK) {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(ready, "the gateway never loaded the IdP's keys:\n{}", gw.log());
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    World {
        gw,
        idp,
        http,
        _secret: secret,
        _demo: demo,
    }
}

impl World {
    /// Sign `user` in at the IdP's login form: the callback's answer.
    async fn sign_in(&self, user: &str, password: &str) -> reqwest::Response {
        let start = self
            .http
            .get(format!("{}/console/login", self.gw.admin))
            .send()
            .await
            .unwrap();
        assert_eq!(start.status(), StatusCode::SEE_OTHER, "{}", self.gw.log());
        let login_cookie = start.headers()[SET_COOKIE].to_str().unwrap();
        let login_cookie = login_cookie.split(';').next().unwrap().to_owned();
        let authorize = start.headers()[LOCATION].to_str().unwrap().to_owned();
        assert!(authorize.starts_with(&self.idp.issuer), "{authorize}");
        assert!(authorize.contains("code_challenge_method=S256"), "{authorize}");
        let callback_prefix = format!("{}/console/callback", self.gw.admin);
        let login = format!("login={user}");
        let password = format!("password={password}");
        let back = browse(&authorize, &callback_prefix, &[&login, &password]).await;
        let callback = back["url"]
            .as_str()
            .unwrap_or_else(|| panic!("{back}\nIdP log:\n{}", self.idp.log()));
        assert!(callback.contains("code="), "{callback}");
        self.http
            .get(callback)
            .header(COOKIE, login_cookie)
            .send()
            .await
            .unwrap()
    }
}

/// The `name=value` of the console's session cookie, if the answer set one.
fn session_cookie(r: &reqwest::Response) -> Option<String> {
    r.headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|c| c.starts_with("tollgate_console=") && !c.starts_with("tollgate_console=;"))
        .map(|c| c.split(';').next().unwrap().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_signs_users_in_through_a_real_openid_provider() {
    let w = world().await;

    // Sam is in `security`: an auditor, as the IdP's token said.
    let signed = w.sign_in("sam", "s3cure").await;
    let cookie = session_cookie(&signed);
    let status = signed.status();
    let body = signed.text().await.unwrap();
    assert_eq!(
        status,
        StatusCode::OK,
        "{body}\ngateway log:\n{}\nIdP log:\n{}",
        w.gw.log(),
        w.idp.log()
    );
    let cookie = cookie.expect("a session cookie");
    let me: serde_json::Value = w
        .http
        .get(format!("{}/console/api/me", w.gw.admin))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["subject"], "sam", "{me}");
    assert_eq!(me["team"], "secops", "{me}");
    assert_eq!(me["roles"], json!(["auditor"]), "{me}");
    assert_eq!(me["can"], json!({"captures": true, "approve": false}), "{me}");

    // Carl signs in at the IdP just as well, but his groups hold no role:
    // the callback refuses him and starts no session.
    let refused = w.sign_in("carl", "contract").await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{}", w.gw.log());
    assert_eq!(session_cookie(&refused), None);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden", "{body}");
}
