//! The upstream credential broker against a real token endpoint over HTTP:
//! static headers, client credentials (cached, single-flight, refreshed
//! before expiry) and token exchange (per caller token, never the caller's
//! token itself).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{CLIENT_ID, CLIENT_SECRET, TestIdp, TestKey, broker_settings, load, now};
use tollgate_auth::{Caller, CredentialBroker, CredentialError};
use tollgate_core::{Principal, PrincipalKind};

fn broker(idp: &TestIdp) -> CredentialBroker {
    let t = &idp.issuer;
    let loaded = load(&format!(
        r#"
[[auth.issuers]]
issuer = "{t}"
allow_insecure_http = true

[[servers]]
name = "static"
url = "http://127.0.0.1:3001/mcp"
credential = {{ kind = "static", header = "x-api-key", value = {{ env = "K" }} }}

[[servers]]
name = "cc"
url = "http://127.0.0.1:3002/mcp"
credential = {{ kind = "client_credentials", token_endpoint = "{t}/token", client_id = "{CLIENT_ID}", client_secret = {{ env = "S" }}, scope = "search.read", audience = "search" }}

[[servers]]
name = "cc-post"
url = "http://127.0.0.1:3003/mcp"
credential = {{ kind = "client_credentials", token_endpoint = "{t}/token", client_id = "{CLIENT_ID}", client_secret = {{ env = "S" }}, auth_method = "client_secret_post" }}

[[servers]]
name = "tx"
url = "http://127.0.0.1:3004/mcp"
credential = {{ kind = "token_exchange", token_endpoint = "{t}/token", client_id = "{CLIENT_ID}", client_secret = {{ env = "S" }} }}

[[servers]]
name = "none"
url = "http://127.0.0.1:3005/mcp"
"#
    ));
    CredentialBroker::new(&broker_settings(&loaded)).unwrap()
}

fn principal(sub: &str, exp: u64) -> Principal {
    Principal {
        issuer: "i".into(),
        subject: sub.into(),
        client_id: None,
        token_id: None,
        audience: vec![],
        groups: vec![],
        team: None,
        cost_center: None,
        scopes: vec![],
        expires_at: exp,
        kind: PrincipalKind::User,
    }
}

/// The server awaits credentials in handlers that move between threads.
fn send<F: Future + Send>(f: F) -> F {
    f
}

async fn value(b: &CredentialBroker, server: &str, caller: Option<Caller<'_>>) -> String {
    let c = send(b.credential(server, caller)).await.unwrap().unwrap();
    assert!(c.value.is_sensitive());
    c.value.to_str().unwrap().to_owned()
}

#[tokio::test]
async fn static_and_none() {
    let idp = TestIdp::start(&[]).await;
    let b = broker(&idp);
    let c = b.credential("static", None).await.unwrap().unwrap();
    assert_eq!(c.name.as_str(), "x-api-key");
    assert_eq!(c.value.to_str().unwrap(), CLIENT_SECRET);
    assert_eq!(format!("{c:?}"), "UpstreamCredential(x-api-key: [redacted])");
    assert!(b.credential("none", None).await.unwrap().is_none());
    assert!(b.credential("unknown", None).await.unwrap().is_none());
    assert_eq!(
        (b.kind("static"), b.kind("tx"), b.kind("none")),
        ("static", "token_exchange", "none")
    );
    assert!(!format!("{b:?}").contains(CLIENT_SECRET));
}

#[tokio::test]
async fn client_credentials_are_fetched_once_for_concurrent_callers_and_reused() {
    let idp = TestIdp::start(&[]).await;
    let b = Arc::new(broker(&idp));
    let calls = (0..10).map(|_| {
        let b = b.clone();
        tokio::spawn(async move { value(&b, "cc", None).await })
    });
    for call in calls {
        assert_eq!(call.await.unwrap(), "Bearer cc-1");
    }
    assert_eq!(value(&b, "cc", None).await, "Bearer cc-1");
    let requests = idp.token_requests().await;
    assert_eq!(requests.len(), 1, "one request for eleven calls");
    let r = &requests[0];
    assert_eq!(r.form["grant_type"], "client_credentials");
    assert_eq!(r.form["scope"], "search.read");
    assert_eq!(r.form["audience"], "search");
    assert!(r.authorization.as_deref().unwrap().starts_with("Basic "));
    assert!(!r.form.contains_key("client_secret"));
}

#[tokio::test]
async fn client_credentials_are_refreshed_before_they_expire() {
    let idp = TestIdp::start(&[]).await;
    idp.state.expires_in.store(2, Ordering::SeqCst); // refreshed at half-life
    let b = broker(&idp);
    assert_eq!(value(&b, "cc-post", None).await, "Bearer cc-1");
    assert_eq!(value(&b, "cc-post", None).await, "Bearer cc-1");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(value(&b, "cc-post", None).await, "Bearer cc-2");
    let requests = idp.token_requests().await;
    assert_eq!(requests[0].form["client_secret"], CLIENT_SECRET, "client_secret_post");
    assert!(requests[0].authorization.is_none());
}

#[tokio::test]
async fn a_failed_refresh_keeps_a_valid_token_and_reports_when_none_is_left() {
    let idp = TestIdp::start(&[]).await;
    idp.state.expires_in.store(4, Ordering::SeqCst);
    let b = broker(&idp);
    assert_eq!(value(&b, "cc", None).await, "Bearer cc-1");
    idp.set_down(true);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(value(&b, "cc", None).await, "Bearer cc-1", "still valid for ~2 s");
    let err = b.credential("cc-post", None).await.unwrap_err();
    assert!(matches!(err, CredentialError::TokenEndpoint { .. }), "{err:?}");
}

#[tokio::test]
async fn token_exchange_sends_the_caller_token_and_caches_per_caller() {
    let idp = TestIdp::start(&[]).await;
    let b = Arc::new(broker(&idp));
    let key = TestKey::ec("k");
    let alice_token = key.sign(&idp.claims("alice", "mcp:tools"));
    let bob_token = key.sign(&idp.claims("bob-with-a-longer-name", "mcp:tools"));
    let alice = principal("alice", now() + 3600);
    let bob = principal("bob", now() + 3600);
    let caller = |token, p| Some(Caller { token, principal: p });

    let (a1, a2) = tokio::join!(
        value(&b, "tx", caller(&alice_token, &alice)),
        value(&b, "tx", caller(&alice_token, &alice))
    );
    assert_eq!(a1, a2, "concurrent calls for one caller share one exchange");
    assert!(a1.starts_with("Bearer tx-1-for-"));
    assert_ne!(a1, format!("Bearer {alice_token}"), "never the caller's own token");
    assert_eq!(value(&b, "tx", caller(&alice_token, &alice)).await, a1, "cached");
    let b1 = value(&b, "tx", caller(&bob_token, &bob)).await;
    assert!(
        b1.starts_with("Bearer tx-2-for-"),
        "another caller, another token: {b1}"
    );

    let requests = idp.token_requests().await;
    assert_eq!(requests.len(), 2);
    let f = &requests[0].form;
    assert_eq!(f["grant_type"], "urn:ietf:params:oauth:grant-type:token-exchange");
    assert_eq!(f["subject_token"], alice_token);
    assert_eq!(f["subject_token_type"], "urn:ietf:params:oauth:token-type:access_token");
    assert_eq!(
        f["resource"], "http://127.0.0.1:3004/mcp",
        "default resource: the upstream"
    );

    let err = b.credential("tx", None).await.unwrap_err();
    assert!(matches!(err, CredentialError::NoSubjectToken { .. }));
}

#[tokio::test]
async fn exchanged_tokens_never_outlive_the_caller_token() {
    let idp = TestIdp::start(&[]).await;
    let b = broker(&idp);
    let token = TestKey::ec("k").sign(&idp.claims("carol", "mcp:tools"));
    let carol = principal("carol", now() + 1);
    let caller = Some(Caller {
        token: &token,
        principal: &carol,
    });
    let first = value(&b, "tx", caller).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_ne!(
        value(&b, "tx", caller).await,
        first,
        "re-exchanged once the caller token ends"
    );
}

#[tokio::test]
async fn exchanges_are_shared_refreshed_and_failures_not_kept() {
    let idp = TestIdp::start(&[]).await;
    idp.state.expires_in.store(2, Ordering::SeqCst); // refreshed at half-life
    let b = Arc::new(broker(&idp));
    let token: Arc<str> = TestKey::ec("k").sign(&idp.claims("dave", "mcp:tools")).into();
    let dave = Arc::new(principal("dave", now() + 3600));
    let call = || {
        let (b, token, dave) = (b.clone(), token.clone(), dave.clone());
        tokio::spawn(async move {
            let caller = Caller {
                token: &token,
                principal: &dave,
            };
            b.credential("tx", Some(caller)).await.map(|c| c.map(|c| c.value))
        })
    };
    idp.set_down(true);
    assert!(call().await.unwrap().is_err());
    idp.set_down(false);
    let calls: Vec<_> = (0..10).map(|_| call()).collect();
    for c in calls {
        let value = c.await.unwrap().unwrap().unwrap();
        assert!(value.to_str().unwrap().starts_with("Bearer tx-1-"), "{value:?}");
    }
    assert_eq!(
        idp.token_requests().await.len(),
        2,
        "the failure was not kept; ten calls, one exchange"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let refreshed = call().await.unwrap().unwrap().unwrap();
    assert!(refreshed.to_str().unwrap().starts_with("Bearer tx-2-"), "{refreshed:?}");
    assert_eq!(idp.token_requests().await.len(), 3);
}
