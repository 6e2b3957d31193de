//! What the console reports equals the trail: a search and one call's five
//! answers, the spend report against `tollgate usage`, and why a call was
//! (or would be) denied.

use serde_json::{Value, json};
use tollgate_e2e::audit_support::wait_record;
use tollgate_e2e::children::tollgate_cli;

use crate::{Rig, indexed};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_page_answers_the_five_questions_from_the_record() {
    let rig = Rig::start().await;
    let ex = rig.call(1, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(ex.status, 200);
    let record = wait_record(&rig.gw.audit_dir(), &ex).await;
    let alice = rig.sign_in("alice").await;
    let found = indexed(&alice, "subject=alice&tool=add&decision=allow&status=200", 1).await;
    let hit = &found["records"][0];
    assert_eq!(hit["record"]["request_id"], record.request_id);
    let (file, line) = (hit["ref"]["file"].as_str().unwrap(), &hit["ref"]["line"]);
    let call = alice
        .json(&format!("/console/api/audit/call?file={file}&line={line}"))
        .await;
    assert_eq!(call["chain"]["verified"], true, "{}", call["chain"]);
    let a = &call["answers"];
    assert_eq!(a["server"]["route"], "demo");
    assert_eq!(a["server"]["version"], "1.2.3");
    assert_eq!(a["server"]["approved_by"], "CHG-42");
    assert_eq!(a["tool"]["name"], "add");
    assert_eq!(a["tool"]["revision"], json!(record.definition_hash));
    assert_eq!(a["tool"]["approved_by"], json!(record.definition_approved_by));
    assert_eq!(a["principal"]["subject"], "alice");
    assert_eq!(a["principal"]["team"], "payments");
    let ids: Vec<&str> = record.decision.policies.iter().map(|p| &**p).collect();
    let shown: Vec<&Value> = a["policies"]["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["id"])
        .collect();
    assert_eq!(shown, ids);
    assert!(
        a["policies"]["policies"][0]["source"]
            .as_str()
            .unwrap()
            .contains("permit")
    );
    assert_eq!(a["outcome"]["status"], 200);
    assert_eq!(a["outcome"]["tokens"], record.tokens);
    assert!(
        call["capture"]["arguments"].is_object(),
        "the auditor sees the captured arguments"
    );

    let victor = rig.sign_in("victor").await;
    let call = victor
        .json(&format!("/console/api/audit/call?file={file}&line={line}"))
        .await;
    assert!(call["capture"].is_null() && call["record"]["capture"].is_null());
    for bad in ["../gateway.toml", "index.sqlite", "nope.jsonl"] {
        let r = victor.get(&format!("/console/api/audit/call?file={bad}&line=1")).await;
        assert_eq!(r.status(), reqwest::StatusCode::NOT_FOUND, "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denials_name_their_policy_and_the_spend_report_equals_the_cli() {
    let rig = Rig::start().await;
    let started = humantime::format_rfc3339_seconds(std::time::SystemTime::now() - std::time::Duration::from_secs(60));
    for id in 1..=4 {
        assert_eq!(rig.call(id, "echo", json!({"text": "spend"})).await.status, 200);
    }
    let denied = rig.call(9, "delete_item", json!({"id": "x"})).await;
    assert_eq!(denied.status, 403);
    let victor = rig.sign_in("victor").await;
    let found = indexed(&victor, "decision=deny", 1).await;
    let hit = &found["records"][0];
    let call = victor
        .json(&format!(
            "/console/api/audit/call?file={}&line={}",
            hit["ref"]["file"].as_str().unwrap(),
            hit["ref"]["line"]
        ))
        .await;
    assert_eq!(
        call["answers"]["policies"]["policies"][0]["id"],
        "demo-delete-needs-admin"
    );
    let policies = victor.json("/console/api/policies").await;
    assert!(
        policies["denials"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["policy"] == "demo-delete-needs-admin" && d["count"] == 1)
    );
    let check = json!({"subject": "bob", "team": "payments", "server": "demo", "kind": "tool", "name": "delete_item"});
    let decided: Value = victor
        .post("/console/api/policies/check", &check, true)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(decided["decision"], "deny");
    assert_eq!(decided["policies"][0]["id"], "demo-delete-needs-admin");

    let until = humantime::format_rfc3339_seconds(std::time::SystemTime::now() + std::time::Duration::from_secs(1));
    let dir = rig.gw.audit_dir();
    for by in ["team", "subject", "tool"] {
        let console = victor
            .json(&format!("/console/api/spend?by={by}&since={started}&until={until}"))
            .await;
        let (s, u) = (started.to_string(), until.to_string());
        let out = tollgate_cli(&[
            "usage",
            "--by",
            by,
            "--format",
            "json",
            "--since",
            &s,
            "--until",
            &u,
            dir.to_str().unwrap(),
        ])
        .await;
        let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(console["rows"], cli["rows"], "by {by}");
        assert_eq!(console["total"], cli["total"], "by {by}");
    }
    let spend = victor.json("/console/api/spend?by=team&period=day").await;
    assert_eq!(spend["budgets"], json!([]));
    assert!(spend["total"]["calls"].as_u64().unwrap() >= 5);
    let overview = victor.json("/console/api/overview?window=15m").await;
    assert!(overview["totals"]["calls"].as_u64().unwrap() >= 5);
    assert_eq!(overview["series"].as_array().unwrap().len(), 60);
    let upstreams = victor.json("/console/api/upstreams").await;
    assert_eq!(upstreams["upstreams"][0]["name"], "demo");
    assert_eq!(upstreams["upstreams"][0]["breaker"], "closed");
}
