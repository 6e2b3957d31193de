//! Approving a quarantined tool in the console makes it callable; every
//! approval and export is an audit record naming who did it.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::CONTENT_DISPOSITION;
use serde_json::json;
use tollgate_audit::Phase;

use crate::{Rig, admin_records, indexed};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_makes_the_tool_callable_and_is_recorded() {
    let rig = Rig::start().await;
    let refused = rig.call(1, "get_weather", json!({"city": "Oslo"})).await;
    assert_eq!(
        refused.message()["error"]["code"],
        -32602,
        "quarantined: an unknown tool"
    );
    let alice = rig.sign_in("alice").await;
    let catalog = alice.json("/console/api/catalog").await;
    let quarantined = &catalog["servers"]["demo"]["quarantined"];
    assert!(
        quarantined
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "get_weather"),
        "{quarantined}"
    );
    let added = &catalog["servers"]["demo"]["diff"]["added"];
    assert!(
        added.as_array().unwrap().iter().any(|a| a["key"] == "get_weather"),
        "{added}"
    );

    let revision = quarantined
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "get_weather")
        .unwrap()["live_revision"]
        .clone();
    let request = json!({"server": "demo", "kind": "tool", "key": "get_weather", "revision": revision});
    let approved = alice.post("/console/api/catalog/approve", &request, true).await;
    assert_eq!(approved.status(), StatusCode::OK);
    let approved: serde_json::Value = approved.json().await.unwrap();
    assert_eq!(approved["approved"]["approved_by"], "alice");

    let mut answered = serde_json::Value::Null;
    for id in 2..50 {
        answered = rig.call(id, "get_weather", json!({"city": "Oslo"})).await.message();
        if answered.get("result").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        answered["result"]["content"].is_array(),
        "callable once approved: {answered}"
    );
    let unknown = json!({"server": "demo", "kind": "tool", "key": "no_such_tool", "revision": revision});
    assert_eq!(
        alice
            .post("/console/api/catalog/approve", &unknown, true)
            .await
            .status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );

    let admin = admin_records(&rig, 2).await;
    assert_eq!(admin.len(), 2, "the approval and the refused one");
    let ok = admin.iter().find(|r| r.status == Some(200)).unwrap();
    assert_eq!(ok.method.as_deref(), Some("console/approve"));
    assert_eq!(ok.name.as_deref(), Some("demo/tool/get_weather"));
    assert_eq!(ok.principal.as_ref().unwrap().subject, "alice");
    let verify = tollgate_e2e::children::tollgate_cli(&["audit", "verify", rig.gw.audit_dir().to_str().unwrap()]).await;
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_hold_the_search_and_are_recorded_and_viewers_get_no_captures() {
    let rig = Rig::start().await;
    for id in 1..=3 {
        assert_eq!(
            rig.call(id, "echo", json!({"text": format!("secret-{id}")}))
                .await
                .status,
            200
        );
    }
    let victor = rig.sign_in("victor").await;
    indexed(&victor, "tool=echo", 3).await;
    let jsonl = victor.get("/console/api/audit/export?format=jsonl&tool=echo").await;
    assert!(
        jsonl.headers()[CONTENT_DISPOSITION]
            .to_str()
            .unwrap()
            .contains("tollgate-audit.jsonl")
    );
    let text = jsonl.text().await.unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains("secret-1"), "captured arguments are for auditors only");
    let csv = victor
        .get("/console/api/audit/export?format=csv&tool=echo")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(csv.starts_with("time,request_id,subject,team"));

    let alice = rig.sign_in("alice").await;
    let text = alice
        .get("/console/api/audit/export?format=jsonl&tool=echo")
        .await
        .text()
        .await
        .unwrap();
    assert!(text.contains("secret-1"), "the auditor's export is the trail's lines");
    let found = alice.json("/console/api/audit?tool=echo&limit=1").await;
    assert_eq!(found["truncated"], true);
    let spend_csv = alice
        .get("/console/api/spend.csv?by=team&period=day")
        .await
        .text()
        .await
        .unwrap();
    assert!(spend_csv.starts_with("key,calls,errors"), "{spend_csv}");

    let exports = admin_records(&rig, 4).await;
    assert!(exports.iter().all(|r| r.method.as_deref() == Some("console/export")));
    let who: Vec<&str> = exports
        .iter()
        .map(|r| r.principal.as_ref().unwrap().subject.as_str())
        .collect();
    assert_eq!(who, ["victor", "victor", "alice", "alice"]);
    assert!(
        exports[0].name.as_deref().unwrap().contains("tool=echo (3 records)"),
        "{:?}",
        exports[0].name
    );
    assert!(exports.iter().all(|r| r.phase == Phase::Admin));
    // Console actions are not calls: usage does not count them.
    let usage = tollgate_e2e::children::tollgate_cli(&[
        "usage",
        "--by",
        "server",
        "--format",
        "json",
        rig.gw.audit_dir().to_str().unwrap(),
    ])
    .await;
    let usage: serde_json::Value = serde_json::from_slice(&usage.stdout).unwrap();
    assert_eq!(usage["total"]["calls"], 3, "{usage}");
}
