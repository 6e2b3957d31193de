//! 2026-07-28 calls on a virtual server, routed on the standard headers.

use serde_json::json;
use tollgate_e2e::Demo;
use tollgate_e2e::audit_support::wait_record;
use tollgate_e2e::children::python_catalog_server;

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
