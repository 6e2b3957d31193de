//! What members send the client on their own account through a virtual
//! server: sampling and elicitation requests inside a call's answer (the
//! TypeScript SDK client answers them; the answers reach the member that
//! asked), the merged GET stream of the members' notifications, and a
//! call's answer stream resumed by a GET after the client lost it.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tollgate_e2e::children::ts_plan_client;
use tollgate_e2e::http;

use super::legacy::{get_stream, legacy, mixed};

/// The plan run against the virtual server (prefixed names) and against
/// server-everything's own route.
fn plan(prefix: &str) -> Value {
    json!({
        "answer": {"sampling": "sampled for tollgate", "elicitation": {"name": "Ada Lovelace"}},
        "calls": [
            {"name": format!("{prefix}trigger-sampling-request"), "arguments": {"prompt": "hi", "maxTokens": 5}},
            {"name": format!("{prefix}trigger-elicitation-request"), "arguments": {}},
            {"name": format!("{prefix}echo"), "arguments": {"message": "after"}},
        ],
    })
}

#[tokio::test]
async fn sampling_and_elicitation_reach_the_client_and_its_answers_the_member() {
    let (gw, _members) = mixed().await;

    let through = ts_plan_client(&gw.url("mixed"), &plan("ev_"), &[]).await;
    let direct = ts_plan_client(&gw.url("everything"), &plan(""), &[]).await;
    assert_eq!(
        through["requests"],
        json!(["sampling/createMessage", "elicitation/create"]),
        "{through:#}"
    );
    assert_eq!(through["requests"], direct["requests"]);
    let text = |out: &Value, i: usize| {
        out["calls"][i]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(text(&through, 0).contains("sampled for tollgate"), "{through:#}");
    let elicited: String = (0..4)
        .map(|j| through["calls"][1]["content"][j]["text"].as_str().unwrap_or_default())
        .collect();
    assert!(elicited.contains("Ada Lovelace"), "{through:#}");
    for i in 0..3 {
        assert_eq!(
            through["calls"][i]["content"], direct["calls"][i]["content"],
            "call {i}"
        );
    }
    assert_eq!(through["sessionTerminated"], "ok", "{through:#}");
}

#[tokio::test]
async fn the_get_stream_merges_member_notifications_with_resumable_ids() {
    let (gw, _members) = mixed().await;
    let session = open_session(&gw).await;
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "debug"}});
    let ex = legacy(&gw, Some(&session), level).await;
    assert_eq!(ex.message()["result"], json!({}), "{ex:?}");

    let res = get_stream(&gw, &session).await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(res.headers()["mcp-session-id"], session.as_str());

    // server-everything logs to the session's stream at once when asked.
    let toggle = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "ev_toggle-simulated-logging", "arguments": {}}});
    assert_eq!(legacy(&gw, Some(&session), toggle).await.status, 200);
    let mut body = res.bytes_stream();
    let mut seen = String::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if seen.contains("notifications/message") && seen.contains("\n\n") {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(15), read)
        .await
        .expect("a log notification");
    assert!(seen.contains("notifications/message"), "{seen}");
    if let Some(id) = seen.lines().find_map(|l| l.strip_prefix("id:")) {
        assert!(
            id.trim().starts_with("tgv."),
            "merged event ids carry every member: {seen}"
        );
    }

    // Once the stream is open, a bad session id is still refused.
    let res = get_stream(&gw, "tg1.forged").await;
    assert_eq!(res.status(), 404);
}

#[tokio::test]
async fn a_lost_answer_stream_is_resumed_through_the_virtual_server() {
    let (gw, _members) = mixed().await;
    let session = open_session(&gw).await;

    // The demo member counts down with progress; the client reads two
    // steps of the answer stream and loses the connection.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "demo_countdown", "arguments": {"n": 5, "delay_ms": 300}, "_meta": {"progressToken": "p"}}});
    let res = http()
        .post(gw.url("mixed"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("mcp-session-id", &session)
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    let seen = read_until(res, |s| s.matches("notifications/progress").count() >= 2).await;
    let last = last_event_id(&seen).expect("the answer's events carry ids");
    assert!(last.starts_with("tgv."), "{seen}");

    // A GET with the last id seen resumes the answer on the member.
    let res = http()
        .get(gw.url("mixed"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("last-event-id", &last)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let rest = read_until(res, |s| s.contains(r#""id":7"#)).await;
    assert!(rest.contains("liftoff"), "{rest}");
    assert!(rest.contains(r#""message":"T-0""#), "the later steps follow: {rest}");
}

/// The SSE text of `res` up to the first complete event after which
/// `done` holds (15 s at most); the connection is dropped after it.
async fn read_until(res: reqwest::Response, done: impl Fn(&str) -> bool) -> String {
    let mut body = res.bytes_stream();
    let mut seen = String::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if seen.ends_with("\n\n") && done(&seen) {
                break;
            }
        }
    };
    let ended = tokio::time::timeout(Duration::from_secs(15), read).await;
    assert!(ended.is_ok(), "waited 15 s; read {seen}");
    seen
}

/// The last `id:` field of SSE text.
fn last_event_id(sse: &str) -> Option<String> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .next_back()
}

/// A legacy session on `mixed`, opened by raw `initialize` and
/// `notifications/initialized`.
async fn open_session(gw: &tollgate_e2e::TestGateway) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let session = legacy(gw, None, init).await.session_id.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(legacy(gw, Some(&session), initialized).await.status, 202);
    session
}
