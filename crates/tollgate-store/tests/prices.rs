//! Prices applied in SQL agree with the gateway's own matching
//! (`Prices::per_million`) on a real PostgreSQL: routes, virtual servers,
//! exposed names, patterns with `*`, and names holding `_` and `%`, which
//! `LIKE` would otherwise read as wildcards.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{PostgresServer, migrated};
use tollgate_config::Price;
use tollgate_limit::{Priced, Prices};
use tollgate_meter::GroupBy;
use tollgate_store::UsageQuestion;

/// Calls: route, virtual server, name, exposed name.
const CALLS: [(&str, Option<&str>, &str, Option<&str>); 9] = [
    ("github", None, "search_code", None),
    ("github", None, "searchXcode", None),
    ("github", None, "create_issue", None),
    ("jira", None, "50%_off", None),
    ("jira", None, "5000_off", None),
    ("jira", Some("workspace"), "x", Some("jira_x")),
    ("docs", None, "a*b", None),
    ("docs", None, "aXYb", None),
    ("docs", None, "a\\b", None),
];

#[tokio::test]
async fn spend_priced_in_sql_is_priced_as_the_gateway_prices() {
    let pg = PostgresServer::start().await;
    let store = migrated(&pg).await;
    let rows: Vec<String> = CALLS
        .iter()
        .enumerate()
        .map(|(i, (route, via, name, exposed))| {
            let text = |v: Option<&str>| v.map_or("NULL".to_owned(), |v| format!("'{}'", v.replace('\'', "''")));
            format!(
                "('epoch', 'r', 'f', {i}, {}, {}, {}, {}, false, false, false, 1000000, 0, 0, 0, 0)",
                text(Some(route)),
                text(*via),
                text(Some(name)),
                text(*exposed)
            )
        })
        .collect();
    pg.psql(&format!(
        "CREATE TABLE audit_usage_1970_01 PARTITION OF audit_usage FOR VALUES FROM ('1970-01-01') TO ('1970-02-01'); \
         INSERT INTO audit_usage (time, replica, file, line_no, route, virtual_server, name, exposed_name, catalog, \
         failed, denied, tokens, bytes_in, bytes_out, duration_us, bucket) VALUES {}",
        rows.join(", ")
    ))
    .await;
    let prices = Prices::new(
        vec![
            Price::new(&["github"], &["search_*"], 10.0),
            Price::new(&[], &["50%_off"], 5.0),
            Price::new(&["workspace"], &[], 2.0),
            Price::new(&["docs"], &["a*b"], 7.0),
            Price::new(&["github"], &[], 1.0),
        ],
        "EUR",
    );
    let question = UsageQuestion {
        by: GroupBy::Tool,
        since: None,
        until: None,
        step: Some(86_400),
    };
    let (report, series) = store.usage(question, &prices).await.unwrap();
    let mut total = 0.0;
    for (route, via, name, exposed) in CALLS {
        let call = Priced {
            route,
            via,
            name: Some(name),
            exposed,
        };
        let want = prices.per_million(&call).unwrap_or(0.0);
        let key = format!("{route}/{name}");
        let row = report.rows.iter().find(|r| r.key == key).unwrap();
        assert!(
            (row.cost - want).abs() < 1e-9,
            "{key}: {} in SQL, {want} in the gateway",
            row.cost
        );
        total += want;
    }
    assert_eq!(series.len(), 1);
    assert!((series[0].cost - total).abs() < 1e-9, "{series:?} vs {total}");
}
