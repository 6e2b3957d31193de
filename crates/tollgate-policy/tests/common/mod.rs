//! Helpers shared by the policy engine's integration tests.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    reason = "test helpers; each test binary uses a subset"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tollgate_core::{Principal, PrincipalKind};
use tollgate_policy::{PolicyEngine, Settings};

/// The repository's `policies/` directory.
pub fn repo_policies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies")
}

/// A policy directory in a temporary directory: the repository's schema and
/// the given `(file name, text)` policy files.
pub fn policy_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let schema = std::fs::read_to_string(repo_policies().join("schema.cedarschema")).unwrap();
    std::fs::write(dir.path().join("schema.cedarschema"), schema).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// An engine over the given policy files (enforcing, UTC).
pub fn engine(files: &[(&str, &str)]) -> (tempfile::TempDir, PolicyEngine) {
    let dir = policy_dir(files);
    let engine = PolicyEngine::load(Settings::new(dir.path())).unwrap_or_else(|e| panic!("{e}"));
    (dir, engine)
}

/// A user with the given groups, team and scopes.
pub fn user(sub: &str, groups: &[&str], team: Option<&str>, scopes: &[&str]) -> Arc<Principal> {
    Arc::new(Principal {
        issuer: "https://idp.example.com".into(),
        subject: sub.into(),
        client_id: Some("cli".into()),
        token_id: None,
        audience: vec!["https://gw.example.com/mcp/demo".into()],
        groups: groups.iter().map(|s| (*s).to_owned()).collect(),
        team: team.map(str::to_owned),
        cost_center: None,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        expires_at: u64::MAX,
        kind: PrincipalKind::User,
    })
}
