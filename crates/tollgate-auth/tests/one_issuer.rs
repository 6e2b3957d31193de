//! `Authenticator::authenticate_for`, the check of a client that trusts one
//! issuer and names its own audiences (the console): two trusted issuers
//! over real HTTP, one of them with issuer-wide `audiences`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{TestIdp, TestKey, issuer_settings};
use serde_json::json;
use tollgate_auth::{AuthError, Authenticator, DevIssuer, TokenRejection};

const CONSOLE: &str = "http://127.0.0.1:9090/console";

#[tokio::test]
async fn only_the_named_issuer_and_the_clients_own_audiences_are_accepted() {
    let key = TestKey::ec("ec-1");
    let idp = TestIdp::start(&[&key]).await;
    let dev = DevIssuer::from_pem("http://127.0.0.1:9090/dev-issuer", &DevIssuer::generate_pem().unwrap()).unwrap();
    let auth = Authenticator::new(&issuer_settings(&idp, ""), Some(&dev)).unwrap();
    assert!(auth.refresh_now().await);
    let audiences = [CONSOLE.to_owned(), "console-api".to_owned()];
    let signed = |aud: serde_json::Value| {
        let mut claims = idp.claims("alice", "");
        claims["aud"] = aud;
        key.sign(&claims)
    };
    let refused = |r: TokenRejection| Err::<(), _>(AuthError::InvalidToken(r));

    for aud in [json!(CONSOLE), json!(["x", "console-api"])] {
        let got = auth.authenticate_for(&signed(aud), &idp.issuer, &audiences).await;
        assert_eq!(got.unwrap().subject, "alice");
    }
    // `api://tollgate` is the issuer's `audiences`: any route accepts it,
    // the console does not.
    let route_wide = signed(json!("api://tollgate"));
    assert!(auth.authenticate(&route_wide, common::ROUTE).await.is_ok());
    let got = auth.authenticate_for(&route_wide, &idp.issuer, &audiences).await;
    assert_eq!(got.map(|_| ()), refused(TokenRejection::Audience));

    // A token of the other trusted issuer, for the console's own URL.
    let ttl = Duration::from_secs(600);
    let other = dev.mint("alice", None, &[], ttl, &[CONSOLE.to_owned()]).unwrap();
    assert!(auth.authenticate(&other, CONSOLE).await.is_ok(), "trusted for routes");
    let got = auth.authenticate_for(&other, &idp.issuer, &audiences).await;
    assert_eq!(got.map(|_| ()), refused(TokenRejection::UnknownIssuer));
    // Verified and cached already: the cache does not let it through.
    let got = auth.authenticate_for(&other, &idp.issuer, &audiences).await;
    assert_eq!(got.map(|_| ()), refused(TokenRejection::UnknownIssuer));
}
