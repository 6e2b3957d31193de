//! The fleet store over real software: a real PostgreSQL (Debian's, a
//! throwaway cluster per test) and several `tollgate serve` replicas in
//! front of the demo server, each shipping its own audit trail. Calls
//! spread round-robin arrive in the store exactly once, on the replica
//! that answered them; a store stopped under calls fails and slows none of
//! them, and every answered call's record arrives once it is back, none
//! twice; a replica started while the store is down serves, and ships
//! once the store is up; a schema from a newer Tollgate refuses the
//! start; the CLI's `--store` answers equal the files' (`cli`); a
//! catalog approval made on one replica serves on the others within a
//! second (`approvals`); and signed checkpoints catch a consistent
//! rewrite of a replica's files (`checkpoints`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;
use tollgate_e2e::audit_support::{Exchange, trail_lines, try_metric};
use tollgate_e2e::children::{ChildGateway, tollgate_cli};
use tollgate_e2e::postgres::PostgresServer;
use tollgate_e2e::{Demo, modern_body, modern_headers};

#[path = "fleet/approvals.rs"]
mod approvals;
#[path = "fleet/checkpoints.rs"]
mod checkpoints;
#[path = "fleet/cli.rs"]
mod cli;
#[path = "fleet/console.rs"]
mod console;

/// The configuration of replica `name`: the demo route behind the
/// development issuer (its key and the fleet's public URL shared, as
/// behind one load balancer, so a token serves on every replica), the
/// audit trail in `audit/`, shipped to `store`.
fn replica_config(name: &str, demo: &Demo, store: &str, key_dir: &std::path::Path) -> String {
    format!(
        "[dev_issuer]\nenabled = true\nkey_file = \"{key}/dev.pem\"\nissuer = \"http://127.0.0.1:1/dev-issuer\"\n\
         [auth]\npublic_base_url = \"https://mcp.example.com\"\n\
         [[dev_issuer.users]]\nsubject = \"alice\"\nteam = \"payments\"\n\
         [audit]\ndirectory = \"audit\"\n\
         [store]\nreplica = \"{name}\"\npostgres = {{ url = \"{store}\", statement_timeout = \"5s\" }}\n\
         [[servers]]\nname = \"demo\"\nurl = \"{demo}\"\n",
        key = key_dir.display(),
        demo = demo.url,
    )
}

/// `n` replicas named `r1`, `r2`, … shipping to `pg`.
async fn fleet(n: usize, demo: &Demo, pg: &PostgresServer, keys: &tempfile::TempDir) -> Vec<ChildGateway> {
    let mut out = Vec::new();
    for i in 1..=n {
        let config = replica_config(&format!("r{i}"), demo, &pg.url(), keys.path());
        out.push(ChildGateway::spawn(&config).await);
    }
    out
}

/// A `tools/call` of the demo's `echo` through `gw` as `token`.
async fn call(gw: &ChildGateway, token: &str, id: u64) -> Exchange {
    let body = modern_body(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": format!("call {id}")}}),
    );
    let builder = tollgate_e2e::http()
        .post(gw.url("demo"))
        .headers(modern_headers("tools/call", Some("echo")))
        .bearer_auth(token);
    Exchange::run(builder, body).await
}

/// The request ids of the call records in the store, each with the
/// replicas that hold it (one entry per row).
async fn stored_calls(pg: &PostgresServer) -> HashMap<String, Vec<String>> {
    let rows = pg
        .psql("SELECT request_id || ' ' || replica FROM audit_records WHERE kind = 'call' ORDER BY 1")
        .await;
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for row in rows.lines().filter(|l| !l.is_empty()) {
        let (id, replica) = row.split_once(' ').unwrap();
        out.entry(id.to_owned()).or_default().push(replica.to_owned());
    }
    out
}

/// Wait (60 s at most) until the store holds a call record of every
/// request in `sent` (request id → replica).
async fn wait_stored(pg: &PostgresServer, sent: &HashMap<String, String>) -> HashMap<String, Vec<String>> {
    let mut stored = HashMap::new();
    for _ in 0..600 {
        stored = stored_calls(pg).await;
        if sent.keys().all(|id| stored.contains_key(id)) {
            return stored;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let missing: Vec<_> = sent.keys().filter(|id| !stored.contains_key(*id)).collect();
    panic!(
        "{} of {} calls never reached the store: {missing:?}",
        missing.len(),
        sent.len()
    );
}

/// Every answered call is in the store exactly once, from the replica
/// that answered it.
fn assert_exactly_once(sent: &HashMap<String, String>, stored: &HashMap<String, Vec<String>>) {
    for (id, replica) in sent {
        assert_eq!(stored.get(id), Some(&vec![replica.clone()]), "call {id}");
    }
}

/// Rows the store holds of `replica`'s lines.
async fn stored_lines(pg: &PostgresServer, replica: &str) -> usize {
    let sql = format!("SELECT count(*) FROM audit_records WHERE replica = '{replica}'");
    pg.psql(&sql).await.parse().unwrap()
}

/// Stop `gw` as an orchestrator does (SIGTERM) and wait for it to exit.
async fn terminate(gw: &mut ChildGateway) {
    let pid = gw.child.id().unwrap().to_string();
    let status = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let exit = tokio::time::timeout(Duration::from_secs(30), gw.child.wait())
        .await
        .expect("the gateway exits after SIGTERM")
        .unwrap();
    assert!(exit.success(), "{exit}: {}", gw.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_spread_round_robin_over_three_replicas_arrive_in_the_store_exactly_once() {
    let (pg, demo, keys) = (
        PostgresServer::start().await,
        Demo::spawn().await,
        tempfile::tempdir().unwrap(),
    );
    let mut gws = fleet(3, &demo, &pg, &keys).await;
    let token = gws[0].mint("alice", &["--team", "payments"]).await;
    let mut sent = HashMap::new();
    for id in 0..30u64 {
        let i = usize::try_from(id).unwrap() % gws.len();
        let ex = call(&gws[i], &token, id).await;
        assert_eq!(ex.status, 200, "{}", String::from_utf8_lossy(&ex.body));
        sent.insert(ex.request_id, format!("r{}", i + 1));
    }
    let stored = wait_stored(&pg, &sent).await;
    assert_exactly_once(&sent, &stored);
    assert_eq!(stored.len(), sent.len(), "no call the clients did not make");
    let subject = pg
        .psql("SELECT DISTINCT subject || '/' || team FROM audit_records WHERE kind = 'call'")
        .await;
    assert_eq!(subject, "alice/payments");

    // Lag and progress are a metric and in the readiness detail.
    let detail = gws[1].ready_detail().await;
    assert_eq!(detail["fleet_store"]["replica"], "r2", "{detail:#}");
    assert_eq!(detail["fleet_store"]["shipping"], "ok", "{detail:#}");
    let metrics = gws[1].metrics().await;
    assert!(
        try_metric(&metrics, "tollgate_store_shipped_lines_total", &[]).unwrap() >= 10.0,
        "{metrics}"
    );
    assert_eq!(try_metric(&metrics, "tollgate_store_ship_healthy", &[]), Some(1.0));
    assert!(try_metric(&metrics, "tollgate_store_ship_lag_seconds", &[]).is_some());

    // At shutdown the writer seals its file and a last pass ships the
    // seal: the store then holds every line of the replica's files.
    terminate(&mut gws[0]).await;
    let lines = trail_lines(&gws[0].audit_dir());
    assert!(lines.last().unwrap().contains(r#""kind":"seal""#), "{lines:?}");
    assert_eq!(stored_lines(&pg, "r1").await, lines.len());
}

/// A client calling `gw` in a loop until `stop`, recording each answered
/// call (request id → replica) and the slowest answer.
async fn caller(
    gw: ChildGateway,
    replica: &'static str,
    token: String,
    stop: tokio::sync::watch::Receiver<bool>,
) -> (ChildGateway, HashMap<String, String>, Duration) {
    let (mut sent, mut slowest) = (HashMap::new(), Duration::ZERO);
    let mut id = 0u64;
    while !*stop.borrow() {
        let started = Instant::now();
        let ex = call(&gw, &token, id).await;
        slowest = slowest.max(started.elapsed());
        assert_eq!(ex.status, 200, "{}", String::from_utf8_lossy(&ex.body));
        sent.insert(ex.request_id, replica.to_owned());
        id += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (gw, sent, slowest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_stopped_under_calls_fails_and_slows_none_and_loses_none_once_back() {
    let (mut pg, demo, keys) = (
        PostgresServer::start().await,
        Demo::spawn().await,
        tempfile::tempdir().unwrap(),
    );
    let gws = fleet(2, &demo, &pg, &keys).await;
    let token = gws[0].mint("alice", &["--team", "payments"]).await;
    let detail_url = format!("{}/readyz?detail", gws[0].admin);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for (gw, name) in gws.into_iter().zip(["r1", "r2"]) {
        tasks.push(tokio::spawn(caller(gw, name, token.clone(), stopped.clone())));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    pg.stop().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Down: the replica stays ready and says shipping is failing, and how
    // far behind it is.
    let detail = tollgate_e2e::get_json(&detail_url).await;
    assert_eq!(detail["ready"], true, "{detail:#}");
    assert_eq!(detail["fleet_store"]["shipping"], "failing", "{detail:#}");
    assert!(
        detail["fleet_store"]["lag_seconds"].as_f64().unwrap() > 1.0,
        "{detail:#}"
    );
    // Down for 30 s in all, under calls.
    tokio::time::sleep(Duration::from_secs(25)).await;
    pg.start_again().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.send(true).unwrap();
    let mut sent = HashMap::new();
    let mut gws = Vec::new();
    for task in tasks {
        let (gw, calls, slowest) = task.await.unwrap();
        assert!(
            slowest < Duration::from_secs(2),
            "a call took {slowest:?} while the store was down"
        );
        sent.extend(calls);
        gws.push(gw);
    }
    assert!(sent.len() > 100, "only {} calls were answered", sent.len());

    // The outage showed: passes failed, and the lag grew.
    let metrics = gws[0].metrics().await;
    assert!(
        try_metric(&metrics, "tollgate_store_ship_failures_total", &[]).unwrap() >= 1.0,
        "{metrics}"
    );

    let stored = wait_stored(&pg, &sent).await;
    assert_exactly_once(&sent, &stored);
    assert_eq!(stored.len(), sent.len(), "no call the clients did not make");
    let dupes = pg
        .psql("SELECT count(*) FROM (SELECT request_id FROM audit_records WHERE kind = 'call' GROUP BY 1 HAVING count(*) > 1) d")
        .await;
    assert_eq!(dupes, "0");
    let detail = gws[0].ready_detail().await;
    assert_eq!(detail["ready"], true, "{detail:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_migrated_by_a_newer_tollgate_refuses_the_start_with_the_reason() {
    let (pg, demo, keys) = (
        PostgresServer::start().await,
        Demo::spawn().await,
        tempfile::tempdir().unwrap(),
    );
    pg.psql(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, \
         applied_at timestamptz NOT NULL DEFAULT now()); INSERT INTO schema_migrations VALUES (99, 'future')",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let config = format!(
        "[listen]\npublic = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n{}",
        replica_config("r1", &demo, &pg.url(), keys.path())
    );
    std::fs::write(&path, config).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        tollgate_cli(&["serve", "--config", path.to_str().unwrap()]),
    )
    .await
    .expect("the gateway refuses to start rather than serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("schema is at version 99"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_started_while_the_store_is_down_serves_and_ships_once_it_is_up() {
    let (mut pg, demo, keys) = (
        PostgresServer::start().await,
        Demo::spawn().await,
        tempfile::tempdir().unwrap(),
    );
    pg.stop().await;
    let gws = fleet(1, &demo, &pg, &keys).await;
    let token = gws[0].mint("alice", &["--team", "payments"]).await;
    let mut sent = HashMap::new();
    for id in 0..5u64 {
        let ex = call(&gws[0], &token, id).await;
        assert_eq!(ex.status, 200, "{}", String::from_utf8_lossy(&ex.body));
        sent.insert(ex.request_id, "r1".to_owned());
    }
    let detail = gws[0].ready_detail().await;
    assert_eq!(detail["ready"], true, "{detail:#}");
    assert_eq!(detail["fleet_store"]["shipping"], "waiting", "{detail:#}");
    assert_eq!(
        try_metric(&gws[0].metrics().await, "tollgate_store_ship_healthy", &[]),
        Some(0.0)
    );

    // Once the store is up, the schema is created and the calls arrive.
    pg.start_again().await;
    for _ in 0..600 {
        if pg.psql("SELECT to_regclass('audit_records') IS NOT NULL").await == "t" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pg.psql("SELECT max(version) FROM schema_migrations").await, "3");
    let stored = wait_stored(&pg, &sent).await;
    assert_exactly_once(&sent, &stored);
}
