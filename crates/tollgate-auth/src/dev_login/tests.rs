#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::Authenticator;
use crate::authenticator::no_issuers;

const CONSOLE: &str = "http://127.0.0.1:9090/console";
const CALLBACK: &str = "http://127.0.0.1:9090/console/callback";
const VERIFIER: &str = "a-verifier-of-forty-three-characters-or-more-xyz";

fn issuer() -> DevIssuer {
    DevIssuer::from_pem("http://127.0.0.1:9090/dev-issuer", &DevIssuer::generate_pem().unwrap()).unwrap()
}

fn users() -> Vec<DevUser> {
    vec![
        DevUser {
            subject: "alice".into(),
            team: Some("payments".into()),
            cost_center: Some("cc-1".into()),
            groups: vec!["platform".into()],
        },
        DevUser {
            subject: "bob".into(),
            team: None,
            cost_center: None,
            groups: vec![],
        },
    ]
}

fn client() -> DevClient<'static> {
    DevClient {
        client_id: "tollgate-console",
        secret: Some(b"s3cret"),
        redirect_uri: CALLBACK,
        resource: CONSOLE,
    }
}

fn authorize(hint: Option<&str>) -> AuthorizeParams {
    AuthorizeParams {
        response_type: Some("code".into()),
        client_id: Some("tollgate-console".into()),
        redirect_uri: Some(CALLBACK.into()),
        code_challenge: Some(URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, VERIFIER.as_bytes()))),
        code_challenge_method: Some("S256".into()),
        resource: Some(CONSOLE.into()),
        login_hint: hint.map(str::to_owned),
        state: None,
    }
}

fn token(code: String) -> TokenParams {
    TokenParams {
        grant_type: Some("authorization_code".into()),
        code: Some(code),
        redirect_uri: Some(CALLBACK.into()),
        code_verifier: Some(VERIFIER.into()),
        client_id: None,
        client_secret: None,
    }
}

fn basic() -> Option<(String, String)> {
    Some(("tollgate-console".into(), "s3cret".into()))
}

#[tokio::test]
async fn a_code_redeemed_with_its_verifier_gives_a_token_for_the_resource() {
    let dev = issuer();
    let code = dev.authorize(&authorize(Some("alice")), &client(), &users()).unwrap();
    let answer = dev.redeem(&token(code), basic(), &client(), &users()).unwrap();
    let auth = Authenticator::new(&no_issuers(), Some(&dev)).unwrap();
    let p = auth
        .authenticate(answer["access_token"].as_str().unwrap(), CONSOLE)
        .await
        .unwrap();
    assert_eq!(p.subject, "alice");
    assert_eq!(p.groups, vec!["platform".to_owned()]);
    assert_eq!(p.cost_center.as_deref(), Some("cc-1"));
    assert_eq!(p.client_id.as_deref(), Some("tollgate-console"));
}

/// A code the issuer signed for the same client and callback but another
/// resource (as one from before the console's URL changed would be).
fn for_another_resource(dev: &DevIssuer) -> String {
    let other = DevClient {
        resource: "http://127.0.0.1:8080/mcp/demo",
        ..client()
    };
    let mut params = authorize(None);
    params.resource = Some(other.resource.into());
    dev.authorize(&params, &other, &users()).unwrap()
}

#[test]
fn every_mismatch_is_refused_with_its_oauth_error() {
    let dev = issuer();
    let code = || dev.authorize(&authorize(None), &client(), &users()).unwrap();
    let mut wrong_verifier = token(code());
    wrong_verifier.code_verifier = Some("another-verifier".into());
    let mut wrong_redirect = token(code());
    wrong_redirect.redirect_uri = Some("http://127.0.0.1:1/cb".into());
    let cases = [
        (wrong_verifier, basic(), "invalid_grant"),
        (wrong_redirect, basic(), "invalid_grant"),
        (
            token(code()),
            Some(("tollgate-console".into(), "wrong".into())),
            "invalid_client",
        ),
        (token(code()), None, "invalid_client"),
        (token("not-a-code".into()), basic(), "invalid_grant"),
        (token(for_another_resource(&dev)), basic(), "invalid_grant"),
        (
            token(dev.mint("x", None, &[], Duration::from_secs(60), &[]).unwrap()),
            basic(),
            "invalid_grant",
        ),
    ];
    for (params, auth, expected) in cases {
        assert_eq!(
            dev.redeem(&params, auth, &client(), &users()).unwrap_err().code,
            expected
        );
    }
    let mut no_pkce = authorize(None);
    no_pkce.code_challenge_method = Some("plain".into());
    let mut elsewhere = authorize(None);
    elsewhere.redirect_uri = Some("https://evil.example/cb".into());
    let mut for_a_route = authorize(None);
    for_a_route.resource = Some("http://127.0.0.1:8080/mcp/demo".into());
    let mut no_resource = authorize(None);
    no_resource.resource = None;
    for (params, expected) in [
        (no_pkce, "invalid_request"),
        (elsewhere, "invalid_request"),
        (for_a_route, "invalid_target"),
        (no_resource, "invalid_target"),
        (authorize(Some("mallory")), "access_denied"),
    ] {
        assert_eq!(dev.authorize(&params, &client(), &users()).unwrap_err().code, expected);
    }
}
