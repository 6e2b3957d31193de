//! Queries and usage reports over a trail written by the sink: filters,
//! field-by-field round trip, sums and percentiles, renderings.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod common;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use common::{call, principal, settings};
use tollgate_audit::{
    AuditSink, CallRecord, Capture, Filter, GroupBy, Outcome, Phase, QueryFormat, parse_time, query, render_query,
    usage,
};

/// alice (payments) calls create_issue 6 times; bob (search) calls search
/// 3 times, one denied; carol (payments) lists tools once; one strict
/// `forwarding` record that must not count twice.
fn traffic() -> Vec<CallRecord> {
    let alice = principal("alice", "payments");
    let bob = principal("bob", "search");
    let carol = principal("carol", "payments");
    let mut out: Vec<CallRecord> = (0..6).map(|i| call(i, &alice, "create_issue")).collect();
    for i in 6..9 {
        let mut r = call(i, &bob, "search");
        r.route = "search".into();
        if i == 8 {
            r.decision.outcome = Outcome::Deny;
            r.status = Some(200);
            r.rpc_error = Some(-32602);
            r.bytes_out = 100;
            r.tokens = 29;
        }
        out.push(r);
    }
    let mut list = call(9, &carol, "x");
    list.method = Some("tools/list".into());
    list.name = None;
    list.catalog = true;
    list.tokens = 5000;
    out.push(list);
    let mut fwd = call(10, &alice, "create_issue");
    fwd.phase = Phase::Forwarding;
    out.push(fwd);
    out
}

fn trail() -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = AuditSink::start(settings(dir.path())).unwrap();
    for (i, mut r) in traffic().into_iter().enumerate() {
        if i == 1 {
            r.capture = Some(Box::new(Capture {
                arguments: Some(serde_json::json!({"title": "bug", "token": "[redacted]"})),
                result: None,
                truncated: false,
            }));
        }
        let _ = handle.record(r);
    }
    worker.close_blocking().unwrap();
    let paths = vec![dir.path().to_owned()];
    (dir, paths)
}

fn found(paths: &[PathBuf], filter: Filter) -> Vec<String> {
    query(paths, filter)
        .unwrap()
        .map(|e| e.unwrap().record.request_id)
        .collect()
}

#[test]
fn every_field_survives_the_trail() {
    let (_dir, paths) = trail();
    let mut want = traffic();
    want[1].capture = Some(Box::new(Capture {
        arguments: Some(serde_json::json!({"title": "bug", "token": "[redacted]"})),
        result: None,
        truncated: false,
    }));
    let got: Vec<CallRecord> = query(&paths, Filter::default())
        .unwrap()
        .map(|e| e.unwrap().record)
        .collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        // Principal: scopes and expiry are deliberately not recorded.
        let (gp, wp) = (g.principal.as_deref().unwrap(), w.principal.as_deref().unwrap());
        assert_eq!(
            (
                &gp.issuer,
                &gp.subject,
                &gp.client_id,
                &gp.token_id,
                &gp.groups,
                &gp.team,
                &gp.cost_center
            ),
            (
                &wp.issuer,
                &wp.subject,
                &wp.client_id,
                &wp.token_id,
                &wp.groups,
                &wp.team,
                &wp.cost_center
            )
        );
        assert_eq!(gp.audience, wp.audience);
        let mut g = g.clone();
        g.principal = w.principal.clone();
        assert_eq!(&g, w);
    }
}

#[test]
fn filters_select_records() {
    let (_dir, paths) = trail();
    let all = found(&paths, Filter::default());
    assert_eq!(all.len(), 11);
    let by = |f: Filter| found(&paths, f);
    assert_eq!(
        by(Filter {
            subject: Some("bob".into()),
            ..Filter::default()
        }),
        ["req-6", "req-7", "req-8"]
    );
    assert_eq!(
        by(Filter {
            team: Some("payments".into()),
            ..Filter::default()
        })
        .len(),
        8
    );
    assert_eq!(
        by(Filter {
            server: Some("search".into()),
            ..Filter::default()
        })
        .len(),
        3
    );
    assert_eq!(
        by(Filter {
            tool: Some("search".into()),
            ..Filter::default()
        })
        .len(),
        3
    );
    assert_eq!(
        by(Filter {
            decision: Some(Outcome::Deny),
            ..Filter::default()
        }),
        ["req-8"]
    );
    assert_eq!(
        by(Filter {
            trace: Some(format!("{:032x}", 2)),
            ..Filter::default()
        }),
        ["req-4", "req-5"]
    );
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let window = Filter {
        since: Some(t0 + Duration::from_secs(2)),
        until: Some(t0 + Duration::from_secs(4)),
        ..Filter::default()
    };
    assert_eq!(by(window), ["req-2", "req-3"]);
}

#[test]
fn usage_sums_match_the_traffic() {
    let (_dir, paths) = trail();
    let report = usage(&paths, GroupBy::Team, None, None).unwrap();
    let payments = report.rows.iter().find(|r| r.key == "payments").unwrap();
    let search = report.rows.iter().find(|r| r.key == "search").unwrap();
    assert_eq!(
        (payments.calls, payments.tokens, payments.catalog_tokens),
        (7, 6 * 1143 + 5000, 5000)
    );
    assert_eq!((payments.bytes_in, payments.bytes_out), (7 * 300, 7 * 4000));
    assert_eq!((search.calls, search.errors, search.denied), (3, 1, 1));
    assert_eq!(search.tokens, 2 * 1143 + 29);
    assert_eq!(report.total.calls, 10);
    // Durations are 1000 + i µs.
    assert_eq!((payments.p50_us, payments.p99_us), (1003, 1009));

    let tools = usage(&paths, GroupBy::Tool, None, None).unwrap();
    let keys: Vec<&str> = tools.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["create_issue", "(tools/list)", "search"]);
    let traces = usage(&paths, GroupBy::Trace, None, None).unwrap();
    assert_eq!(traces.rows.len(), 5);
    let cc = usage(&paths, GroupBy::CostCenter, None, None).unwrap();
    assert!(cc.rows.iter().any(|r| r.key == "cc-payments"));
    let since = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_006);
    assert_eq!(
        usage(&paths, GroupBy::Subject, Some(since), None).unwrap().total.calls,
        4
    );
}

#[test]
fn reports_render_as_table_csv_and_json() {
    let (_dir, paths) = trail();
    let report = usage(&paths, GroupBy::Team, None, None).unwrap();
    let table = report.to_table();
    assert!(table.lines().next().unwrap().starts_with("team"), "{table}");
    assert!(table.lines().last().unwrap().starts_with("TOTAL"), "{table}");
    let csv = report.to_csv();
    assert_eq!(
        csv.lines().next().unwrap(),
        "team,calls,errors,denied,bytes_in,bytes_out,tokens,catalog_tokens,p50_ms,p99_ms"
    );
    assert!(csv.contains("\nsearch,3,1,1,900,8100,2315,0,1.0,1.0\n"), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["by"], "team");
    assert_eq!(json["total"]["calls"], 10);

    let mut out = Vec::new();
    let filter = Filter {
        decision: Some(Outcome::Deny),
        ..Filter::default()
    };
    let n = render_query(query(&paths, filter.clone()).unwrap(), QueryFormat::Table, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(n, 1);
    assert!(
        text.contains("bob") && text.contains("deny") && text.contains("200/-32602"),
        "{text}"
    );
    let mut out = Vec::new();
    render_query(query(&paths, filter).unwrap(), QueryFormat::Json, &mut out).unwrap();
    let line: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(line["kind"], "call");
    assert_eq!(line["decision"]["outcome"], "deny");
}

#[test]
fn time_arguments_accept_dates_timestamps_and_spans() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    assert_eq!(parse_time("7d", now).unwrap(), now - Duration::from_secs(7 * 86400));
    let day = parse_time("2027-01-15", now).unwrap();
    assert_eq!(
        humantime::format_rfc3339_seconds(day).to_string(),
        "2027-01-15T00:00:00Z"
    );
    assert!(parse_time("2027-01-15T10:00:00Z", now).is_ok());
    assert!(parse_time("yesterday", now).unwrap_err().contains("7d"));
    assert_eq!("cost-center".parse::<GroupBy>(), Ok(GroupBy::CostCenter));
}
