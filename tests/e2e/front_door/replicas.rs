//! Two replicas sharing Redis: one authorization server across the fleet.
//! A client registered on one replica signs in through the other, its
//! refresh token rotates once fleet-wide (reuse on the other replica is
//! detected), and a revocation on one replica stops the token on the other.

use tollgate_e2e::Demo;
use tollgate_e2e::children::{ChildGateway, RedisServer, free_port};

use crate::oauth::{call, refresh, sign_in_on};

#[tokio::test]
async fn replicas_share_clients_grants_and_refresh_tokens_in_redis() {
    let demo = Demo::spawn().await;
    let redis = RedisServer::start(None).await;
    let keys = tempfile::tempdir().unwrap();
    // Both replicas answer for one public URL (behind a load balancer) and
    // sign with one key.
    let public = format!("http://127.0.0.1:{}", free_port());
    let text = format!(
        "[auth]\npublic_base_url = \"{public}\"\n\
         [dev_issuer]\nenabled = true\nkey_file = \"{dev}\"\n[[dev_issuer.users]]\nsubject = \"alice\"\nteam = \"payments\"\n\
         [authorization_server]\nenabled = true\ndevelopment = true\nkey_file = \"{key}\"\n\
         [limits.redis]\nurl = \"redis://127.0.0.1:{port}\"\n\
         [[servers]]\nname = \"demo\"\nurl = \"{url}\"\n",
        dev = keys.path().join("dev.pem").display(),
        key = keys.path().join("as.pem").display(),
        port = redis.port,
        url = demo.url,
    );
    let a = ChildGateway::spawn(&text).await;
    let b = ChildGateway::spawn(&text).await;

    // Registered at a, signed in at b: the client and the sign-in are shared.
    let (client_id, answer, _) = sign_in_on(&a, &b, &public, "demo").await;
    let access = answer["access_token"].as_str().unwrap();
    assert_eq!(call(&a, "demo", access).await, 200);
    assert_eq!(call(&b, "demo", access).await, 200);

    // Rotated at a; the old token replayed at b revokes the grant everywhere.
    let old = answer["refresh_token"].as_str().unwrap();
    let (status, next) = refresh(&a, old, &client_id).await;
    assert_eq!(status, 200, "{next}");
    let (status, err) = refresh(&b, old, &client_id).await;
    assert_eq!((status, err["error"].as_str()), (400, Some("invalid_grant")), "{err}");
    assert_eq!(call(&a, "demo", next["access_token"].as_str().unwrap()).await, 401);

    // The store down: whether a token's grant stands cannot be told, so
    // the call is refused (503), never let through.
    let (_, fresh, _) = sign_in_on(&a, &a, &public, "demo").await;
    let token = fresh["access_token"].as_str().unwrap();
    assert_eq!(call(&a, "demo", token).await, 200);
    drop(redis);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(call(&b, "demo", token).await, 503);
}
