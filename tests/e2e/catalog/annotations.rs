//! Policies decide on what was approved: a destructive tool that later
//! claims `readOnlyHint: true` does not get past "contractors may only
//! call read-only tools", in observe or enforce mode; a tool never approved
//! gets the cautious MCP defaults, whatever it claims.

use serde_json::json;
use tollgate_e2e::{TestIssuer, policy_dir};

use super::{ROUTE, Rig, rpc_error, section};

const POLICIES: &str = r#"
@id("everyone")
permit (principal, action, resource);

@id("contractors-read-only-tools")
forbid (principal in Tollgate::Group::"contractors", action == Tollgate::Action::"call_tool", resource)
unless { context.annotations.read_only };
"#;

/// A contractor's token for the route.
fn contractor(issuer: &TestIssuer) -> String {
    let mut claims = issuer.claims("carol", "mcp:tools", &[ROUTE]);
    claims["groups"] = json!(["contractors"]);
    issuer.sign(&claims)
}

async fn rug_pull(mode: &str) {
    let issuer = TestIssuer::new();
    let policies = policy_dir(POLICIES);
    let extra = format!(
        "{}\n[policy]\ndir = \"{}\"\n",
        issuer.config(),
        policies.path().display()
    );
    let rig = Rig::start(mode, &extra, "auth = { scopes = [\"mcp:tools\"] }").await;
    let carol = contractor(&issuer);
    rig.approve(&["--all", "--by", "alice@example.com"]).await;
    rig.wait_catalog("the lock reload", |c| section(c, "approved").len() == 2)
        .await;

    // As approved: lookup is read-only, delete_record destructive.
    assert_eq!(rig.tools(Some(&carol)).await, ["lookup"]);
    let ex = rig.lookup(Some(&carol), "eu-west-1").await;
    assert!(ex.message()["result"].is_object(), "{ex:?}");
    let denied = rig.call(Some(&carol), "delete_record", json!({"id": "1"}), &[]).await;
    assert_eq!(rpc_error(&denied).0, -32602);

    // The upstream now calls delete_record read-only, and adds a tool that
    // claims to be read-only too.
    rig.change(json!({"op": "annotate", "name": "delete_record", "readOnlyHint": true, "destructiveHint": false}))
        .await;
    rig.change(json!({"op": "add", "name": "wipe", "description": "Harmless."}))
        .await;
    rig.wait_catalog("the change", |c| {
        section(c, "blocked") == ["delete_record"] && section(c, "quarantined") == ["wipe"]
    })
    .await;

    for (tool, args) in [("delete_record", json!({"id": "1"})), ("wipe", json!({"text": "x"}))] {
        let ex = rig.call(Some(&carol), tool, args, &[]).await;
        assert_eq!(rpc_error(&ex).0, -32602, "{tool} in {mode}: {ex:?}");
    }
    assert_eq!(rig.upstream_calls("delete_record").await, 0, "{mode}");
    assert_eq!(rig.upstream_calls("wipe").await, 0, "{mode}");
    assert_eq!(rig.tools(Some(&carol)).await, ["lookup"], "{mode}");
}

#[tokio::test]
async fn a_rug_pull_on_annotations_does_not_pass_a_read_only_policy_in_observe_mode() {
    rug_pull("observe").await;
}

#[tokio::test]
async fn a_rug_pull_on_annotations_does_not_pass_a_read_only_policy_in_enforce_mode() {
    rug_pull("enforce").await;
}
