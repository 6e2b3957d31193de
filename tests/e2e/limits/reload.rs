//! Configuration reload of a real `tollgate serve` process: the file is
//! replaced under load (a server added, a limit tightened) with no failed
//! request, a stream that spans the reload and a legacy session that
//! outlives it; an invalid file is refused with its file:line error and the
//! old configuration keeps serving; a change that needs a restart is named;
//! SIGHUP reloads too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tollgate_e2e::audit_support::{load_request, metric};
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::{Demo, http, legacy_request, legacy_session, modern_body, modern_headers};

/// The demo server as `demo`, with `add` limited to `add_rate` calls a
/// minute in all, and `extra` more servers in front of the same upstream.
fn config(demo: &Demo, add_rate: u32, extra: &[&str]) -> String {
    let mut text = format!(
        "[[limits.rules]]\nid = \"add-global\"\ntools = [\"add\"]\nper = \"global\"\nrate = {add_rate}\nperiod = \"1m\"\n\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    );
    for name in extra {
        text.push_str(&format!("\n[[servers]]\nname = \"{name}\"\nurl = \"{}\"\n", demo.url));
    }
    text
}

/// Wait until the configuration in force is generation `n`.
async fn generation(gw: &ChildGateway, n: u64) -> Value {
    for _ in 0..100 {
        let detail = gw.ready_detail().await;
        if detail["config"]["generation"] == n {
            return detail["config"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("generation {n} never came into force:\n{}", gw.log());
}

async fn call(url: String, id: u64, name: &str, args: Value) -> reqwest::Response {
    let body = modern_body(id, "tools/call", json!({"name": name, "arguments": args}));
    let headers = modern_headers("tools/call", Some(name));
    http().post(&url).headers(headers).body(body).send().await.unwrap()
}

/// Send calls one after another until `stop`; counts answers and failures.
async fn load(url: String, task: u64, stop: Arc<AtomicBool>, failed: Arc<AtomicU64>) -> u64 {
    let mut answered = 0;
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let ok = match load_request(&url, task, n).send().await {
            Ok(res) => res.status() == 200 && res.bytes().await.is_ok(),
            Err(_) => false,
        };
        if ok {
            answered += 1;
        } else {
            failed.fetch_add(1, Ordering::Relaxed);
        }
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_under_load_adds_a_server_and_tightens_a_limit_without_a_failed_request() {
    let demo = Demo::spawn().await;
    let gw = ChildGateway::spawn_logging(&config(&demo, 100, &[]), "info").await;
    let url = gw.url("demo");
    let session = legacy_session(&url, None).await;

    let (stop, failed) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    // Even tasks send 2026-07-28 calls (the demo server wants a session
    // for legacy ones).
    let loads: Vec<_> = (0..4)
        .map(|task| tokio::spawn(load(url.clone(), task * 2, stop.clone(), failed.clone())))
        .collect();
    // A stream of progress events that starts before the reload and ends
    // after it.
    let stream = {
        let url = url.clone();
        tokio::spawn(async move {
            let body = modern_body(
                7,
                "tools/call",
                json!({"name": "countdown", "arguments": {"n": 8, "delay_ms": 250}}),
            )
            .replace("\"_meta\":{", "\"_meta\":{\"progressToken\":\"p\",");
            let res = http()
                .post(&url)
                .headers(modern_headers("tools/call", Some("countdown")))
                .body(body)
                .send()
                .await
                .unwrap();
            (res.status(), res.text().await.unwrap())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;

    gw.rewrite(&config(&demo, 1, &["more"]));
    let status = generation(&gw, 2).await;
    assert_eq!(status["reload_failures"], 0);
    assert_eq!(status["restart_required"], json!([]));

    // The added server serves; the tightened limit holds.
    let res = call(gw.url("more"), 1, "echo", json!({"text": "new"})).await;
    assert_eq!(res.status(), 200, "{}", gw.log());
    assert_eq!(call(url.clone(), 2, "add", json!({"a": 1, "b": 2})).await.status(), 200);
    assert_eq!(call(url.clone(), 3, "add", json!({"a": 1, "b": 2})).await.status(), 429);
    // The legacy session opened before the reload still works.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(
        legacy_request(&url, None, Some(&session), &list)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    let (code, text) = stream.await.unwrap();
    assert_eq!(code, 200);
    assert_eq!(text.matches("notifications/progress").count(), 8, "{text}");
    assert!(
        text.contains("liftoff"),
        "the stream that spanned the reload ended with its result: {text}"
    );
    stop.store(true, Ordering::Relaxed);
    let mut answered = 0;
    for l in loads {
        answered += l.await.unwrap();
    }
    assert!(answered > 50, "the load ran: {answered}");
    assert_eq!(failed.load(Ordering::Relaxed), 0, "no request failed across the reload");

    let m = gw.metrics().await;
    assert_eq!(metric(&m, "tollgate_config_generation", &[]), 2.0);
    assert_eq!(metric(&m, "tollgate_config_reloads_total", &[]), 1.0);
    assert!(gw.log().contains("configuration reloaded"), "{}", gw.log());
}

#[tokio::test]
async fn an_invalid_file_is_refused_and_the_configuration_in_force_keeps_serving() {
    let demo = Demo::spawn().await;
    let gw = ChildGateway::spawn(&config(&demo, 100, &["more"])).await;
    let echo = |route: &str| call(gw.url(route), 1, "echo", json!({"text": "x"}));
    assert_eq!(echo("more").await.status(), 200);

    // An unknown key: refused with its file, line and key.
    gw.rewrite(&config(&demo, 100, &["more"]).replace("name = \"more\"", "name = \"more\"\ncolour = 1"));
    let mut refused = Value::Null;
    for _ in 0..100 {
        refused = gw.ready_detail().await["config"].clone();
        if refused["reload_failures"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(refused["generation"], 1, "{refused}");
    assert_eq!(refused["last_reload_ok"], false);
    let error = refused["last_error"].as_str().unwrap();
    let text = std::fs::read_to_string(gw.dir.path().join("gateway.toml")).unwrap();
    let line = text.lines().position(|l| l.starts_with("colour")).unwrap() + 1;
    assert!(error.contains(&format!("gateway.toml:{line}:")), "{error}");
    assert!(error.contains("servers[1].colour"), "{error}");
    assert!(gw.log().contains("configuration reload refused"), "{}", gw.log());
    let m = gw.metrics().await;
    assert_eq!(metric(&m, "tollgate_config_reload_failures_total", &[]), 1.0);
    assert_eq!(metric(&m, "tollgate_config_last_reload_success", &[]), 0.0);
    assert_eq!(echo("more").await.status(), 200, "the old configuration serves");

    // A valid file that removes a server and changes a setting bound at
    // start: the server is gone, the setting is named for a restart.
    gw.rewrite(&format!("{}\n[runtime]\nworker_threads = 1\n", config(&demo, 100, &[])));
    let status = generation(&gw, 2).await;
    assert_eq!(status["restart_required"], json!(["runtime"]));
    assert_eq!(status["last_reload_ok"], true);
    assert_eq!(echo("more").await.status(), 404);
    assert_eq!(echo("demo").await.status(), 200);

    // SIGHUP reloads the file too.
    gw.hangup().await;
    generation(&gw, 3).await;
    assert!(gw.log().contains("take effect after a restart"), "{}", gw.log());
}
