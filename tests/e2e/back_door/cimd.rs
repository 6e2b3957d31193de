//! Tollgate as a client of an upstream's authorization server that
//! accepts Client ID Metadata Documents: no `client_id` configured, no
//! registration — Tollgate names itself by its own document's URL
//! (`/oauth/upstream/client.json`), a public client with PKCE. The
//! upstream here is a second Tollgate, whose authorization server fetches
//! that document.

use super::*;

#[tokio::test]
async fn an_upstream_that_takes_client_metadata_documents_needs_no_registration() {
    let demo = tollgate_e2e::Demo::spawn().await;
    let users = "[dev_issuer]\nenabled = true\n[[dev_issuer.users]]\nsubject = \"alice\"\n[[dev_issuer.users]]\nsubject = \"bob\"\n";
    let upstream = ChildGateway::spawn(&format!(
        "{users}[authorization_server]\nenabled = true\ndevelopment = true\n\
         [audit]\ndirectory = \"audit\"\n[[servers]]\nname = \"crm\"\nurl = \"{}\"\n",
        demo.url
    ))
    .await;
    let files = files();
    let dir = files.path();
    let gw = ChildGateway::spawn(&format!(
        "[dev_issuer]\nenabled = true\nissuer = \"http://127.0.0.1:1/dev-issuer\"\nkey_file = \"{dir}/dev.pem\"\n\
         [[dev_issuer.users]]\nsubject = \"alice\"\n[[dev_issuer.users]]\nsubject = \"bob\"\n\
         [authorization_server]\nenabled = true\ndevelopment = true\nkey_file = \"{dir}/as.pem\"\n\
         [vault]\nfile = \"{dir}/vault.json\"\nkeys = [{key}]\n\
         [[servers]]\nname = \"crm\"\nurl = \"{crm}\"\n\
         credential = {{ kind = \"user_oauth\", allow_insecure_http = true }}\n",
        dir = dir.display(),
        key = key(dir, "k1"),
        crm = upstream.url("crm"),
    ))
    .await;

    let alice = gw.mint("alice", &[]).await;
    let (_, _, answer) = post_to(&gw, "crm", &alice, None, INIT).await;
    let url = connect_url(&answer);
    let (status, page) = connect(&gw, &url, "alice", "").await;
    assert_eq!(status, 200, "{page}");

    // The upstream's authorization server fetched Tollgate's document and
    // issued alice's token to that client id; her calls carry it.
    let document = format!("{}/oauth/upstream/client.json", gw.base);
    let doc: Value = http().get(&document).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["client_id"], document.as_str());
    assert_eq!(doc["token_endpoint_auth_method"], "none");
    let (status, _, answer) = post_to(&gw, "crm", &alice, None, INIT).await;
    assert_eq!(status, 200, "{answer}");
    upstream.hangup().await;
    let seen = tollgate_e2e::audit_support::records(&upstream.audit_dir());
    let p = seen
        .iter()
        .find_map(|r| r.principal.as_ref())
        .expect("the call reached the upstream");
    assert_eq!(p.subject, "alice");
    assert_eq!(p.client_id.as_deref(), Some(document.as_str()));
}
