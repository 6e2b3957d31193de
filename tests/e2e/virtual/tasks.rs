//! Tasks (the tasks extension, SEP-2663) through a virtual server, driven
//! by the `rmcp` client speaking 2026-07-28 with the extension declared:
//! the demo's `countdown` runs as a task on two members of one virtual
//! server, is polled and cancelled by the sealed ids the virtual server
//! handed out, and ends as it does on the member's own route. The audit
//! trail keeps task ids only as fingerprints.

use std::time::Duration;

use rmcp::model::{CancelTaskParams, DetailedTask, GetTaskParams, TaskPayload};
use tollgate_audit::task_fingerprint;
use tollgate_e2e::audit_support::{records, trail_lines};
use tollgate_e2e::tasks::{self, Client, start};
use tollgate_e2e::{Demo, TestGateway};

use super::gateway;

/// An rmcp client of `url`, tasks declared: 2026-07-28 (`server/discover`)
/// or, `legacy`, a session opened by `initialize`.
async fn client(url: String, legacy: bool) -> Client {
    tasks::client(url, None, legacy).await
}

/// The virtual server over two demo servers, `demo` and `demo2` (`two_`).
async fn two_demos() -> (TestGateway, [Demo; 2]) {
    let (one, two) = (Demo::spawn().await, Demo::spawn().await);
    let virtuals = "\n[[virtual_servers]]\nname = \"eng\"\nmembers = [\n  { server = \"demo\" },\n  \
                    { server = \"demo2\", prefix = \"two_\" },\n]\n";
    let gw = gateway(&[("demo", &one.url, ""), ("demo2", &two.url, "")], virtuals, "").await;
    (gw, [one, two])
}

/// On `eng`: a task on each member, the first polled to its end, the
/// second cancelled; their ids, and the first's end.
async fn run_two_tasks(eng: &Client) -> (String, String, DetailedTask) {
    let caps = &eng.peer_info().unwrap().capabilities;
    assert!(
        caps.supports_tasks(),
        "the virtual server offers its members' tasks: {caps:?}"
    );
    // The ids are sealed handles: they say nothing of the member.
    let a = start(eng, "demo_countdown", 3, 30).await;
    let b = start(eng, "two_countdown", 20, 500).await;
    for id in [&a, &b] {
        assert!(id.starts_with("tgt1.") && !id.contains("demo"), "{id}");
    }
    let done = finished(eng, &a).await;
    assert_eq!(liftoff(&done), "liftoff");
    eng.peer().cancel_task(CancelTaskParams::new(b.clone())).await.unwrap();
    let cancelled = finished(eng, &b).await;
    assert!(matches!(cancelled.payload, TaskPayload::Cancelled), "{cancelled:?}");
    // An id the virtual server did not hand out is an unknown task.
    let err = eng
        .peer()
        .get_task(GetTaskParams::new("tg:elsewhere:1".to_owned()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Unknown task"), "{err}");
    (a, b, done)
}

/// Poll task `id` until it ends (10 s at most).
async fn finished(c: &Client, id: &str) -> DetailedTask {
    for _ in 0..200 {
        let got = c.peer().get_task(GetTaskParams::new(id.to_owned())).await.unwrap();
        assert_eq!(
            got.task.task.task_id, id,
            "tasks/get names the task as the client knows it"
        );
        if got.task.status().is_terminal() {
            return got.task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not end in 10 s");
}

fn liftoff(task: &DetailedTask) -> String {
    match &task.payload {
        TaskPayload::Completed { result } => result["content"][0]["text"].as_str().unwrap().to_owned(),
        other => panic!("not completed: {other:?}"),
    }
}

#[tokio::test]
async fn tasks_of_two_members_are_polled_and_cancelled_through_one_endpoint() {
    let (gw, _demos) = two_demos().await;
    let eng = client(gw.url("eng"), false).await;
    let (a, b, done) = run_two_tasks(&eng).await;

    // The same call on the member's own route ends the same, names aside:
    // the route hands out a handle of its own.
    let direct = client(gw.url("demo"), false).await;
    let own = start(&direct, "countdown", 3, 30).await;
    assert!(own.starts_with("tgt1.") && own != a && own != b, "{own}");
    assert_eq!(liftoff(&finished(&direct, &own).await), liftoff(&done));

    // Each task request was audited on the member that holds the task,
    // under the fingerprints of both ids, never the ids themselves.
    let all = records(&gw.audit_dir());
    let cancel = all
        .iter()
        .find(|r| r.method.as_deref() == Some("tasks/cancel") && r.virtual_server.is_some())
        .expect("tasks/cancel audited");
    assert_eq!(&*cancel.route, "demo2");
    assert_eq!(cancel.virtual_server.as_deref(), Some("eng"));
    assert_eq!(cancel.exposed_name.as_deref(), Some(task_fingerprint(&b).as_str()));
    let own_print = cancel.name.as_deref().unwrap();
    assert!(
        own_print.starts_with("task:") && own_print != task_fingerprint(&b),
        "{own_print}"
    );
    let trail = trail_lines(&gw.audit_dir()).join("\n");
    for id in [&a, &b, &own] {
        assert!(!trail.contains(id.as_str()), "task id {id} is in the trail");
    }
    let polled_on = |id: &str| {
        let print = task_fingerprint(id);
        all.iter()
            .filter(|r| r.method.as_deref() == Some("tasks/get") && r.exposed_name.as_deref() == Some(print.as_str()))
            .map(|r| r.route.to_string())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(polled_on(&a), ["demo".to_owned()].into());
    assert_eq!(polled_on(&b), ["demo2".to_owned()].into());
    for c in [eng, direct] {
        c.cancel().await.unwrap();
    }
}

/// Also the legacy session's relayed streams as rmcp reads them: its SSE
/// parser refuses a field line without a colon (`data` for empty data).
#[tokio::test]
async fn tasks_run_in_a_legacy_session_on_a_virtual_server() {
    let (gw, _demos) = two_demos().await;
    let eng = client(gw.url("eng"), true).await;
    run_two_tasks(&eng).await;
    eng.cancel().await.unwrap();
}
