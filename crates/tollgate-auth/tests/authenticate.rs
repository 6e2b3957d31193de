//! The authenticator against a real issuer over HTTP: the hostile-token
//! table (each case with its exact challenge), key rotation, an issuer that
//! goes down, readiness, and the verified-token cache.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{ROUTE, TestIdp, TestKey, issuer_settings, now};
use http::{HeaderMap, HeaderValue};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tollgate_auth::{AuthError, Authenticator, IssuerStatus, ProtectedResource, TokenRejection};

const META: &str = "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp/github";

struct Setup {
    idp: TestIdp,
    rsa: TestKey,
    ec: TestKey,
    auth: Authenticator,
    route: ProtectedResource,
}

async fn setup(extra: &str) -> Setup {
    let (rsa, ec) = (TestKey::rsa("rsa-1"), TestKey::ec("ec-1"));
    let idp = TestIdp::start(&[&rsa, &ec]).await;
    let auth = Authenticator::new(&issuer_settings(&idp, extra), None).unwrap();
    assert!(auth.refresh_now().await, "keys load from a live issuer");
    // The `github` route, needing `mcp:tools`.
    let route = ProtectedResource::new(ROUTE, &auth.issuers(), &["mcp:tools".to_owned()], &[]).unwrap();
    Setup {
        idp,
        rsa,
        ec,
        auth,
        route,
    }
}

fn bearer(token: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    h
}

fn b64(v: &serde_json::Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

/// Swap the payload of a signed token, keeping header and signature.
fn tamper(token: &str, claims: &serde_json::Value) -> String {
    let parts: Vec<_> = token.split('.').collect();
    format!("{}.{}.{}", parts[0], b64(claims), parts[2])
}

fn challenge(error: &str, description: &str) -> String {
    format!(
        "Bearer error=\"{error}\", error_description=\"{description}\", resource_metadata=\"{META}\", scope=\"mcp:tools\""
    )
}

type Case = (&'static str, Option<String>, Result<(), AuthError>);

/// Each hostile (and a few good) tokens with the expected outcome.
fn cases(s: &Setup) -> Vec<Case> {
    let good = s.idp.claims("alice", "mcp:tools");
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut c = good.clone();
        f(&mut c);
        c
    };
    let stranger = TestKey::rsa("rsa-1"); // same kid, key not published
    let hs256 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &good,
        &EncodingKey::from_secret(s.rsa.public_pem.as_bytes()).unwrap(),
    )
    .unwrap();
    let alg_none = format!("{}.{}.", b64(&json!({"alg": "none", "typ": "JWT"})), b64(&good));
    let invalid = |r: TokenRejection| Err(AuthError::InvalidToken(r));
    vec![
        ("missing", None, Err(AuthError::Missing)),
        (
            "malformed",
            Some("not-a-jwt".into()),
            invalid(TokenRejection::Malformed),
        ),
        (
            "three garbage parts",
            Some("a.b.c".into()),
            invalid(TokenRejection::Malformed),
        ),
        (
            "expired",
            Some(s.rsa.sign(&with(&|c| c["exp"] = json!(now() - 3600)))),
            invalid(TokenRejection::Expired),
        ),
        (
            "not yet valid",
            Some(s.rsa.sign(&with(&|c| c["nbf"] = json!(now() + 3600)))),
            invalid(TokenRejection::NotYetValid),
        ),
        (
            "wrong issuer",
            Some(s.rsa.sign(&with(&|c| c["iss"] = json!("https://evil.example.com")))),
            invalid(TokenRejection::UnknownIssuer),
        ),
        (
            "token for another route",
            Some(
                s.rsa
                    .sign(&with(&|c| c["aud"] = json!("http://127.0.0.1:8080/mcp/other"))),
            ),
            invalid(TokenRejection::Audience),
        ),
        (
            "token for another service",
            Some(s.ec.sign(&with(&|c| c["aud"] = json!(["https://billing.example.com"])))),
            invalid(TokenRejection::Audience),
        ),
        ("alg none", Some(alg_none), invalid(TokenRejection::Algorithm)),
        (
            "HS256 with the RSA public key",
            Some(hs256),
            invalid(TokenRejection::Algorithm),
        ),
        (
            "tampered payload",
            Some(tamper(&s.rsa.sign(&good), &with(&|c| c["sub"] = json!("root")))),
            invalid(TokenRejection::Signature),
        ),
        (
            "signed by an unpublished key",
            Some(stranger.sign(&good)),
            invalid(TokenRejection::Signature),
        ),
        (
            "no exp",
            Some(s.rsa.sign(&with(&|c| c["exp"] = json!(null)))),
            invalid(TokenRejection::MissingClaim),
        ),
        (
            "scope missing",
            Some(s.rsa.sign(&with(&|c| c["scope"] = json!("mcp:read")))),
            Err(AuthError::InsufficientScope {
                required: vec!["mcp:tools".into()],
            }),
        ),
        ("valid RS256", Some(s.rsa.sign(&good)), Ok(())),
        ("valid ES256", Some(s.ec.sign(&good)), Ok(())),
        (
            "configured audience",
            Some(s.rsa.sign(&with(&|c| c["aud"] = json!(["api://tollgate"])))),
            Ok(()),
        ),
    ]
}

#[tokio::test]
async fn hostile_tokens_are_refused_with_the_exact_challenge() {
    let s = setup("").await;
    let cases = cases(&s);
    for (name, token, expected) in cases {
        let headers = token.as_deref().map(bearer).unwrap_or_default();
        let got = s.route.authenticate(&s.auth, &headers, None).await.map(|_| ());
        assert_eq!(got, expected, "case {name}");
        let Err(err) = got else { continue };
        let want = match &err {
            AuthError::Missing => format!("Bearer resource_metadata=\"{META}\", scope=\"mcp:tools\""),
            AuthError::InsufficientScope { .. } => {
                challenge("insufficient_scope", "The access token lacks a required scope")
            }
            AuthError::InvalidToken(r) => challenge("invalid_token", r.description()),
            other => panic!("case {name}: unexpected {other:?}"),
        };
        assert_eq!(s.route.challenge(&err).unwrap(), want, "case {name}");
    }
}

#[tokio::test]
async fn a_token_in_the_query_string_is_refused_even_with_a_valid_header() {
    let s = setup("").await;
    let token = s.rsa.sign(&s.idp.claims("alice", "mcp:tools"));
    let err = s
        .route
        .authenticate(&s.auth, &bearer(&token), Some(&format!("access_token={token}")))
        .await
        .unwrap_err();
    assert_eq!(err.oauth_error(), Some("invalid_request"));
}

#[tokio::test]
async fn principal_carries_the_mapped_claims() {
    let s = setup(r#"claims = { cost_center = "cc" }"#).await;
    let mut claims = s.idp.claims("alice", "mcp:tools mcp:read");
    claims["cc"] = json!("CC-42");
    claims["groups"] = json!(["dev", "oncall"]);
    let p = s.auth.authenticate(&s.rsa.sign(&claims), ROUTE).await.unwrap();
    assert_eq!(p.issuer, s.idp.issuer);
    assert_eq!((p.subject.as_str(), p.client_id.as_deref()), ("alice", Some("cli")));
    assert_eq!(p.token_id.as_deref(), Some("jti-alice"));
    assert_eq!(p.cost_center.as_deref(), Some("CC-42"));
    assert_eq!(p.groups, vec!["dev", "oncall"]);
    assert_eq!(p.scopes, vec!["mcp:tools", "mcp:read"]);
}

#[tokio::test]
async fn unknown_kid_before_and_after_rotation() {
    let s = setup(r#"min_refresh_interval = "0s""#).await;
    let next = TestKey::rsa("rsa-2");
    let old_token = s.rsa.sign(&s.idp.claims("alice", "mcp:tools"));
    let new_token = next.sign(&s.idp.claims("bob", "mcp:tools"));
    assert!(s.auth.authenticate(&old_token, ROUTE).await.is_ok());
    assert_eq!(
        s.auth.authenticate(&new_token, ROUTE).await.unwrap_err(),
        AuthError::InvalidToken(TokenRejection::UnknownKey),
        "before rotation: the kid is unknown even after a refetch"
    );
    s.idp.publish(&[&next, &s.ec]);
    assert_eq!(s.auth.authenticate(&new_token, ROUTE).await.unwrap().subject, "bob");
    assert_eq!(
        s.auth.authenticate(&old_token, ROUTE).await.unwrap_err(),
        AuthError::InvalidToken(TokenRejection::UnknownKey),
        "the cached token signed with the retired key is dropped"
    );
}

#[tokio::test]
async fn unknown_kid_refetches_are_rate_limited() {
    let s = setup("").await; // min_refresh_interval: 10s
    let hits = s.idp.jwks_hits();
    for i in 0..5 {
        let t = TestKey::ec(&format!("nope-{i}")).sign(&s.idp.claims("eve", "mcp:tools"));
        assert!(s.auth.authenticate(&t, ROUTE).await.is_err());
    }
    assert!(s.idp.jwks_hits() - hits <= 1, "at most one refetch in 10 s");
}

#[tokio::test]
async fn an_unreachable_issuer_keeps_its_cached_keys_and_refuses_new_kids() {
    let s = setup(r#"min_refresh_interval = "0s""#).await;
    let status = |auth: &Authenticator| auth.issuer_status().remove(0);
    let loaded = IssuerStatus {
        issuer: s.idp.issuer.clone(),
        keys: 2,
        fetched: 1,
        failed: 0,
        last_fetch_ok: true,
    };
    assert_eq!(status(&s.auth), loaded);
    s.idp.set_down(true);
    let fresh = s.ec.sign(&s.idp.claims("carol", "mcp:tools"));
    assert!(
        s.auth.authenticate(&fresh, ROUTE).await.is_ok(),
        "known key, never cached token"
    );
    let rotated = TestKey::rsa("rsa-9");
    s.idp.publish(&[&rotated]);
    let new_kid = rotated.sign(&s.idp.claims("dave", "mcp:tools"));
    assert_eq!(
        s.auth.authenticate(&new_kid, ROUTE).await.unwrap_err(),
        AuthError::InvalidToken(TokenRejection::UnknownKey)
    );
    assert!(
        s.auth.refresh_now().await,
        "a failed refresh keeps the gateway ready on the old keys"
    );
    let after = status(&s.auth);
    assert_eq!((after.keys, after.fetched, after.last_fetch_ok), (2, 1, false));
    assert!(
        after.failed >= 2,
        "the unknown-kid refetch and the refresh both failed: {after:?}"
    );
}

#[tokio::test]
async fn an_issuer_down_at_boot_means_not_ready_then_recovers() {
    let key = TestKey::ec("ec-1");
    let idp = TestIdp::start(&[&key]).await;
    idp.set_down(true);
    let auth = Authenticator::new(&issuer_settings(&idp, r#"min_refresh_interval = "0s""#), None).unwrap();
    assert!(!auth.refresh_now().await);
    let token = key.sign(&idp.claims("alice", "mcp:tools"));
    assert_eq!(
        auth.authenticate(&token, ROUTE).await.unwrap_err(),
        AuthError::Unavailable {
            issuer: idp.issuer.clone()
        }
    );
    idp.set_down(false);
    let _tasks = auth.spawn_refresh();
    for _ in 0..100 {
        if auth.is_ready() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(auth.is_ready(), "the background refresh loads the keys");
    assert!(auth.authenticate(&token, ROUTE).await.is_ok());
}

#[tokio::test]
async fn verified_tokens_are_cached_per_token_and_checked_per_route() {
    let s = setup(r#"leeway = "0s""#).await;
    let token = s.rsa.sign(&s.idp.claims("alice", "mcp:tools"));
    let a = s.auth.authenticate(&token, ROUTE).await.unwrap();
    let b = s.auth.authenticate(&token, ROUTE).await.unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b), "the second call is a cache hit");
    assert_eq!(s.auth.cached_tokens(), 1);
    assert_eq!(
        s.auth
            .authenticate(&token, "http://127.0.0.1:8080/mcp/other")
            .await
            .unwrap_err(),
        AuthError::InvalidToken(TokenRejection::Audience),
        "a cached token is still bound to its audience"
    );
    let mut short = s.idp.claims("bob", "mcp:tools");
    short["exp"] = json!(now() + 1);
    let short = s.rsa.sign(&short);
    assert!(s.auth.authenticate(&short, ROUTE).await.is_ok());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(
        s.auth.authenticate(&short, ROUTE).await.unwrap_err(),
        AuthError::InvalidToken(TokenRejection::Expired),
        "the entry ends at exp"
    );
}

#[tokio::test]
async fn required_typ_is_enforced() {
    let s = setup(r#"require_typ = "at+jwt""#).await;
    let claims = s.idp.claims("alice", "mcp:tools");
    assert_eq!(
        s.auth.authenticate(&s.rsa.sign(&claims), ROUTE).await.unwrap_err(),
        AuthError::InvalidToken(TokenRejection::Type)
    );
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa-1".into());
    header.typ = Some("at+jwt".into());
    let typed = jsonwebtoken::encode(&header, &claims, &s.rsa.key).unwrap();
    assert!(s.auth.authenticate(&typed, ROUTE).await.is_ok());
}

#[tokio::test]
async fn opaque_tokens_are_introspected_and_cached() {
    let key = TestKey::ec("ec-1");
    let idp = TestIdp::start(&[&key]).await;
    let extra = format!(
        "introspection = {{ endpoint = \"{}/introspect\", client_id = \"gateway\", client_secret = {{ env = \"X\" }} }}",
        idp.issuer
    );
    let auth = Authenticator::new(&issuer_settings(&idp, &extra), None).unwrap();
    let p = auth.authenticate("opaque-good", ROUTE).await.unwrap();
    assert_eq!(p.subject, "svc-batch");
    assert!(p.is_service());
    assert!(auth.authenticate("opaque-good", ROUTE).await.is_ok());
    let count = |idp: &TestIdp| idp.state.introspections.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(count(&idp), 1, "the active answer is cached");
    assert_eq!(
        auth.authenticate("opaque-revoked", ROUTE).await.unwrap_err(),
        AuthError::InvalidToken(TokenRejection::Inactive)
    );
    assert_eq!(
        auth.authenticate("opaque-other-route", ROUTE).await.unwrap_err(),
        AuthError::InvalidToken(TokenRejection::Audience)
    );
    idp.set_down(true);
    assert!(matches!(
        auth.authenticate("opaque-new", ROUTE).await.unwrap_err(),
        AuthError::Unavailable { .. }
    ));
}

#[tokio::test]
async fn authentication_futures_are_send() {
    let s = setup("").await;
    let token = s.rsa.sign(&s.idp.claims("alice", "mcp:tools"));
    let (auth, route) = (s.auth.clone(), s.route.clone());
    let task = tokio::spawn(async move { route.authenticate(&auth, &bearer(&token), None).await });
    assert!(task.await.unwrap().is_ok());
}
