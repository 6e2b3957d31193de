//! `credential = { kind = "id_jag" }`: each user's upstream token without
//! a consent click. Alice signs in to Tollgate at the company IdP (a real
//! `oidc-provider`) with the TypeScript SDK's OAuth client; her calls on
//! the `crm` route go to an upstream whose authorization server accepts
//! identity assertions from that IdP — here a second Tollgate, whose own
//! authorization server redeems ID-JAGs. Tollgate exchanges her sign-in's
//! ID token at the IdP for an ID-JAG naming the upstream's authorization
//! server, redeems it there, and forwards her calls with her own token.

use tollgate_e2e::oauth_clients::ts_oauth_client;

use super::*;

const IDP_SECRET: &str = "tollgate-at-the-idp";

#[tokio::test]
async fn an_identity_assertion_gets_each_user_their_upstream_token_without_consent() {
    let idp_port = free_port();
    let issuer = format!("http://127.0.0.1:{idp_port}");
    let demo = tollgate_e2e::Demo::spawn().await;
    // The upstream: a Tollgate whose authorization server trusts the IdP's assertions.
    let upstream = ChildGateway::spawn(&format!(
        "[dev_issuer]\nenabled = true\n[[dev_issuer.users]]\nsubject = \"nobody\"\n\
         [authorization_server]\nenabled = true\ndevelopment = true\n\
         [[authorization_server.trusted_assertion_issuers]]\nissuer = \"{issuer}\"\nallow_insecure_http = true\n\
         [audit]\ndirectory = \"audit\"\n\
         [[servers]]\nname = \"crm\"\nurl = \"{}\"\n",
        demo.url
    ))
    .await;
    // Tollgate registered there as a confidential client.
    let (client_id, client_secret) =
        tollgate_e2e::oauth_clients::register_confidential(&upstream.base, "Tollgate").await;
    let (client_id, client_secret) = (client_id.as_str(), client_secret.as_str());

    let files = files();
    let dir = files.path();
    std::fs::write(dir.join("idp-secret"), IDP_SECRET).unwrap();
    std::fs::write(dir.join("upstream-secret"), client_secret).unwrap();
    let gw = ChildGateway::spawn(&format!(
        "[authorization_server]\nenabled = true\ndevelopment = true\nkey_file = \"{dir}/as.pem\"\n\
         [authorization_server.identity_provider]\nissuer = \"{issuer}\"\nclient_id = \"tollgate\"\n\
         client_secret = {{ file = \"{dir}/idp-secret\" }}\nscopes = [\"openid\", \"email\", \"profile\", \"org\"]\n\
         allow_insecure_http = true\n\
         [vault]\nfile = \"{dir}/vault.json\"\nkeys = [{key}]\n\
         [audit]\ndirectory = \"audit\"\n\
         [[servers]]\nname = \"crm\"\nurl = \"{crm}\"\n\
         credential = {{ kind = \"id_jag\", client_id = \"{client_id}\", client_secret = {{ file = \"{dir}/upstream-secret\" }}, \
         allow_insecure_http = true }}\n",
        dir = dir.display(),
        key = key(dir, "k1"),
        crm = upstream.url("crm"),
    ))
    .await;
    let idp = Idp::start_on(
        idp_port,
        json!({
            "clients": [{
                "client_id": "tollgate", "client_secret": IDP_SECRET,
                "redirect_uris": [format!("{}/oauth/callback", gw.base)],
                "id_jag_client_ids": {"*": client_id},
            }],
            "users": [
                {"subject": "alice", "password": "wonderland", "team": "platform"},
                {"subject": "bob", "password": "builder", "team": "support"}
            ],
        }),
    )
    .await;

    // Each user signs in once at Tollgate; no consent click at the upstream.
    let plan = json!(["list_tools", {"call": "echo", "arguments": {"text": "hi"}}]).to_string();
    for (user, password) in [("alice", "wonderland"), ("bob", "builder")] {
        let args = ["--mode", "dcr", "--user", user, "--password", password, "--plan", &plan];
        let out = ts_oauth_client(&gw.url("crm"), &args).await;
        assert_eq!(out["ok"], true, "{out}\n{}", idp.log());
    }

    let metrics = gw.metrics().await;
    let line = "tollgate_upstream_grant_events_total{event=\"connected\",server=\"crm\"} 2";
    assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    assert!(
        !metrics.contains("event=\"asked\""),
        "nobody was sent to a connect page"
    );

    // The upstream saw each user's own token, issued to Tollgate's client there.
    upstream.hangup().await;
    let seen = tollgate_e2e::audit_support::records(&upstream.audit_dir());
    for user in ["alice", "bob"] {
        let theirs = seen
            .iter()
            .filter(|r| r.principal.as_ref().is_some_and(|p| p.subject == user))
            .collect::<Vec<_>>();
        assert!(!theirs.is_empty(), "{user}'s calls reached the upstream as {user}");
        for r in theirs {
            assert_eq!(r.principal.as_ref().unwrap().client_id.as_deref(), Some(client_id));
        }
    }
    gw.hangup().await;
    let ours = tollgate_e2e::audit_support::records(&gw.audit_dir());
    let forwarded = ours.iter().filter(|r| r.upstream_grant.is_some()).collect::<Vec<_>>();
    assert!(!forwarded.is_empty());
    for r in forwarded {
        let grant = r.upstream_grant.as_ref().unwrap();
        assert_eq!(grant.issuer, upstream.base);
        assert_eq!(grant.subject.as_ref(), r.principal.as_ref().map(|p| &p.subject));
    }
    let trail = std::fs::read_to_string(
        std::fs::read_dir(gw.audit_dir())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
    )
    .unwrap_or_default();
    assert!(trail.contains("\"id_jag\""), "records name the credential kind");
}
