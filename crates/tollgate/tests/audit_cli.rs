//! `tollgate audit verify|query` and `tollgate usage` on a real trail written
//! by the audit sink (`audit_trail`): a good trail verifies, every kind of
//! tampering is named by file and line, query filters return exactly the
//! matching records, and usage sums what was written.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod audit_trail;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime};

use audit_trail::{CALLS, Call, ids, lines, path, stderr, stdout, tokens, tollgate, trail, write_lines};
use serde_json::Value;

/// Run `verify` on a trail expected to be broken; its stderr.
fn broken(args: &[&str]) -> String {
    let out = tollgate(&[&["audit", "verify"][..], args].concat());
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    stderr(&out)
}

#[test]
fn verify_counts_the_records_of_a_good_trail() {
    let (dir, file) = trail();
    for target in [path(dir.path()), path(&file)] {
        let out = tollgate(&["audit", "verify", target]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.starts_with("verified 13 records (15 lines) in 1 file(s); last hash "),
            "{text}"
        );
        assert!(!text.contains("not sealed"), "{text}");
    }
    let out = tollgate(&["audit", "verify", "--sealed", path(dir.path())]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn verify_names_an_edited_record() {
    let (dir, file) = trail();
    let mut l = lines(&file);
    assert!(l[4].contains("\"request_id\":\"req-3\""), "{}", l[4]);
    l[4] = l[4].replace("\"bytes_out\":2000", "\"bytes_out\":20");
    write_lines(&file, &l);
    let err = broken(&[path(dir.path())]);
    assert!(
        err.contains(&format!("{}:5: record was edited", file.display())),
        "{err}"
    );
}

#[test]
fn verify_names_a_deleted_record() {
    let (_dir, file) = trail();
    let mut l = lines(&file);
    l.remove(3);
    write_lines(&file, &l);
    let err = broken(&[path(&file)]);
    assert!(
        err.contains(&format!("{}:4: 1 record(s) deleted before this one", file.display())),
        "{err}"
    );
}

#[test]
fn verify_names_swapped_records() {
    let (_dir, file) = trail();
    let mut l = lines(&file);
    l.swap(3, 4);
    write_lines(&file, &l);
    let err = broken(&[path(&file)]);
    // Line 4 now holds the record after the missing one.
    assert!(
        err.contains(&format!("{}:4: 1 record(s) deleted before this one", file.display())),
        "{err}"
    );
}

#[test]
fn verify_names_an_inserted_record() {
    let (_dir, file) = trail();
    let mut l = lines(&file);
    let copy = l[2].clone();
    l.insert(6, copy);
    write_lines(&file, &l);
    let err = broken(&[path(&file)]);
    assert!(
        err.contains(&format!("{}:7: record is out of order or was inserted", file.display())),
        "{err}"
    );
}

#[test]
fn verify_names_a_truncated_last_line() {
    let (_dir, file) = trail();
    let text = std::fs::read(&file).unwrap();
    std::fs::write(&file, &text[..text.len() - 30]).unwrap();
    let err = broken(&[path(&file)]);
    assert!(
        err.contains(&format!("{}:15: file truncated inside a record", file.display())),
        "{err}"
    );
}

#[test]
fn verify_sealed_detects_records_cut_from_the_end() {
    let (_dir, file) = trail();
    let mut l = lines(&file);
    l.truncate(13);
    write_lines(&file, &l);
    // Looks like a trail still being written...
    let out = tollgate(&["audit", "verify", path(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("verified 12 records (13 lines)"), "{text}");
    assert!(text.contains("the last file is not sealed"), "{text}");
    // ...unless the trail must be closed.
    let err = broken(&["--sealed", path(&file)]);
    assert!(
        err.contains(&format!("{}:13: the trail ends without a seal", file.display())),
        "{err}"
    );
}

#[test]
fn verify_exits_2_when_it_cannot_read_the_trail() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let out = tollgate(&["audit", "verify", path(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("cannot read {}", missing.display())),
        "{}",
        stderr(&out)
    );
    let out = tollgate(&["audit", "verify", path(dir.path())]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no audit files"), "{}", stderr(&out));
    assert_eq!(tollgate(&["audit", "verify"]).status.code(), Some(2));
}

/// Run `audit query --format json` with `args`; the records printed, each
/// checked to be a line of `file` exactly as stored.
fn query(dir: &Path, file: &Path, args: &[&str]) -> Vec<Value> {
    let out = tollgate(&[&["audit", "query", path(dir), "--format", "json"][..], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let stored: BTreeSet<String> = lines(file).into_iter().collect();
    stdout(&out)
        .lines()
        .map(|line| {
            assert!(stored.contains(line), "not a stored line: {line}");
            serde_json::from_str(line).unwrap()
        })
        .collect()
}

fn request_ids(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["request_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn query_filters_by_subject_team_and_tool() {
    let (dir, file) = trail();
    let dir = dir.path();
    let alice = query(dir, &file, &["--subject", "alice"]);
    assert_eq!(request_ids(&alice), ids(&[0, 1]));
    for r in &alice {
        assert_eq!(r["kind"], "call");
        assert_eq!(r["principal"]["subject"], "alice");
        assert_eq!(r["principal"]["team"], "payments");
    }
    let payments = query(dir, &file, &["--team", "payments"]);
    assert_eq!(request_ids(&payments), ids(&[0, 1, 2, 9]));
    let issues = query(dir, &file, &["--team", "payments", "--tool", "create_issue"]);
    assert_eq!(request_ids(&issues), ids(&[0, 9]));
    assert_eq!(issues[1]["status"], 502);
    assert_eq!(issues[1]["bytes_in"], 310);
    let search = query(dir, &file, &["--tool", "search"]);
    assert_eq!(request_ids(&search), ids(&[5, 7, 8, 10]));
    assert!(search[1].get("principal").is_none(), "{}", search[1]);
    assert_eq!(search[2]["rpc_error"], -32602);
    // The strict-mode record and the complete one.
    let bot = query(dir, &file, &["--subject", "ci-bot"]);
    assert_eq!(request_ids(&bot), ids(&[11, 11]));
    assert_eq!(bot[0]["phase"], "forwarding");
    assert!(bot[1].get("phase").is_none());
    assert!(query(dir, &file, &["--subject", "mallory"]).is_empty());
}

#[test]
fn query_filters_by_decision_server_and_trace() {
    let (dir, file) = trail();
    let dir = dir.path();
    let denied = query(dir, &file, &["--decision", "deny"]);
    assert_eq!(request_ids(&denied), ids(&[2, 5]));
    assert!(
        denied
            .iter()
            .all(|r| r["decision"]["outcome"] == "deny" && r["status"] == 403)
    );
    let observed = query(dir, &file, &["--decision", "observe_deny"]);
    assert_eq!(request_ids(&observed), ids(&[6]));
    assert_eq!(observed[0]["decision"]["mode"], "observe");
    let rejected = query(dir, &file, &["--decision", "not-evaluated"]);
    assert_eq!(request_ids(&rejected), ids(&[7]));
    let jira = query(dir, &file, &["--server", "jira"]);
    assert_eq!(request_ids(&jira), ids(&[3, 4, 5, 10]));
    assert!(jira.iter().all(|r| r["route"] == "jira"));
    let trace = format!("{:032x}", 2);
    assert_eq!(request_ids(&query(dir, &file, &["--trace", &trace])), ids(&[3, 4, 5]));
    let both = query(dir, &file, &["--server", "github", "--decision", "allow"]);
    assert_eq!(request_ids(&both), ids(&[0, 1, 9, 11, 11]));
}

#[test]
fn query_filters_by_time() {
    let (dir, file) = trail();
    let dir = dir.path();
    let week = query(dir, &file, &["--since", "7d"]);
    assert_eq!(request_ids(&week), ids(&[3, 4, 5, 6, 7, 8, 9, 10, 11, 11]));
    let carol = query(dir, &file, &["--since", "7d", "--subject", "carol"]);
    assert_eq!(request_ids(&carol), ids(&[3, 4, 10]));
    let now = SystemTime::now();
    let at = |hours: u64| humantime::format_rfc3339_seconds(now - Duration::from_secs(hours * 3600)).to_string();
    let window = query(dir, &file, &["--since", &at(130), "--until", &at(40)]);
    assert_eq!(request_ids(&window), ids(&[4, 5, 6, 7]));
    assert_eq!(query(dir, &file, &["--since", "1970-01-01"]).len(), 13);
    assert!(query(dir, &file, &["--until", "1970-01-02"]).is_empty());
}

#[test]
fn query_prints_a_table_and_rejects_bad_input() {
    let (dir, file) = trail();
    let out = tollgate(&["audit", "query", path(dir.path()), "--subject", "alice"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[0].starts_with("TIME") && rows[0].contains("SUBJECT"), "{text}");
    assert!(rows[0].ends_with(" POLICIES"), "{text}");
    for (row, tool) in rows[1..].iter().zip(["create_issue", "list_issues"]) {
        assert!(
            row.contains("alice") && row.contains("payments") && row.contains(tool),
            "{row}"
        );
        assert!(row.contains("allow") && row.contains("200"), "{row}");
        // The deciding policies, in full, as the last column.
        assert!(row.ends_with(" payments-tools,default-read"), "{row}");
    }
    let out = tollgate(&["audit", "query", path(dir.path()), "--server", "docs"]);
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    for row in &rows[1..] {
        assert!(row.ends_with(" -"), "no deciding policy: {row}");
    }
    let out = tollgate(&["audit", "query", path(dir.path()), "--decision", "deny"]);
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines().skip(1).all(|row| row.ends_with(" forbid-destructive")),
        "{text}"
    );
    for bad in [["--decision", "maybe"], ["--since", "yesterday"], ["--format", "xml"]] {
        let out = tollgate(&[&["audit", "query", path(dir.path())][..], &bad[..]].concat());
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
    // A line that is not a record: named, exit 1.
    let mut l = lines(&file);
    l.insert(3, "garbage".into());
    write_lines(&file, &l);
    let out = tollgate(&["audit", "query", path(dir.path()), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{}:4: not an audit record", file.display())),
        "{}",
        stderr(&out)
    );
}

/// Expected sums per key: (calls, bytes_in, bytes_out, tokens).
fn sums(key: impl Fn(&Call) -> String) -> BTreeMap<String, [u64; 4]> {
    let mut out: BTreeMap<String, [u64; 4]> = BTreeMap::new();
    for c in &CALLS {
        let s = out.entry(key(c)).or_default();
        s[0] += 1;
        s[1] += c.bytes_in;
        s[2] += c.bytes_out;
        s[3] += tokens(c);
    }
    out
}

fn row_sums(row: &Value) -> [u64; 4] {
    ["calls", "bytes_in", "bytes_out", "tokens"].map(|k| row[k].as_u64().unwrap())
}

#[test]
fn usage_by_team_in_json_sums_what_was_written() {
    let (dir, _file) = trail();
    let out = tollgate(&["usage", path(dir.path()), "--by", "team", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["by"], "team");
    let got: BTreeMap<String, [u64; 4]> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"].as_str().unwrap().to_owned(), row_sums(r)))
        .collect();
    let want = sums(|c| c.team.unwrap_or("(none)").to_owned());
    assert_eq!(got, want);
    assert_eq!(want["payments"], [4, 820, 13250, 3312]);
    // Only complete records count: the forwarding record is not a call.
    let total = &report["total"];
    assert_eq!(row_sums(total), [12, 2030, 44600, 11149]);
    assert_eq!((total["errors"].as_u64(), total["denied"].as_u64()), (Some(5), Some(2)));
    assert_eq!(total["catalog_tokens"], 1750);
    let payments = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "payments")
        .unwrap();
    // Durations 1, 2, 3 and 10 ms: nearest-rank p50 and p99.
    assert_eq!(
        (payments["p50_us"].as_u64(), payments["p99_us"].as_u64()),
        (Some(2000), Some(10_000))
    );
}

#[test]
fn usage_by_tool_in_csv_sums_what_was_written() {
    let (dir, _file) = trail();
    let out = tollgate(&["usage", path(dir.path()), "--by", "tool", "--format", "csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    assert_eq!(
        header,
        [
            "tool",
            "calls",
            "errors",
            "denied",
            "bytes_in",
            "bytes_out",
            "tokens",
            "catalog_tokens",
            "p50_ms",
            "p99_ms"
        ]
    );
    let mut got: BTreeMap<String, [u64; 4]> = rows
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let n = |i: usize| cells[i].parse::<u64>().unwrap();
            (cells[0].to_owned(), [n(1), n(4), n(5), n(6)])
        })
        .collect();
    // The last line is the total of the groups, as in the table.
    assert!(text.lines().last().unwrap().starts_with("TOTAL,"), "{text}");
    let total = got.remove("TOTAL").unwrap();
    // A tool is keyed by its server.
    let want = sums(|c| format!("{}/{}", c.server, c.tool.unwrap_or("(tools/list)")));
    assert_eq!(got, want);
    assert_eq!(want["github/list_issues"], [3, 330, 23000, 5750]);
    let summed = want
        .values()
        .fold([0; 4], |acc, v| std::array::from_fn(|i| acc[i] + v[i]));
    assert_eq!(total, summed);
}

#[test]
fn usage_table_ends_with_a_total_and_since_limits_it() {
    let (dir, _file) = trail();
    let out = tollgate(&["usage", path(dir.path()), "--by", "server"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 5, "header, github, jira, docs, TOTAL: {text}");
    assert!(rows[0].starts_with("server") && rows[0].contains("p99_ms"), "{text}");
    let total: Vec<&str> = rows[4].split_whitespace().collect();
    assert_eq!(&total[..2], ["TOTAL", "12"], "{text}");

    let out = tollgate(&[
        "usage",
        path(dir.path()),
        "--by",
        "server",
        "--since",
        "7d",
        "--format",
        "json",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["total"]["calls"], 9);

    for bad in [&["--by", "colour"][..], &[][..]] {
        let out = tollgate(&[&["usage", path(dir.path())][..], bad].concat());
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}
