//! 2026-07-28 calls on a virtual server, routed on the standard headers.

use serde_json::json;
use tollgate_e2e::audit_support::records;
use tollgate_e2e::audit_support::{Exchange, wait_record};
use tollgate_e2e::children::{python_catalog_server, python_mrtr_client, python_mrtr_server};
use tollgate_e2e::{Demo, TestIssuer, http};

use super::{eng, gateway, modern, names, rpc_error, text};

#[tokio::test]
async fn calls_are_routed_to_each_member_by_their_exposed_names() {
    let demo = Demo::spawn().await;
    let cat = python_catalog_server().await;
    let gw = gateway(&[("demo", &demo.url, ""), ("cat", &cat.url, "")], &eng("all"), "").await;

    // Lists come from the approved catalog: prefixed, one left out, one renamed.
    let ex = modern(&gw, "eng", "tools/list", None, json!({}), &[]).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(
        names(&ex, "tools", "name"),
        [
            "demo_add",
            "demo_countdown",
            "demo_delete_item",
            "demo_echo",
            "demo_get_weather",
            "find_record"
        ]
    );
    let ex = modern(&gw, "eng", "prompts/list", None, json!({}), &[]).await;
    assert_eq!(names(&ex, "prompts", "name"), ["demo_greeting"]);
    let ex = modern(&gw, "eng", "resources/list", None, json!({}), &[]).await;
    assert_eq!(
        names(&ex, "resources", "uri"),
        ["demo://readme", "demo://secrets/api-keys"]
    );
    let ex = modern(&gw, "eng", "server/discover", None, json!({}), &[]).await;
    let discovered = ex.message();
    assert!(
        discovered["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{discovered}"
    );
    assert_eq!(
        discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "eng"
    );

    // Calls reach the member under its own name, header and body alike.
    let args = json!({"name": "demo_echo", "arguments": {"text": "hello"}});
    let ex = modern(&gw, "eng", "tools/call", Some("demo_echo"), args, &[]).await;
    assert_eq!((ex.status, text(&ex).as_str()), (200, "hello"), "{ex:?}");
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!(&*rec.route, "demo");
    assert_eq!(rec.virtual_server.as_deref(), Some("eng"));
    assert_eq!(rec.exposed_name.as_deref(), Some("demo_echo"));
    assert_eq!(rec.name.as_deref(), Some("echo"));
    assert!(rec.definition_approved_by.is_some(), "{rec:?}");

    let args = json!({"name": "find_record", "arguments": {"region": "eu-west-1", "query": "q"}});
    let param = [("mcp-param-region", "eu-west-1")];
    let ex = modern(&gw, "eng", "tools/call", Some("find_record"), args, &param).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(ex.message()["result"]["structuredContent"]["result"], "eu-west-1: q");
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!((&*rec.route, rec.name.as_deref()), ("cat", Some("lookup")));

    let args = json!({"name": "demo_greeting", "arguments": {"name": "Ada"}});
    let ex = modern(&gw, "eng", "prompts/get", Some("demo_greeting"), args, &[]).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert!(ex.message()["result"]["messages"].is_array(), "{ex:?}");
    let args = json!({"uri": "demo://readme"});
    let ex = modern(&gw, "eng", "resources/read", Some("demo://readme"), args, &[]).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(ex.message()["result"]["contents"][0]["uri"], "demo://readme");

    // Names the virtual server does not expose are unknown, including the
    // member's own name of a renamed tool and a tool left out.
    for name in ["delete_record", "cat_delete_record", "lookup", "echo", "nope"] {
        let args = json!({"name": name, "arguments": {}});
        let ex = modern(&gw, "eng", "tools/call", Some(name), args, &[]).await;
        assert_eq!(
            (ex.status, rpc_error(&ex)),
            (200, (-32602, format!("Unknown tool: {name}")))
        );
    }
    // A header that disagrees with the body is refused before routing.
    let args = json!({"name": "demo_echo", "arguments": {"text": "x"}});
    let ex = modern(&gw, "eng", "tools/call", Some("demo_add"), args, &[]).await;
    assert_eq!((ex.status, rpc_error(&ex).0), (400, -32020));
}

/// A virtual server that requires tokens checks them even when none of
/// its members does, against its own URL: a token for a member's URL is
/// not one for the virtual server.
#[tokio::test]
async fn a_virtual_server_requires_its_own_token_even_over_open_members() {
    let issuer = TestIssuer::new();
    let demo = Demo::spawn().await;
    let virtuals = "\n[[virtual_servers]]\nname = \"eng\"\nauth = { required = true, scopes = [\"mcp:tools\"] }\n\
                    members = [{ server = \"demo\" }]\n";
    let open = "auth = { required = false }";
    let gw = gateway(&[("demo", &demo.url, open)], virtuals, &issuer.config()).await;
    let list = |token: Option<String>| {
        let gw = &gw;
        async move {
            let mut req = http()
                .post(gw.url("eng"))
                .headers(tollgate_e2e::modern_headers("tools/list", None));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            Exchange::run(req, tollgate_e2e::modern_body(1, "tools/list", json!({}))).await
        }
    };
    let ex = list(None).await;
    assert_eq!(ex.status, 401, "{ex:?}");
    let ex = list(Some(issuer.token("alice", &["mcp:tools"], &["demo"]))).await;
    assert_eq!(ex.status, 401, "a member's token is not the virtual server's: {ex:?}");
    let ex = list(Some(issuer.token("alice", &[], &["eng"]))).await;
    assert_eq!(ex.status, 403, "{ex:?}");
    let ex = list(Some(issuer.token("alice", &["mcp:tools"], &["eng"]))).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert!(names(&ex, "tools", "name").contains(&"demo_echo".to_owned()));
    // Its RFC 9728 metadata names its own URL.
    let url = format!("{}/.well-known/oauth-protected-resource/mcp/eng", gw.base);
    let doc: serde_json::Value = http().get(url).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["resource"], "https://gateway.test/mcp/eng");
    // The member itself stays open.
    let ex = modern(&gw, "demo", "tools/list", None, json!({}), &[]).await;
    assert_eq!(ex.status, 200, "{ex:?}");
}

/// A multi-round-trip call (2026-07-28 `input_required`): the member asks
/// for confirmation in its first answer, the Python SDK client answers and
/// retries, and the retry reaches the same member under its own name —
/// the same outcome as on the member's own route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_rounds_reach_the_same_member() {
    let demo = Demo::spawn().await;
    let py = python_mrtr_server().await;
    let members = "\n[[virtual_servers]]\nname = \"eng\"\nmembers = [{ server = \"demo\" }, { server = \"py\" }]\n";
    let gw = gateway(&[("demo", &demo.url, ""), ("py", &py.url, "")], members, "").await;
    let direct = python_mrtr_client(&format!("{}/mcp/py", gw.base), &[], "delete_item").await;
    let via = python_mrtr_client(&format!("{}/mcp/eng", gw.base), &[], "py_delete_item").await;
    assert_eq!(via["text"], json!(["deleted invoice-7 (approved in test)"]), "{via}");
    assert_eq!(via["asked"], json!(["Really delete invoice-7?"]), "{via}");
    assert_eq!(direct, via);

    // Two legs through the virtual server, both to `py` as `delete_item`:
    // the first answered with the question, the retry with the result.
    let mut legs = Vec::new();
    for _ in 0..100 {
        legs = records(&gw.audit_dir())
            .into_iter()
            .filter(|r| r.virtual_server.as_deref() == Some("eng") && r.method.as_deref() == Some("tools/call"))
            .collect();
        if legs.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(legs.len(), 2, "{legs:?}");
    for leg in &legs {
        assert_eq!((&*leg.route, leg.name.as_deref()), ("py", Some("delete_item")));
        assert_eq!(leg.exposed_name.as_deref(), Some("py_delete_item"));
        assert_eq!(leg.status, Some(200));
    }
}
