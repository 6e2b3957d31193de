//! The web console in a real browser: Debian's `chromium`, driven by
//! Playwright (`tests/fixtures/js/console-browser.mjs`), against a real
//! `tollgate serve` in front of the demo MCP server, after real traffic from
//! the TypeScript SDK client and raw HTTP.
//!
//! The gateway runs the development issuer (alice: platform admin; victor:
//! finance, a viewer), the console, the audit trail with its index, Cedar
//! policies with one forbidden tool (`delete_item`, policy
//! `console-no-delete`) and catalog enforcement with a lock that leaves the
//! tool `get_weather` and the prompt `greeting` quarantined; the route
//! captures arguments and results.
//!
//! This file serves the traffic, reads the truth from the audit trail and
//! `tollgate usage`, hands it to the browser script as a JSON file, and
//! afterwards checks what the browser changed: the approval clicked on the
//! catalog page is in the lock, in the audit trail (by alice) and lets the
//! quarantined tool through. The browser script's steps are listed at the
//! top of `console-browser.mjs`; it prints a JSON summary, and full-page
//! screenshots of the seven pages go to `<target dir>/console-screenshots`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tollgate_audit::{CallRecord, Entry, Filter, Outcome, Phase};
use tollgate_e2e::audit_support::{Exchange, metric, records, scrape_until, tool, wait_record};
use tollgate_e2e::children::{ChildGateway, tollgate_cli, ts_plan_client};
use tollgate_e2e::{Demo, demo_lock_without, policy_dir, repo_root};

/// The route in front of the demo server.
const ROUTE: &str = "demo";
/// The route's own approval, written into each of its records.
const SERVER_APPROVAL: &str = "CHG-4711 (platform review)";
/// Who approved the demo's definitions in the committed lock.
const LOCK_APPROVER: &str = "platform-team@example.com";
/// The tool the lock leaves out: quarantined until approved in the console.
const QUARANTINED_TOOL: &str = "get_weather";
/// The prompt the lock leaves out: stays quarantined (the viewer must not
/// be offered to approve it).
const QUARANTINED_PROMPT: &str = "greeting";
/// The policy that forbids `delete_item`.
const FORBID: &str = "console-no-delete";
/// The policy that permits the other tools.
const PERMIT_TOOLS: &str = "console-call-tools";

const POLICIES: &str = r#"
@id("console-plumbing")
permit (principal, action == Tollgate::Action::"other_method", resource == Tollgate::Server::"demo");

@id("console-discover")
permit (principal, action in Tollgate::Action::"discover", resource == Tollgate::Server::"demo");

@id("console-call-tools")
permit (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::Server::"demo");

@id("console-no-delete")
forbid (principal, action == Tollgate::Action::"call_tool", resource == Tollgate::Tool::"demo/delete_item");

@id("console-prompts-and-resources")
permit (principal, action in [Tollgate::Action::"get_prompt", Tollgate::Action::"read_resource"], resource in Tollgate::Server::"demo");
"#;

/// The gateway's configuration (without `[listen]`).
fn config(demo: &Demo, policies: &Path, lock: &Path) -> String {
    format!(
        r#"{console}
[policy]
dir = "{policies}"

[audit]
index = true

[catalog]
mode = "enforce"
lock = "{lock}"

[[servers]]
name = "{ROUTE}"
url = "{url}"
auth = {{ scopes = ["mcp:tools"] }}
audit = {{ server_version = "0.1.0", approved_by = "{SERVER_APPROVAL}", capture_arguments = true, capture_results = true }}
"#,
        console = tollgate_e2e::CONSOLE,
        policies = policies.display(),
        lock = lock.display(),
        url = demo.url,
    )
}

/// The first program called `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
}

/// Where the screenshots go: `console-screenshots` in this test's target
/// directory (`.../target/debug/deps/console_browser-HASH` → `.../target`).
fn screenshot_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_owned();
    let dir = target.join("console-screenshots");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `tollgate token mint` for the MCP route, as `sub` of `team`.
async fn mint(gw: &ChildGateway, sub: &str, team: &str) -> String {
    let config = gw.dir.path().join("gateway.toml");
    let out = tollgate_cli(&[
        "token",
        "mint",
        "--config",
        config.to_str().unwrap(),
        "--sub",
        sub,
        "--team",
        team,
        "--scope",
        "mcp:tools",
    ])
    .await;
    assert!(
        out.status.success(),
        "tollgate token mint failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Every call record of the trail with where it is, in trail order.
fn entries(dir: &Path, filter: Filter) -> Vec<Entry> {
    tollgate_audit::query(&[dir.to_owned()], filter)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The single entry of the request `ex`, once the audit writer has it.
async fn entry_of(dir: &Path, ex: &Exchange) -> Entry {
    wait_record(dir, ex).await;
    let mut found: Vec<Entry> = entries(dir, Filter::default())
        .into_iter()
        .filter(|e| e.record.request_id == ex.request_id)
        .collect();
    assert_eq!(found.len(), 1, "one record of {ex:?}");
    found.pop().unwrap()
}

/// The number of call records in the trail once it has stopped growing.
async fn settled(dir: &Path) -> usize {
    let mut last = records(dir).len();
    let mut still = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = records(dir).len();
        still = if now == last { still + 1 } else { 0 };
        last = now;
        if still == 3 {
            return now;
        }
    }
    panic!("the audit trail kept growing for 10 s");
}

/// Where a record is, as the console's call page names it.
fn reference(e: &Entry) -> Value {
    json!({"file": e.file.file_name().unwrap().to_str().unwrap(), "line": e.line})
}

fn text<T: ToString + ?Sized>(v: Option<&T>) -> String {
    v.map(ToString::to_string).unwrap_or_default()
}

/// What the five answers of the call page must show for `r`: per answer
/// section, `data-field` → `data-value`.
fn answers(r: &CallRecord) -> Value {
    let p = r.principal.as_deref().expect("a principal");
    json!({
        "answer-server": {
            "route": &*r.route,
            "version": text(r.server_version.as_deref()),
            "approved_by": text(r.approved_by.as_deref()),
        },
        "answer-tool": {
            "method": text(r.method.as_deref()),
            "name": text(r.name.as_deref()),
            "revision": text(r.definition_hash.as_deref()),
            "approved_by": text(r.definition_approved_by.as_deref()),
        },
        "answer-principal": {
            "subject": p.subject,
            "team": text(p.team.as_deref()),
            "issuer": p.issuer,
        },
        "answer-policies": {
            "outcome": r.decision.outcome.as_str(),
        },
        "answer-outcome": {
            "status": text(r.status.as_ref()),
            "tokens": r.tokens.to_string(),
            "bytes_out": r.bytes_out.to_string(),
        },
    })
}

/// The JSON of `tollgate usage --by team --format json` over `since..until`.
async fn usage(dir: &Path, since: &str, until: &str) -> Value {
    let out = tollgate_cli(&[
        "usage",
        dir.to_str().unwrap(),
        "--by",
        "team",
        "--format",
        "json",
        "--since",
        since,
        "--until",
        until,
    ])
    .await;
    assert!(
        out.status.success(),
        "tollgate usage failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "tollgate usage printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Run the browser script with `expected`; its JSON summary.
async fn browse(expected: &Value, work: &Path, screenshots: &Path) -> Value {
    let js = repo_root().join("tests/fixtures/js");
    let chromium = std::env::var_os("TOLLGATE_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| on_path("chromium"))
        .expect("chromium is not on PATH: run scripts/install-test-deps.sh (Debian's chromium package)");
    assert!(
        js.join("node_modules/playwright-core").is_dir() && js.join("node_modules/axe-core").is_dir(),
        "playwright-core or axe-core is missing from tests/fixtures/js: run scripts/install-test-deps.sh"
    );
    let file = work.join("expected.json");
    std::fs::write(&file, serde_json::to_string_pretty(expected).unwrap()).unwrap();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(js.join("console-browser.mjs"))
        .env("TOLLGATE_CONSOLE_EXPECTED", &file)
        .env("TOLLGATE_SCREENSHOTS", screenshots)
        .env("TOLLGATE_CHROMIUM", &chromium)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("the browser script ran for more than 120 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary: Option<Value> = serde_json::from_str(stdout.trim()).ok();
    if !out.status.success() {
        let failed = summary.as_ref().map(|s| s["failed"].clone()).unwrap_or(Value::Null);
        panic!(
            "the browser script failed ({}).\nstep: {}\nwhy: {}\nscreenshots: {}\n\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status,
            failed["step"],
            failed["message"],
            screenshots.display()
        );
    }
    summary.unwrap_or_else(|| panic!("the browser script printed no JSON summary:\n{stdout}\n{stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_real_browser() {
    let begun = Instant::now();
    let phase = |what: &str| println!("{:>5.1} s  {what}", begun.elapsed().as_secs_f64());
    let demo = Demo::spawn().await;
    let policies = policy_dir(POLICIES);
    let work = tempfile::tempdir().unwrap();
    let lock = work.path().join("catalog.lock");
    std::fs::write(&lock, demo_lock_without(&[QUARANTINED_TOOL, QUARANTINED_PROMPT])).unwrap();
    let gw = ChildGateway::spawn(&config(&demo, policies.path(), &lock)).await;
    let dir = gw.audit_dir();
    let mcp = gw.url(ROUTE);
    phase("gateway serving");

    // Real traffic: the TypeScript SDK client (legacy era, a session) as
    // carol, then raw modern-era calls as dave.
    let carol = mint(&gw, "carol", "payments").await;
    let plan = json!({"calls": [
        {"name": "echo", "arguments": {"text": "hello from the TypeScript SDK"}},
        {"name": "add", "arguments": {"a": 2, "b": 3}},
    ]});
    let sdk = ts_plan_client(&mcp, &plan, &[&format!("Authorization: Bearer {carol}")]).await;
    let tools: Vec<&str> = sdk["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {sdk}"))
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"echo") && tools.contains(&"add"), "{sdk}");
    assert!(
        !tools.contains(&QUARANTINED_TOOL),
        "a quarantined tool was listed: {sdk}"
    );
    assert_eq!(sdk["calls"][1]["content"][0]["text"], "5", "{sdk}");

    let dave = mint(&gw, "dave", "research").await;
    let allowed = tool(mcp.clone(), &dave, 1, "add", json!({"a": 20, "b": 22})).await;
    assert_eq!(allowed.status, 200, "{allowed:?}");
    assert_eq!(allowed.message()["result"]["content"][0]["text"], "42", "{allowed:?}");
    let forbidden = tool(mcp.clone(), &dave, 2, "delete_item", json!({"id": "inv-7"})).await;
    let quarantined = tool(mcp.clone(), &dave, 3, QUARANTINED_TOOL, json!({"city": "Lisbon"})).await;
    let refused = quarantined.message();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let echoed = tool(mcp.clone(), &dave, 4, "echo", json!({"text": "captured"})).await;
    assert_eq!(echoed.status, 200, "{echoed:?}");

    // The trail's truth about the three raw calls.
    let call = entry_of(&dir, &allowed).await;
    let r = &call.record;
    assert_eq!(r.decision.outcome, Outcome::Allow, "{r:?}");
    let permit: Vec<&str> = r.decision.policies.iter().map(|p| &**p).collect();
    assert_eq!(permit, [PERMIT_TOOLS], "{r:?}");
    assert_eq!(r.definition_approved_by.as_deref(), Some(LOCK_APPROVER), "{r:?}");
    assert!(
        r.definition_hash.as_deref().is_some_and(|h| h.starts_with("sha256:")),
        "{r:?}"
    );
    assert!(r.capture.is_some(), "the route captures arguments: {r:?}");
    let denied = entry_of(&dir, &forbidden).await;
    assert_eq!(denied.record.decision.outcome, Outcome::Deny, "{:?}", denied.record);
    let forbid: Vec<&str> = denied.record.decision.policies.iter().map(|p| &**p).collect();
    assert_eq!(forbid, [FORBID], "{:?}", denied.record);
    let gated = entry_of(&dir, &quarantined).await.record;
    assert_eq!(
        gated.gate.as_ref().map(|g| &*g.outcome),
        Some("quarantined"),
        "{gated:?}"
    );

    entry_of(&dir, &echoed).await;
    phase("traffic served");
    // Records still on their way (the SDK session's GET stream is recorded
    // when it closes) would change the totals between the CLI's report and
    // the pages': wait until the trail has been still for 300 ms. Then the
    // console reads the index: wait until it holds the whole trail.
    let all = settled(&dir).await;
    scrape_until(&gw.admin, |m| {
        metric(m, "tollgate_audit_index_records", &[]) >= all as f64
    })
    .await;

    // Spend over a window holding all the traffic, as `tollgate usage`
    // reports it.
    let since = humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_secs(3600)).to_string();
    let until = humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(3600)).to_string();
    let usage = usage(&dir, &since, &until).await;
    let dave_calls = entries(
        &dir,
        Filter {
            subject: Some("dave".into()),
            ..Filter::default()
        },
    )
    .len();

    phase("index caught up, usage read");
    let screenshots = screenshot_dir();
    let expected = json!({
        "admin": gw.admin,
        "users": {"admin": "alice", "viewer": "victor"},
        "search": {"subject": "dave", "count": dave_calls},
        "call": {
            "ref": reference(&call),
            "answers": answers(r),
            "policies": [PERMIT_TOOLS],
            "capture": "\"a\": 20",
        },
        "denied": {
            "ref": reference(&denied),
            "subject": "dave",
            "team": "research",
            "server": ROUTE,
            "tool": "delete_item",
            "policy": FORBID,
        },
        "catalog": {
            "server": ROUTE,
            "tool": QUARANTINED_TOOL,
            "prompt": QUARANTINED_PROMPT,
        },
        "spend": {"since": since, "until": until, "usage": usage},
    });
    let summary = browse(&expected, work.path(), &screenshots).await;
    phase("browser done");
    let steps: Vec<&str> = summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for want in [
        "sign in as the admin",
        "audit search and one call",
        "spend",
        "catalog approval",
        "policies",
        "headers and cookies",
        "sign out, sign in as the viewer",
    ] {
        assert!(
            steps.contains(&want),
            "the browser script did not run step {want:?}: {summary:#}"
        );
    }
    assert_eq!(
        summary["screenshots"].as_array().map(Vec::len),
        Some(7),
        "one screenshot per page: {summary:#}"
    );
    for (page, result) in summary["axe"].as_object().unwrap() {
        assert_eq!(
            result["serious"],
            json!([]),
            "axe-core found serious or critical violations on {page}: {result:#}"
        );
    }

    // What the click on the catalog page changed: the lock approves the
    // tool in alice's name, the prompt is still quarantined (the viewer's
    // attempt was refused), and the trail records the approval.
    let lock_now = std::fs::read_to_string(&lock).unwrap();
    let block = lock_now
        .split("\n[[approval]]\n")
        .find(|b| b.contains(&format!("\nname = \"{QUARANTINED_TOOL}\"\n")))
        .unwrap_or_else(|| panic!("the lock does not approve {QUARANTINED_TOOL}:\n{lock_now}"));
    assert!(block.contains("approved_by = \"alice\""), "{block}");
    assert!(
        !lock_now.contains(&format!("\nname = \"{QUARANTINED_PROMPT}\"\n")),
        "the viewer's approval went through:\n{lock_now}"
    );
    let approvals: Vec<CallRecord> = records(&dir)
        .into_iter()
        .filter(|r| r.method.as_deref() == Some("console/approve"))
        .collect();
    assert_eq!(approvals.len(), 1, "one approval recorded: {approvals:#?}");
    let a = &approvals[0];
    assert_eq!(a.phase, Phase::Admin);
    assert_eq!(
        a.principal.as_deref().map(|p| p.subject.as_str()),
        Some("alice"),
        "{a:?}"
    );
    assert_eq!(
        a.name.as_deref(),
        Some(&*format!("{ROUTE}/tool/{QUARANTINED_TOOL}")),
        "{a:?}"
    );
    assert_eq!(a.status, Some(200), "{a:?}");

    // And the tool is now served through the gateway.
    let mut last = None;
    for id in 10..60 {
        let ex = tool(mcp.clone(), &dave, id, QUARANTINED_TOOL, json!({"city": "Lisbon"})).await;
        if ex.status == 200 && ex.message()["result"]["content"][0]["text"].is_string() {
            let rec = entry_of(&dir, &ex).await.record;
            assert_eq!(rec.definition_approved_by.as_deref(), Some("alice"), "{rec:?}");
            last = None;
            break;
        }
        last = Some(ex);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if let Some(ex) = last {
        panic!(
            "{QUARANTINED_TOOL} is still refused after the approval: {}",
            String::from_utf8_lossy(&ex.body)
        );
    }
    phase("approved tool served");
    println!(
        "console screenshots: {}\nbrowser steps: {}\naxe-core: {}",
        screenshots.display(),
        summary["steps"],
        summary["axe"]
    );
}
