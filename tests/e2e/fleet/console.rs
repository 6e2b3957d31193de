//! The console's fleet view: three replicas with the console on, calls
//! spread round-robin over them, then the console of any one replica
//! searches every replica's calls (each naming the replica that wrote
//! it), sums a team's spend and counts the overview across them, opens a call another replica
//! wrote with that file's chain verified as stored, and lists each
//! replica's shipping.

use std::collections::HashMap;

use serde_json::Value;
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::postgres::PostgresServer;
use tollgate_e2e::{Demo, http};

use super::{call, replica_config, wait_stored};

/// `GET /console/api/PATH` on `gw` with a console token: its JSON.
pub(super) async fn console(gw: &ChildGateway, token: &str, path: &str) -> Value {
    let answer = http()
        .get(format!("{}/console/api/{path}", gw.admin))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{path}: {}", answer.text().await.unwrap());
    answer.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_console_searches_sums_and_opens_the_calls_of_every_replica() {
    let (pg, demo, keys) = (
        PostgresServer::start().await,
        Demo::spawn().await,
        tempfile::tempdir().unwrap(),
    );
    let mut gws = Vec::new();
    for i in 1..=3 {
        let config = format!(
            "{}[console]\nenabled = true\n[console.roles]\nviewer = [\"finance\"]\n",
            replica_config(&format!("r{i}"), &demo, &pg.url(), keys.path())
        );
        gws.push(ChildGateway::spawn(&config).await);
    }
    let alice = gws[0].mint("alice", &["--team", "payments"]).await;
    let bob = gws[0].mint("bob", &["--team", "search"]).await;
    let mut sent = HashMap::new();
    for id in 0..9u64 {
        let i = usize::try_from(id).unwrap() % 3;
        let token = if id % 3 == 2 { &bob } else { &alice };
        let ex = call(&gws[i], token, id).await;
        assert_eq!(ex.status, 200);
        sent.insert(ex.request_id, format!("r{}", i + 1));
    }
    wait_stored(&pg, &sent).await;

    // Any replica's console finds every replica's calls, each with its
    // replica.
    for gw in &gws {
        let token = gw.mint("carol", &["--console", "--group", "finance"]).await;
        let found = console(gw, &token, "audit?limit=1000").await;
        let seen: HashMap<String, String> = found["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let id = r["record"]["request_id"].as_str().unwrap().to_owned();
                (id, r["ref"]["replica"].as_str().unwrap().to_owned())
            })
            .collect();
        assert_eq!(seen, sent, "{found:#}");
    }

    // Spend by team sums across replicas: 6 calls of payments, 3 of search.
    let token = gws[2].mint("carol", &["--console", "--group", "finance"]).await;
    let spend = console(&gws[2], &token, "spend?by=team&period=day").await;
    let calls = |team: &str| {
        spend["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == team)
            .map_or(0, |r| r["calls"].as_u64().unwrap())
    };
    assert_eq!((calls("payments"), calls("search")), (6, 3), "{spend:#}");
    assert_eq!(spend["total"]["calls"], 9);

    // The overview counts every replica's calls: per server, per tool
    // (keyed by its server) and in its chart.
    let overview = console(&gws[2], &token, "overview?window=1h").await;
    assert_eq!(overview["totals"]["calls"], 9, "{overview:#}");
    assert_eq!(overview["servers"][0]["key"], "demo");
    assert_eq!(overview["tools"][0]["key"], "demo/echo");
    assert_eq!(overview["tools"][0]["failed"], 0);
    let charted: u64 = overview["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["calls"].as_u64().unwrap())
        .sum();
    assert_eq!((overview["series"].as_array().unwrap().len(), charted), (60, 9));

    // A call r1 wrote, opened on r3's console: r1's file, verified.
    let found = console(&gws[2], &token, "audit?team=payments").await;
    let from_r1 = found["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ref"]["replica"] == "r1")
        .unwrap_or_else(|| panic!("no call of payments from r1: {found:#}"))
        .clone();
    let place = &from_r1["ref"];
    let path = format!(
        "audit/call?replica=r1&file={}&line={}",
        place["file"].as_str().unwrap(),
        place["line"]
    );
    let view = console(&gws[2], &token, &path).await;
    assert_eq!(view["record"]["request_id"], from_r1["record"]["request_id"]);
    assert_eq!(view["ref"]["replica"], "r1");
    assert_eq!(view["chain"]["replica"], "r1");
    assert_eq!(view["chain"]["verified"], true, "{view:#}");
    assert!(view["chain"]["lines"].as_u64().unwrap() >= 2, "{view:#}");

    // Each replica's shipping, as the store has it.
    let token = gws[1].mint("carol", &["--console", "--group", "finance"]).await;
    let fleet = console(&gws[1], &token, "fleet").await;
    let replicas: Vec<&str> = fleet["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["replica"].as_str().unwrap())
        .collect();
    assert_eq!(replicas, ["r1", "r2", "r3"], "{fleet:#}");
}
