//! The container image (`Dockerfile`).
//!
//! The Dockerfile is always linted: two stages, a locked release build, a
//! runtime stage that runs no command (so it needs no shell), a numeric
//! non-root user, an exec-form entry point, and a build context that
//! leaves out build output and installed packages. Where a container
//! engine is on the machine (`podman`, installed by
//! `scripts/install-test-deps.sh`), the runtime stage is built for real
//! and the image serves an MCP call. The builder and runtime base images
//! come from public registries; on a machine that cannot reach them the
//! test stands in for both: the gateway binary this test suite built, and
//! a distroless-like base assembled from this machine's C runtime.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "image/engine.rs"]
mod engine;

use std::path::Path;

use serde_json::json;
use tollgate_e2e::children::{free_port, tollgate_bin};
use tollgate_e2e::{Demo, http, modern_body, modern_call, repo_root};

use engine::{Engine, Scratch};

/// The Dockerfile's instructions, continuation lines joined, comments gone.
fn instructions() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_root().join("Dockerfile")).unwrap();
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || (line.is_empty() && pending.is_empty()) {
            continue;
        }
        pending.push_str(line.trim_end_matches('\\'));
        pending.push(' ');
        if line.ends_with('\\') {
            continue;
        }
        let joined = std::mem::take(&mut pending);
        let (op, rest) = joined.trim().split_once(' ').unwrap_or((joined.trim(), ""));
        out.push((op.to_ascii_uppercase(), rest.trim().to_owned()));
    }
    out
}

/// The instructions of the last stage (after its `FROM`).
fn runtime_stage(all: &[(String, String)]) -> &[(String, String)] {
    let last = all.iter().rposition(|(op, _)| op == "FROM").unwrap();
    &all[last + 1..]
}

#[test]
fn dockerfile_builds_locked_and_runs_unprivileged_without_a_shell() {
    let all = instructions();
    let froms: Vec<&str> = all
        .iter()
        .filter(|(op, _)| op == "FROM")
        .map(|(_, a)| a.as_str())
        .collect();
    assert!(froms.len() >= 2, "a multi-stage build: {froms:?}");
    assert!(
        froms[0].ends_with("AS build") && froms.last().unwrap().ends_with("AS runtime"),
        "{froms:?}"
    );
    let build = all
        .iter()
        .find(|(op, a)| op == "RUN" && a.contains("cargo build"))
        .unwrap();
    assert!(
        build.1.contains("--locked") && build.1.contains("--release"),
        "{build:?}"
    );

    let runtime = runtime_stage(&all);
    assert!(
        runtime.iter().all(|(op, _)| op != "RUN"),
        "the runtime stage runs nothing, so it needs no shell"
    );
    let user = runtime
        .iter()
        .find(|(op, _)| op == "USER")
        .map(|(_, a)| a.as_str())
        .unwrap();
    let uid: u32 = user.split(':').next().unwrap().parse().expect("a numeric user");
    assert_ne!(uid, 0, "non-root");
    let entry = runtime.iter().find(|(op, _)| op == "ENTRYPOINT").unwrap();
    let argv: Vec<String> = serde_json::from_str(&entry.1).expect("exec form: a JSON array");
    assert_eq!(argv, ["/usr/local/bin/tollgate"]);
    let cmd = runtime.iter().find(|(op, _)| op == "CMD").unwrap();
    let cmd: Vec<String> = serde_json::from_str(&cmd.1).expect("exec form");
    assert_eq!(cmd[..3], ["serve", "--config", "/etc/tollgate/tollgate.toml"]);

    let ignore = std::fs::read_to_string(repo_root().join(".dockerignore")).unwrap();
    for left_out in ["target", ".git", "**/node_modules", "**/.venv"] {
        assert!(ignore.lines().any(|l| l == left_out), ".dockerignore lacks {left_out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_serves_a_call_as_a_non_root_user() {
    let Some(engine) = Engine::find() else {
        eprintln!("no container engine on this machine: the Dockerfile was linted only");
        return;
    };
    let mut scratch = Scratch::new(&engine);
    let image = scratch.build_runtime(&tollgate_bin());
    assert_eq!(engine.inspect(&image, "{{.Config.User}}"), "65532:65532");
    assert!(
        !engine.runs(&image, &["--entrypoint", "/bin/sh"], &["-c", "true"]),
        "the image has no shell"
    );

    let demo = Demo::spawn().await;
    let (public, admin) = (free_port(), free_port());
    let config = format!(
        "[listen]\npublic = \"127.0.0.1:{public}\"\nadmin = \"127.0.0.1:{admin}\"\n\
         [audit]\ndirectory = \"/var/lib/tollgate/audit\"\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    );
    std::fs::write(scratch.dir().join("tollgate.toml"), config).unwrap();
    let _container = scratch.serve(&image, scratch.dir());
    wait_ready(&format!("http://127.0.0.1:{admin}/readyz"), &scratch).await;

    let body = modern_body(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "from a container"}}),
    );
    let res = modern_call(
        format!("http://127.0.0.1:{public}/mcp/demo"),
        "tools/call",
        Some("echo"),
        body,
    )
    .await;
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("from a container"));
}

async fn wait_ready(url: &str, scratch: &Scratch<'_>) {
    for _ in 0..100 {
        if let Ok(res) = http().get(url).send().await
            && res.status() == 200
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the container never became ready:\n{}", scratch.logs());
}

/// The repository's Dockerfile, which the engine builds from.
fn dockerfile() -> std::path::PathBuf {
    let path = repo_root().join("Dockerfile");
    assert!(Path::new(&path).is_file());
    path
}
