//! What the audit record keeps of a call's content, through the real
//! gateway: opt-in capture of arguments and results (off by default,
//! redacted by key, cut at the size cap, only on the routes that ask for it),
//! the byte count of a request body that was forwarded unread, and the
//! definition revision of a tool on a route without policies.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::json;
use tollgate_e2e::{Demo, TestGateway, http, modern_body, modern_headers};

async fn echo(gw: &TestGateway, route: &str, text: &str) {
    let body = modern_body(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text, "api_key": "k-123"}}),
    );
    let res = http()
        .post(gw.url(route))
        .headers(modern_headers("tools/call", Some("echo")))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.bytes().await.unwrap();
}

#[tokio::test]
async fn routes_that_opt_in_capture_redacted_arguments_and_results() {
    let demo = Demo::spawn().await;
    let mut gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"plain\"\nurl = \"{url}\"\n\n[[servers]]\nname = \"captured\"\nurl = \"{url}\"\n\
         audit = {{ capture_arguments = true, capture_results = true, capture_max_bytes = 200 }}\n",
        url = demo.url
    ))
    .await;
    echo(&gw, "plain", "not recorded").await;
    echo(&gw, "captured", "recorded").await;
    echo(&gw, "captured", &"long ".repeat(100)).await;
    gw.shutdown().await;

    let trail = tollgate_audit::trail_files(&[gw.audit_dir()])
        .unwrap()
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect::<String>();
    assert!(!trail.contains("not recorded"), "capture is off by default");
    assert!(!trail.contains("k-123"), "redacted keys never reach the trail");
    let records: Vec<tollgate_audit::CallRecord> = tollgate_audit::query(&[gw.audit_dir()], Default::default())
        .unwrap()
        .map(|e| e.unwrap().record)
        .collect();
    let plain = records.iter().find(|r| &*r.route == "plain").unwrap();
    assert!(plain.capture.is_none());
    let captured: Vec<_> = records.iter().filter(|r| &*r.route == "captured").collect();
    let first = captured[0].capture.as_ref().unwrap();
    assert_eq!(
        first.arguments,
        Some(json!({"text": "recorded", "api_key": "[redacted]"}))
    );
    let result = first.result.as_ref().unwrap().to_string();
    assert!(result.contains("recorded"), "{result}");
    assert!(!first.truncated);
    let long = captured[1].capture.as_ref().unwrap();
    assert!(long.truncated, "values over capture_max_bytes are cut");
}

#[tokio::test]
async fn a_chunked_body_forwarded_unread_is_counted_as_it_streams() {
    let demo = Demo::spawn().await;
    let mut gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"trusting\"\nurl = \"{}\"\nheader_trust = \"upstream\"\n",
        demo.url
    ))
    .await;
    let body = modern_body(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "chunked"}}),
    );
    let (head, tail) = body.split_at(body.len() / 2);
    let chunks: Vec<Result<String, std::io::Error>> = vec![Ok(head.to_owned()), Ok(tail.to_owned())];
    let res = http()
        .post(gw.url("trusting"))
        .headers(modern_headers("tools/call", Some("echo")))
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("chunked"));
    gw.shutdown().await;

    let records = tollgate_e2e::audit_support::records(&gw.audit_dir());
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].bytes_in,
        body.len() as u64,
        "no Content-Length, counted while forwarded"
    );
}

#[tokio::test]
async fn calls_name_the_tool_revision_listed_even_without_policies() {
    let demo = Demo::spawn().await;
    let mut gw = TestGateway::spawn(&format!("[[servers]]\nname = \"open\"\nurl = \"{}\"\n", demo.url)).await;
    let list = http()
        .post(gw.url("open"))
        .headers(modern_headers("tools/list", None))
        .body(modern_body(1, "tools/list", json!({})))
        .send()
        .await
        .unwrap();
    let listed: serde_json::Value = tollgate_e2e::rpc_message(list).await;
    echo(&gw, "open", "after the list").await;
    gw.shutdown().await;

    let revision = tollgate_e2e::audit_support::listed_revision(&listed, "echo");
    let records = tollgate_e2e::audit_support::records(&gw.audit_dir());
    let call = records
        .iter()
        .find(|r| r.method.as_deref() == Some("tools/call"))
        .unwrap();
    assert_eq!(call.definition_hash.as_deref(), Some(revision.as_str()));
}
