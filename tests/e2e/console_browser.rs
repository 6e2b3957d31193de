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

#[path = "console_browser/browser.rs"]
mod browser;
#[path = "console_browser/second.rs"]
mod second;
#[path = "console_browser/trail.rs"]
mod trail;

use std::path::Path;

use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tollgate_audit::{CallRecord, Entry, Filter, Outcome, Phase};
use tollgate_e2e::audit_support::{metric, records, scrape_until, tool};
use tollgate_e2e::children::{ChildGateway, ts_plan_client};
use tollgate_e2e::{Demo, demo_lock_without, policy_dir};

use browser::{browse, screenshot_dir};
use second::{POISONED_TOOL, SECOND, VIRTUAL, collide, poisoned_upstream};
use trail::{answers, entries, entry_of, reference, settled, usage};

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
/// research's daily token budget: far above the test's traffic (nothing is
/// refused), and a limit with thousands separators on the spend page.
const BUDGET: (&str, &str, u64) = ("research-daily", "research", 1_000_000);

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
fn config(demo: &Demo, second: &str, policies: &Path, lock: &Path) -> String {
    format!(
        r#"{console}
[policy]
dir = "{policies}"

[audit]
index = true

[catalog]
mode = "enforce"
lock = "{lock}"

[[limits.budgets]]
id = "{budget}"
per = "team"
keys = ["{team}"]
period = "day"
tokens = {tokens}

[[servers]]
name = "{ROUTE}"
url = "{url}"
auth = {{ scopes = ["mcp:tools"] }}
audit = {{ server_version = "0.1.0", approved_by = "{SERVER_APPROVAL}", capture_arguments = true, capture_results = true }}
{second}"#,
        console = tollgate_e2e::CONSOLE,
        policies = policies.display(),
        lock = lock.display(),
        url = demo.url,
        budget = BUDGET.0,
        team = BUDGET.1,
        tokens = BUDGET.2,
        second = second::tables(ROUTE, second),
    )
}

/// The three raw calls the browser is checked against, and the token of
/// their caller.
struct Served {
    /// An allowed call, with captured arguments.
    call: Entry,
    /// A call denied by [`FORBID`].
    denied: Entry,
    /// dave's token for the MCP route.
    dave: String,
}

/// Real traffic: the TypeScript SDK client (legacy era, a session) as
/// carol, then raw modern-era calls as dave; checked against the trail.
async fn serve_traffic(gw: &ChildGateway) -> Served {
    let (dir, mcp) = (gw.audit_dir(), gw.url(ROUTE));
    let carol = gw.mint("carol", &["--team", "payments", "--scope", "mcp:tools"]).await;
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

    let dave = gw.mint("dave", &["--team", "research", "--scope", "mcp:tools"]).await;
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
    assert!(
        denied.record.error.is_some(),
        "a denial records its error class: {:?}",
        denied.record
    );
    let gated = entry_of(&dir, &quarantined).await.record;
    assert_eq!(
        gated.gate.as_ref().map(|g| &*g.outcome),
        Some("quarantined"),
        "{gated:?}"
    );

    entry_of(&dir, &echoed).await;
    Served { call, denied, dave }
}

/// What the click on the catalog page changed: the lock approves the
/// tool in alice's name, the prompt is still quarantined (the viewer's
/// attempt was refused), the trail records the approval, and the tool is
/// now served through the gateway.
async fn approval_took_effect(lock: &Path, dir: &Path, mcp: &str, dave: &str) {
    let lock_now = std::fs::read_to_string(lock).unwrap();
    let block = lock_now
        .split("\n[[approval]]\n")
        .find(|b| b.contains(&format!("\nname = \"{QUARANTINED_TOOL}\"\n")))
        .unwrap_or_else(|| panic!("the lock does not approve {QUARANTINED_TOOL}:\n{lock_now}"));
    assert!(block.contains("approved_by = \"alice\""), "{block}");
    assert!(
        !lock_now.contains(&format!("\nname = \"{QUARANTINED_PROMPT}\"\n")),
        "the viewer's approval went through:\n{lock_now}"
    );
    let approvals: Vec<CallRecord> = records(dir)
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
        let ex = tool(mcp.to_owned(), dave, id, QUARANTINED_TOOL, json!({"city": "Lisbon"})).await;
        if ex.status == 200 && ex.message()["result"]["content"][0]["text"].is_string() {
            let rec = entry_of(dir, &ex).await.record;
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
}

/// The browser script ran every step, took a screenshot of each page and
/// found no serious accessibility violation.
fn assert_summary(summary: &Value) {
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_real_browser() {
    let begun = Instant::now();
    let phase = |what: &str| println!("{:>5.1} s  {what}", begun.elapsed().as_secs_f64());
    let demo = Demo::spawn().await;
    let cat = poisoned_upstream().await;
    let policies = policy_dir(POLICIES);
    let work = tempfile::tempdir().unwrap();
    let lock = work.path().join("catalog.lock");
    std::fs::write(&lock, demo_lock_without(&[QUARANTINED_TOOL, QUARANTINED_PROMPT])).unwrap();
    let gw = ChildGateway::spawn(&config(&demo, &cat.url, policies.path(), &lock)).await;
    let dir = gw.audit_dir();
    let mcp = gw.url(ROUTE);
    collide(&gw).await;
    phase("gateway serving");

    let Served { call, denied, dave } = serve_traffic(&gw).await;
    let r = &call.record;
    phase("traffic served");
    // Records still on their way (the SDK session's GET stream is recorded
    // when it closes) would change the totals between the CLI's report and
    // the pages': wait until the trail has been still for 300 ms. Then the
    // console reads the index: wait until it holds the whole trail.
    let all = settled(&dir).await;
    scrape_until(&gw.admin, |m| {
        metric(m, "tollgate_audit_index_records_total", &[]) >= all as f64
    })
    .await;

    // Spend over a window holding all the traffic, as `tollgate usage`
    // reports it.
    let since = humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_secs(3600)).to_string();
    let until = humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(3600)).to_string();
    let usage = usage(&dir, &since, &until).await;
    // Errors that were not denials (a denial is answered with an error too).
    let calls: Vec<CallRecord> = entries(&dir, Filter::default())
        .into_iter()
        .map(|e| e.record)
        .filter(|r| r.phase != Phase::Admin)
        .collect();
    assert_eq!(
        u64::try_from(calls.len()).unwrap(),
        usage["total"]["calls"],
        "the overview's calls are the trail's"
    );
    let failed = calls
        .iter()
        .filter(|r| r.is_error() && r.decision.outcome != Outcome::Deny)
        .count();
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
        "overview": {"failed": failed, "denied": usage["total"]["denied"], "errors": usage["total"]["errors"]},
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
            "rpc_error": denied.record.rpc_error,
            "error": denied.record.error,
        },
        "catalog": {
            "server": ROUTE,
            "tool": QUARANTINED_TOOL,
            "prompt": QUARANTINED_PROMPT,
            "described": {"tool": "add", "description": "Adds two integers and returns the sum.", "schema": "The first addend."},
            "poisoned": {"server": SECOND, "tool": POISONED_TOOL},
        },
        "upstreams": {"server": ROUTE, "collision": {"virtual": VIRTUAL, "name": POISONED_TOOL, "members": [ROUTE, SECOND]}},
        "spend": {
            "since": since,
            "until": until,
            "usage": usage,
            "budget": {"id": BUDGET.0, "key": BUDGET.1, "tokens": BUDGET.2},
        },
    });
    let summary = browse(&expected, work.path(), &screenshots).await;
    phase("browser done");
    assert_summary(&summary);
    approval_took_effect(&lock, &dir, &mcp, &dave).await;
    phase("approved tool served");
    println!(
        "console screenshots: {}\nbrowser steps: {}\naxe-core: {}",
        screenshots.display(),
        summary["steps"],
        summary["axe"]
    );
}
