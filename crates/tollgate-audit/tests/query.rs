//! Queries over a trail written by the sink: filters and the field-by-field
//! round trip. (Usage sums are `tollgate-meter`'s; the binary's tests
//! render both.)

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod common;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use common::{call, principal, settings};
use tollgate_audit::{AuditSink, CallRecord, Capture, Filter, Outcome, Phase, parse_time, query};

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
    assert_eq!(
        by(Filter {
            status: Some(200),
            ..Filter::default()
        })
        .len(),
        11
    );
    assert!(
        by(Filter {
            status: Some(404),
            ..Filter::default()
        })
        .is_empty()
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
}
