//! The gateway keeps the audit index up to date: while it serves, calls
//! appear in `index.sqlite` within a couple of seconds and `tollgate audit
//! query` answers from it; after a graceful stop the index holds every
//! record of the trail.

use std::time::Duration;

use serde_json::json;
use tollgate_e2e::audit_support::{metric, modern, scrape_until};
use tollgate_e2e::children::{ChildGateway, tollgate_cli};
use tollgate_e2e::{Demo, modern_body};

async fn echo(gw: &ChildGateway, id: u64) -> u16 {
    let body = modern_body(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "indexed"}}),
    );
    modern(gw.url("demo"), None, "tools/call", Some("echo"), body)
        .await
        .status
}

fn lines(out: &std::process::Output) -> usize {
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_indexes_its_trail_as_it_writes_it() {
    let demo = Demo::spawn().await;
    let mut gw = ChildGateway::spawn(&format!(
        "[audit]\nindex = true\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    ))
    .await;
    for id in 1..=20 {
        assert_eq!(echo(&gw, id).await, 200);
    }
    let metrics = scrape_until(&gw.admin, |m| {
        metric(m, "tollgate_audit_index_records_total", &[]) >= 20.0
    })
    .await;
    assert_eq!(metric(&metrics, "tollgate_audit_index_healthy", &[]), 1.0);
    let dir = gw.audit_dir();
    let index = dir.join("index.sqlite");
    assert!(index.is_file());
    let dir_arg = dir.to_str().unwrap();
    let query = ["audit", "query", dir_arg, "--tool", "echo", "--format", "json"];
    let indexed = tollgate_cli(&[&query[..], &["--index", index.to_str().unwrap()]].concat()).await;
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    assert_eq!(lines(&indexed), 20);

    for id in 21..=30 {
        assert_eq!(echo(&gw, id).await, 200);
    }
    let pid = gw.child.id().unwrap().to_string();
    let _ = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await;
    let _ = tokio::time::timeout(Duration::from_secs(30), gw.child.wait()).await;
    // Nothing was left for a later pass: the gateway caught up at its stop.
    let caught_up = tollgate_cli(&["audit", "index", dir_arg]).await;
    let text = String::from_utf8_lossy(&caught_up.stdout);
    assert!(text.contains(": 0 records added"), "{text}");
    // Stderr is a pipe, not a terminal: no progress bar, nothing at all.
    assert_eq!(String::from_utf8_lossy(&caught_up.stderr), "");
    let all = tollgate_cli(&query).await;
    assert_eq!(lines(&all), 30);
}
