//! Keeps `docs/audit.md` honest: every field a call record can carry is
//! documented there as `field` (nested ones as `parent.field`).

#![allow(clippy::unwrap_used, missing_docs, reason = "tests")]

mod common;

use std::path::Path;

use common::{call, principal};
use tollgate_audit::{Capture, Phase};

fn fields(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
    if let serde_json::Value::Object(map) = v {
        for (k, child) in map {
            let name = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            // Captured values are free-form JSON.
            if prefix != "capture" {
                fields(&name, child, out);
            }
            out.push(name);
        }
    }
}

#[test]
fn every_record_field_is_documented() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/audit.md")).unwrap();
    let mut rec = call(1, &principal("alice", "payments"), "t");
    rec.batch_index = Some(0);
    rec.jsonrpc_id = Some("1".into());
    rec.phase = Phase::Forwarding;
    rec.rpc_error = Some(-32602);
    rec.error = Some("upstream_timeout".into());
    rec.catalog = true;
    rec.decision.reason = Some("quarantined".into());
    rec.capture = Some(Box::new(Capture {
        arguments: Some(serde_json::json!({})),
        result: Some(serde_json::json!({})),
        truncated: true,
    }));
    let mut all = Vec::new();
    fields("", &serde_json::to_value(&rec).unwrap(), &mut all);
    assert!(all.len() > 35, "{all:?}");
    for f in ["v", "seq", "prev", "kind"].iter().map(|s| (*s).to_owned()).chain(all) {
        let documented = doc.contains(&format!("`{f}`"))
            || f.strip_prefix("capture.")
                .is_some_and(|k| doc.contains(&format!("`{k}`")));
        assert!(documented, "docs/audit.md does not document `{f}`");
    }
}
