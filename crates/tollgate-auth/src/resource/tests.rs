use tollgate_core::PrincipalKind;

use super::*;
use crate::TokenRejection;

fn github() -> ProtectedResource {
    ProtectedResource::new(
        "https://mcp.example.com/mcp/github",
        &["https://idp.example.com".to_owned()],
        &["mcp:tools".to_owned(), "mcp:read".to_owned()],
        &[],
    )
    .unwrap()
}

fn principal(scopes: &[&str]) -> Principal {
    Principal {
        issuer: "https://idp.example.com".into(),
        subject: "alice".into(),
        client_id: None,
        token_id: None,
        audience: vec![],
        groups: vec![],
        team: None,
        cost_center: None,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        expires_at: 0,
        kind: PrincipalKind::User,
    }
}

const META: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp/github";

#[test]
fn metadata_follows_rfc_9728() {
    let r = github();
    assert_eq!(r.resource(), "https://mcp.example.com/mcp/github");
    assert_eq!(r.metadata_url(), META);
    assert_eq!(r.metadata_path(), "/.well-known/oauth-protected-resource/mcp/github");
    let json: serde_json::Value = serde_json::from_slice(r.metadata_json()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "resource": "https://mcp.example.com/mcp/github",
            "authorization_servers": ["https://idp.example.com"],
            "scopes_supported": ["mcp:tools", "mcp:read"],
            "bearer_methods_supported": ["header"],
        })
    );
}

#[test]
fn a_path_prefix_goes_after_the_well_known_segment() {
    let r = ProtectedResource::new("https://lb.example.com/tollgate/mcp/a", &[], &[], &["x".into()]).unwrap();
    assert_eq!(
        r.metadata_url(),
        "https://lb.example.com/.well-known/oauth-protected-resource/tollgate/mcp/a"
    );
    let json: serde_json::Value = serde_json::from_slice(r.metadata_json()).unwrap();
    assert_eq!(json["scopes_supported"], serde_json::json!(["x"]));
    assert!(ProtectedResource::new("https://x/mcp/a#frag", &[], &[], &[]).is_err());
}

#[test]
fn challenges_are_exact() {
    let r = github();
    assert_eq!(
        r.challenge(&AuthError::Missing).unwrap(),
        format!("Bearer resource_metadata=\"{META}\", scope=\"mcp:tools mcp:read\"")
    );
    assert_eq!(
        r.challenge(&AuthError::InvalidToken(TokenRejection::Expired)).unwrap(),
        format!(
            "Bearer error=\"invalid_token\", error_description=\"The access token expired\", \
             resource_metadata=\"{META}\", scope=\"mcp:tools mcp:read\""
        )
    );
    let err = r
        .check_scopes(&principal(&["mcp:tools"]), &["files:write"])
        .unwrap_err();
    assert_eq!(
        r.challenge(&err).unwrap(),
        format!(
            "Bearer error=\"insufficient_scope\", error_description=\"The access token lacks a required scope\", \
             resource_metadata=\"{META}\", scope=\"mcp:tools mcp:read files:write\""
        )
    );
    assert!(
        r.challenge(&AuthError::InvalidRequest(
            "Tokens in the query string are not accepted"
        ))
        .unwrap()
        .starts_with("Bearer error=\"invalid_request\", error_description=\"Tokens in the query string")
    );
    assert_eq!(r.challenge(&AuthError::Unavailable { issuer: "i".into() }), None);
    let open = ProtectedResource::new("http://127.0.0.1:8080/mcp/demo", &[], &[], &[]).unwrap();
    assert_eq!(
        open.challenge(&AuthError::Missing).unwrap(),
        "Bearer resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp/demo\""
    );
}

#[test]
fn scope_checks_name_every_needed_scope_once() {
    let r = github();
    assert!(r.check_scopes(&principal(&["mcp:read", "mcp:tools"]), &[]).is_ok());
    assert!(
        r.check_scopes(&principal(&["mcp:read", "mcp:tools"]), &["mcp:read"])
            .is_ok()
    );
    assert_eq!(
        r.check_scopes(&principal(&["mcp:read"]), &["mcp:read"]),
        Err(AuthError::InsufficientScope {
            required: vec!["mcp:tools".into(), "mcp:read".into()]
        })
    );
}
