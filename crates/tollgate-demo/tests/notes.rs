//! Notes (`--notes`) over real HTTP, as an MCP client with its own OAuth
//! client would meet it: the 401 challenge, both metadata documents, the
//! sign-in page, the code exchange, then tools answering for the user who
//! signed in.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{MODERN, POST_HEADERS, Reply, modern_meta, read, send};
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const REDIRECT: &str = "http://127.0.0.1:9/callback";
/// A PKCE pair: RFC 7636 appendix B's example.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// Notes on a loopback port; its origin and a shutdown handle.
async fn start() -> (String, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let config = tollgate_demo::NotesConfig::new("the-client", b"the secret".to_vec(), REDIRECT);
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(tollgate_demo::serve_notes(listener, config, async move {
        let _ = rx.await;
    }));
    (origin, tx)
}

/// POSTs `form` (already encoded) with extra `headers`.
async fn post_form(url: &str, headers: &[(&str, &str)], form: &str) -> Reply {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(url)
        .header("content-type", "application/x-www-form-urlencoded");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(form.to_owned()))).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(10), client.request(request))
        .await
        .unwrap()
        .unwrap();
    read(response).await
}

/// A 2026-07-28 `tools/call` of `tool` as the bearer of `token`.
async fn call(origin: &str, token: &str, tool: &str, arguments: Value) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": modern_meta()}});
    let auth = format!("Bearer {token}");
    let mut headers = POST_HEADERS.to_vec();
    headers.extend([
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
        ("authorization", auth.as_str()),
    ]);
    send(Method::POST, &format!("{origin}/mcp"), &headers, Some(&body)).await
}

/// The value of `name=` in the query of `location`.
fn param(location: &str, name: &str) -> String {
    let query = location.split_once('?').unwrap().1;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {location}"))
        .to_owned()
}

/// Signs `user` in through the page; the access token.
async fn sign_in(origin: &str, user: &str) -> String {
    let authorize = format!(
        "{origin}/authorize?response_type=code&client_id=the-client&redirect_uri={}&state=s1\
         &code_challenge={CHALLENGE}&code_challenge_method=S256&resource={origin}/mcp&login_hint={user}",
        REDIRECT.replace(':', "%3A").replace('/', "%2F")
    );
    let page = send(Method::GET, &authorize, &[], None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    assert!(page.raw.contains("Sign in to Notes as"), "{}", page.raw);
    assert!(
        page.raw.contains(&format!("value=\"{user}\"")),
        "login_hint fills the name"
    );
    let request = page.raw.split("name=\"request\" value=\"").nth(1).unwrap();
    let request = request.split('"').next().unwrap();
    let back = post_form(
        &format!("{origin}/authorize"),
        &[],
        &format!("request={request}&login={user}"),
    )
    .await;
    assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.raw);
    let location = back.headers["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(REDIRECT), "{location}");
    assert_eq!(param(&location, "state"), "s1");
    assert!(
        param(&location, "iss").starts_with("http%3A%2F%2F127.0.0.1"),
        "{location}"
    );
    // client_secret_basic, the secret form-encoded first (a space is `+`).
    let basic = format!("Basic {}", base64_of("the-client:the+secret"));
    let form = format!(
        "grant_type=authorization_code&code={}&redirect_uri={REDIRECT}&code_verifier={VERIFIER}",
        param(&location, "code")
    );
    let tokens = post_form(&format!("{origin}/token"), &[("authorization", &basic)], &form).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    tokens.last()["access_token"].as_str().unwrap().to_owned()
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn a_client_discovers_notes_signs_a_user_in_and_calls_as_that_user() {
    let (origin, _stop) = start().await;
    let anonymous = send(Method::POST, &format!("{origin}/mcp"), &POST_HEADERS, Some(&json!({}))).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let challenge = anonymous.headers["www-authenticate"].to_str().unwrap();
    let metadata_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(challenge, format!("Bearer resource_metadata=\"{metadata_url}\""));
    let resource = send(Method::GET, &metadata_url, &[], None).await;
    assert_eq!(resource.last()["resource"], format!("{origin}/mcp"));
    assert_eq!(resource.last()["authorization_servers"], json!([origin]));
    let meta_url = format!("{origin}/.well-known/oauth-authorization-server");
    let meta = send(Method::GET, &meta_url, &[], None).await;
    assert_eq!(meta.last()["issuer"], origin);
    assert_eq!(meta.last()["token_endpoint"], format!("{origin}/token"));
    assert_eq!(meta.last()["code_challenge_methods_supported"], json!(["S256"]));

    let victor = sign_in(&origin, "victor").await;
    let alice = sign_in(&origin, "alice").await;
    let who = call(&origin, &victor, "whoami", json!({})).await;
    assert_eq!(who.last()["result"]["structuredContent"]["user"], "victor", "{who:?}");
    call(&origin, &alice, "add_note", json!({"text": "buy milk"})).await;
    let alices = call(&origin, &alice, "list_notes", json!({})).await;
    assert_eq!(
        alices.last()["result"]["structuredContent"]["notes"],
        json!(["buy milk"])
    );
    let victors = call(&origin, &victor, "list_notes", json!({})).await;
    assert_eq!(victors.last()["result"]["structuredContent"]["notes"], json!([]));

    let forged = call(&origin, "not-a-token", "whoami", json!({})).await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED);
    let challenge = forged.headers["www-authenticate"].to_str().unwrap();
    assert!(challenge.ends_with("error=\"invalid_token\""), "{challenge}");
}

#[tokio::test]
async fn the_token_endpoint_answers_errors_as_oauth_json() {
    let (origin, _stop) = start().await;
    let wrong = format!("Basic {}", base64_of("the-client:guess"));
    let form = "grant_type=authorization_code&code=x&code_verifier=y";
    let refused = post_form(&format!("{origin}/token"), &[("authorization", &wrong)], form).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert_eq!(refused.last()["error"], "invalid_client");
    assert!(refused.headers.contains_key("www-authenticate"));
    let post =
        "grant_type=authorization_code&code=unknown&code_verifier=y&client_id=the-client&client_secret=the+secret";
    let unknown = post_form(&format!("{origin}/token"), &[], post).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(unknown.last()["error"], "invalid_grant");
}
