//! What a sync learns about an upstream, and the demo's committed lock.

use serde_json::{Value, json};
use tollgate_e2e::audit_support::metric;
use tollgate_e2e::children::{everything_server, python_catalog_server, tollgate_cli};
use tollgate_e2e::{Demo, http, modern_body, modern_headers, repo_root};

use super::{ROUTE, Rig};

/// `GET /readyz?detail`'s report of the route's catalog sync, once its
/// first sync has ended.
async fn sync_detail(rig: &Rig) -> Value {
    rig.wait_catalog("the first sync", |c| c["sync"]["state"] == "ok").await;
    let url = format!("{}/readyz?detail", rig.gw.admin);
    let detail: Value = http().get(url).send().await.unwrap().json().await.unwrap();
    detail["catalogs"][ROUTE].clone()
}

/// `header_trust = "upstream"` identifies calls from headers alone, which
/// is only sound in front of an upstream that itself checks them (one
/// that speaks 2026-07-28). A legacy upstream gets every body verified,
/// and the refusal shows in `/readyz` detail and the metrics.
#[tokio::test]
async fn header_trust_upstream_is_refused_for_a_legacy_upstream() {
    let legacy = everything_server().await;
    let gw = Rig::gateway(&legacy, "mode = \"observe\"", "", "header_trust = \"upstream\"").await;
    let rig = Rig { upstream: legacy, gw };
    let sync = sync_detail(&rig).await;
    assert_eq!(sync["header_trust_refused"], true, "{sync:#}");
    let m = rig.gw.metrics().await;
    assert_eq!(
        metric(&m, "tollgate_catalog_header_trust_refused", &[("route", ROUTE)]),
        1.0
    );

    let modern = python_catalog_server().await;
    let gw = Rig::gateway(&modern, "mode = \"observe\"", "", "header_trust = \"upstream\"").await;
    let rig = Rig { upstream: modern, gw };
    let sync = sync_detail(&rig).await;
    assert_eq!(sync["header_trust_refused"], false, "{sync:#}");
    let m = rig.gw.metrics().await;
    assert_eq!(
        metric(&m, "tollgate_catalog_header_trust_refused", &[("route", ROUTE)]),
        0.0
    );
}

/// `make run` serves the demo in enforce mode from `examples/catalog.lock`:
/// the committed lock must approve exactly what the demo server lists, or
/// the demo would hide its own tools.
#[tokio::test]
async fn the_committed_demo_lock_approves_the_demo_server_as_it_is() {
    let demo = Demo::spawn().await;
    let root = repo_root();
    let examples = root.join("examples");
    let text = std::fs::read_to_string(examples.join("demo.toml")).unwrap();
    assert!(
        text.contains("mode = \"enforce\""),
        "the demo runs the catalog gate in enforce"
    );
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("admin-token");
    std::fs::write(&token, "a-demo-admin-token-for-this-test").unwrap();
    // The vault key and Tollgate's secret at Notes, which `make run` writes too.
    let secrets = [
        ("vault-key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="),
        ("notes-secret", "a-notes-secret"),
    ];
    for (name, value) in secrets {
        std::fs::write(dir.path().join(name), value).unwrap();
    }
    let swap = |line: &str| {
        secrets.iter().fold(line.to_owned(), |line, (name, _)| {
            let to = dir.path().join(name).display().to_string();
            line.replace(&format!("\"../.tollgate/{name}\""), &format!("{to:?}"))
        })
    };
    let config: String = text
        .lines()
        .map(|line| match line.split_once('=').map(|(k, _)| k.trim()) {
            Some("url") => format!("url = \"{}\"", demo.url),
            Some("lock") => format!("lock = {:?}", examples.join("catalog.lock")),
            Some("token") => format!("token = {{ file = {:?} }}", token.display().to_string()),
            _ => swap(line),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let file = dir.path().join("demo.toml");
    std::fs::write(&file, config).unwrap();
    let out = tollgate_cli(&["catalog", "diff", "--config", file.to_str().unwrap()]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "examples/catalog.lock is stale; re-approve with `tollgate catalog approve \
         --config examples/demo.toml --server demo --all --by ...` against a running \
         demo server:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("no difference from the lock"), "{stdout}");
}

/// With `[catalog] watch = false` the running binary reloads the lock on
/// SIGHUP, and only then.
#[tokio::test]
async fn sighup_reloads_the_lock_of_the_running_binary() {
    let demo = Demo::spawn().await;
    let gw = tollgate_e2e::children::ChildGateway::spawn(&format!(
        "[catalog]\nmode = \"enforce\"\nwatch = false\nsync_interval = \"1s\"\nsync_timeout = \"1s\"\n\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    ))
    .await;
    let tools = || async {
        let res = http()
            .post(gw.url("demo"))
            .headers(modern_headers("tools/list", None))
            .body(modern_body(1, "tools/list", json!({})))
            .send()
            .await
            .unwrap();
        let list: Value = res.json().await.unwrap();
        list["result"]["tools"].as_array().map_or(0, Vec::len)
    };
    // Nothing approved: every tool quarantined.
    assert_eq!(tools().await, 0);
    let config = gw.dir.path().join("gateway.toml");
    let config = config.to_str().unwrap();
    let args = [
        "catalog",
        "approve",
        "--config",
        config,
        "--server",
        "demo",
        "--all",
        "--by",
        "ops@example.com",
    ];
    let out = tollgate_cli(&args).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(tools().await, 0, "without the watcher, nothing changes before SIGHUP");
    let pid = gw.child.id().unwrap().to_string();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap();
    assert!(hup.success());
    for _ in 0..50 {
        if tools().await > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("SIGHUP did not reload the lock");
}

/// A `notifications/*/list_changed` in an answer passing through asks for a
/// sync at once, without waiting for `sync_interval` (an hour here). The
/// stub is no MCP server, so each sync fails: the count of failed syncs
/// shows that a second one ran.
#[tokio::test]
async fn a_list_changed_notification_passing_through_starts_a_sync() {
    let stub = tollgate_e2e::stub::Stub::spawn().await;
    let gw = tollgate_e2e::TestGateway::spawn(&format!(
        "[catalog]\nmode = \"observe\"\nsync_interval = \"1h\"\nsync_timeout = \"2s\"\n\n\
         [[servers]]\nname = \"{ROUTE}\"\nurl = \"{}/announce\"\n",
        stub.base
    ))
    .await;
    let failures = || async {
        let res = http().get(format!("{}/catalog", gw.admin)).send().await.unwrap();
        let all: Value = res.json().await.unwrap();
        all["servers"][ROUTE]["sync"]["failures"].as_u64().unwrap_or(0)
    };
    for _ in 0..100 {
        if failures().await >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(failures().await, 1, "the first sync at start");
    let params = json!({"name": "anything", "arguments": {}});
    let res = http()
        .post(gw.url(ROUTE))
        .headers(modern_headers("tools/call", Some("anything")))
        .body(modern_body(1, "tools/call", params))
        .send()
        .await
        .unwrap();
    let text = res.text().await.unwrap();
    assert!(
        text.contains("list_changed"),
        "the notification reached the client: {text}"
    );
    for _ in 0..100 {
        if failures().await >= 2 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no sync after the list_changed notification");
}
