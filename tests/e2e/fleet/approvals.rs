//! Catalog approvals across replicas: three `tollgate serve` replicas on
//! one real PostgreSQL, each enforcing the demo's catalog with the same
//! lock file (which leaves `get_weather` and `add` quarantined), with the
//! console on. An approval in the console of replica 2 serves the tool on
//! replicas 1 and 3 within a second of its answer, and the lock file is
//! left as it was; `tollgate catalog approve` with the store reaches the
//! running replicas too; `catalog export` re-imports to the same rows,
//! into this store (nothing added) and into an empty one (the same
//! export); while PostgreSQL is down the replicas serve the approvals they
//! have, a console approval is refused with 503, and an approval made
//! while they were not listening is caught up when they listen again; a
//! row written without an announcement is caught up by the reconcile.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tollgate_e2e::audit_support::{Exchange, try_metric};
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::postgres::PostgresServer;
use tollgate_e2e::{Demo, demo_lock_without, modern_body, modern_headers};

use super::cli::cli;
use super::replica_config;

/// The demo's lock without the two tools these tests approve.
const QUARANTINED: [&str; 2] = ["get_weather", "add"];

/// What every replica shares: the demo, the store, the issuer's key and
/// the lock file (as a ConfigMap would mount it).
struct Shared {
    pg: PostgresServer,
    demo: Demo,
    keys: tempfile::TempDir,
    lock_dir: tempfile::TempDir,
}

impl Shared {
    async fn start() -> Shared {
        let lock_dir = tempfile::tempdir().unwrap();
        std::fs::write(lock_dir.path().join("catalog.lock"), demo_lock_without(&QUARANTINED)).unwrap();
        Shared {
            pg: PostgresServer::start().await,
            demo: Demo::spawn().await,
            keys: tempfile::tempdir().unwrap(),
            lock_dir,
        }
    }

    fn lock(&self) -> PathBuf {
        self.lock_dir.path().join("catalog.lock")
    }

    /// Replica `name`: the fleet's configuration, the catalog enforced
    /// with the shared lock, the console on (`platform-admins` are its
    /// administrators).
    fn config(&self, name: &str) -> String {
        format!(
            "{}[console]\nenabled = true\n[console.roles]\nadmin = [\"platform-admins\"]\n\
             [catalog]\nmode = \"enforce\"\nlock = \"{}\"\n",
            replica_config(name, &self.demo, &self.pg.url(), self.keys.path()),
            self.lock().display(),
        )
    }

    /// `n` replicas `r1`, `r2`, …, each synced and listening.
    async fn replicas(&self, n: usize) -> Vec<ChildGateway> {
        let mut out = Vec::new();
        for i in 1..=n {
            out.push(ChildGateway::spawn(&self.config(&format!("r{i}"))).await);
        }
        for gw in &out {
            settled(gw).await;
        }
        out
    }
}

/// Wait (30 s at most) until `gw` has synced the demo's catalog and
/// listens for approvals in the store.
async fn settled(gw: &ChildGateway) {
    let mut detail = Value::Null;
    for _ in 0..300 {
        detail = gw.ready_detail().await;
        let synced = detail["catalogs"]["demo"]["successes"].as_u64() >= Some(1);
        if synced && detail["fleet_approvals"]["listening"] == true {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the replica never synced and listened: {detail:#}\n{}", gw.log());
}

/// A `tools/call` of the demo's `tool` through `gw` as `token`: whether
/// it was served (a result, not the quarantine's unknown-tool error).
async fn serves(gw: &ChildGateway, token: &str, tool: &str) -> bool {
    let args = match tool {
        "add" => json!({"a": 1, "b": 2}),
        "get_weather" => json!({"city": "Oslo"}),
        _ => json!({"text": "hi"}),
    };
    let body = modern_body(7, "tools/call", json!({"name": tool, "arguments": args}));
    let builder = tollgate_e2e::http()
        .post(gw.url("demo"))
        .headers(modern_headers("tools/call", Some(tool)))
        .bearer_auth(token);
    let message = Exchange::run(builder, body).await.message();
    if message.get("result").is_some() {
        return true;
    }
    assert_eq!(message["error"]["code"], -32602, "refused as unknown: {message}");
    false
}

/// Poll `gw` until it serves `tool`; panics at `deadline`.
async fn served_by(gw: &ChildGateway, token: &str, tool: &str, deadline: Instant, what: &str) -> Duration {
    let started = Instant::now();
    loop {
        if serves(gw, token, tool).await {
            return started.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {tool} not served in time\n{}",
            gw.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `POST /console/api/catalog/approve` on `gw` as an administrator, at
/// the live revision of `tool` as the console shows it.
async fn approve_in_console(gw: &ChildGateway, tool: &str) -> reqwest::Response {
    let token = gw.mint("ci-bot", &["--console", "--group", "platform-admins"]).await;
    let console = |path: &str| format!("{}/console/api/{path}", gw.admin);
    let catalog = super::console::console(gw, &token, "catalog").await;
    let entry = catalog["servers"]["demo"]["quarantined"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == tool)
        .unwrap_or_else(|| panic!("{tool} is not quarantined: {catalog:#}"))
        .clone();
    let request = json!({"server": "demo", "kind": "tool", "key": tool, "revision": entry["live_revision"]});
    tollgate_e2e::http()
        .post(console("catalog/approve"))
        .bearer_auth(&token)
        .json(&request)
        .send()
        .await
        .unwrap()
}

fn config_path(gw: &ChildGateway) -> String {
    gw.dir.path().join("gateway.toml").display().to_string()
}

/// Every approval row, without its id, in a stable order.
async fn rows(pg: &PostgresServer) -> String {
    pg.psql(
        "SELECT string_agg(concat_ws('|', server, kind, name, revision, approved_by, approved_at, note, \
         md5(definition)), E'\\n' ORDER BY server, kind, name, approved_at, approved_by) FROM catalog_approvals",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_on_replica_2_serves_on_replicas_1_and_3_within_a_second() {
    let shared = Shared::start().await;
    let lock_before = std::fs::read_to_string(shared.lock()).unwrap();
    let gws = shared.replicas(3).await;
    let token = gws[0].mint("alice", &["--team", "payments"]).await;
    for gw in &gws {
        assert!(!serves(gw, &token, "get_weather").await, "quarantined before");
    }

    let approved = approve_in_console(&gws[1], "get_weather").await;
    let answered = Instant::now();
    assert_eq!(approved.status(), 200);
    let approved: Value = approved.json().await.unwrap();
    assert_eq!(approved["approved"]["approved_by"], "ci-bot");
    let deadline = answered + Duration::from_secs(1);
    let (on_1, on_3) = tokio::join!(
        served_by(&gws[0], &token, "get_weather", deadline, "replica 1"),
        served_by(&gws[2], &token, "get_weather", deadline, "replica 3"),
    );
    eprintln!("served on replica 1 after {on_1:?}, on replica 3 after {on_3:?}");
    assert!(serves(&gws[1], &token, "get_weather").await, "on replica 2 at once");
    assert!(!serves(&gws[0], &token, "add").await, "nothing else was approved");

    // A row in the store, not a change of the (ConfigMap-like) lock file.
    let row = shared
        .pg
        .psql("SELECT server || ' ' || name || ' ' || approved_by || ' ' || note FROM catalog_approvals")
        .await;
    assert_eq!(row, "demo get_weather ci-bot approved in the console");
    assert_eq!(std::fs::read_to_string(shared.lock()).unwrap(), lock_before);

    // Each replica read it after the announcement, and says so.
    let metrics = gws[2].metrics().await;
    let notified = try_metric(
        &metrics,
        "tollgate_catalog_store_reads_total",
        &[("trigger", "notify"), ("result", "ok")],
    );
    assert!(notified >= Some(1.0), "{metrics}");
    assert_eq!(try_metric(&metrics, "tollgate_catalog_store_listening", &[]), Some(1.0));
    assert_eq!(try_metric(&metrics, "tollgate_catalog_store_approvals", &[]), Some(1.0));
    let written = try_metric(
        &gws[1].metrics().await,
        "tollgate_catalog_store_writes_total",
        &[("result", "ok")],
    );
    assert_eq!(written, Some(1.0));
    let detail = gws[0].ready_detail().await;
    assert_eq!(detail["fleet_approvals"]["approvals"], 1, "{detail:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_approval_reaches_running_replicas_and_export_reimports_to_the_same_rows() {
    let shared = Shared::start().await;
    let gws = shared.replicas(2).await;
    let token = gws[0].mint("alice", &["--team", "payments"]).await;
    assert!(!serves(&gws[1], &token, "add").await);

    // `catalog approve` with the configuration's [store] writes a row.
    let config = config_path(&gws[0]);
    let args = [
        "catalog", "approve", "--config", &config, "--server", "demo", "--tool", "add",
    ];
    let out = cli(&[&args[..], &["--by", "carol", "--note", "CHG-7"]].concat()).await;
    let done = Instant::now();
    assert!(out.contains("wrote 1 approvals to the fleet store"), "{out}");
    for gw in &gws {
        served_by(gw, &token, "add", done + Duration::from_secs(1), "after the CLI").await;
    }
    let shown = cli(&["catalog", "show", "--config", &config]).await;
    assert!(shown.contains("and the fleet store"), "{shown}");
    assert!(
        shown.lines().any(|l| l.contains(" add ") && l.contains(" carol ")),
        "{shown}"
    );
    let file_only = cli(&["catalog", "show", "--config", &config, "--lock-file"]).await;
    assert!(!file_only.contains(" add "), "{file_only}");

    // The GitOps base imported, then the store exported: the export
    // re-imports to the same rows.
    let lock = shared.lock().display().to_string();
    let url = shared.pg.url();
    let imported = cli(&["catalog", "import", &lock, "--store", &url]).await;
    assert!(imported.contains("added"), "{imported}");
    let before = rows(&shared.pg).await;
    let exported = cli(&["catalog", "export", "--config", &config]).await;
    let file = shared.lock_dir.path().join("exported.lock");
    std::fs::write(&file, &exported).unwrap();
    let again = cli(&["catalog", "import", file.to_str().unwrap(), "--config", &config]).await;
    assert!(again.contains("(0 added, 7 there already)"), "{again}");
    assert_eq!(rows(&shared.pg).await, before, "importing the export adds nothing");
    let add = exported
        .split("[[approval]]")
        .find(|a| a.contains("name = \"add\""))
        .unwrap();
    assert!(
        add.contains("approved_by = \"carol\"") && add.contains("note = \"CHG-7\""),
        "{add}"
    );

    // Into an empty store, the export makes the same approvals: exported
    // from there, the same text.
    shared.pg.psql("CREATE DATABASE other OWNER tollgate").await;
    let other = format!("postgres://tollgate@127.0.0.1:{}/other", shared.pg.port);
    let other_config = other_store_config(shared.lock_dir.path(), &other);
    cli(&["store", "migrate", "--config", &other_config]).await;
    let into_other = cli(&["catalog", "import", file.to_str().unwrap(), "--store", &other]).await;
    assert!(into_other.contains("(7 added, 0 there already)"), "{into_other}");
    assert_eq!(cli(&["catalog", "export", "--store", &other]).await, exported);
}

/// A CLI configuration for the store at `url`.
fn other_store_config(dir: &Path, url: &str) -> String {
    let path = dir.join("other.toml");
    let text = format!(
        "[listen]\npublic = \"127.0.0.1:1\"\nadmin = \"127.0.0.1:2\"\n[store]\npostgres = {{ url = \"{url}\" }}\n\
         [[servers]]\nname = \"demo\"\nurl = \"http://127.0.0.1:1/mcp\"\n"
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_store_is_down_replicas_serve_what_they_have_and_catch_up_after() {
    let mut shared = Shared::start().await;
    let gws = shared.replicas(2).await;
    let token = gws[0].mint("alice", &["--team", "payments"]).await;
    assert_eq!(approve_in_console(&gws[0], "get_weather").await.status(), 200);
    served_by(
        &gws[1],
        &token,
        "get_weather",
        Instant::now() + Duration::from_secs(1),
        "r2",
    )
    .await;

    shared.pg.stop().await;
    let refused = approve_in_console(&gws[1], "add").await;
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "store_unavailable", "{body}");
    for gw in &gws {
        assert!(
            serves(gw, &token, "get_weather").await,
            "the approvals in force keep serving"
        );
        assert!(!serves(gw, &token, "add").await, "nothing was approved");
    }
    let detail = gws[1].ready_detail().await;
    assert_eq!(detail["ready"], true, "{detail:#}");
    assert_eq!(detail["fleet_approvals"]["listening"], false, "{detail:#}");
    assert!(detail["fleet_approvals"]["last_error"].is_string(), "{detail:#}");

    // Down long enough for the replicas to back off (they tried again
    // after 1 s, 3 s and 7 s: the next try is at 15 s), then back, and
    // approved while they are not listening: the read on reconnecting
    // catches it up.
    tokio::time::sleep(Duration::from_secs(8)).await;
    shared.pg.start_again().await;
    let config = config_path(&gws[0]);
    let args = [
        "catalog", "approve", "--config", &config, "--server", "demo", "--tool", "add", "--by", "carol",
    ];
    cli(&args).await;
    for gw in &gws {
        let detail = gw.ready_detail().await;
        assert_eq!(detail["fleet_approvals"]["listening"], false, "not yet: {detail:#}");
    }
    let deadline = Instant::now() + Duration::from_secs(40);
    for gw in &gws {
        served_by(gw, &token, "add", deadline, "after the outage").await;
        assert!(serves(gw, &token, "get_weather").await);
        settled(gw).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_written_without_an_announcement_is_caught_up_by_the_reconcile() {
    let shared = Shared::start().await;
    let gws = shared.replicas(1).await;
    let config = config_path(&gws[0]);
    let args = [
        "catalog", "approve", "--config", &config, "--server", "demo", "--tool", "add", "--by", "carol",
    ];
    cli(&args).await;
    // Another tool's write: no `pg_notify`, so no replica hears of it.
    shared
        .pg
        .psql(
            "INSERT INTO catalog_approvals (server, kind, name, revision, approved_by, approved_at, note, definition) \
             SELECT server, kind, name, revision, 'dba', approved_at + interval '1 second', note, definition \
             FROM catalog_approvals WHERE name = 'add'",
        )
        .await;
    let started = Instant::now();
    let approved_by = || async {
        let catalog = tollgate_e2e::get_json(&format!("{}/catalog", gws[0].admin)).await;
        let approved = catalog["servers"]["demo"]["approved"].as_array().unwrap().clone();
        approved.into_iter().find(|e| e["name"] == "add").unwrap()["approved_by"].clone()
    };
    while approved_by().await != "dba" {
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "the reconcile never read it"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let metrics = gws[0].metrics().await;
    let reconciled = [("trigger", "reconcile"), ("result", "ok")];
    assert!(try_metric(&metrics, "tollgate_catalog_store_reads_total", &reconciled) >= Some(1.0));
}
