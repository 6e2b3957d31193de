//! Arguments mirrored in `Mcp-Param-*` headers, checked against the
//! approved `inputSchema` and the body: missing, disagreeing or badly
//! encoded headers are refused with 400 `-32020` and nothing reaches the
//! upstream; the Python SDK's client sends them right, ASCII or not; only
//! checked values reach the policies.

use serde_json::json;
use tollgate_e2e::children::python_catalog_client;
use tollgate_e2e::policy_dir;

use super::{ROUTE, Rig, record, rpc_error, section};

const POLICIES: &str = r#"
@id("everyone")
permit (principal, action, resource);

@id("no-china-lookups")
forbid (principal, action == Tollgate::Action::"call_tool", resource)
when { context.args.hasTag("region") && context.args.getTag("region") == "cn-north-1" };
"#;

#[tokio::test]
async fn mcp_param_headers_must_agree_with_the_body() {
    let policies = policy_dir(POLICIES);
    let extra = format!("[policy]\ndir = \"{}\"\n", policies.path().display());
    let rig = Rig::start("enforce", &extra, "").await;
    rig.approve(&["--all", "--by", "alice@example.com"]).await;
    rig.wait_catalog("the lock reload", |c| section(c, "approved").len() == 2)
        .await;

    // The Python SDK lists the tools, learns that `region` travels as
    // Mcp-Param-Region, and sends it (base64-wrapped when not ASCII).
    let url = rig.gw.url(ROUTE);
    for region in ["eu-west-1", "Zürich"] {
        let out = python_catalog_client(&url, &[], region, "q").await;
        assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
        assert_eq!(out["lookup"][0]["text"], format!("{region}: q"), "{out}");
    }
    let out = python_catalog_client(&url, &[], "cn-north-1", "q").await;
    assert_eq!(
        out["error"]["code"], -32602,
        "the policy saw the checked argument: {out}"
    );
    assert_eq!(rig.upstream_calls("lookup").await, 2);

    let body = json!({"region": "eu-west-1", "query": "q"});
    let refused = [
        ("missing", vec![]),
        ("mismatched", vec![("mcp-param-region", "us-east-1")]),
        ("badly encoded", vec![("mcp-param-region", "=?base64?not*base64?=")]),
    ];
    for (case, headers) in refused {
        let ex = rig.call(None, "lookup", body.clone(), &headers).await;
        assert_eq!(ex.status, 400, "{case}: {ex:?}");
        let (code, message) = rpc_error(&ex);
        assert_eq!(code, -32020, "{case}");
        assert!(
            message.starts_with("Header mismatch: mcp-param-region"),
            "{case}: {message}"
        );
        let rec = record(&rig.gw, &ex).await;
        assert_eq!(rec.error.as_deref(), Some("header_mismatch"), "{case}");
        assert_eq!(rec.status, Some(400));
    }
    // A header naming a value the body does not carry is refused as well
    // (a policy must never judge an argument the upstream will not see).
    let ex = rig
        .call(
            None,
            "lookup",
            json!({"query": "q"}),
            &[("mcp-param-region", "eu-west-1")],
        )
        .await;
    assert_eq!((ex.status, rpc_error(&ex).0), (400, -32020));
    // A spoofed header cannot smuggle the forbidden region past the policy
    // either: the body says otherwise, and the call is refused.
    let spoof = json!({"region": "cn-north-1", "query": "q"});
    let ex = rig
        .call(None, "lookup", spoof, &[("mcp-param-region", "eu-west-1")])
        .await;
    assert_eq!((ex.status, rpc_error(&ex).0), (400, -32020));
    assert_eq!(rig.upstream_calls("lookup").await, 2, "nothing refused was forwarded");

    // Correct by hand, sentinel-encoded: forwarded.
    let ex = rig
        .call(
            None,
            "lookup",
            json!({"region": "Zürich", "query": "q"}),
            &[("mcp-param-region", "=?base64?WsO8cmljaA==?=")],
        )
        .await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(ex.message()["result"]["structuredContent"]["result"], "Zürich: q");
}
