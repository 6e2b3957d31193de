//! What the CLI prints, kept as reviewed snapshots (insta): a fixed trail
//! of eight calls (two teams, three tools on two servers, a denial, a
//! rate-limited call and an upstream error), written by the real audit
//! sink, then `tollgate audit query` and `tollgate usage` in each output
//! format, `audit verify`, `validate` on a file with mistakes, and
//! `catalog show` of the demo's lock. A change
//! to any output shows as a diff to review (`cargo insta review`, or
//! `INSTA_UPDATE=always` to accept); file names and hashes, which hold the
//! time the trail was written, are masked.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;

use serde_json::{Value, json};
use tollgate_audit::{AuditSink, CallRecord, Durability, SinkSettings};
use tollgate_e2e::children::tollgate_cli;

/// One call: `(minute, subject, team, server, tool, decision, status,
/// tokens)`.
type Call = (
    u64,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    u16,
    u64,
);

const CALLS: [Call; 8] = [
    (0, "alice", "payments", "github", "create_issue", "allow", 200, 1200),
    (1, "alice", "payments", "github", "search_code", "allow", 200, 5400),
    (2, "bob", "search", "github", "search_code", "allow", 200, 3100),
    (3, "bob", "search", "jira", "create_ticket", "allow", 200, 800),
    (4, "victor", "search", "github", "delete_repo", "deny", 403, 0),
    (5, "alice", "payments", "jira", "create_ticket", "allow", 429, 0),
    (6, "bob", "search", "jira", "create_ticket", "allow", 502, 0),
    (7, "alice", "payments", "github", "create_issue", "allow", 200, 950),
];

/// The record of `call`, as the gateway writes one.
fn record((minute, subject, team, server, tool, decision, status, tokens): Call) -> CallRecord {
    let time = format!("2026-11-02T09:{minute:02}:00Z");
    let value: Value = json!({
        "time": time,
        "request_id": format!("req-{minute}"),
        "jsonrpc_id": format!("{minute}"),
        "trace_id": format!("{:032x}", minute + 1),
        "principal": {
            "issuer": "https://sso.example.com", "subject": subject, "client_id": "claude-desktop",
            "audience": [format!("https://mcp.example.com/mcp/{server}")], "groups": [],
            "team": team, "cost_center": format!("cc-{team}"), "scopes": ["mcp:tools"],
            "expires_at": 1_800_000_000u64, "kind": "user"
        },
        "route": server,
        "upstream": format!("https://{server}.internal/mcp"),
        "era": "modern",
        "protocol_version": "2026-07-28",
        "method": "tools/call",
        "name": tool,
        "decision": {"outcome": decision, "mode": "enforce", "policies": if decision == "deny" { json!(["forbid-delete"]) } else { json!(["allow-staff"]) }},
        "credential": "token_exchange",
        "status": status,
        "bytes_in": 240 + minute * 10,
        "bytes_out": tokens * 7 / 2,
        "tokens": tokens,
        "ttfb_us": 900 + minute * 100,
        "duration_us": 1500 + minute * 250,
    });
    serde_json::from_value(value).unwrap()
}

/// Write the fixed trail into `dir` with the real sink, sealed.
async fn write_trail(dir: &Path) {
    let settings = SinkSettings {
        directory: dir.to_owned(),
        file_prefix: "audit".into(),
        durability: Durability::Batch,
        sync_interval: std::time::Duration::from_millis(5),
        sync_records: 1000,
        queue_capacity: 1024,
        rotate_bytes: 1 << 30,
        rotate_interval: std::time::Duration::from_secs(3600),
        otlp: None,
        observer: None,
    };
    let (handle, worker) = AuditSink::start(settings).unwrap();
    for call in CALLS {
        assert_eq!(handle.record(record(call)), tollgate_audit::Recorded::Queued);
    }
    worker.close().await.unwrap();
}

/// `tollgate ARGS`' standard output and error, with the exit code.
async fn run(args: &[&str]) -> String {
    let out = tollgate_cli(args).await;
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    format!(
        "$ tollgate {}\n{}{}[exit {}]\n",
        args.join(" "),
        text(out.stdout),
        text(out.stderr),
        out.status.code().unwrap_or(-1)
    )
}

/// Snapshot `output`, with the temporary directory, file names and hashes
/// masked.
fn snapshot(name: &str, dir: &Path, output: &str) {
    let dir = dir.display().to_string();
    let masked = output.replace(&dir, "[DIR]");
    insta::with_settings!({
        filters => vec![
            (r"audit-\d{16}-\d{8}T\d{6}Z\.jsonl", "[FILE]"),
            (r"[0-9a-f]{64}", "[HASH]"),
        ],
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(name, masked);
    });
}

#[tokio::test]
async fn audit_query_prints_the_same_calls_in_every_format() {
    let trail = tempfile::tempdir().unwrap();
    write_trail(trail.path()).await;
    let dir = trail.path().to_str().unwrap();
    for format in ["table", "json", "jsonl", "csv"] {
        let out = run(&["audit", "query", dir, "--format", format]).await;
        snapshot(&format!("audit_query_{format}"), trail.path(), &out);
    }
    let newest = [
        "audit",
        "query",
        dir,
        "--team",
        "payments",
        "--newest-first",
        "--limit",
        "2",
    ];
    let out = run(&newest).await;
    snapshot("audit_query_newest_first", trail.path(), &out);
    // With an index, newest first is read from the index's end: the same.
    assert!(run(&["audit", "index", dir]).await.ends_with("[exit 0]\n"));
    assert_eq!(run(&newest).await, out);
    let out = run(&["audit", "query", dir, "--decision", "deny", "--format", "csv"]).await;
    snapshot("audit_query_denied_csv", trail.path(), &out);
}

#[tokio::test]
async fn usage_prints_each_grouping_in_every_format() {
    let trail = tempfile::tempdir().unwrap();
    write_trail(trail.path()).await;
    let dir = trail.path().to_str().unwrap();
    for by in ["team", "subject", "server", "tool"] {
        for format in ["table", "csv", "json"] {
            let out = run(&["usage", dir, "--by", by, "--format", format]).await;
            snapshot(&format!("usage_{by}_{format}"), trail.path(), &out);
        }
    }
}

#[tokio::test]
async fn verify_and_validate_say_what_they_found() {
    let trail = tempfile::tempdir().unwrap();
    write_trail(trail.path()).await;
    let dir = trail.path().to_str().unwrap();
    snapshot(
        "audit_verify",
        trail.path(),
        &run(&["audit", "verify", "--sealed", dir]).await,
    );

    let config = trail.path().join("tollgate.toml");
    std::fs::write(
        &config,
        "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n\n[audit]\ndirectry = \"audit\"\n\
         checkpoint_interval = \"0s\"\n\n[[servers]]\nname = \"github\"\nurl = \"https://github.internal/mcp\"\n\
         header_trust = \"verify\"\ntimout = \"5s\"\n",
    )
    .unwrap();
    let out = run(&["validate", "--config", config.to_str().unwrap()]).await;
    snapshot("validate_mistakes", trail.path(), &out);
}

#[tokio::test]
async fn catalog_show_lists_the_approvals_aligned_and_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let lock = tollgate_e2e::repo_root().join("examples/catalog.lock");
    std::fs::copy(lock, dir.path().join("catalog.lock")).unwrap();
    let config = dir.path().join("tollgate.toml");
    std::fs::write(
        &config,
        "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n\n[catalog]\nlock = \"catalog.lock\"\n\n\
         [[servers]]\nname = \"demo\"\nurl = \"http://127.0.0.1:3001/mcp\"\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    for format in ["text", "json"] {
        let out = run(&["catalog", "show", "--config", config, "--format", format]).await;
        snapshot(&format!("catalog_show_{format}"), dir.path(), &out);
    }
}
