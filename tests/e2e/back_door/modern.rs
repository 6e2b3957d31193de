//! The back door for 2026-07-28 clients: a call needing a grant the user
//! lacks is answered with an MRTR `input_required` result carrying the
//! URL-mode elicitation; the Python SDK client follows it and retries. The
//! upstream is the Python SDK's own OAuth resource server.

use super::*;

#[tokio::test]
async fn the_python_sdk_client_answers_input_required_and_retries() {
    let (idp_port, upstream_port) = (free_port(), free_port());
    let files = files();
    let dir = files.path();
    let resource = ProtectedServer::resource_for(upstream_port);
    let gw = ChildGateway::spawn(&config(dir, &resource, &key(dir, "k1"), "")).await;
    let idp = idp(&gw, idp_port, &resource).await;
    let _upstream = tollgate_e2e::children::python_protected_server(upstream_port, &idp.issuer).await;
    let alice = gw.mint("alice", &[]).await;

    // The answer on the wire: a result, not an error, and nothing upstream.
    let res = modern_tool_call(&gw, &alice, "whoami", json!({}), json!({"elicitation": {"url": {}}})).await;
    assert_eq!(res.status(), 200);
    let answer = tollgate_e2e::rpc_message(res).await;
    assert_eq!(answer["id"], 7, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let asked = &result["inputRequests"]["tollgate.connect.github"];
    assert_eq!(asked["method"], "elicitation/create", "{answer}");
    assert_eq!(asked["params"]["mode"], "url", "{answer}");

    // The SDK client: asked once, connects in the browser, retries.
    let out = tollgate_e2e::children::python_connect_client(&gw.url("github"), &alice, "alice", "wonderland").await;
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert_eq!(out["asked"].as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(out["asked"][0]["mode"], "url", "{out}");
    assert_eq!(out["connected"], true, "{out}\n{}", idp.log());
    assert_eq!(out["whoami"]["sub"], "alice", "{out}");
    assert_eq!(out["whoami"]["scope"], "repo", "{out}");

    // Bob's call is his own: asked again, not alice's grant.
    let bob = gw.mint("bob", &[]).await;
    let out = tollgate_e2e::children::python_connect_client(&gw.url("github"), &bob, "bob", "builder").await;
    assert_eq!(out["whoami"]["sub"], "bob", "{out}");

    // The audit trail: the connect answers are records of their own.
    gw.hangup().await;
    let records = tollgate_e2e::audit_support::records(&gw.audit_dir());
    let asked = records
        .iter()
        .filter(|r| r.error.as_deref() == Some("url_elicitation_required"))
        .collect::<Vec<_>>();
    assert!(!asked.is_empty(), "the connect answers are recorded");
    assert!(
        asked.iter().all(|r| r.rpc_error.is_none() && r.status == Some(200)),
        "answered as a result, not an error"
    );
}
