//! A legacy client that declared URL-mode elicitation (the TypeScript
//! SDK): when its grant is gone mid-session, the gateway asks on the
//! call's own stream with `elicitation/create`, waits while the user
//! connects, says `notifications/elicitation/complete`, and answers the
//! call — the client never sees an error.

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::*;

#[tokio::test]
async fn a_legacy_client_is_asked_on_the_calls_stream_and_the_call_completes() {
    let w = world("").await;
    let alice = alice_connects(&w.gw).await;
    let mut child = node_client("elicit-client.mjs", &w.gw, &alice)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdin = child.stdin.take().unwrap();
    let ready = tokio::time::timeout(std::time::Duration::from_secs(60), stdout.next_line()).await;
    assert_eq!(
        ready.unwrap().unwrap().as_deref(),
        Some("ready"),
        "the session works first"
    );

    // The grant goes (an administrator revokes it); the session stays.
    let out = grants(&w.gw, &["revoke", "--subject", "alice"]).await;
    assert!(out.contains("1 grant(s) revoked"), "{out}");
    stdin.write_all(b"go\n").await.unwrap();
    let line = tokio::time::timeout(std::time::Duration::from_secs(90), stdout.next_line()).await;
    let out: Value = serde_json::from_str(&line.unwrap().unwrap().unwrap()).unwrap();

    assert_eq!(out["error"], Value::Null, "{out}\n{}", w.idp.log());
    assert_eq!(out["first"]["sub"], "alice", "{out}");
    assert_eq!(out["asked"].as_array().map(Vec::len), Some(1), "asked once: {out}");
    assert_eq!(out["asked"][0]["mode"], "url", "{out}");
    let id = out["asked"][0]["elicitationId"].clone();
    assert_eq!(out["completed"], json!([id]), "told when done: {out}");
    assert_eq!(
        out["second"]["sub"], "alice",
        "the call completed with the new grant: {out}"
    );
    assert_ne!(out["second"]["jti"], out["first"]["jti"]);
}
