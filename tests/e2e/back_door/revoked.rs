//! An upstream that refuses the caller's own token (the user revoked the
//! app at the vendor): the grant is forgotten and the caller is asked to
//! connect again; the upstream's own challenge never reaches the client.

use super::*;

#[tokio::test]
async fn a_token_the_upstream_refuses_is_forgotten_and_the_caller_asked_again() {
    let w = world("").await;
    let alice = alice_connects(&w.gw).await;
    assert_eq!(whoami(&w.gw, &alice).await["sub"], "alice");

    // Alice revokes Tollgate at the vendor.
    let origin = w.resource.trim_end_matches("/mcp");
    let res = http()
        .post(format!("{origin}/admin/revoke?sub=alice"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let (status, _, answer) = post(&w.gw, &alice, None, INIT).await;
    assert_eq!(status, 200, "not the upstream's 401: {answer}");
    let url = connect_url(&answer);
    assert!(
        grants(&w.gw, &["list", "--subject", "alice"])
            .await
            .lines()
            .all(|l| !l.contains("github"))
    );

    // She connects again (a token issued after the revocation) and goes on.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (status, page) = connect(&w.gw, &url, "alice", "wonderland").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(whoami(&w.gw, &alice).await["sub"], "alice");
}
