//! Hot reload: atomic under concurrent decisions, a broken set keeps the old
//! one, the status counts, and the watcher picks up edits.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{engine, user};
use tollgate_policy::{CallRequest, Reason, ReloadOutcome};

const ALLOW_ECHO: &str = r#"@id("echo-allowed")
permit (principal, action == Tollgate::Action::"call_tool", resource == Tollgate::Tool::"demo/echo");"#;
const DENY_ECHO: &str = r#"@id("everything-but-echo")
permit (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::Server::"demo")
when { resource.name != "echo" };"#;

fn echo() -> CallRequest<'static> {
    CallRequest::new("demo", "tools/call").name(Some("echo"))
}

#[test]
fn reload_swaps_and_a_broken_set_keeps_the_old_one() {
    let (dir, e) = engine(&[("p.cedar", ALLOW_ECHO)]);
    let alice = user("alice", &[], None, &[]);
    assert!(e.decide(&alice, &echo()).allowed);
    assert_eq!(
        e.reload(dir.path()).unwrap(),
        ReloadOutcome::Unchanged { generation: 1 }
    );

    std::fs::write(dir.path().join("p.cedar"), DENY_ECHO).unwrap();
    assert_eq!(
        e.reload_configured().unwrap(),
        ReloadOutcome::Reloaded {
            generation: 2,
            policies: 1
        }
    );
    let d = e.decide(&alice, &echo());
    assert_eq!((d.allowed, d.generation), (false, 2));

    // A broken file: refused with its location, old decisions stay.
    std::fs::write(
        dir.path().join("p.cedar"),
        "@id(\"x\")\npermit (principal, action, resource",
    )
    .unwrap();
    let errors = e.reload_configured().unwrap_err();
    assert!(errors.0[0].to_string().contains("p.cedar:2:"), "{errors}");
    let d = e.decide(&alice, &echo());
    assert_eq!((d.allowed, d.generation), (false, 2));
    let status = e.status();
    assert_eq!((status.generation, status.reloads, status.reload_failures), (2, 1, 1));
    assert!(status.last_error.as_deref().unwrap().contains("p.cedar"));
    assert_eq!(status.policies, 1);

    // Invalid against the schema is refused too; then a good set clears the error.
    std::fs::write(
        dir.path().join("p.cedar"),
        "@id(\"x\") permit (principal, action, resource) when { context.nope };",
    )
    .unwrap();
    assert!(e.reload_configured().is_err());
    std::fs::write(dir.path().join("p.cedar"), ALLOW_ECHO).unwrap();
    assert!(matches!(
        e.reload_configured().unwrap(),
        ReloadOutcome::Reloaded { generation: 3, .. }
    ));
    let status = e.status();
    assert_eq!((status.reload_failures, status.last_error), (2, None));
    assert!(e.decide(&alice, &echo()).allowed);
}

#[test]
fn decisions_during_reloads_always_use_one_whole_set() {
    let (dir, e) = engine(&[("p.cedar", ALLOW_ECHO)]);
    let e = Arc::new(e);
    // generation -> whether echo is allowed in it.
    let sets = Arc::new(Mutex::new(HashMap::from([(1_u64, true)])));
    let stop = Arc::new(AtomicBool::new(false));
    let deciders: Vec<_> = (0..3)
        .map(|i| {
            let (e, stop) = (Arc::clone(&e), Arc::clone(&stop));
            std::thread::spawn(move || {
                let alice = user(&format!("u{i}"), &[], None, &[]);
                let mut seen = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let d = e.decide(&alice, &echo());
                    assert!(!matches!(d.reason, Reason::Error { .. }), "{d:?}");
                    seen.push((d.generation, d.allowed));
                }
                seen
            })
        })
        .collect();
    for round in 0..40 {
        let allow = round % 2 == 1;
        std::fs::write(dir.path().join("p.cedar"), if allow { ALLOW_ECHO } else { DENY_ECHO }).unwrap();
        match e.reload(dir.path()).unwrap() {
            ReloadOutcome::Reloaded { generation, .. } => sets.lock().unwrap().insert(generation, allow),
            other => panic!("{other:?}"),
        };
    }
    stop.store(true, Ordering::Relaxed);
    let sets = sets.lock().unwrap();
    let mut decisions = 0;
    for t in deciders {
        for (generation, allowed) in t.join().unwrap() {
            assert_eq!(sets[&generation], allowed, "generation {generation}");
            decisions += 1;
        }
    }
    assert!(decisions > 40, "only {decisions} decisions");
    assert_eq!(e.status().generation, 41);
}

#[test]
fn the_watcher_reloads_on_change() {
    let (dir, e) = engine(&[("p.cedar", ALLOW_ECHO)]);
    let e = Arc::new(e);
    let watcher = e.watch().unwrap();
    let alice = user("alice", &[], None, &[]);
    std::fs::write(dir.path().join("p.cedar"), DENY_ECHO).unwrap();
    wait_for(|| e.status().generation == 2);
    assert!(!e.decide(&alice, &echo()).allowed);
    // A broken edit is counted and changes nothing.
    std::fs::write(dir.path().join("p.cedar"), "nonsense").unwrap();
    wait_for(|| e.status().reload_failures == 1);
    assert_eq!(e.status().generation, 2);
    // A new file is picked up too.
    std::fs::write(dir.path().join("p.cedar"), DENY_ECHO).unwrap();
    std::fs::write(
        dir.path().join("q.cedar"),
        ALLOW_ECHO.replace("echo-allowed", "echo-again"),
    )
    .unwrap();
    wait_for(|| e.status().generation == 3);
    assert!(e.decide(&alice, &echo()).allowed);
    drop(watcher);
    // Dropping the watcher ends it; the engine keeps working.
    std::fs::write(dir.path().join("q.cedar"), "").unwrap();
    std::thread::sleep(tollgate_policy::DEBOUNCE * 3);
    assert_eq!(e.status().generation, 3);
}

fn wait_for(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(20));
    }
}
