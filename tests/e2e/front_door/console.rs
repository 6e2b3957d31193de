//! The console's Access page API: each user sees and revokes their own
//! grants; an admin sees everyone's and the clients, and disables one.

use serde_json::{Value, json};
use tollgate_e2e::children::{ChildGateway, tollgate_cli};
use tollgate_e2e::{CONSOLE, Demo};

use crate::oauth::{call, client, sign_in_as};

async fn console_token(gw: &ChildGateway, user: &str, group: &str) -> String {
    let config = gw.dir.path().join("gateway.toml");
    let out = tollgate_cli(&[
        "token",
        "mint",
        "--config",
        config.to_str().unwrap(),
        "--console",
        "--sub",
        user,
        "--group",
        group,
    ])
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

async fn api(gw: &ChildGateway, token: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("{}/console/api/{path}", gw.admin);
    let req = match body {
        Some(b) => client().post(url).json(&b),
        None => client().get(url),
    };
    let res = req.bearer_auth(token).send().await.unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn users_revoke_their_own_grants_and_admins_manage_clients_on_the_console() {
    let demo = Demo::spawn().await;
    let gw = ChildGateway::spawn(&format!(
        "{CONSOLE}\n[authorization_server]\nenabled = true\ndevelopment = true\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    ))
    .await;
    let (alice_client, alice, _) = sign_in_as(&gw, &gw, &gw.base, "demo", "alice").await;
    let (_, victor, _) = sign_in_as(&gw, &gw, &gw.base, "demo", "victor").await;
    let (admin, viewer) = (
        console_token(&gw, "alice", "platform-admins").await,
        console_token(&gw, "victor", "finance").await,
    );

    let (status, mine) = api(&gw, &viewer, "access", None).await;
    assert_eq!(status, 200, "{mine}");
    let grants = mine["grants"].as_array().unwrap();
    assert_eq!(grants.len(), 1, "victor sees his own grant only: {mine}");
    assert_eq!(grants[0]["user"]["subject"], "victor");
    assert!(mine["clients"].is_null(), "clients are for admins");
    let victors = grants[0]["id"].as_str().unwrap().to_owned();

    let (_, all) = api(&gw, &admin, "access", None).await;
    assert_eq!(all["grants"].as_array().unwrap().len(), 2, "{all}");
    assert_eq!(all["clients"].as_array().unwrap().len(), 2, "{all}");
    let alices = all["grants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["user"]["subject"] == "alice")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Victor cannot revoke alice's grant; he can revoke his own.
    let (status, _) = api(&gw, &viewer, "access/revoke", Some(json!({"grant": alices}))).await;
    assert_eq!(status, 400);
    assert_eq!(call(&gw, "demo", alice["access_token"].as_str().unwrap()).await, 200);
    let (status, _) = api(&gw, &viewer, "access/revoke", Some(json!({"grant": victors}))).await;
    assert_eq!(status, 200);
    assert_eq!(call(&gw, "demo", victor["access_token"].as_str().unwrap()).await, 401);

    // Only an admin disables a client.
    let body = json!({"client_id": alice_client, "action": "disable"});
    let (status, _) = api(&gw, &viewer, "access/client", Some(body.clone())).await;
    assert_eq!(status, 403);
    let (status, done) = api(&gw, &admin, "access/client", Some(body)).await;
    assert_eq!(status, 200, "{done}");
    let (_, all) = api(&gw, &admin, "access", None).await;
    let disabled = all["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client_id"] == alice_client.as_str())
        .unwrap();
    assert_eq!(disabled["disabled"], true);

    let page = client()
        .get(format!("{}/console/access", gw.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 303, "the page wants a console sign-in");
}
