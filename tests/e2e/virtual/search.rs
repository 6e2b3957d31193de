//! Search mode: the model sees `find_tools`, finds a tool and calls it;
//! the catalogue each caller is sent is audited, and shrinks; the
//! TypeScript SDK client finds a tool and calls it.

use serde_json::json;
use tollgate_e2e::Demo;
use tollgate_e2e::audit_support::wait_record;
use tollgate_e2e::children::{python_catalog_server, tollgate_cli};

use super::{eng, gateway, modern, names, text};

#[tokio::test]
async fn find_tools_finds_a_tool_that_is_then_callable() {
    let demo = Demo::spawn().await;
    let cat = python_catalog_server().await;
    let virtuals = eng("search").replace("expose = \"search\"", "expose = \"search\"\npinned = [\"demo_echo\"]");
    let gw = gateway(&[("demo", &demo.url, ""), ("cat", &cat.url, "")], &virtuals, "").await;

    let ex = modern(&gw, "eng", "tools/list", None, json!({}), &[]).await;
    assert_eq!(names(&ex, "tools", "name"), ["demo_echo", "find_tools"], "{ex:?}");

    let args = json!({"name": "find_tools", "arguments": {"query": "add two integers", "limit": 3}});
    let ex = modern(&gw, "eng", "tools/call", Some("find_tools"), args, &[]).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    let found = ex.message()["result"]["structuredContent"]["tools"].clone();
    assert_eq!(found[0]["name"], "demo_add", "{found:#}");
    assert!(found.as_array().unwrap().len() <= 3);

    let args = json!({"name": "find_tools", "arguments": {"query": "look up a record by region"}});
    let ex = modern(&gw, "eng", "tools/call", Some("find_tools"), args, &[]).await;
    let found = ex.message()["result"]["structuredContent"]["tools"].clone();
    assert_eq!(found[0]["name"], "find_record", "{found:#}");

    // Arguments it cannot use are a tool error the model can read.
    let args = json!({"name": "find_tools", "arguments": {"limit": 2}});
    let ex = modern(&gw, "eng", "tools/call", Some("find_tools"), args, &[]).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(ex.message()["result"]["isError"], true, "{ex:?}");
    assert!(text(&ex).contains("query"), "{ex:?}");

    // Whatever it finds is callable by its exposed name.
    let args = json!({"name": "demo_add", "arguments": {"a": 40, "b": 2}});
    let ex = modern(&gw, "eng", "tools/call", Some("demo_add"), args, &[]).await;
    assert_eq!((ex.status, text(&ex).as_str()), (200, "42"), "{ex:?}");
}

#[tokio::test]
async fn the_catalogue_a_caller_is_sent_is_audited_and_search_mode_shrinks_it() {
    let demo = Demo::spawn().await;
    let cat = python_catalog_server().await;
    let virtuals = format!(
        "{}{}",
        eng("all"),
        eng("search").replace("name = \"eng\"", "name = \"engs\"")
    );
    let mut gw = gateway(&[("demo", &demo.url, ""), ("cat", &cat.url, "")], &virtuals, "").await;

    let all = modern(&gw, "eng", "tools/list", None, json!({}), &[]).await;
    let search = modern(&gw, "engs", "tools/list", None, json!({}), &[]).await;
    assert_eq!(names(&search, "tools", "name"), ["find_tools"], "{search:?}");
    for (ex, route) in [(&all, "eng"), (&search, "engs")] {
        let rec = wait_record(&gw.audit_dir(), ex).await;
        assert_eq!(&*rec.route, route);
        assert_eq!(rec.virtual_server.as_deref(), Some(route));
        assert_eq!(rec.method.as_deref(), Some("tools/list"));
        assert_eq!(rec.bytes_out, ex.received(), "{rec:?}");
        assert!(rec.catalog && rec.tokens > 0, "{rec:?}");
    }
    // Refusals by the virtual server itself are recorded too.
    let args = json!({"name": "nope", "arguments": {}});
    let ex = modern(&gw, "eng", "tools/call", Some("nope"), args, &[]).await;
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!((&*rec.route, rec.rpc_error), ("eng", Some(-32602)), "{rec:?}");

    gw.shutdown().await;
    let dir = gw.audit_dir().display().to_string();
    let out = tollgate_cli(&["usage", &dir, "--by", "server", "--format", "json"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let catalogue = |route: &str| {
        let rows = report["rows"].as_array().unwrap();
        let row = rows.iter().find(|r| r["key"] == route).unwrap();
        row["catalog_tokens"].as_u64().unwrap()
    };
    assert!(
        catalogue("engs") * 3 < catalogue("eng"),
        "search mode sends a far smaller catalogue: {report:#}"
    );
}

#[tokio::test]
async fn the_typescript_sdk_finds_a_tool_with_find_tools_and_calls_it() {
    let demo = Demo::spawn().await;
    let cat = python_catalog_server().await;
    let gw = gateway(&[("demo", &demo.url, ""), ("cat", &cat.url, "")], &eng("search"), "").await;
    let plan = json!({"calls": [
        {"name": "find_tools", "arguments": {"query": "add two integers", "limit": 3}},
        {"name": "demo_add", "arguments": {"a": 40, "b": 2}},
    ]});
    let out = tollgate_e2e::children::ts_plan_client(&gw.url("eng"), &plan, &[]).await;
    assert_eq!(out["tools"], json!(["find_tools"]), "{out:#}");
    let found = &out["calls"][0]["structured"]["tools"];
    assert_eq!(found[0]["name"], "demo_add", "{out:#}");
    assert_eq!(out["calls"][1]["content"][0]["text"], "42", "{out:#}");
    assert_eq!(out["sessionTerminated"], "ok", "{out:#}");
}
