//! `tollgate audit index`, and `audit query` / `usage` answering from the
//! index: the same output as reading the files, for every filter and
//! grouping; an explicit `--index` must work, a default one that cannot be
//! used is passed over with a warning.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

#[allow(dead_code, reason = "this binary uses part of the shared trail helpers")]
mod audit_trail;

use audit_trail::{path, stderr, stdout, tollgate, trail};

#[test]
fn index_builds_then_reads_only_what_is_new() {
    let (dir, _file) = trail();
    let out = tollgate(&["audit", "index", path(dir.path())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("index.sqlite: 13 records added from 1 files"), "{text}");
    assert!(dir.path().join("index.sqlite").is_file());
    let again = stdout(&tollgate(&["audit", "index", path(dir.path())]));
    assert!(again.contains(": 0 records added from 0 files"), "{again}");
    let rebuilt = stdout(&tollgate(&["audit", "index", path(dir.path()), "--rebuild"]));
    assert!(rebuilt.contains(": 13 records added"), "{rebuilt}");
}

#[test]
fn query_and_usage_answer_the_same_from_the_index_and_the_files() {
    let (dir, _file) = trail();
    let d = path(dir.path());
    let queries: [&[&str]; 6] = [
        &[],
        &["--subject", "alice"],
        &["--team", "payments", "--tool", "create_issue"],
        &["--decision", "deny"],
        &["--server", "jira", "--since", "7d", "--status", "200"],
        &["--subject", "nobody"],
    ];
    let run = |args: &[&str]| {
        let out = tollgate(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let mut answers = Vec::new();
    for q in queries {
        for format in ["json", "table"] {
            answers.push([&["audit", "query", d, "--format", format][..], q].concat());
        }
    }
    for by in ["team", "cost_center", "subject", "server", "tool", "trace"] {
        answers.push(vec!["usage", d, "--by", by, "--format", "json"]);
    }
    // Budgets per team, principal and cost centre, on every route or one,
    // with prices: the same spend and projection from the index.
    let config = dir.path().join("budgets.toml");
    std::fs::write(
        &config,
        "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n\n\
         [[limits.budgets]]\nid = \"teams\"\nper = \"team\"\nperiod = \"month\"\ntokens = 5000\n\n\
         [[limits.budgets]]\nid = \"people\"\nper = \"principal\"\nperiod = \"week\"\ntokens = 1000\n\n\
         [[limits.budgets]]\nid = \"github-cc\"\nper = \"cost_center\"\nroutes = [\"github\"]\nperiod = \"day\"\ntokens = 900\n\n\
         [[limits.prices]]\nper_million_tokens = 3.0\n\n\
         [[servers]]\nname = \"github\"\nurl = \"http://127.0.0.1:1/mcp\"\n",
    )
    .unwrap();
    let config = path(&config).to_owned();
    // One `now` for both runs, so that the projections agree; a second on,
    // so that the trail's newest record (written at its `now`, with the
    // sub-second part this format drops) is in.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(1);
    let now = humantime::format_rfc3339_seconds(later).to_string();
    for format in ["json", "csv"] {
        answers.push(vec![
            "usage",
            d,
            "--budgets",
            "--config",
            &config,
            "--format",
            format,
            "--until",
            &now,
        ]);
    }
    let from_files: Vec<String> = answers
        .iter()
        .map(|a| run(&[&a[..], &["--no-index"]].concat()))
        .collect();
    assert!(tollgate(&["audit", "index", d]).status.success());
    for (args, want) in answers.iter().zip(&from_files) {
        assert_eq!(&run(args), want, "{args:?}");
    }
    assert!(from_files[2].lines().count() >= 2, "the filters select records");
    let budgets = from_files.iter().rev().nth(1).unwrap();
    assert!(
        budgets.contains("\"teams\"") && budgets.contains("\"github-cc\""),
        "{budgets}"
    );
}

#[test]
fn a_named_index_must_work_and_an_unusable_default_is_passed_over() {
    let (dir, _file) = trail();
    let d = path(dir.path());
    let bad = dir.path().join("no-such-dir").join("index.sqlite");
    let out = tollgate(&["audit", "query", d, "--index", path(&bad)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-dir"), "{}", stderr(&out));

    // An index made by another version of Tollgate.
    let index = dir.path().join("index.sqlite");
    assert!(tollgate(&["audit", "index", d]).status.success());
    let conn = std::process::Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE meta SET value=99 WHERE key='schema'\"); c.commit()", path(&index)])
        .status()
        .unwrap();
    assert!(conn.success());
    let out = tollgate(&["usage", d, "--by", "team"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("not using the audit index"), "{}", stderr(&out));
    assert!(stdout(&out).contains("TOTAL"), "{}", stdout(&out));

    // One made by an earlier version is rebuilt from the trail.
    let set = |v: &str| {
        let sql = format!(
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE meta SET value={v} WHERE key='schema'\"); c.commit()"
        );
        assert!(
            std::process::Command::new("python3")
                .args(["-c", &sql, path(&index)])
                .status()
                .unwrap()
                .success()
        );
    };
    set("1");
    let again = stdout(&tollgate(&["audit", "index", d]));
    assert!(again.contains(": 13 records added"), "{again}");
}
