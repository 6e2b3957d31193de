//! The command line as an operator uses it.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::process::Command;

fn tollgate() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
}

#[test]
fn validate_lists_every_error_with_file_line_and_key() {
    let dir = std::env::temp_dir().join(format!("tollgate-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n\n[[servers]]\nname = \"a\"\nurl = \"ftp://x\"\n\n[[servers]]\nname = \"a\"\nurl = \"http://x/mcp\"\n",
    )
    .unwrap();
    let out = tollgate().args(["validate", "--config"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.toml:7:1: key `servers[0].url`"), "{err}");
    assert!(
        err.contains("bad.toml:10:1: key `servers[1].name`: duplicate server name"),
        "{err}"
    );

    std::fs::write(
        &file,
        "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\nport = 1\n",
    )
    .unwrap();
    let out = tollgate().args(["validate", "--config"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("bad.toml:4:1: key `listen.port`: unknown field `port`"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn validate_refuses_virtual_server_collisions_and_unknown_members() {
    let dir = std::env::temp_dir().join(format!("tollgate-cli-v-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("virtual.toml");
    std::fs::write(
        &file,
        "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n\n\
         [[servers]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/mcp\"\n\n\
         [[servers]]\nname = \"b\"\nurl = \"http://127.0.0.1:2/mcp\"\n\n\
         [[virtual_servers]]\nname = \"v\"\nmembers = [\n  \
         { server = \"a\", rename = { x = \"same\" } },\n  \
         { server = \"b\", rename = { y = \"same\" } },\n  \
         { server = \"c\" },\n]\n",
    )
    .unwrap();
    let out = tollgate().args(["validate", "--config"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("virtual.toml:") && err.contains("virtual_servers[0].members[2].server"),
        "{err}"
    );
    assert!(err.contains("same"), "the colliding name is named: {err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The demo reads its admin token from `.tollgate/admin-token`, which `make
/// run` writes: validated here as a copy reading a token of its own.
#[test]
fn validate_accepts_the_demo_and_schema_prints_json() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.toml");
    let dir = std::env::temp_dir().join(format!("tollgate-cli-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("admin-token");
    std::fs::write(&token, "a-demo-admin-token-for-this-test\n").unwrap();
    // The vault key and Tollgate's secret at Notes, which `make run` writes too.
    let vault_key = dir.join("vault-key");
    std::fs::write(&vault_key, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n").unwrap();
    let notes_secret = dir.join("notes-secret");
    std::fs::write(&notes_secret, "a-notes-secret-for-this-test\n").unwrap();
    let text = std::fs::read_to_string(demo).unwrap();
    let mut copy = text.clone();
    for (file, to) in [
        ("admin-token", &token),
        ("vault-key", &vault_key),
        ("notes-secret", &notes_secret),
    ] {
        let from = format!("\"../.tollgate/{file}\"");
        assert!(copy.contains(&from), "the demo's {file} moved");
        copy = copy.replace(&from, &format!("{:?}", to.display().to_string()));
    }
    let file = dir.join("demo.toml");
    std::fs::write(&file, copy).unwrap();
    let out = tollgate().args(["validate", "--config"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.stderr.is_empty(),
        "no warning: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let out = tollgate().arg("schema").output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(schema["properties"]["servers"].is_object(), "{schema}");
}

#[test]
fn policy_validate_and_test_run_on_the_shipped_policies() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies");
    let out = tollgate()
        .args(["policy", "validate", "--policies", dir])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = tollgate().args(["policy", "test", "--policies", dir]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(text.contains(" passed, 0 failed"), "{text}");
    let out = tollgate()
        .args(["policy", "validate", "--policies", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
