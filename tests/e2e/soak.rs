//! `make soak`: mixed traffic at a fixed rate against a real `tollgate
//! serve` with the full pipeline (bearer JWT, Cedar policies, a rate
//! limit, a budget, the audit trail), for `SOAK_SECONDS` (600 by default).
//!
//! The mix, by request number modulo 10: 2026-07-28 calls (0–3), legacy
//! calls in an open session (4), SSE streams with progress (5), calls the
//! policies deny (6), malformed bodies (7), calls over a rate limit (8) and
//! tool lists (9). It passes when no answer is other than its kind
//! expects, the resident memory after warm-up (the first fifth) stays
//! within 5 % of its level at the end of warm-up, the open file
//! descriptors stay flat, and the audit trail verifies after a graceful
//! stop. The figures go to `bench/results/soak-<date>-<commit>.{md,json}`.
//!
//! Ignored by `make test`; run by `make soak` (release build).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tollgate_config::{Environment as _, ProcessEnvironment};
use tollgate_e2e::audit_support::policies;
use tollgate_e2e::children::{ChildGateway, tollgate_cli};
use tollgate_e2e::{Demo, TestIssuer, http, legacy_request, legacy_session, modern_body, modern_headers, repo_root};

/// One request of the mix and the statuses its kind may get.
async fn one(n: u64, base: &str, bearer: &str, session: &str) -> (usize, u16, bool) {
    let kind = (n % 10) as usize;
    let url = format!("{base}/mcp/demo");
    let call = |name: &str, args: Value| modern_body(n, "tools/call", json!({"name": name, "arguments": args}));
    let modern = |name: &str, body: String| {
        http()
            .post(&url)
            .headers(modern_headers("tools/call", Some(name)))
            .header("authorization", bearer)
            .body(body)
    };
    let req = match kind {
        0..=3 => modern("echo", call("echo", json!({"text": "soak"}))),
        4 => {
            let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "legacy"}}});
            legacy_request(&url, Some(bearer), Some(session), &body)
        }
        5 => modern(
            "countdown",
            call("countdown", json!({"n": 2, "delay_ms": 20}))
                .replace("\"_meta\":{", "\"_meta\":{\"progressToken\":\"p\","),
        ),
        6 => modern("delete_item", call("delete_item", json!({"id": "x"}))),
        7 => modern(
            "echo",
            "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\": {".to_owned(),
        ),
        8 => modern("add", call("add", json!({"a": 1, "b": 2}))),
        _ => http()
            .post(&url)
            .headers(modern_headers("tools/list", None))
            .header("authorization", bearer)
            .body(modern_body(n, "tools/list", json!({}))),
    };
    let Ok(res) = req.send().await else {
        return (kind, 0, false);
    };
    let status = res.status().as_u16();
    let body = res.text().await.unwrap_or_default();
    let expected = match kind {
        0..=4 | 9 => status == 200,
        5 => status == 200 && body.contains("liftoff"),
        6 => status == 403,
        7 => status == 400,
        _ => status == 200 || status == 429,
    };
    (kind, status, expected)
}

/// Resident memory (KiB) and open file descriptors of `pid`.
fn usage(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    (rss, fds)
}

fn commit() -> String {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(repo_root())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "ten minutes: run by `make soak`"]
async fn mixed_traffic_at_a_fixed_rate_keeps_memory_and_descriptors_flat() {
    let setting = |name: &str, default: u64| {
        ProcessEnvironment
            .var(name)
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let (seconds, rate) = (setting("SOAK_SECONDS", 600), setting("SOAK_RATE", 200));
    let issuer = TestIssuer::new();
    let demo = Demo::spawn().await;
    let policies = policies();
    let mut gw = ChildGateway::spawn(&format!(
        "{}\n[policy]\ndir = \"{}\"\n\n\
         [[limits.rules]]\nid = \"add\"\ntools = [\"add\"]\nrate = 60\nperiod = \"1m\"\n\n\
         [[limits.budgets]]\nid = \"payments\"\nper = \"team\"\nperiod = \"day\"\ntokens = 1000000000\n\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n",
        issuer.config(),
        policies.path().display(),
        demo.url
    ))
    .await;
    let pid = gw.child.id().unwrap();
    let mut claims = issuer.claims("soak", "mcp:tools", &["demo"]);
    claims["team"] = json!("payments");
    claims["exp"] = json!(claims["iat"].as_u64().unwrap() + seconds + 600);
    let bearer = format!("Bearer {}", issuer.sign(&claims));
    let session = legacy_session(&gw.url("demo"), Some(&bearer)).await;

    let counts: Arc<[AtomicU64; 10]> = Arc::new(Default::default());
    let unexpected = Arc::new(AtomicU64::new(0));
    let samples = Arc::new(std::sync::Mutex::new(Vec::<(u64, u64, u64)>::new()));
    let started = Instant::now();
    let total = rate * seconds;
    let mut ticker = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    let mut in_flight = tokio::task::JoinSet::new();
    let mut next_sample = Duration::ZERO;
    for n in 0..total {
        ticker.tick().await;
        if started.elapsed() >= next_sample {
            let (rss, fds) = usage(pid);
            samples.lock().unwrap().push((started.elapsed().as_secs(), rss, fds));
            next_sample += Duration::from_secs(5);
        }
        let (base, bearer, session) = (gw.base.clone(), bearer.clone(), session.clone());
        let (counts, unexpected) = (counts.clone(), unexpected.clone());
        in_flight.spawn(async move {
            let (kind, status, ok) = one(n, &base, &bearer, &session).await;
            counts[kind].fetch_add(1, Ordering::Relaxed);
            if !ok {
                unexpected.fetch_add(1, Ordering::Relaxed);
                eprintln!("request {n} (kind {kind}): unexpected status {status}");
            }
        });
        while in_flight.try_join_next().is_some() {}
    }
    while in_flight.join_next().await.is_some() {}
    let (rss_end, fds_end) = usage(pid);
    samples
        .lock()
        .unwrap()
        .push((started.elapsed().as_secs(), rss_end, fds_end));

    // Stop gracefully (the trail is sealed), then verify it.
    let _ = tokio::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await;
    let _ = tokio::time::timeout(Duration::from_secs(30), gw.child.wait()).await;
    let verify = tollgate_cli(&["audit", "verify", gw.audit_dir().to_str().unwrap()]).await;
    let verified = String::from_utf8_lossy(&verify.stdout).trim().to_owned();

    let samples = samples.lock().unwrap().clone();
    let warm = samples
        .iter()
        .find(|s| s.0 >= seconds / 5)
        .copied()
        .unwrap_or(samples[0]);
    let after: Vec<_> = samples.iter().filter(|s| s.0 >= warm.0).collect();
    let rss_max = after.iter().map(|s| s.1).max().unwrap_or(warm.1);
    let fds_max = after.iter().map(|s| s.2).max().unwrap_or(warm.2);
    let growth = rss_max as f64 / warm.1.max(1) as f64 - 1.0;
    let kinds: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let unexpected = unexpected.load(Ordering::Relaxed);
    let doc = json!({
        "commit": commit(), "seconds": seconds, "rate": rate, "requests": total, "by_kind": kinds,
        "unexpected": unexpected, "rss_kib": {"warm": warm.1, "max_after_warm": rss_max, "end": rss_end},
        "rss_growth_after_warm": growth, "fds": {"warm": warm.2, "max_after_warm": fds_max, "end": fds_end},
        "audit_verify": verified, "samples": samples,
    });
    write_results(&doc);

    assert_eq!(unexpected, 0, "unexpected answers");
    assert!(growth <= 0.05, "RSS grew {:.1} % after warm-up: {doc}", growth * 100.0);
    assert!(fds_max <= warm.2 + 16, "file descriptors grew: {doc}");
    assert!(
        verify.status.success(),
        "audit trail: {verified} {}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// `bench/results/soak-<date>-<commit>.{json,md}`.
fn write_results(doc: &Value) {
    let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stem = format!("soak-{}-{}", &date[..10], doc["commit"].as_str().unwrap_or("unknown"));
    let dir = repo_root().join("bench/results");
    std::fs::write(dir.join(format!("{stem}.json")), format!("{doc:#}\n")).unwrap();
    let md = format!(
        "# Soak: {date}, {commit}\n\n{seconds} s at {rate} requests/s ({requests} requests; by kind 0–9: {kinds}) against \
         `tollgate serve` with bearer JWT, Cedar policies, a rate limit, a budget and the audit trail.\n\n\
         | Check | Measured | Limit |\n|---|---|---|\n\
         | unexpected answers | {unexpected} | 0 |\n\
         | RSS growth after warm-up | {growth:.2} % ({warm} → max {max} KiB, end {end} KiB) | ≤ 5 % |\n\
         | open file descriptors | warm {fw}, max {fm}, end {fe} | flat |\n\
         | audit trail | {verify} | verifies |\n",
        commit = doc["commit"].as_str().unwrap_or(""),
        seconds = doc["seconds"],
        rate = doc["rate"],
        requests = doc["requests"],
        kinds = doc["by_kind"],
        unexpected = doc["unexpected"],
        growth = doc["rss_growth_after_warm"].as_f64().unwrap_or(0.0) * 100.0,
        warm = doc["rss_kib"]["warm"],
        max = doc["rss_kib"]["max_after_warm"],
        end = doc["rss_kib"]["end"],
        fw = doc["fds"]["warm"],
        fm = doc["fds"]["max_after_warm"],
        fe = doc["fds"]["end"],
        verify = doc["audit_verify"].as_str().unwrap_or(""),
    );
    std::fs::write(dir.join(format!("{stem}.md")), md).unwrap();
}
