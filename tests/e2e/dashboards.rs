//! The Grafana dashboard (`deploy/grafana/tollgate.json`) and the alert
//! rules (`deploy/prometheus/tollgate-alerts.yml`) against a real
//! Prometheus scraping a real gateway under traffic: every panel's query
//! returns series, every alert rule loads, evaluates and reads metrics the
//! gateway exports (no panel or alert silently empty because a metric was
//! renamed), and the alerts' `promtool` unit tests pass. Without a
//! gateway: every alert has a description, a runbook section in
//! `docs/operations.md` that its `runbook_url` names, and a unit test that
//! makes it fire.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;
use tollgate_e2e::audit_support::{demo_gateway, token, tool};
use tollgate_e2e::children::{RedisServer, free_port, wait_for_port};
use tollgate_e2e::{Demo, TestIssuer, get_json, http, repo_root};

/// Everything the dashboard shows: a catalog gate in observe mode, a rate
/// limit and a budget counted in Redis, a virtual server, and a route whose
/// upstream is down.
fn extra(redis: &RedisServer) -> String {
    format!(
        "[catalog]\nmode = \"observe\"\n\n\
         [limits.redis]\nurl = \"{}\"\n\n\
         [[limits.rules]]\nid = \"add-per-user\"\ntools = [\"add\"]\nrate = 1\nperiod = \"1m\"\n\n\
         [[limits.budgets]]\nid = \"payments-daily\"\nper = \"team\"\nperiod = \"day\"\ntokens = 100000000\n\n\
         [[virtual_servers]]\nname = \"workbench\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n\n\
         [[virtual_servers.members]]\nserver = \"demo\"\n",
        redis.url()
    )
}

const DOWN: &str =
    "[[servers]]\nname = \"down\"\nurl = \"http://127.0.0.1:1/mcp\"\nauth = { scopes = [\"mcp:tools\"] }\n";

/// A Prometheus on loopback scraping `target` every second and evaluating
/// the alert rules; killed on drop.
struct Prometheus {
    url: String,
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    async fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let rules = repo_root().join("deploy/prometheus/tollgate-alerts.yml");
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\n\
             scrape_configs:\n  - job_name: tollgate\n    static_configs:\n      - targets: [\"{target}\"]\n",
            rules.display()
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("prometheus on PATH (scripts/install-test-deps.sh installs it)");
        wait_for_port(port).await;
        let prometheus = Prometheus {
            url: format!("http://127.0.0.1:{port}"),
            _child: child,
            _dir: dir,
        };
        prometheus.scraping().await;
        prometheus
    }

    /// Wait until Prometheus is ready (its port opens before its storage
    /// is, and queries until then are answered in plain text), then for
    /// the first good scrape (target discovery takes a few seconds).
    async fn scraping(&self) {
        let ready = format!("{}/-/ready", self.url);
        for _ in 0..150 {
            if http().get(&ready).send().await.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for _ in 0..150 {
            if !self.query("up == 1").await.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("prometheus never scraped the gateway");
    }

    /// The result vector of an instant query.
    async fn query(&self, expr: &str) -> Vec<Value> {
        let query = http()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", expr)]);
        let res: Value = query.send().await.unwrap().json().await.unwrap();
        assert_eq!(res["status"], "success", "{expr}: {res}");
        res["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// Each metric's type as the gateway's `# TYPE` lines declare it.
    async fn metric_types(&self) -> std::collections::BTreeMap<String, String> {
        let res = get_json(&format!("{}/api/v1/metadata", self.url)).await;
        let data = res["data"].as_object().cloned().unwrap_or_default();
        data.into_iter()
            .map(|(name, entries)| (name, entries[0]["type"].as_str().unwrap().to_owned()))
            .collect()
    }

    /// The alerting rules as Prometheus loaded them.
    async fn rules(&self) -> Vec<Value> {
        let res = get_json(&format!("{}/api/v1/rules", self.url)).await;
        let groups = res["data"]["groups"].as_array().cloned().unwrap_or_default();
        groups
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect()
    }
}

/// The dashboard's variables, each with the value Grafana gives it when
/// "All" is selected (its `allValue`).
const VARIABLES: [&str; 3] = ["instance", "route", "virtual_server"];

/// deploy/grafana/tollgate.json.
fn dashboard() -> Value {
    let text = std::fs::read_to_string(repo_root().join("deploy/grafana/tollgate.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every panel query of the dashboard as written (rows hold none).
fn raw_queries() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard()["panels"].as_array().unwrap() {
        let targets = panel["targets"].as_array().cloned().unwrap_or_default();
        assert!(
            panel["type"] == "row" || !targets.is_empty(),
            "{}: no query",
            panel["title"]
        );
        for target in targets {
            let expr = target["expr"].as_str().unwrap().to_owned();
            out.push((panel["title"].as_str().unwrap().to_owned(), expr));
        }
    }
    out
}

/// Every panel query of the dashboard, with Grafana's rate interval, its
/// time range and the variables' "All" filled in.
fn dashboard_queries() -> Vec<(String, String)> {
    raw_queries()
        .into_iter()
        .map(|(title, expr)| {
            let mut expr = expr.replace("$__rate_interval", "20s").replace("$__range", "1h");
            for var in VARIABLES {
                expr = expr.replace(&format!("${var}"), ".*");
            }
            (title, expr)
        })
        .collect()
}

/// The metrics `rate(`, `irate(` and `increase(` are applied to in `expr`.
fn rated_metrics(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for function in ["rate(", "increase("] {
        for (at, _) in expr.match_indices(function) {
            let rest = expr[at + function.len()..].trim_start();
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.insert(rest[..len].to_owned());
        }
    }
    out
}

/// The metric names an expression reads.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &expr[i..];
        let starts = rest.starts_with("tollgate_") || rest.starts_with("mcp_");
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts && boundary {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            names.insert(rest[..len].to_owned());
            i += len;
        } else {
            i += 1;
        }
    }
    names
}

/// Calls that leave every kind of series behind: answered, denied, rate
/// limited, refused by a dead upstream, on a gated catalog.
async fn traffic(gw: &tollgate_e2e::TestGateway, alice: &str) {
    for id in 0..5 {
        let ex = tool(gw.url("demo"), alice, id, "echo", json!({"text": "hello"})).await;
        assert_eq!(ex.status, 200, "{ex:?}");
    }
    let denied = tool(gw.url("demo"), alice, 10, "delete_item", json!({"id": "x"})).await;
    assert_eq!(denied.status, 403, "{denied:?}");
    for id in 20..22 {
        tool(gw.url("demo"), alice, id, "add", json!({"a": 1, "b": 2})).await;
    }
    let down = tool(gw.url("down"), alice, 30, "echo", json!({"text": "x"})).await;
    assert_eq!(down.status, 502, "{down:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_query_and_alert_expression_finds_the_gateways_series() {
    let issuer = TestIssuer::new();
    let demo = Demo::spawn().await;
    let redis = RedisServer::start(None).await;
    let (gw, _policies) = demo_gateway(&issuer, &demo, &extra(&redis), DOWN).await;
    let alice = token(&issuer, "alice", "payments", &["eng"]);
    let prometheus = Prometheus::start(gw.admin.trim_start_matches("http://")).await;

    // Traffic over several scrapes, so that rates have samples to work on.
    for _ in 0..4 {
        traffic(&gw, &alice).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }

    let mut empty = Vec::new();
    for (title, expr) in dashboard_queries() {
        if prometheus.query(&expr).await.is_empty() {
            empty.push(format!("{title}: {expr}"));
        }
    }
    assert!(empty.is_empty(), "panels without series:\n{}", empty.join("\n"));

    let types = prometheus.metric_types().await;
    for (title, expr) in dashboard_queries() {
        for name in rated_metrics(&expr) {
            let base = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|b| types.get(*b).is_some_and(|t| t == "histogram"))
                .unwrap_or(&name);
            let kind = types.get(base).map(String::as_str);
            assert!(
                matches!(kind, Some("counter" | "histogram")),
                "{title}: rate() of {name}, which the gateway exports as {kind:?}"
            );
        }
        // A counter shown as it is would be a total since the replica
        // started: panels read counters through rate() or increase().
        let rated = rated_metrics(&expr);
        for name in metric_names(&expr) {
            let counter = types.get(&name).is_some_and(|t| t == "counter");
            assert!(
                !counter || rated.contains(&name),
                "{title}: {name} is a counter, read without rate()"
            );
        }
    }

    let rules = prometheus.rules().await;
    assert_eq!(rules.len(), alert_rules().len(), "every alert rule loaded: {rules:#?}");
    let mut missing = BTreeSet::new();
    for rule in &rules {
        let query = rule["query"].as_str().unwrap();
        assert_ne!(rule["health"], "err", "{rule:#}");
        // Exported only with a fleet store (`[store] postgres`), a
        // checkpoint key (tests/e2e/fleet.rs reads them from replicas that
        // have one) or a TLS listener (tests/e2e/limits/tls.rs).
        const ELSEWHERE: [&str; 3] = [
            "tollgate_store_ship_lag_seconds",
            "tollgate_audit_checkpoints_total",
            "tollgate_tls_certificate_expiry_timestamp_seconds",
        ];
        for name in metric_names(query)
            .into_iter()
            .filter(|n| !ELSEWHERE.contains(&n.as_str()))
        {
            let series = prometheus.query(&format!("count({{__name__=\"{name}\"}})")).await;
            if series.is_empty() {
                missing.insert(format!("{}: {name}", rule["name"].as_str().unwrap()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "alerts reading metrics the gateway does not export:\n{missing:#?}"
    );
}

#[tokio::test]
async fn the_alert_rules_pass_their_promtool_unit_tests() {
    let dir = repo_root().join("deploy/prometheus");
    for args in [
        ["check", "rules", "tollgate-alerts.yml"],
        ["test", "rules", "tollgate-alerts.test.yml"],
    ] {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .await
            .expect("promtool on PATH (scripts/install-test-deps.sh installs it)");
        assert!(
            out.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A YAML file of the repository as JSON (through the test venv's PyYAML).
fn yaml_file(relative: &str) -> Value {
    const SCRIPT: &str = "import json, sys, yaml\njson.dump(yaml.safe_load(sys.stdin), sys.stdout)\n";
    let python = repo_root().join("tests/fixtures/py/.venv/bin/python");
    let input = std::fs::File::open(repo_root().join(relative)).unwrap();
    let out = std::process::Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(input)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/install-test-deps.sh)", python.display()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every alerting rule of deploy/prometheus/tollgate-alerts.yml.
fn alert_rules() -> Vec<Value> {
    let file = yaml_file("deploy/prometheus/tollgate-alerts.yml");
    let groups = file["groups"].as_array().unwrap();
    groups
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().clone())
        .collect()
}

/// GitHub's anchor for a Markdown heading's text.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn every_alert_has_a_description_and_a_runbook_section() {
    let doc = std::fs::read_to_string(repo_root().join("docs/operations.md")).unwrap();
    let anchors: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect();
    let mut alerts = BTreeSet::new();
    for rule in alert_rules() {
        let name = rule["alert"].as_str().unwrap();
        let annotations = &rule["annotations"];
        for key in ["summary", "description"] {
            let text = annotations[key].as_str().unwrap_or_default();
            assert!(text.len() > 20, "{name}: no {key}");
        }
        let url = annotations["runbook_url"].as_str().unwrap_or_default();
        let expected = format!("docs/operations.md#{}", anchor(name));
        assert_eq!(url, expected, "{name}: runbook_url");
        assert!(
            anchors.contains(&anchor(name)),
            "docs/operations.md has no section {name} for the runbook_url"
        );
        alerts.insert(name.to_owned());
    }
    let alerts_section = &doc[doc.find("\n## Alerts\n").unwrap()..];
    let alerts_section = &alerts_section[..alerts_section[1..].find("\n## ").unwrap()];
    let sections: BTreeSet<String> = alerts_section
        .lines()
        .filter_map(|l| l.strip_prefix("### Tollgate"))
        .map(|l| format!("Tollgate{l}"))
        .collect();
    assert_eq!(sections, alerts, "docs/operations.md's runbooks and the alerts");
}

#[test]
fn every_alert_has_a_unit_test_that_fires_it() {
    let tests = yaml_file("deploy/prometheus/tollgate-alerts.test.yml");
    let mut fired = BTreeSet::new();
    for case in tests["tests"].as_array().unwrap() {
        for check in case["alert_rule_test"].as_array().unwrap() {
            if check["exp_alerts"].as_array().is_some_and(|a| !a.is_empty()) {
                fired.insert(check["alertname"].as_str().unwrap().to_owned());
            }
        }
    }
    let alerts: BTreeSet<String> = alert_rules()
        .iter()
        .map(|r| r["alert"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fired, alerts, "tollgate-alerts.test.yml: a case that fires each alert");
}

/// docs/metrics.md's tables: each metric's labels.
fn documented_labels() -> std::collections::BTreeMap<String, Vec<String>> {
    let doc = std::fs::read_to_string(repo_root().join("docs/metrics.md")).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 5 {
            continue;
        }
        let Some(name) = cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`')) else {
            continue;
        };
        if !["counter", "gauge", "histogram"].contains(&cells[2]) {
            continue;
        }
        let labels = cells[3]
            .split(',')
            .filter_map(|l| l.trim().strip_prefix('`')?.strip_suffix('`'))
            .map(str::to_owned)
            .collect();
        out.insert(name.to_owned(), labels);
    }
    out
}

#[test]
fn the_dashboard_has_rows_stat_panels_and_filters_by_its_variables() {
    let dashboard = dashboard();
    let variables: Vec<&str> = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["type"] == "query")
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(variables, VARIABLES);
    for var in dashboard["templating"]["list"].as_array().unwrap().iter().skip(1) {
        assert_eq!(var["allValue"], ".*", "{}: All must match every series", var["name"]);
    }
    let panels = dashboard["panels"].as_array().unwrap();
    assert_eq!(panels[0]["type"], "row", "every panel sits in a row");
    let rows = panels.iter().filter(|p| p["type"] == "row").count();
    let stats = panels.iter().filter(|p| p["type"] == "stat").count();
    assert!(rows >= 6 && stats >= 6, "{rows} rows, {stats} stat panels");
    let mut ids = BTreeSet::new();
    let mut last_y = 0;
    for panel in panels {
        assert!(ids.insert(panel["id"].as_u64().unwrap()), "id {} twice", panel["id"]);
        let y = panel["gridPos"]["y"].as_u64().unwrap();
        assert!(y >= last_y, "{}: panels in reading order", panel["title"]);
        last_y = y;
    }
    let labels = documented_labels();
    for (title, expr) in raw_queries() {
        let is_label = |name: &str| {
            expr.match_indices(name)
                .all(|(at, _)| expr[at + name.len()..].trim_start().starts_with(['=', '!']))
        };
        for name in metric_names(&expr).into_iter().filter(|n| !is_label(n)) {
            let base = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|b| labels.contains_key(*b))
                .unwrap_or(&name);
            let own = labels
                .get(base)
                .unwrap_or_else(|| panic!("{title}: {name} is not in docs/metrics.md"));
            for var in VARIABLES {
                let applies = var == "instance" || own.iter().any(|l| l == var);
                let filter = format!("{var}=~\"${var}\"");
                let every = expr.match_indices(name.as_str()).all(|(at, _)| {
                    expr[at + name.len()..].starts_with('{') && {
                        let selector = &expr[at..];
                        selector[..selector.find('}').unwrap()].contains(&filter)
                    }
                });
                assert!(!applies || every, "{title}: {name} is not filtered by ${var}");
            }
        }
    }
}
