//! Policies by virtual server: a call through a virtual server is decided
//! on the member's entities, which are then also in the virtual server's
//! `Tollgate::VirtualServer` entity; on the member's own route they are not.

use serde_json::json;
use tollgate_audit::{Outcome, PolicyMode};
use tollgate_e2e::audit_support::{assert_decision, wait_record};
use tollgate_e2e::{Demo, policy_dir};

use super::{gateway, modern, names, rpc_error, text};

/// Everything is open, except the demo's `add` through `eng` and `agents`.
const NOT_ADD_THROUGH_VIRTUAL_SERVERS: &str = r#"
@id("open")
permit (principal, action, resource);

@id("no-add-through-eng")
forbid (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::VirtualServer::"eng")
when { resource.name == "add" };

@id("no-add-through-agents")
forbid (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::VirtualServer::"agents")
when { resource.name == "add" };
"#;

/// `eng` lists every tool; `agents` is in search mode.
const VIRTUALS: &str = "
[[virtual_servers]]
name = \"eng\"
members = [{ server = \"demo\" }]

[[virtual_servers]]
name = \"agents\"
expose = \"search\"
members = [{ server = \"demo\" }]
";

#[tokio::test]
async fn a_policy_on_a_virtual_server_decides_calls_and_lists_through_it_only() {
    let demo = Demo::spawn().await;
    let policies = policy_dir(NOT_ADD_THROUGH_VIRTUAL_SERVERS);
    let extra = format!("[policy]\ndir = \"{}\"\n", policies.path().display());
    let gw = gateway(&[("demo", &demo.url, "")], VIRTUALS, &extra).await;

    // Through eng, add is not listed, and calling it is answered like an
    // unknown tool; the member's audit record names the policy.
    let ex = modern(&gw, "eng", "tools/list", None, json!({}), &[]).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(
        names(&ex, "tools", "name"),
        ["demo_countdown", "demo_delete_item", "demo_echo", "demo_get_weather"]
    );
    assert_eq!(ex.message()["result"]["cacheScope"], "private", "{ex:?}");
    let add = |name: &str| json!({"name": name, "arguments": {"a": 40, "b": 2}});
    let ex = modern(&gw, "eng", "tools/call", Some("demo_add"), add("demo_add"), &[]).await;
    let (code, message) = rpc_error(&ex);
    assert_eq!((ex.status, code), (200, -32602), "{ex:?}");
    assert_eq!(
        message, "Unknown tool: demo_add",
        "the name the caller used, not the member's"
    );
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!(
        (&*rec.route, rec.name.as_deref(), rec.virtual_server.as_deref()),
        ("demo", Some("add"), Some("eng"))
    );
    assert_decision(&rec, Outcome::Deny, &["no-add-through-eng"], Some("deny"));
    // The member's other tools are callable through eng.
    let echo = json!({"name": "demo_echo", "arguments": {"text": "hello"}});
    let ex = modern(&gw, "eng", "tools/call", Some("demo_echo"), echo, &[]).await;
    assert_eq!((ex.status, text(&ex).as_str()), (200, "hello"), "{ex:?}");

    // On the member's own route the same tool is listed and callable.
    let ex = modern(&gw, "demo", "tools/list", None, json!({}), &[]).await;
    assert!(names(&ex, "tools", "name").contains(&"add".to_owned()), "{ex:?}");
    let ex = modern(&gw, "demo", "tools/call", Some("add"), add("add"), &[]).await;
    assert_eq!((ex.status, text(&ex).as_str()), (200, "42"), "{ex:?}");
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!((&*rec.route, rec.virtual_server.as_deref()), ("demo", None));
    assert_decision(&rec, Outcome::Allow, &["open"], Some("allow"));

    // find_tools through agents does not find what agents may not call,
    // however well it matches.
    let query = "add two integers or return the given text";
    let find = json!({"name": "find_tools", "arguments": {"query": query, "limit": 20}});
    let ex = modern(&gw, "agents", "tools/call", Some("find_tools"), find, &[]).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    let found = ex.message()["result"]["structuredContent"]["tools"].clone();
    let found: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        found.contains(&"demo_echo") && !found.contains(&"demo_add"),
        "{found:?}"
    );
    let ex = modern(&gw, "agents", "tools/call", Some("demo_add"), add("demo_add"), &[]).await;
    assert_eq!(rpc_error(&ex).0, -32602, "{ex:?}");
}

#[tokio::test]
async fn a_virtual_server_in_observe_mode_logs_what_it_would_refuse_and_names_its_approver() {
    let demo = Demo::spawn().await;
    let policies = policy_dir(&format!(
        "{NOT_ADD_THROUGH_VIRTUAL_SERVERS}\n@id(\"no-add-through-trial\")\n\
         forbid (principal, action == Tollgate::Action::\"call_tool\", resource in Tollgate::VirtualServer::\"trial\")\n\
         when {{ resource.name == \"add\" }};\n"
    ));
    let extra = format!("[policy]\ndir = \"{}\"\n", policies.path().display());
    let trial = "\n[[virtual_servers]]\nname = \"trial\"\nmembers = [{ server = \"demo\" }]\n\
                 policy = { mode = \"observe\" }\naudit = { approved_by = \"CHG-9 (platform)\" }\n";
    let gw = gateway(&[("demo", &demo.url, "")], &format!("{VIRTUALS}{trial}"), &extra).await;

    // In observe mode nothing is hidden or refused; the record says what
    // enforce mode would have done.
    let ex = modern(&gw, "trial", "tools/list", None, json!({}), &[]).await;
    assert!(names(&ex, "tools", "name").contains(&"demo_add".to_owned()), "{ex:?}");
    let list = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!(
        (&*list.route, list.approved_by.as_deref()),
        ("trial", Some("CHG-9 (platform)"))
    );
    let add = json!({"name": "demo_add", "arguments": {"a": 40, "b": 2}});
    let ex = modern(&gw, "trial", "tools/call", Some("demo_add"), add.clone(), &[]).await;
    assert_eq!((ex.status, text(&ex).as_str()), (200, "42"), "{ex:?}");
    let rec = wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!((&*rec.route, rec.virtual_server.as_deref()), ("demo", Some("trial")));
    let d = &rec.decision;
    assert_eq!(
        (d.outcome, d.mode),
        (Outcome::ObserveDeny, PolicyMode::Observe),
        "{rec:?}"
    );
    assert_eq!(
        d.policies.iter().map(|p| &**p).collect::<Vec<_>>(),
        ["no-add-through-trial"]
    );
    // eng, without a mode of its own, keeps enforcing the member's mode.
    let ex = modern(&gw, "eng", "tools/call", Some("demo_add"), add, &[]).await;
    assert_eq!(rpc_error(&ex).0, -32602, "{ex:?}");
}
