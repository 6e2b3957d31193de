//! The authorization server's rules, each alone: the redirect URI, PKCE,
//! single-use codes, client authentication and refresh rotation.

use std::time::Duration;

use super::*;

const REDIRECT: &str = "http://127.0.0.1:8080/oauth/upstream/callback";
const RESOURCE: &str = "http://127.0.0.1:3003/mcp";
const VERIFIER: &str = "a-verifier-of-the-pkce-kind-at-least-43-characters-long";

fn server_with_ttl(ttl: Duration) -> AuthServer {
    AuthServer::new(Settings {
        issuer: "http://127.0.0.1:3003".into(),
        resource: RESOURCE.into(),
        client_id: "tollgate-demo".into(),
        client_secret: b"s3cret&=+".to_vec(),
        redirect_uri: REDIRECT.into(),
        users: vec!["alice".into(), "victor".into()],
        token_ttl: ttl,
    })
}

fn server() -> AuthServer {
    server_with_ttl(Duration::from_secs(3600))
}

fn query() -> AuthorizeQuery {
    AuthorizeQuery {
        response_type: Some("code".into()),
        client_id: Some("tollgate-demo".into()),
        redirect_uri: Some(REDIRECT.into()),
        state: Some("st&te".into()),
        scope: Some(String::new()),
        // `s256` itself is checked against RFC 7636's own example below.
        code_challenge: Some(s256(VERIFIER)),
        code_challenge_method: Some("S256".into()),
        resource: Some(RESOURCE.into()),
        login_hint: None,
    }
}

fn basic() -> ClientAuth {
    ClientAuth::Basic("tollgate-demo".into(), "s3cret&=+".into())
}

/// The value of `name` in the query of `url`.
fn param(url: &str, name: &str) -> Option<String> {
    let url = Url::parse(url).unwrap();
    url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

/// Alice signs in through a request like [`query`]; the code.
fn code_for_alice(s: &AuthServer) -> String {
    let id = s.begin(&query()).unwrap();
    let back = s.complete(&id, "alice").unwrap();
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "state").as_deref(), Some("st&te"));
    assert_eq!(param(&back, "iss").as_deref(), Some("http://127.0.0.1:3003"));
    param(&back, "code").unwrap()
}

fn exchange(code: &str, verifier: &str) -> TokenForm {
    TokenForm {
        grant_type: Some("authorization_code".into()),
        code: Some(code.into()),
        redirect_uri: Some(REDIRECT.into()),
        code_verifier: Some(verifier.into()),
        resource: Some(RESOURCE.into()),
        ..TokenForm::default()
    }
}

fn refresh(token: &str) -> TokenForm {
    TokenForm {
        grant_type: Some("refresh_token".into()),
        refresh_token: Some(token.into()),
        ..TokenForm::default()
    }
}

#[test]
fn s256_is_the_rfc_7636_example() {
    assert_eq!(
        s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
}

#[test]
fn a_code_is_redeemed_once_with_its_verifier_for_the_user_who_signed_in() {
    let s = server();
    let code = code_for_alice(&s);
    let set = s.token(&basic(), &exchange(&code, VERIFIER)).unwrap();
    assert_eq!(set.token_type, "Bearer");
    assert_eq!(set.expires_in, 3600);
    assert_eq!(set.scope, "notes:read notes:write");
    let caller = s.caller(&set.access_token).unwrap();
    assert_eq!(caller.user, "alice");
    let again = s.token(&basic(), &exchange(&code, VERIFIER)).unwrap_err();
    assert_eq!(again.error, "invalid_grant", "a code works once");
}

#[test]
fn a_wrong_verifier_is_refused_and_burns_the_code() {
    let s = server();
    let code = code_for_alice(&s);
    let wrong = "another-verifier-of-the-pkce-kind-at-least-43-characters";
    assert_eq!(
        s.token(&basic(), &exchange(&code, wrong)).unwrap_err().error,
        "invalid_grant"
    );
    assert_eq!(
        s.token(&basic(), &exchange(&code, VERIFIER)).unwrap_err().error,
        "invalid_grant"
    );
}

#[test]
fn pkce_s256_is_required() {
    let s = server();
    for (challenge, method) in [
        (None, Some("S256")),
        (Some(s256(VERIFIER)), Some("plain")),
        (Some(s256(VERIFIER)), None),
    ] {
        let q = AuthorizeQuery {
            code_challenge: challenge,
            code_challenge_method: method.map(str::to_owned),
            ..query()
        };
        let Err(AuthorizeError::Redirect(back)) = s.begin(&q) else {
            panic!("accepted without S256");
        };
        assert_eq!(param(&back, "error").as_deref(), Some("invalid_request"));
        assert_eq!(param(&back, "state").as_deref(), Some("st&te"));
    }
}

#[test]
fn a_wrong_redirect_uri_or_client_is_shown_never_redirected_to() {
    let s = server();
    for q in [
        AuthorizeQuery {
            redirect_uri: Some("http://127.0.0.1:8080/oauth/upstream/callback/evil".into()),
            ..query()
        },
        AuthorizeQuery {
            redirect_uri: None,
            ..query()
        },
        AuthorizeQuery {
            client_id: Some("someone-else".into()),
            ..query()
        },
    ] {
        assert!(matches!(s.begin(&q), Err(AuthorizeError::Page(_))), "{q:?}");
    }
    let code = code_for_alice(&s);
    let form = TokenForm {
        redirect_uri: Some("http://127.0.0.1:9/elsewhere".into()),
        ..exchange(&code, VERIFIER)
    };
    assert_eq!(s.token(&basic(), &form).unwrap_err().error, "invalid_grant");
}

#[test]
fn scopes_and_resource_are_checked() {
    let s = server();
    let q = AuthorizeQuery {
        scope: Some("notes:read admin".into()),
        ..query()
    };
    let Err(AuthorizeError::Redirect(back)) = s.begin(&q) else {
        panic!("an unknown scope accepted");
    };
    assert_eq!(param(&back, "error").as_deref(), Some("invalid_scope"));
    let q = AuthorizeQuery {
        resource: Some("http://127.0.0.1:3003/other".into()),
        ..query()
    };
    assert!(matches!(s.begin(&q), Err(AuthorizeError::Redirect(b)) if b.contains("invalid_target")));
    let code = code_for_alice(&s);
    let form = TokenForm {
        resource: Some("http://127.0.0.1:3003/other".into()),
        ..exchange(&code, VERIFIER)
    };
    assert_eq!(s.token(&basic(), &form).unwrap_err().error, "invalid_target");
}

#[test]
fn only_known_users_sign_in_and_a_request_is_used_once() {
    let s = server();
    let id = s.begin(&query()).unwrap();
    assert!(matches!(s.complete(&id, "mallory"), Err(AuthorizeError::Page(_))));
    s.complete(&id, "victor").unwrap();
    assert!(matches!(s.complete(&id, "victor"), Err(AuthorizeError::Page(_))));
}

#[test]
fn the_client_authenticates_by_basic_or_form_never_both() {
    let s = server();
    let wrong = ClientAuth::Basic("tollgate-demo".into(), "guess".into());
    let code = code_for_alice(&s);
    assert_eq!(
        s.token(&wrong, &exchange(&code, VERIFIER)).unwrap_err().error,
        "invalid_client"
    );
    let both = TokenForm {
        client_secret: Some("s3cret&=+".into()),
        ..exchange(&code, VERIFIER)
    };
    assert_eq!(s.token(&basic(), &both).unwrap_err().error, "invalid_request");
    let post = TokenForm {
        client_id: Some("tollgate-demo".into()),
        client_secret: Some("s3cret&=+".into()),
        ..exchange(&code, VERIFIER)
    };
    assert_eq!(
        s.token(&ClientAuth::Form, &post).unwrap().scope,
        "notes:read notes:write"
    );
    let nobody = exchange(&code_for_alice(&s), VERIFIER);
    assert_eq!(s.token(&ClientAuth::Form, &nobody).unwrap_err().error, "invalid_client");
}

#[test]
fn refresh_tokens_rotate() {
    let s = server();
    let first = s.token(&basic(), &exchange(&code_for_alice(&s), VERIFIER)).unwrap();
    let second = s.token(&basic(), &refresh(&first.refresh_token)).unwrap();
    assert_ne!(second.refresh_token, first.refresh_token);
    assert_ne!(second.access_token, first.access_token);
    assert_eq!(s.caller(&second.access_token).unwrap().user, "alice");
    let replayed = s.token(&basic(), &refresh(&first.refresh_token)).unwrap_err();
    assert_eq!(replayed.error, "invalid_grant", "a refresh token works once");
    let narrower = TokenForm {
        scope: Some("notes:read".into()),
        ..refresh(&second.refresh_token)
    };
    let third = s.token(&basic(), &narrower).unwrap();
    assert_eq!(third.scope, "notes:read");
    let wider = TokenForm {
        scope: Some("notes:write".into()),
        ..refresh(&third.refresh_token)
    };
    assert_eq!(s.token(&basic(), &wider).unwrap_err().error, "invalid_scope");
    // A refused refresh leaves the token good.
    s.token(&basic(), &refresh(&third.refresh_token)).unwrap();
}

#[test]
fn access_tokens_expire() {
    let s = server_with_ttl(Duration::ZERO);
    let set = s.token(&basic(), &exchange(&code_for_alice(&s), VERIFIER)).unwrap();
    assert_eq!(s.caller(&set.access_token), None);
    assert_eq!(s.caller("never-issued"), None);
}
