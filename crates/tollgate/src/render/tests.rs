use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tollgate_audit::{CallRecord, Decision, Entry, Outcome, PolicyMode};
use tollgate_meter::{GroupBy, UsageSample, usage};

use super::*;

fn record(name: &str, policies: &[&str]) -> CallRecord {
    let mut r = CallRecord::new(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        "req-1",
        Arc::from("github"),
    );
    r.method = Some("tools/call".into());
    r.name = Some(name.to_owned());
    r.decision = Decision {
        outcome: Outcome::Deny,
        mode: PolicyMode::Enforce,
        policies: policies.iter().map(|p| Arc::from(*p)).collect(),
        reason: Some("deny".into()),
    };
    r.status = Some(200);
    r.rpc_error = Some(-32602);
    r.duration_us = 1250;
    r.tokens = 29;
    r
}

fn entry(r: CallRecord) -> Result<Entry, QueryError> {
    Ok(Entry {
        file: PathBuf::from("audit.jsonl"),
        line: 2,
        raw: "{\"stored\":true}".to_owned(),
        record: r,
    })
}

fn rendered(records: Vec<CallRecord>, format: QueryFormat) -> (u64, String) {
    let mut out = Vec::new();
    let n = query(records.into_iter().map(entry), format, Selection::default(), &mut out).unwrap();
    (n, String::from_utf8(out).unwrap())
}

#[test]
fn the_query_table_shows_each_record_with_its_deciding_policies() {
    let long = "a_tool_name_longer_than_its_column";
    let (n, text) = rendered(
        vec![
            record("create_issue", &["forbid-destructive", "default"]),
            record(long, &[]),
        ],
        QueryFormat::Table,
    );
    assert_eq!(n, 2);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(
        rows[0],
        "TIME                        SUBJECT          TEAM         SERVER       METHOD         NAME                     \
         DECISION      STATUS      MS       TOKENS   POLICIES"
    );
    assert_eq!(
        rows[1],
        "2027-01-15T08:00:00.000000Z -                -            github       tools/call     create_issue             \
         deny          200/-32602  1.2      29       forbid-destructive,default"
    );
    assert!(rows[2].contains(" a_tool_name_longer_than… "), "{}", rows[2]);
    assert!(rows[2].ends_with(" 29       -"), "{}", rows[2]);
}

#[test]
fn json_queries_print_the_stored_lines() {
    let (n, text) = rendered(vec![record("x", &[])], QueryFormat::Json);
    assert_eq!((n, text.as_str()), (1, "{\"stored\":true}\n"));
}

#[test]
fn csv_rows_limits_and_newest_first() {
    let records = || {
        ["first", "=second", "third"]
            .map(|n| record(n, &[]))
            .into_iter()
            .map(entry)
    };
    let mut out = Vec::new();
    let newest = Selection {
        limit: Some(2),
        newest_first: true,
    };
    let n = query(records(), QueryFormat::Csv, newest, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(n, 2);
    assert!(rows[0].starts_with("TIME,SUBJECT,TEAM,SERVER"), "{text}");
    assert!(rows[1].contains(",third,"), "newest first: {text}");
    assert!(rows[2].contains(",'=second,"), "a formula is neutralised: {text}");
    let mut out = Vec::new();
    let oldest = Selection {
        limit: Some(1),
        newest_first: false,
    };
    query(records(), QueryFormat::Json, oldest, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 1);
}

#[test]
fn a_read_error_stops_the_query() {
    let bad = Err(QueryError::Malformed {
        file: PathBuf::from("audit.jsonl"),
        line: 3,
        message: "eof".into(),
    });
    let mut out = Vec::new();
    let got = query(
        [entry(record("x", &[])), bad].into_iter(),
        QueryFormat::Json,
        Selection::default(),
        &mut out,
    );
    assert!(
        matches!(got, Err(RenderError::Read(QueryError::Malformed { line: 3, .. }))),
        "{got:?}"
    );
}

/// Three calls of a team whose name needs CSV quoting, one denied with an
/// error; one of payments.
fn report() -> UsageReport {
    let call = |team: &'static str, i: u64| UsageSample {
        team: Some(team),
        server: "github",
        bytes_in: 300,
        bytes_out: 4000,
        tokens: 1143,
        duration_us: 1000 + i,
        ..UsageSample::default()
    };
    let mut denied = call("search, \"eng\"", 8);
    (denied.denied, denied.error, denied.bytes_out, denied.tokens) = (true, true, 100, 29);
    usage(
        GroupBy::Team,
        [
            call("search, \"eng\"", 6),
            call("search, \"eng\"", 7),
            denied,
            call("payments", 0),
        ],
    )
}

#[test]
fn usage_tables_align_and_end_with_a_total() {
    let table = usage_table(&report());
    let want = "\
team           calls  errors  denied  bytes_in  bytes_out  tokens  catalog_tokens  p50_ms  p99_ms
search, \"eng\"      3       1       1       900       8100    2315               0     1.0     1.0
payments           1       0       0       300       4000    1143               0     1.0     1.0
TOTAL              4       1       1      1200      12100    3458               0     1.0     1.0
";
    assert_eq!(table, want);
}

#[test]
fn usage_csv_quotes_keys_and_ends_with_the_total() {
    let csv = usage_csv(&report()).unwrap();
    let want = "\
team,calls,errors,denied,bytes_in,bytes_out,tokens,catalog_tokens,p50_ms,p99_ms
\"search, \"\"eng\"\"\",3,1,1,900,8100,2315,0,1.0,1.0
payments,1,0,0,300,4000,1143,0,1.0,1.0
TOTAL,4,1,1,1200,12100,3458,0,1.0,1.0
";
    assert_eq!(csv, want);
}

#[test]
fn usage_json_is_the_report() {
    let json: serde_json::Value = serde_json::from_str(&usage_json(&report())).unwrap();
    assert_eq!(json["by"], "team");
    assert_eq!(json["total"]["calls"], 4);
    assert_eq!(json["rows"][0]["p99_us"], 1008);
    assert!(usage_json(&report()).ends_with("}\n"));
}

#[test]
fn usage_csv_neutralises_a_key_that_reads_as_a_formula() {
    let mut r = report();
    r.rows[0].key = "=HYPERLINK(\"http://evil.example\")".into();
    let csv = usage_csv(&r).unwrap();
    let row = csv.lines().nth(1).unwrap();
    assert!(
        row.starts_with("\"'=HYPERLINK(\"\"http://evil.example\"\")\","),
        "{csv}"
    );
}
