use super::*;

/// alice (payments) calls create_issue 6 times; bob (search) calls search
/// 3 times, one denied with a JSON-RPC error; carol (payments) lists tools
/// once. Durations are 1000 + i µs.
fn traffic() -> Vec<UsageSample<'static>> {
    let call = |i: u64, who: &'static str, team: &'static str, tool: &'static str| UsageSample {
        team: Some(team),
        cost_center: Some(if team == "payments" { "cc-payments" } else { "cc-search" }),
        subject: Some(who),
        server: if tool == "search" { "search" } else { "github" },
        name: Some(tool),
        method: Some("tools/call"),
        trace: Some(["t0", "t1", "t2", "t3", "t4"][(i / 2) as usize]),
        bytes_in: 300,
        bytes_out: 4000,
        tokens: 1143,
        duration_us: 1000 + i,
        ..UsageSample::default()
    };
    let mut out: Vec<UsageSample<'static>> = (0..6).map(|i| call(i, "alice", "payments", "create_issue")).collect();
    for i in 6..9 {
        let mut s = call(i, "bob", "search", "search");
        if i == 8 {
            (s.denied, s.error, s.bytes_out, s.tokens) = (true, true, 100, 29);
        }
        out.push(s);
    }
    let mut list = call(9, "carol", "payments", "x");
    (list.method, list.name, list.catalog, list.tokens) = (Some("tools/list"), None, true, 5000);
    out.push(list);
    out
}

#[test]
fn sums_and_percentiles_per_group() {
    let report = usage(GroupBy::Team, traffic());
    let payments = report.rows.iter().find(|r| r.key == "payments").unwrap();
    let search = report.rows.iter().find(|r| r.key == "search").unwrap();
    assert_eq!(
        (payments.calls, payments.tokens, payments.catalog_tokens),
        (7, 6 * 1143 + 5000, 5000)
    );
    assert_eq!((payments.bytes_in, payments.bytes_out), (7 * 300, 7 * 4000));
    assert_eq!((search.calls, search.errors, search.denied), (3, 1, 1));
    assert_eq!(search.tokens, 2 * 1143 + 29);
    assert_eq!((payments.p50_us, payments.p99_us), (1003, 1009));
    assert_eq!((search.p50_us, search.p99_us), (1007, 1008));
    assert_eq!((report.total.key.as_str(), report.total.calls), ("TOTAL", 10));
    assert_eq!((report.total.p50_us, report.total.p99_us), (1004, 1009));
}

#[test]
fn groups_are_keyed_and_sorted_by_tokens() {
    let tools = usage(GroupBy::Tool, traffic());
    let keys: Vec<&str> = tools.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["github/create_issue", "github/(tools/list)", "search/search"]);
    assert_eq!(usage(GroupBy::Trace, traffic()).rows.len(), 5);
    let cc = usage(GroupBy::CostCenter, traffic());
    assert!(cc.rows.iter().any(|r| r.key == "cc-payments"));
    let servers = usage(GroupBy::Server, traffic());
    assert_eq!(servers.rows.len(), 2);
    let anonymous = UsageSample {
        server: "docs",
        ..UsageSample::default()
    };
    for by in [GroupBy::Team, GroupBy::Subject, GroupBy::Tool, GroupBy::Trace] {
        assert_eq!(by.key(&anonymous), NONE_KEY, "{by:?}");
    }
    // Equal tokens: by key.
    let tie = usage(
        GroupBy::Server,
        [
            anonymous,
            UsageSample {
                server: "a",
                ..anonymous
            },
        ],
    );
    assert_eq!(tie.rows[0].key, "a");
}

#[test]
fn an_empty_report_has_a_zero_total() {
    let report = usage(GroupBy::Team, []);
    assert!(report.rows.is_empty());
    assert_eq!(
        (report.total.calls, report.total.p50_us, report.total.p99_us),
        (0, 0, 0)
    );
}

#[test]
fn the_report_serializes_as_documented() {
    let report = usage(GroupBy::CostCenter, traffic().into_iter().take(1));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["by"], "cost_center");
    // Fields in declaration order (the JSON output is documented so).
    let row = serde_json::to_string(&report.rows[0]).unwrap();
    let fields = [
        "key",
        "calls",
        "errors",
        "denied",
        "bytes_in",
        "bytes_out",
        "tokens",
        "catalog_tokens",
        "p50_us",
        "p99_us",
        "cost",
    ];
    let at: Vec<usize> = fields.iter().map(|f| row.find(&format!("\"{f}\":")).unwrap()).collect();
    assert!(at.is_sorted(), "{row}");
    assert_eq!(json["rows"][0].as_object().unwrap().len(), fields.len());
    assert_eq!(json["total"]["key"], "TOTAL");
}

#[test]
fn groupings_parse_and_name_themselves() {
    assert_eq!("cost-center".parse::<GroupBy>(), Ok(GroupBy::CostCenter));
    assert_eq!("cost_centre".parse::<GroupBy>(), Ok(GroupBy::CostCenter));
    assert_eq!("user".parse::<GroupBy>(), Ok(GroupBy::Subject));
    assert_eq!("route".parse::<GroupBy>(), Ok(GroupBy::Server));
    let err = "colour".parse::<GroupBy>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "\"colour\": use team, cost_center, subject, server, tool or trace"
    );
    for by in [
        GroupBy::Team,
        GroupBy::CostCenter,
        GroupBy::Subject,
        GroupBy::Server,
        GroupBy::Tool,
        GroupBy::Trace,
    ] {
        assert_eq!(serde_json::to_value(by).unwrap(), by.as_str());
        assert_eq!(by.as_str().parse::<GroupBy>(), Ok(by));
    }
}

#[test]
fn sums_and_duration_buckets_make_the_report_samples_make() {
    // 3,000 calls of one team at two prices, 10 of another: the big group
    // arrives as sums and bucket counts, the small one as exact values.
    let mut samples = Vec::new();
    for i in 0..3000u64 {
        samples.push(UsageSample {
            team: Some("big"),
            tokens: 100 + i % 7,
            duration_us: 500 + (i * 7919) % 20_000,
            per_million: if i % 3 == 0 { 12.0 } else { 3.0 },
            catalog: i % 10 == 0,
            error: i % 97 == 0,
            ..UsageSample::default()
        });
    }
    for i in 0..10u64 {
        samples.push(UsageSample {
            team: None,
            tokens: 9,
            duration_us: 40 + i,
            ..UsageSample::default()
        });
    }
    let expected = usage(GroupBy::Team, samples.iter().copied());
    let mut summed = Usage::new(GroupBy::Team);
    let mut buckets = std::collections::BTreeMap::new();
    for s in &samples {
        summed.add_sums(
            s.team,
            &UsageSums {
                calls: 1,
                errors: u64::from(s.error),
                tokens: s.tokens,
                catalog_tokens: if s.catalog { s.tokens } else { 0 },
                per_million: s.per_million,
                ..UsageSums::default()
            },
        );
        match s.team {
            Some(team) => {
                *buckets
                    .entry((team, crate::duration_bucket(s.duration_us)))
                    .or_insert(0u64) += 1
            }
            None => summed.add_duration(None, s.duration_us),
        }
    }
    for ((team, bucket), n) in buckets {
        summed.add_duration_bucket(Some(team), bucket, n);
    }
    assert_eq!(summed.finish(), expected);
    assert!(expected.rows[0].cost > 0.0);
}
