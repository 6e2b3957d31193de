//! The Reconstruction Test's "which definition, approved by whom": every
//! record of a call names the approved revision, its approver and the
//! approval time — on a fresh replica, from its first call, before any
//! list answer has passed through it.

use std::time::{Duration, SystemTime};

use serde_json::json;
use tollgate_audit::{CredentialKind, Outcome, Phase, PolicyMode};

use super::{ROUTE, Rig, approval, record, section};

#[tokio::test]
async fn a_fresh_replica_records_the_approved_revision_from_its_first_call() {
    let rig = Rig::start("enforce", "", "").await;
    rig.approve(&["--all", "--by", "alice@example.com", "--note", "CHG-7"])
        .await;
    rig.wait_catalog("the lock reload", |c| section(c, "approved").len() == 2)
        .await;
    let approved = approval(&rig.lock(), "lookup");
    let since_approval = SystemTime::now().duration_since(approved.approved_at).unwrap();
    assert!(since_approval < Duration::from_secs(60), "{approved:?}");

    // A second replica reading the same lock (as replicas share a
    // deployed file): its first request is the call itself.
    let Rig { upstream, gw: first } = rig;
    let catalog = format!(
        "mode = \"enforce\"\nlock = \"{}\"",
        first.dir.path().join("catalog.lock").display()
    );
    let replica = Rig::gateway(&upstream, &catalog, "", "").await;
    let fresh = Rig { upstream, gw: replica };
    fresh
        .wait_catalog("the replica's first sync", |c| c["sync"]["state"] == "ok")
        .await;

    let ex = fresh.lookup(None, "eu-west-1").await;
    assert_eq!(ex.status, 200, "{ex:?}");
    let rec = record(&fresh.gw, &ex).await;
    assert_eq!(rec.phase, Phase::Complete);
    assert_eq!(&*rec.route, ROUTE);
    assert_eq!(rec.method.as_deref(), Some("tools/call"));
    assert_eq!(rec.name.as_deref(), Some("lookup"));
    assert_eq!(rec.definition_hash.as_deref(), Some(approved.revision.as_str()));
    assert_eq!(rec.definition_approved_by.as_deref(), Some("alice@example.com"));
    assert_eq!(rec.definition_approved_at, Some(approved.approved_at));
    let gate = rec.gate.as_ref().unwrap();
    assert_eq!((&*gate.outcome, gate.mode), ("approved", PolicyMode::Enforce));
    assert_eq!(rec.decision.outcome, Outcome::NotEvaluated);
    assert_eq!(rec.credential, CredentialKind::None);
    assert_eq!(rec.status, Some(200));

    // The record of a call to an unapproved definition says so.
    fresh
        .change(json!({"op": "add", "name": "export_all", "description": "Export every record."}))
        .await;
    fresh
        .wait_catalog("the new tool", |c| section(c, "quarantined") == ["export_all"])
        .await;
    let ex = fresh.call(None, "export_all", json!({"text": "x"}), &[]).await;
    let rec = record(&fresh.gw, &ex).await;
    // It names the live definition that was refused, approved by no one.
    assert!(rec.definition_hash.as_deref().is_some_and(|h| h.starts_with("sha256:")));
    assert_ne!(rec.definition_hash.as_deref(), Some(approved.revision.as_str()));
    assert_eq!(rec.definition_approved_by, None);
    assert_eq!(rec.definition_approved_at, None);
    assert_eq!(rec.gate.as_ref().map(|g| &*g.outcome), Some("quarantined"));
    assert_eq!(rec.decision.reason.as_deref(), Some("catalog"));
}
