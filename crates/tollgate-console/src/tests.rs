//! The console's own rules, over its router with a fake gateway: which
//! tokens are console tokens, and what an approval needs before the
//! gateway is asked.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use http::{Request, StatusCode};
use serde_json::{Value, json};
use tollgate_audit::CallRecord;
use tollgate_config::ConsoleRoles;
use tollgate_core::{Principal, PrincipalKind};
use tower::ServiceExt as _;

use crate::{ApprovalError, ApprovalRequest, Backend, CheckRequest, Settings};

const ISSUER: &str = "https://idp.example";
const URL: &str = "https://gw.example/console";

/// A gateway that answers every token with `principal` and every approval
/// with `approval`, and notes what it was asked.
struct Fake {
    principal: Principal,
    approval: Result<Value, ApprovalError>,
    asked: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Backend for Fake {
    async fn authenticate(&self, _: &str, issuer: &str, audiences: &[String]) -> Result<Arc<Principal>, String> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("authenticate {issuer} {}", audiences.join(" ")));
        Ok(Arc::new(self.principal.clone()))
    }
    fn report_settings(&self) -> tollgate_report::Settings {
        tollgate_report::Settings {
            budgets: vec![],
            time_zone: "UTC".into(),
            prices: tollgate_limit::Prices::default(),
        }
    }
    fn audit_dir(&self) -> Option<PathBuf> {
        None
    }
    fn indexer_running(&self) -> bool {
        false
    }
    fn catalog(&self) -> Value {
        json!({})
    }
    fn approve(&self, r: &ApprovalRequest, by: &str) -> Result<Value, ApprovalError> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("approve {} at {} by {by}", r.key, r.revision));
        self.approval.clone()
    }
    fn policies(&self) -> Value {
        json!({})
    }
    fn policy_source(&self, _: &str) -> Option<String> {
        None
    }
    fn check(&self, _: &CheckRequest) -> Result<Value, String> {
        Ok(json!({}))
    }
    fn upstreams(&self) -> Value {
        json!({})
    }
    async fn record(&self, record: CallRecord) -> Result<(), String> {
        let line = format!("record {:?} {:?}", record.method, record.status);
        self.asked.lock().unwrap().push(line);
        Ok(())
    }
}

fn settings() -> Settings {
    Settings {
        url: URL.into(),
        issuer: ISSUER.into(),
        audiences: vec![URL.into(), "console-api".into()],
        authorization_endpoint: None,
        token_endpoint: None,
        client_id: "tollgate-console".into(),
        client_secret: None,
        scopes: vec![],
        session_ttl: 3600,
        roles: ConsoleRoles {
            admin: vec!["ops".into()],
            ..ConsoleRoles::default()
        },
        cookie_key: Some(b"0123456789abcdef0123456789abcdef".to_vec()),
    }
}

fn fake(issuer: &str, approval: Result<Value, ApprovalError>) -> Arc<Fake> {
    Arc::new(Fake {
        principal: Principal {
            groups: vec!["ops".into()],
            ..Principal::bare(issuer, "alice", PrincipalKind::User)
        },
        approval,
        asked: Mutex::new(Vec::new()),
    })
}

/// `method path` with a bearer token (and `body` as JSON), answered.
async fn ask(backend: &Arc<Fake>, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
    let router = crate::router(settings(), Arc::clone(backend) as Arc<dyn Backend>).unwrap();
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", "Bearer a-token")
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    let answer = router.oneshot(request).await.unwrap();
    let status = answer.status();
    let bytes = axum::body::to_bytes(answer.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_token_is_checked_for_the_consoles_issuer_and_audiences() {
    let ours = fake(ISSUER, Ok(json!({})));
    assert_eq!(ask(&ours, "GET", "/console/api/me", None).await.0, StatusCode::OK);
    let asked = ours.asked.lock().unwrap().clone();
    assert_eq!(asked, [format!("authenticate {ISSUER} {URL} console-api")]);
    // A gateway that let another issuer's token through: still refused.
    let lax = fake("https://other.example", Ok(json!({})));
    let (status, body) = ask(&lax, "GET", "/console/api/me", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "unauthenticated");
}

#[tokio::test]
async fn an_approval_without_a_revision_is_refused_and_recorded_before_the_gateway_is_asked() {
    let backend = fake(ISSUER, Ok(json!({"key": "t"})));
    let unsure = json!({"server": "demo", "kind": "tool", "key": "t"});
    let (status, body) = ask(&backend, "POST", "/console/api/catalog/approve", Some(unsure)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "revision_required");
    let asked = backend.asked.lock().unwrap().clone();
    assert_eq!(
        asked[1..],
        ["record Some(\"console/approve\") Some(422)".to_owned()],
        "no approval asked for, the refusal recorded"
    );
    let sure = json!({"server": "demo", "kind": "tool", "key": "t", "revision": "r1"});
    let (status, body) = ask(&backend, "POST", "/console/api/catalog/approve", Some(sure)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["approved"]["key"], "t");
    assert!(
        backend
            .asked
            .lock()
            .unwrap()
            .contains(&"approve t at r1 by alice".to_owned())
    );
}

#[tokio::test]
async fn a_read_only_lock_answers_with_the_command_to_run() {
    let command = "tollgate catalog approve --config g.toml --server demo --tool t --by alice";
    let read_only = ApprovalError::ReadOnly {
        path: "/etc/tollgate/catalog.lock".into(),
        command: command.into(),
    };
    let backend = fake(ISSUER, Err(read_only));
    let request = json!({"server": "demo", "kind": "tool", "key": "t", "revision": "r1"});
    let (status, body) = ask(&backend, "POST", "/console/api/catalog/approve", Some(request)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "lock_read_only");
    assert_eq!(body["error"]["command"], command);
    assert!(body["error"]["message"].as_str().unwrap().contains("read-only"));
}
