//! Policies see the caller's own upstream grant (`context.upstream_grant`):
//! a call they deny is refused before the user is asked to connect, and a
//! policy can require a grant with given scopes.

use super::*;

const POLICIES: &str = r#"
@id("github-all")
permit (principal, action, resource in Tollgate::Server::"github");

@id("echo-needs-admin-grant")
forbid (principal, action == Tollgate::Action::"call_tool", resource == Tollgate::Tool::"github/echo")
when { context has upstream_grant && !context.upstream_grant.scopes.contains("admin") };
"#;

/// A tools/call of `name` in `session`; the JSON-RPC answer.
async fn call(gw: &ChildGateway, token: &str, session: &str, name: &str) -> Value {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"{name}","arguments":{{"text":"hi"}}}}}}"#
    );
    post(gw, token, Some(session), &body).await.2
}

#[tokio::test]
async fn policies_read_the_callers_upstream_grant() {
    let policies = tollgate_e2e::policy_dir(POLICIES);
    let extra = format!("[policy]\ndir = \"{}\"\n", policies.path().display());
    let w = world(&extra).await;
    let alice = w.gw.mint("alice", &[]).await;

    // Not connected: echo is refused by policy, and nobody is asked to
    // connect for it (a 2026-07-28 call, which needs no session).
    let res = modern_tool_call(&w.gw, &alice, "echo", json!({"text": "hi"}), json!({})).await;
    let answer = tollgate_e2e::rpc_message(res).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let metrics = w.gw.metrics().await;
    assert!(
        !metrics.contains("event=\"asked\""),
        "nobody was asked to connect:\n{metrics}"
    );

    // Whoami is allowed: alice is asked to connect, and does.
    let (_, _, answer) = post(&w.gw, &alice, None, INIT).await;
    let url = connect_url(&answer);
    let (status, page) = connect(&w.gw, &url, "alice", "wonderland").await;
    assert_eq!(status, 200, "{page}");
    let (_, session, _) = post(&w.gw, &alice, None, INIT).await;
    let session = session.expect("a session");

    // Connected with scope `repo` only: whoami passes, echo needs `admin`.
    let answer = call(&w.gw, &alice, &session, "whoami").await;
    assert!(answer["result"].is_object(), "{answer}");
    let answer = call(&w.gw, &alice, &session, "echo").await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");

    w.gw.hangup().await;
    let records = tollgate_e2e::audit_support::records(&w.gw.audit_dir());
    let denied = records
        .iter()
        .filter(|r| r.name.as_deref() == Some("echo"))
        .collect::<Vec<_>>();
    assert_eq!(denied.len(), 2, "both echo calls are recorded");
    for r in denied {
        let ids: Vec<&str> = r.decision.policies.iter().map(|p| &**p).collect();
        assert_eq!(ids, ["echo-needs-admin-grant"]);
        assert!(r.upstream_grant.is_none(), "a refused call used no grant");
    }
}

/// Policies that read `context.upstream_grant` cannot be decided while the
/// vault is unreachable: the call is refused (503), not decided as if the
/// caller had no grant.
#[tokio::test]
async fn a_vault_down_refuses_calls_whose_policies_read_the_grant() {
    let redis = tollgate_e2e::children::RedisServer::start(None).await;
    let policies = tollgate_e2e::policy_dir(POLICIES);
    let extra = format!(
        "[policy]\ndir = \"{}\"\n[limits.redis]\nurl = \"redis://127.0.0.1:{}\"\ntimeout = \"300ms\"\n",
        policies.path().display(),
        redis.port
    );
    let w = world(&extra).await;
    let alice = w.gw.mint("alice", &[]).await;
    drop(redis);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let res = modern_tool_call(&w.gw, &alice, "echo", json!({"text": "hi"}), json!({})).await;
    assert_eq!(res.status(), 503);
    let answer = tollgate_e2e::rpc_message(res).await;
    assert_eq!(answer["error"]["message"], "Token vault unavailable", "{answer}");
    assert!(w.upstream.subjects().is_empty(), "nothing reached the upstream");
}
