//! Authorization through the real gateway: Cedar decisions per call, list
//! filtering seen by real MCP clients (TypeScript SDK, Python SDK, raw
//! modern requests), missing-scope step-up, `Mcp-Param-*` rules enforced
//! without reading the body, forged headers, observe mode, and hot reload
//! under load.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::time::Duration;

use serde_json::{Value, json};
use tollgate_e2e::children::{everything_server, python_client, python_modern_server, ts_client};
use tollgate_e2e::stub::Stub;
use tollgate_e2e::{
    Demo, TestGateway, TestIssuer, assert_rpc_error, http, modern_body, modern_headers, policy_dir, repo_root,
    rpc_message,
};

/// A gateway in front of the demo server with the repository's demo policies.
async fn demo_gateway(issuer: &TestIssuer, demo: &Demo, route_extra: &str) -> TestGateway {
    TestGateway::spawn(&format!(
        "{}\n[policy]\ndir = \"{}\"\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n{route_extra}\n",
        issuer.config(),
        repo_root().join("policies").display(),
        demo.url
    ))
    .await
}

/// A token for bob: no team, scope mcp:tools.
fn bob(issuer: &TestIssuer, routes: &[&str]) -> String {
    issuer.sign(&issuer.claims("bob", "mcp:tools", routes))
}

async fn call(gw: &TestGateway, token: &str, method: &str, name: Option<&str>, params: Value) -> reqwest::Response {
    http()
        .post(gw.url("demo"))
        .headers(modern_headers(method, name))
        .bearer_auth(token)
        .body(modern_body(7, method, params))
        .send()
        .await
        .unwrap()
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    let mut v: Vec<String> = list["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .map(|t| t[field].as_str().unwrap().to_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn callers_see_only_what_they_may_use_and_denials_look_like_unknown_names() {
    let (issuer, demo) = (TestIssuer::new(), Demo::spawn().await);
    let gw = demo_gateway(&issuer, &demo, "").await;
    let bob = bob(&issuer, &["demo"]);

    let list = rpc_message(call(&gw, &bob, "tools/list", None, json!({})).await).await;
    assert_eq!(
        names(&list, "tools", "name"),
        ["add", "countdown", "echo", "get_weather"]
    );
    assert_eq!(list["result"]["cacheScope"], "private", "{list}");

    let res = call(
        &gw,
        &bob,
        "tools/call",
        Some("delete_item"),
        json!({"name": "delete_item", "arguments": {"id": "1"}}),
    )
    .await;
    let body = assert_rpc_error(res, 200, -32602, json!(7)).await;
    assert_eq!(body["error"]["message"], "Unknown tool: delete_item");
    assert!(
        !body.to_string().contains("demo-delete-needs-admin"),
        "policy ids never reach the caller"
    );

    let resources = rpc_message(call(&gw, &bob, "resources/list", None, json!({})).await).await;
    assert_eq!(names(&resources, "resources", "uri"), ["demo://readme"]);
    let uri = "demo://secrets/api-keys";
    let res = call(&gw, &bob, "resources/read", Some(uri), json!({"uri": uri})).await;
    let body = assert_rpc_error(res, 200, -32602, json!(7)).await;
    assert_eq!(body["error"]["message"], format!("Resource not found: {uri}"));

    let echo = rpc_message(
        call(
            &gw,
            &bob,
            "tools/call",
            Some("echo"),
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await,
    )
    .await;
    assert!(echo["result"].is_object(), "{echo}");
}

#[tokio::test]
async fn a_denial_for_a_missing_scope_asks_the_client_to_step_up() {
    let (issuer, demo) = (TestIssuer::new(), Demo::spawn().await);
    let gw = demo_gateway(&issuer, &demo, "").await;
    let delete = json!({"name": "delete_item", "arguments": {"id": "1"}});

    let alice = issuer.token("alice", &["mcp:tools"], &["demo"]);
    let res = call(&gw, &alice, "tools/call", Some("delete_item"), delete.clone()).await;
    let challenge = res.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"mcp:tools mcp:admin\""), "{challenge}");
    // The refusal echoes the request's id, like every other refusal.
    assert_rpc_error(res, 403, -32000, json!(7)).await;

    let admin = issuer.token("alice", &["mcp:tools", "mcp:admin"], &["demo"]);
    let done = rpc_message(call(&gw, &admin, "tools/call", Some("delete_item"), delete).await).await;
    assert!(done["result"].is_object(), "{done}");
}

#[tokio::test]
async fn a_forged_mcp_name_cannot_bypass_a_deny_when_headers_are_verified() {
    let (issuer, demo) = (TestIssuer::new(), Demo::spawn().await);
    let gw = demo_gateway(&issuer, &demo, "").await;
    let bob = bob(&issuer, &["demo"]);
    // The header says echo (allowed); the body calls delete_item (denied).
    let res = call(
        &gw,
        &bob,
        "tools/call",
        Some("echo"),
        json!({"name": "delete_item", "arguments": {"id": "1"}}),
    )
    .await;
    assert_rpc_error(res, 400, -32020, json!(7)).await;
}

#[tokio::test]
async fn argument_rules_are_enforced_from_mcp_param_headers_without_reading_the_body() {
    let (issuer, stub) = (TestIssuer::new(), Stub::spawn().await);
    // The approved definition of push_files mirrors `repo` in Mcp-Param-Repo:
    // only a header the approved schema declares reaches the policies.
    let lock = tempfile::tempdir().unwrap();
    let lock_path = lock.path().join("catalog.lock");
    let push_files = json!({"name": "push_files", "inputSchema": {"type": "object",
        "properties": {"repo": {"type": "string", "x-mcp-header": "Repo"}}}});
    let mut approved = tollgate_catalog::Lock::default();
    let definition = tollgate_catalog::Definition::new(tollgate_catalog::Kind::Tool, push_files).unwrap();
    approved.approve(
        "github",
        &definition,
        "sec@example.com",
        std::time::SystemTime::now(),
        None,
    );
    std::fs::write(&lock_path, approved.to_toml()).unwrap();
    // The shipped examples without the after-hours rule, which would make
    // the outcome depend on the time of day the test runs.
    let examples = std::fs::read_dir(repo_root().join("policies/examples")).unwrap();
    let text: String = examples
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("06-after-hours-read-only.cedar"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let policies = policy_dir(&text);
    let gw = TestGateway::spawn(&format!(
        "{}\n[policy]\ndir = \"{}\"\n[catalog]\nmode = \"enforce\"\nlock = \"{}\"\n\n[[servers]]\nname = \"github\"\nurl = \"{}/json\"\nheader_trust = \"upstream\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n",
        issuer.config(),
        policies.path().display(),
        lock_path.display(),
        stub.base
    ))
    .await;
    // mcp:admin: push_files declares no annotations, so it counts as
    // destructive (the cautious MCP default) and 04-destructive-needs-admin
    // applies.
    let token = issuer.token("carol", &["mcp:tools", "mcp:admin"], &["github"]);
    let push = |repo: &str| {
        let mut h = modern_headers("tools/call", Some("push_files"));
        h.insert("mcp-param-repo", repo.parse().unwrap());
        // Not JSON at all: the gateway must decide without reading it.
        http()
            .post(gw.url("github"))
            .headers(h)
            .bearer_auth(&token)
            .body("this body is never parsed")
            .send()
    };
    let forwarded = |seen: Vec<tollgate_e2e::stub::Seen>| {
        // The catalog sync's own requests (server/discover, initialize, …)
        // reach the stub too; the forwarded call is the one with the body.
        seen.into_iter()
            .filter(|s| &s.body[..] == b"this body is never parsed")
            .collect::<Vec<_>>()
    };
    let res = push("acme/prod-api").await.unwrap();
    let body = assert_rpc_error(res, 200, -32602, json!(null)).await;
    assert_eq!(body["error"]["message"], "Unknown tool: push_files");
    assert!(
        forwarded(stub.seen().await).is_empty(),
        "a denied call is never forwarded"
    );

    let res = push("acme/dev-api").await.unwrap();
    assert_eq!(res.status(), 200);
    let seen = forwarded(stub.seen().await);
    assert_eq!(seen.len(), 1, "the allowed call is forwarded untouched");
    assert_eq!(seen[0].headers["mcp-param-repo"], "acme/dev-api");
}

#[tokio::test]
async fn observe_mode_forwards_denied_calls_and_counts_them() {
    let (issuer, demo) = (TestIssuer::new(), Demo::spawn().await);
    let gw = demo_gateway(&issuer, &demo, "policy = { mode = \"observe\" }").await;
    let bob = bob(&issuer, &["demo"]);
    let list = rpc_message(call(&gw, &bob, "tools/list", None, json!({})).await).await;
    assert!(
        names(&list, "tools", "name").contains(&"delete_item".to_owned()),
        "{list}"
    );
    let done = rpc_message(
        call(
            &gw,
            &bob,
            "tools/call",
            Some("delete_item"),
            json!({"name": "delete_item", "arguments": {"id": "1"}}),
        )
        .await,
    )
    .await;
    assert!(done["result"].is_object(), "{done}");
    let metrics = gw.metrics().await;
    assert!(
        metrics.contains("tollgate_policy_denials_total{mode=\"observe\",reason=\"deny\",route=\"demo\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tollgate_policy_hidden_entries_total{mode=\"observe\",route=\"demo\"} 1"),
        "{metrics}"
    );
}

const OPEN_EXCEPT: &str = r#"
@id("plumbing") permit (principal, action == Tollgate::Action::"other_method", resource);
@id("discover") permit (principal, action in Tollgate::Action::"discover", resource);
@id("use") permit (principal, action in [Tollgate::Action::"call_tool", Tollgate::Action::"read_resource", Tollgate::Action::"get_prompt"], resource);
"#;

/// A gateway with one open route `route` to `url` whose policies allow
/// everything but the tool `hidden`.
async fn all_but(hidden: &str, route: &str, url: &str, extra: &str) -> (TestGateway, tempfile::TempDir) {
    let policies = policy_dir(&format!(
        "{OPEN_EXCEPT}\n@id(\"hidden\") forbid (principal, action, resource == Tollgate::Tool::\"{route}/{hidden}\");\n"
    ));
    let gw = TestGateway::spawn(&format!(
        "[policy]\ndir = \"{}\"\n\n[[servers]]\nname = \"{route}\"\nurl = \"{url}\"\n{extra}\n",
        policies.path().display(),
    ))
    .await;
    (gw, policies)
}

/// The `tools` a client fixture printed.
fn tools(out: &Value) -> Vec<&str> {
    out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

#[tokio::test]
async fn the_typescript_sdk_client_sees_a_filtered_tool_list() {
    let upstream = everything_server().await;
    let (gw, _policies) = all_but("get-sum", "everything", &upstream.url, "").await;
    let direct = ts_client(&upstream.url, "minimal", &[], &[]).await;
    let via = ts_client(&gw.url("everything"), "minimal", &[], &["--denied", "get-sum"]).await;
    let (all, seen) = (tools(&direct), tools(&via));
    assert!(all.contains(&"get-sum") && !seen.contains(&"get-sum"), "{seen:?}");
    let expected: Vec<&str> = all.iter().copied().filter(|t| *t != "get-sum").collect();
    assert_eq!(seen, expected);
    assert_eq!(via["echo"], direct["echo"]);
    // The hidden tool's call fails in the SDK like an unknown tool.
    assert_eq!(via["denied"]["code"], -32602, "{via}");
    assert!(
        via["denied"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool: get-sum"),
        "{via}"
    );
}

#[tokio::test]
async fn the_python_modern_client_sees_a_filtered_tool_list() {
    let upstream = python_modern_server().await;
    let (gw, _policies) = all_but("drop_table", "py", &upstream.url, "legacy = false").await;
    let via = python_client(&gw.url("py"), &[], &["--denied", "drop_table"]).await;
    assert_eq!(tools(&via), ["add", "echo", "grüße", "progress", "whoami"], "{via}");
    assert_eq!(via["denied"]["code"], -32602, "{via}");
    assert!(
        via["denied"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool: drop_table"),
        "{via}"
    );
}

#[tokio::test]
async fn policies_reload_under_load_without_failed_requests_and_a_broken_set_is_refused() {
    let demo = Demo::spawn().await;
    let policies = policy_dir(OPEN_EXCEPT);
    let gw = TestGateway::spawn(&format!(
        "[policy]\ndir = \"{}\"\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        policies.path().display(),
        demo.url
    ))
    .await;
    let url = gw.url("demo");
    let echo = move || {
        http()
            .post(url.clone())
            .headers(modern_headers("tools/call", Some("echo")))
            .body(modern_body(
                1,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "x"}}),
            ))
            .send()
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for _ in 0..4 {
        let (stop, echo) = (stop.clone(), echo.clone());
        load.push(tokio::spawn(async move {
            let (mut allowed, mut denied) = (0, 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let res = echo().await.expect("no transport error");
                assert_eq!(res.status(), 200, "no failed request during reload");
                match rpc_message(res).await["error"]["code"].as_i64() {
                    None => allowed += 1,
                    Some(-32602) => denied += 1,
                    Some(other) => panic!("unexpected error {other}"),
                }
            }
            (allowed, denied)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let forbid_echo = format!(
        "{OPEN_EXCEPT}\n@id(\"no-echo\") forbid (principal, action, resource == Tollgate::Tool::\"demo/echo\");\n"
    );
    std::fs::write(policies.path().join("test.cedar"), &forbid_echo).unwrap();
    wait_for_metric(&gw, "tollgate_policy_generation 2").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut allowed, mut denied) = (0, 0);
    for task in load {
        let (a, d) = task.await.unwrap();
        (allowed, denied) = (allowed + a, denied + d);
    }
    assert!(
        allowed > 0 && denied > 0,
        "decisions changed under load: {allowed} allowed, {denied} denied"
    );

    std::fs::write(
        policies.path().join("test.cedar"),
        "permit (principal, action, resource) when { nonsense };",
    )
    .unwrap();
    wait_for_metric(&gw, "tollgate_policy_reload_failures_total 1").await;
    let res = echo().await.unwrap();
    assert_eq!(
        rpc_message(res).await["error"]["code"],
        -32602,
        "the old decisions stay in force"
    );
    wait_for_metric(&gw, "tollgate_policy_last_reload_success 0").await;
}

async fn wait_for_metric(gw: &TestGateway, line: &str) {
    for _ in 0..100 {
        let text = gw.metrics().await;
        if text.lines().any(|l| l == line) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("metric line never appeared: {line}");
}

#[tokio::test]
async fn sighup_reloads_the_policies_of_the_running_binary() {
    let demo = Demo::spawn().await;
    let policies = policy_dir(OPEN_EXCEPT);
    let gw = tollgate_e2e::children::ChildGateway::spawn(&format!(
        "[policy]\ndir = \"{}\"\nwatch = false\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        policies.path().display(),
        demo.url
    ))
    .await;
    let echo = || {
        http()
            .post(gw.url("demo"))
            .headers(modern_headers("tools/call", Some("echo")))
            .body(modern_body(
                1,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "x"}}),
            ))
            .send()
    };
    assert!(rpc_message(echo().await.unwrap()).await["result"].is_object());
    let forbid_echo = format!(
        "{OPEN_EXCEPT}\n@id(\"no-echo\") forbid (principal, action, resource == Tollgate::Tool::\"demo/echo\");\n"
    );
    std::fs::write(policies.path().join("test.cedar"), forbid_echo).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        rpc_message(echo().await.unwrap()).await["result"].is_object(),
        "without the watcher, nothing changes before SIGHUP"
    );
    let pid = gw.child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    for _ in 0..50 {
        if rpc_message(echo().await.unwrap()).await["error"]["code"] == -32602 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("SIGHUP did not reload the policies");
}

/// `tollgate policy check`: the console's "would this be allowed?" from
/// the command line, against the repository's demo policies.
#[tokio::test]
async fn policy_check_decides_one_call_and_shows_the_deciding_policies() {
    let dir = repo_root().join("policies");
    let dir = dir.to_str().unwrap();
    let base = [
        "policy",
        "check",
        "--policies",
        dir,
        "--sub",
        "alice",
        "--scope",
        "mcp:tools",
        "--server",
        "demo",
    ];
    let run = |extra: &'static [&'static str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        async move { tollgate_e2e::children::tollgate_cli(&args).await }
    };
    let out = run(&["--name", "echo"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.starts_with("allow"), "{text}");
    assert!(
        text.contains("@id(\"demo-read-only-tools\")"),
        "the deciding policy's text: {text}"
    );
    let out = run(&["--name", "delete_item"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.starts_with("deny"), "{text}");
    assert!(text.contains("demo-delete-needs-admin"), "{text}");
}

/// `tollgate completions SHELL` prints a completion script naming the
/// subcommands; `token mint --cost-center` puts the claim budgets read.
#[tokio::test]
async fn completions_and_a_cost_centre_in_minted_tokens() {
    for shell in ["bash", "zsh", "fish"] {
        let out = tollgate_e2e::children::tollgate_cli(&["completions", shell]).await;
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && script.contains("policy") && script.contains("grants"),
            "{shell}: {script}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        "[listen]\npublic = \"127.0.0.1:1\"\nadmin = \"127.0.0.1:2\"\n[dev_issuer]\nenabled = true\n\
         [[servers]]\nname = \"demo\"\nurl = \"http://127.0.0.1:3/mcp\"\n",
    )
    .unwrap();
    let args = [
        "token",
        "mint",
        "--config",
        config.to_str().unwrap(),
        "--sub",
        "alice",
        "--cost-center",
        "cc-7",
    ];
    let out = tollgate_e2e::children::tollgate_cli(&args).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap();
    let payload = token.trim().split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload).unwrap(),
    )
    .unwrap();
    assert_eq!(claims["cost_center"], "cc-7");
}
