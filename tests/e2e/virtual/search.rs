//! Search mode: the model sees `find_tools`, finds a tool and calls it.

use serde_json::json;
use tollgate_e2e::Demo;
use tollgate_e2e::children::python_catalog_server;

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
