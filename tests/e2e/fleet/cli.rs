//! `--store` CLI output equals the files' output for the same records:
//! two replicas' calls (two teams, a failing call, a list), shipped, then
//! `tollgate audit query` and `tollgate usage` over copies of the
//! replicas' directories and over the store, compared byte for byte.

use std::collections::HashMap;
use std::path::Path;

use serde_json::json;
use tollgate_e2e::audit_support::{Exchange, trail_lines};
use tollgate_e2e::children::tollgate_cli;
use tollgate_e2e::postgres::PostgresServer;
use tollgate_e2e::{Demo, modern_body, modern_headers};

use super::{call, fleet, stored_lines, wait_stored};

/// A `tools/list` through `gw` as `token`.
async fn list(gw: &tollgate_e2e::children::ChildGateway, token: &str, id: u64) -> Exchange {
    let builder = tollgate_e2e::http()
        .post(gw.url("demo"))
        .headers(modern_headers("tools/list", None))
        .bearer_auth(token);
    Exchange::run(builder, modern_body(id, "tools/list", json!({}))).await
}

/// Copy each replica's audit directory to `into/r1`, `into/r2`, … as an
/// operator gathering the fleet's files on one machine would.
fn gather(dirs: &[std::path::PathBuf], into: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let to = into.join(format!("r{}", i + 1));
        std::fs::create_dir_all(&to).unwrap();
        for f in std::fs::read_dir(dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
            }
        }
        out.push(to.display().to_string());
    }
    out
}

/// `tollgate ARGS`: its standard output, after checking it succeeded.
pub(super) async fn cli(args: &[&str]) -> String {
    let out = tollgate_cli(args).await;
    assert!(
        out.status.success(),
        "tollgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A CLI configuration: the store, a daily budget per team, and prices.
fn cli_config(dir: &Path, store: &str) -> String {
    let path = dir.join("cli.toml");
    let text = format!(
        "[listen]\npublic = \"127.0.0.1:1\"\nadmin = \"127.0.0.1:2\"\n\
         [store]\npostgres = {{ url = \"{store}\" }}\n\
         [limits]\ncurrency = \"EUR\"\n\
         [[limits.prices]]\ntools = [\"echo\"]\nper_million_tokens = 12.0\n\
         [[limits.prices]]\nper_million_tokens = 3.0\n\
         [[limits.budgets]]\nid = \"team-daily\"\nper = \"team\"\nkeys = [\"payments\", \"search\"]\n\
         period = \"day\"\ntokens = 1000000\n\
         [[servers]]\nname = \"demo\"\nurl = \"http://127.0.0.1:1/mcp\"\n"
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_query_and_usage_print_the_same_from_the_store_as_from_the_files() {
    let (pg, demo, keys) = (
        PostgresServer::start().await,
        Demo::spawn().await,
        tempfile::tempdir().unwrap(),
    );
    let gws = fleet(2, &demo, &pg, &keys).await;
    let alice = gws[0].mint("alice", &["--team", "payments"]).await;
    let bob = gws[0].mint("bob", &["--team", "search"]).await;
    let mut sent = HashMap::new();
    for id in 0..12u64 {
        let i = usize::try_from(id).unwrap() % 2;
        let token = if id % 3 == 0 { &bob } else { &alice };
        let ex = if id % 4 == 1 {
            list(&gws[i], token, id).await
        } else {
            call(&gws[i], token, id).await
        };
        assert_eq!(ex.status, 200);
        sent.insert(ex.request_id, format!("r{}", i + 1));
    }
    wait_stored(&pg, &sent).await;
    let dirs: Vec<_> = gws.iter().map(|g| g.audit_dir()).collect();
    for (i, dir) in dirs.iter().enumerate() {
        let replica = format!("r{}", i + 1);
        let mut shipped = 0;
        for _ in 0..100 {
            shipped = stored_lines(&pg, &replica).await;
            if shipped == trail_lines(dir).len() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(shipped, trail_lines(dir).len(), "{replica}'s lines in the store");
    }
    let copies = tempfile::tempdir().unwrap();
    let paths = gather(&dirs, copies.path());
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let url = pg.url();
    let config = cli_config(copies.path(), &url);
    let until = humantime::format_rfc3339_seconds(std::time::SystemTime::now() + std::time::Duration::from_secs(3600))
        .to_string();
    let questions: [&[&str]; 7] = [
        &["audit", "query", "--format", "json"],
        &["audit", "query", "--subject", "bob"],
        &[
            "audit", "query", "--team", "payments", "--tool", "echo", "--since", "1h",
        ],
        &["usage", "--by", "team", "--config", &config],
        &["usage", "--by", "subject", "--format", "json"],
        &["usage", "--by", "tool", "--format", "csv", "--until", &until],
        &["usage", "--budgets", "--config", &config, "--until", &until],
    ];
    for question in questions {
        let files = cli(&[question, &paths[..]].concat()).await;
        let stored = cli(&[question, &["--store", &url]].concat()).await;
        assert_eq!(stored, files, "tollgate {question:?}");
        assert!(
            files.lines().count() > 1,
            "tollgate {question:?} found nothing:\n{files}"
        );
    }
    // The store of a configuration: `--store` without a URL.
    let team = ["usage", "--by", "team", "--config", &config];
    let stored = cli(&[&team[..], &["--store"]].concat()).await;
    assert_eq!(stored, cli(&[&team[..], &paths[..]].concat()).await);
    assert!(stored.contains("search") && stored.contains("payments"), "{stored}");
}
