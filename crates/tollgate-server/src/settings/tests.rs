#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tollgate_audit::CredentialKind;
use tollgate_config::{Environment, PolicyMode};
use tollgate_core::{Principal, PrincipalKind};
use tollgate_policy::{CallRequest, PolicyEngine};

use super::*;

/// Every variable holds `s3cret`; no file can be read.
struct Env;

impl Environment for Env {
    fn var(&self, _: &str) -> Option<String> {
        Some("s3cret".into())
    }
    fn read_file(&self, _: &Path) -> Result<Vec<u8>, String> {
        Err("no".into())
    }
}

/// `text` as the configuration file at `path`, listeners added.
fn load(path: &Path, text: &str) -> Loaded {
    let text = format!("[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n{text}");
    tollgate_config::load_str(path, &text, &Env).unwrap()
}

#[test]
fn the_policy_engine_is_built_from_the_configuration() {
    let text = r#"
[policy]
dir = "policies"
mode = "observe"
utc_offset = "+01:00"

[[servers]]
name = "demo"
url = "http://127.0.0.1:3001/mcp"
policy = { mode = "enforce" }
"#;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let loaded = load(&root.join("gw.toml"), text);
    let settings = policy(&loaded).unwrap();
    assert_eq!(settings.utc_offset_seconds, 3600);
    let e = PolicyEngine::load(settings).unwrap();
    assert_eq!(e.mode("demo", None), PolicyMode::Enforce);
    assert_eq!(e.mode("elsewhere", None), PolicyMode::Observe);
    let alice = Arc::new(Principal {
        client_id: Some("cli".into()),
        audience: vec!["https://gw.example.com/mcp/demo".into()],
        team: Some("payments".into()),
        scopes: vec!["mcp:tools".into()],
        expires_at: u64::MAX,
        ..Principal::bare("https://idp.example.com", "alice", PrincipalKind::User)
    });
    let echo = CallRequest::new("demo", "tools/call").name(Some("echo"));
    assert!(e.decide(&alice, &echo).allowed);

    let off = load(&root.join("gw.toml"), &text.replace("dir = \"policies\"\n", ""));
    assert!(policy(&off).is_none());
}

#[test]
fn a_routes_audit_shows_its_upstream_redacted_and_redacts_both_key_lists() {
    let loaded = load(
        Path::new("gw.toml"),
        r#"
[audit]
bytes_per_token = 4.0
redact_keys = ["password"]

[[servers]]
name = "github"
url = "https://mcp.github.example.com/mcp?api_key=k"
credential = { kind = "static", header = "x-api-key", value = { env = "K" } }
audit = { server_version = "1.4.2", capture_arguments = true, redact_keys = ["ssn"] }
"#,
    );
    let s = route_audit(&loaded.config.servers[0], &loaded.config.audit);
    assert_eq!(s.route, "github");
    assert_eq!(s.upstream, "https://mcp.github.example.com/mcp?<redacted>");
    assert_eq!(s.server_version.as_deref(), Some("1.4.2"));
    assert_eq!(s.credential, CredentialKind::Static);
    assert!(s.capture.arguments && !s.capture.results);
    assert_eq!(s.capture.redact_keys, ["password", "ssn"]);
    assert!((s.bytes_per_token - 4.0).abs() < f64::EPSILON);
}
