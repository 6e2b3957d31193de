//! Token budgets through the real gateway in front of the demo server,
//! with real signed tokens: the tokens left come back on every answer, a
//! call past the warning share is flagged in the audit trail, and once the
//! team's budget is spent its calls are refused with the documented error
//! while another team's still go.

use serde_json::json;
use tollgate_e2e::audit_support::{metric, tokens, tool, wait_record};
use tollgate_e2e::children::tollgate_cli;
use tollgate_e2e::{Demo, TestGateway, TestIssuer};

#[tokio::test]
async fn a_team_budget_counts_answers_warns_then_refuses_until_the_period_ends() {
    let issuer = TestIssuer::new();
    let demo = Demo::spawn().await;
    let mut gw = TestGateway::spawn(&format!(
        "{}\n[limits]\ntime_zone = \"Europe/Berlin\"\ncurrency = \"EUR\"\n\n\
         [[limits.prices]]\nroutes = [\"demo\"]\ntools = [\"ec*\"]\nper_million_tokens = 2500.0\n\n\
         [[limits.budgets]]\nid = \"payments-monthly\"\nper = \"team\"\nkeys = [\"payments\"]\n\
         period = \"month\"\ntokens = 400\nwarn_at = 0.5\n\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n",
        issuer.config(),
        demo.url
    ))
    .await;
    // TestIssuer tokens carry the team "payments".
    let alice = issuer.token("alice", &["mcp:tools"], &["demo"]);
    let text = "x".repeat(300);

    let first = tool(gw.url("demo"), &alice, 1, "echo", json!({"text": text})).await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.budget_remaining, Some(400), "left before this answer");
    let rec = wait_record(&gw.audit_dir(), &first).await;
    assert!(!rec.budget_warning && rec.budget.is_none(), "{rec:?}");
    let spent = tokens(first.received());
    assert_eq!(rec.tokens, spent);

    // The answer's tokens were added when it ended.
    let mut second = tool(gw.url("demo"), &alice, 2, "echo", json!({"text": text})).await;
    for i in 0..20 {
        if second.budget_remaining == Some(400 - spent) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        second = tool(gw.url("demo"), &alice, 10 + i, "echo", json!({"text": text})).await;
    }
    assert_eq!(second.status, 200);
    let left = second.budget_remaining.unwrap();
    assert!(left < 400, "{second:?}");

    // Spend on until refused: past half, calls are flagged; at the cap, refused.
    let mut refused = None;
    let mut warned = false;
    for i in 0..40 {
        let ex = tool(gw.url("demo"), &alice, 100 + i, "echo", json!({"text": text})).await;
        if ex.status == 429 {
            refused = Some(ex);
            break;
        }
        let rec = wait_record(&gw.audit_dir(), &ex).await;
        warned |= rec.budget_warning && rec.budget.as_deref() == Some("payments-monthly");
    }
    assert!(warned, "a call past the warning share is flagged");
    let refused = refused.expect("the budget runs out");
    let m = refused.message();
    assert_eq!(m["error"]["code"], -32030, "{m}");
    assert_eq!(m["error"]["message"], "Budget exhausted: payments-monthly");
    assert_eq!(m["error"]["data"]["budget"], "payments-monthly");
    assert!(m["error"]["data"]["retryAfter"].as_u64().unwrap() > 0);
    assert!(m["error"]["data"]["resetsAt"].as_str().unwrap().ends_with('Z'));
    let rec = wait_record(&gw.audit_dir(), &refused).await;
    assert_eq!(rec.error.as_deref(), Some("budget_exhausted"));
    assert_eq!(rec.budget.as_deref(), Some("payments-monthly"));

    let m = gw.metrics().await;
    let labels = [("budget", "payments-monthly"), ("key", "payments")];
    assert!(metric(&m, "tollgate_budget_spent_tokens", &labels) >= 400.0);
    assert_eq!(metric(&m, "tollgate_budget_limit_tokens", &labels), 400.0);

    // Finance's view, from the audit trail: `tollgate usage --budgets`.
    gw.shutdown().await;
    let config = gw.dir.path().join("test.toml");
    let dir = gw.audit_dir().display().to_string();
    let args = [
        "usage",
        &dir,
        "--budgets",
        "--config",
        config.to_str().unwrap(),
        "--format",
        "json",
    ];
    let out = tollgate_cli(&args).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &report["budgets"][0];
    assert_eq!(
        (row["budget"].as_str(), row["key"].as_str()),
        (Some("payments-monthly"), Some("payments"))
    );
    assert_eq!(
        (row["period"].as_str(), row["tokens"].as_u64()),
        (Some("month"), Some(400))
    );
    assert!(row["spent"].as_u64().unwrap() >= 400, "{report}");
    assert_eq!(row["remaining"], 0);
    assert!(row["projected"].as_u64().unwrap() >= row["spent"].as_u64().unwrap());
    // Priced at 2500 EUR per million tokens (every call here is `echo`).
    let spent = row["spent"].as_f64().unwrap();
    assert_eq!(row["currency"], "EUR");
    assert!(
        (row["cost"].as_f64().unwrap() - spent * 2500.0 / 1e6).abs() < 1e-6,
        "{report}"
    );
    let out = tollgate_cli(&args[..5]).await;
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.lines().next().unwrap().ends_with("COST EUR"), "{table}");

    // `tollgate usage --by team --config` prices each group too.
    let by_team = ["usage", &dir, "--by", "team", "--config", config.to_str().unwrap()];
    let out = tollgate_cli(&by_team).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header.last(), Some(&"cost_eur"), "{table}");
    let total = table.lines().find(|l| l.starts_with("TOTAL")).unwrap();
    let cost: f64 = total.split_whitespace().last().unwrap().parse().unwrap();
    assert!(cost >= spent * 2500.0 / 1e6 - 0.01, "{table}");
}
