//! A hand-driven OAuth client and browser for the authorization server:
//! registration, the authorization request with PKCE, the sign-in and
//! consent pages (cookie and form fields carried as a browser would), and
//! the token endpoint.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use tollgate_e2e::Demo;
use tollgate_e2e::children::ChildGateway;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// The redirect URI test clients register.
pub(crate) const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A gateway with the authorization server on, in development mode (the
/// picker signs in `[[dev_issuer.users]]`), in front of the demo server
/// at routes `demo` (scope `mcp:tools`) and `other`.
pub(crate) async fn gateway(demo: &Demo, extra: &str) -> ChildGateway {
    ChildGateway::spawn(&format!(
        "[dev_issuer]\nenabled = true\nkey_file = \"dev.pem\"\n\
         [[dev_issuer.users]]\nsubject = \"alice\"\nteam = \"payments\"\ncost_center = \"cc-7\"\ngroups = [\"eng\"]\n\
         [authorization_server]\nenabled = true\ndevelopment = true\naccess_token_ttl = \"5m\"\n{extra}\n\
         [audit]\ndirectory = \"audit\"\n\
         [[servers]]\nname = \"demo\"\nurl = \"{url}\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n\
         [[servers]]\nname = \"other\"\nurl = \"{url}\"\n",
        url = demo.url
    ))
    .await
}

/// An HTTP client that follows no redirect.
pub(crate) fn client() -> reqwest::Client {
    tollgate_e2e::http_no_redirect()
}

/// A PKCE verifier and its S256 challenge.
pub(crate) fn pkce(seed: &str) -> (String, String) {
    let verifier = format!("{seed:-<64}");
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes());
    (verifier, URL_SAFE_NO_PAD.encode(digest))
}

/// Register a public client with `redirect_uris`; its `client_id`.
pub(crate) async fn register(gw: &ChildGateway, redirect_uris: &[&str]) -> reqwest::Response {
    client()
        .post(format!("{}/register", gw.base))
        .json(&json!({
            "client_name": "Test client",
            "redirect_uris": redirect_uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        }))
        .send()
        .await
        .unwrap()
}

/// The value of a query parameter of `url`.
pub(crate) fn param(url: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

/// The `value` of the hidden input `name` in an HTML page.
fn hidden(page: &str, name: &str) -> String {
    let at = page.find(&format!("name=\"{name}\" value=\"")).expect(name);
    let rest = &page[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// The authorization request's URL.
pub(crate) fn authorize_url(
    gw: &ChildGateway,
    client_id: &str,
    challenge: &str,
    resource: &str,
    extra: &[(&str, &str)],
) -> String {
    let mut url = url::Url::parse(&format!("{}/authorize", gw.base)).unwrap();
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", "st-1")
        .append_pair("resource", resource);
    for (k, v) in extra {
        url.query_pairs_mut().append_pair(k, v);
    }
    url.to_string()
}

/// Drive the browser from the authorization request to the redirect back
/// to the client, signing `user` in and answering the consent page with
/// `decision` (when it is shown); the final redirect URL.
pub(crate) async fn browse(gw: &ChildGateway, authorize: &str, user: &str, decision: &str) -> String {
    let http = client();
    let res = http.get(authorize).send().await.unwrap();
    assert_eq!(res.status(), 303, "{}", res.text().await.unwrap());
    let cookie = res.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let picker = res.headers()["location"].to_str().unwrap().to_owned();
    let page = http
        .get(format!("{}{picker}", gw.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let request = hidden(&page.text().await.unwrap(), "request");
    let res = http
        .post(format!("{}/oauth/signin", gw.base))
        .header("cookie", &cookie)
        .form(&[("request", request.as_str()), ("login", user)])
        .send()
        .await
        .unwrap();
    if res.status().is_redirection() {
        return res.headers()["location"].to_str().unwrap().to_owned();
    }
    let consent = res.text().await.unwrap();
    assert!(consent.contains("Allow access?"), "{consent}");
    let csrf = hidden(&consent, "csrf");
    let res = http
        .post(format!("{}/oauth/consent", gw.base))
        .header("cookie", &cookie)
        .form(&[
            ("request", request.as_str()),
            ("csrf", csrf.as_str()),
            ("decision", decision),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303, "{}", res.text().await.unwrap());
    res.headers()["location"].to_str().unwrap().to_owned()
}

/// A token request; the status and the JSON answer.
pub(crate) async fn token(gw: &ChildGateway, form: &[(&str, &str)]) -> (u16, Value) {
    let res = client()
        .post(format!("{}/token", gw.base))
        .form(form)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

/// A refresh token grant for `client_id`; the status and the answer.
pub(crate) async fn refresh(gw: &ChildGateway, refresh_token: &str, client_id: &str) -> (u16, Value) {
    token(
        gw,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
        ],
    )
    .await
}

/// Register, sign `alice` in, consent, redeem the code: the client id,
/// the token answer and the code.
pub(crate) async fn sign_in(gw: &ChildGateway, route: &str) -> (String, Value, String) {
    sign_in_on(gw, gw, &gw.base, route).await
}

/// [`sign_in`] with the client registered at replica `at` and the rest at
/// replica `then`, for the route `route` of the public URL `public`.
pub(crate) async fn sign_in_on(
    at: &ChildGateway,
    then: &ChildGateway,
    public: &str,
    route: &str,
) -> (String, Value, String) {
    sign_in_as(at, then, public, route, "alice").await
}

/// [`sign_in_on`] for `user`.
pub(crate) async fn sign_in_as(
    at: &ChildGateway,
    then: &ChildGateway,
    public: &str,
    route: &str,
    user: &str,
) -> (String, Value, String) {
    let reg: Value = register(at, &[REDIRECT]).await.json().await.unwrap();
    let client_id = reg["client_id"].as_str().unwrap().to_owned();
    let (verifier, challenge) = pkce("flow");
    let resource = format!("{public}/mcp/{route}");
    let back = browse(
        then,
        &authorize_url(then, &client_id, &challenge, &resource, &[]),
        user,
        "allow",
    )
    .await;
    let code = param(&back, "code").unwrap();
    let (status, answer) = token(
        then,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
            ("client_id", &client_id),
        ],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    (client_id, answer, code)
}

/// An `initialize` on `route` with `token`: the HTTP status.
pub(crate) async fn call(gw: &ChildGateway, route: &str, token: &str) -> u16 {
    client()
        .post(gw.url(route))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INIT)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The claims of a JWT (not verified).
pub(crate) fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}
