//! A Cedar policy that names one caller and its issuer: the other issuer's
//! caller with the same `sub` — the same entity id — is not permitted.

use serde_json::json;
use tollgate_e2e::audit_support::{tool, wait_record};
use tollgate_e2e::{Demo, TEST_ISSUER, TestGateway, policy_dir};

use super::{Issuers, SUB};

const POLICIES: &str = r#"
@id("plumbing")
permit (principal, action == Tollgate::Action::"other_method", resource);

@id("lists")
permit (principal, action in Tollgate::Action::"discover", resource);

@id("alice-of-the-dev-issuer")
permit (
  principal == Tollgate::User::"alice",
  action == Tollgate::Action::"call_tool",
  resource in Tollgate::Server::"demo"
)
when { principal.issuer == "{issuer}" };
"#;

#[tokio::test]
async fn a_policy_on_the_issuer_permits_one_issuers_subject_and_not_the_others() {
    let (issuers, demo) = (Issuers::start().await, Demo::spawn().await);
    let dir = policy_dir(&POLICIES.replace("{issuer}", TEST_ISSUER));
    let gw = TestGateway::spawn(&format!(
        "{}\n[policy]\ndir = \"{}\"\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        issuers.config(),
        dir.path().display(),
        demo.url
    ))
    .await;
    let echo = json!({"text": "hi"});

    let ours = tool(
        gw.url("demo"),
        &issuers.dev_token(SUB, &["demo"]),
        1,
        "echo",
        echo.clone(),
    )
    .await;
    assert_eq!(ours.status, 200, "{ours:?}");
    assert_eq!(ours.message()["result"]["content"][0]["text"], "hi", "{ours:?}");
    let rec = wait_record(&gw.audit_dir(), &ours).await;
    let ids: Vec<&str> = rec.decision.policies.iter().map(|p| &**p).collect();
    assert_eq!(ids, ["alice-of-the-dev-issuer"], "{rec:?}");

    // Same sub, so the same `Tollgate::User::"alice"`: only the issuer differs.
    let theirs = tool(gw.url("demo"), &issuers.partner_token(SUB, &["demo"]), 2, "echo", echo).await;
    let m = theirs.message();
    assert_eq!(m["error"]["code"], -32602, "denied like an unknown tool: {m}");
    assert_eq!(m["error"]["message"], "Unknown tool: echo");
    let rec = wait_record(&gw.audit_dir(), &theirs).await;
    assert_eq!(rec.decision.outcome, tollgate_audit::Outcome::Deny, "{rec:?}");
    let p = rec.principal.as_deref().unwrap();
    assert_eq!(
        (p.issuer.as_str(), p.subject.as_str()),
        (issuers.partner_url.as_str(), SUB)
    );
}
