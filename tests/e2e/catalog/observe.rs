//! Observe mode: nothing is refused, everything is recorded as the gate
//! would judge it — the step before turning enforce on.

use serde_json::json;
use tollgate_audit::{Outcome, PolicyMode};

use super::{Rig, record, section};

#[tokio::test]
async fn observe_passes_everything_and_records_what_enforce_would_do() {
    let rig = Rig::start("observe", "", "").await;
    let c = rig.catalog().await;
    assert_eq!(c["mode"], "observe");
    assert_eq!(section(&c, "quarantined"), ["delete_record", "lookup"]);

    // Not approved: listed and served all the same, recorded as quarantined.
    assert_eq!(rig.tools(None).await, ["delete_record", "lookup"]);
    let ex = rig.lookup(None, "eu-west-1").await;
    assert_eq!(
        ex.message()["result"]["structuredContent"]["result"],
        "eu-west-1: q",
        "{ex:?}"
    );
    let rec = record(&rig.gw, &ex).await;
    let gate = rec.gate.as_ref().unwrap();
    assert_eq!((&*gate.outcome, gate.mode), ("quarantined", PolicyMode::Observe));
    assert_ne!(rec.decision.reason.as_deref(), Some("catalog"));
    assert_eq!(rec.definition_approved_by, None);

    // Approved, then changed: still served, recorded as blocked, and the
    // record names the approved revision (the one that was reviewed).
    rig.approve(&["--all", "--by", "alice@example.com"]).await;
    rig.wait_catalog("the lock reload", |c| section(c, "approved").len() == 2)
        .await;
    rig.change(json!({"op": "describe", "name": "lookup", "description": "Look up, now faster."}))
        .await;
    rig.change(json!({"op": "add", "name": "export_all", "description": "Export every record."}))
        .await;
    rig.wait_catalog("the change", |c| section(c, "blocked") == ["lookup"])
        .await;
    assert_eq!(rig.tools(None).await, ["delete_record", "export_all", "lookup"]);

    let ex = rig.lookup(None, "us-east-1").await;
    assert_eq!(
        ex.message()["result"]["structuredContent"]["result"],
        "us-east-1: q",
        "{ex:?}"
    );
    let rec = record(&rig.gw, &ex).await;
    let gate = rec.gate.as_ref().unwrap();
    assert_eq!((&*gate.outcome, gate.mode), ("blocked", PolicyMode::Observe));
    let approved = super::approval(&rig.lock(), "lookup");
    assert_eq!(rec.definition_hash.as_deref(), Some(approved.revision.as_str()));
    assert_eq!(rec.definition_approved_by.as_deref(), Some("alice@example.com"));
    assert_ne!(rec.decision.outcome, Outcome::Deny);

    let ex = rig.call(None, "export_all", json!({"text": "x"}), &[]).await;
    assert!(ex.message()["result"].is_object(), "{ex:?}");
    let rec = record(&rig.gw, &ex).await;
    assert_eq!(rec.gate.as_ref().map(|g| &*g.outcome), Some("quarantined"));
    assert_eq!(rig.upstream_calls("export_all").await, 1);
}
