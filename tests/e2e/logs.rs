//! The log of the real binary: written to a file it is plain text (no
//! terminal colour codes), and every line logged while serving a request
//! names that request — its id (as the client saw it in `x-request-id`),
//! route, era, method and tool.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::json;
use tollgate_e2e::children::{ChildGateway, free_port};
use tollgate_e2e::{modern_body, modern_call};

#[tokio::test]
async fn a_request_names_itself_on_every_log_line_in_plain_text() {
    let closed = free_port();
    let gw = ChildGateway::spawn_logging(
        &format!("[audit]\nenabled = false\n[[servers]]\nname = \"down\"\nurl = \"http://127.0.0.1:{closed}/mcp\"\n"),
        "info",
    )
    .await;
    let body = modern_body(4, "tools/call", json!({"name": "echo", "arguments": {}}));
    let res = modern_call(gw.url("down"), "tools/call", Some("echo"), body).await;
    assert_eq!(res.status(), 502);
    let id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    res.bytes().await.unwrap();

    let mut log = String::new();
    for _ in 0..100 {
        log = gw.log();
        if log.contains("upstream request failed") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!log.contains('\u{1b}'), "ANSI escape codes in a log file:\n{log}");
    let line = log
        .lines()
        .find(|l| l.contains("upstream request failed"))
        .unwrap_or_else(|| panic!("no upstream failure logged:\n{log}"));
    for field in [
        format!("request_id={id}"),
        "route=down".to_owned(),
        "era=modern".to_owned(),
        "method=tools/call".to_owned(),
        "name=echo".to_owned(),
    ] {
        assert!(line.contains(&field), "{field} missing from: {line}");
    }
}
