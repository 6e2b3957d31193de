//! Console actions: an approval names the revision the approver saw, and
//! never overwrites the lock file the gateway did not load (an operator's
//! edit, finished or not); where the lock cannot be written, the answer is
//! the CLI command that approves the same definition.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use tollgate_catalog::{Kind, Lock};
use tollgate_e2e::children::tollgate_cli;
use tollgate_e2e::demo_lock_without;

use crate::rig::{Rig, dev_console};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn approves(lock: &Path, key: &str) -> bool {
    let lock = Lock::parse(lock, &read(lock)).unwrap();
    lock.get("demo", Kind::Tool, key).is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_names_the_revision_the_approver_saw() {
    let rig = Rig::start().await;
    let alice = rig.sign_in("alice").await;
    let live = alice.live_revision("get_weather").await;
    let before = read(&rig.lock);

    let (status, body) = alice.approve("get_weather", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "revision_required");
    // A revision the page never showed for this tool.
    let stale = alice.live_revision("echo").await;
    assert_ne!(stale, live);
    let (status, body) = alice.approve("get_weather", Some(&stale)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "stale_revision");
    assert!(body["error"]["message"].as_str().unwrap().contains(&live), "{body}");
    assert_eq!(read(&rig.lock), before, "nothing written");

    let (status, body) = alice.approve("get_weather", Some(&live)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["approved"]["revision"], live.as_str());
    assert!(approves(&rig.lock, "get_weather"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_edit_of_the_lock_is_never_overwritten() {
    let rig = Rig::start_with(&dev_console(""), "", "watch = false").await;
    let alice = rig.sign_in("alice").await;
    let live = alice.live_revision("get_weather").await;
    // An operator revokes `echo` by hand; the gateway has not loaded it.
    let edited = demo_lock_without(&["get_weather", "echo"]);
    std::fs::write(&rig.lock, &edited).unwrap();

    let (status, body) = alice.approve("get_weather", Some(&live)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "lock_changed");
    assert_eq!(read(&rig.lock), edited, "the operator's edit is untouched");

    // Once the gateway has loaded the edit, the approval goes on top of it.
    rig.gw.hangup().await;
    let mut answer = (StatusCode::CONFLICT, serde_json::Value::Null);
    for _ in 0..50 {
        answer = alice.approve("get_weather", Some(&live)).await;
        if answer.0 == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
    assert!(approves(&rig.lock, "get_weather"));
    assert!(!approves(&rig.lock, "echo"), "the revocation is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_that_does_not_parse_is_reported_and_left_as_it_is() {
    let rig = Rig::start().await;
    let alice = rig.sign_in("alice").await;
    let live = alice.live_revision("get_weather").await;
    // Half-way through an edit.
    let broken = format!("{}\n[[approval]]\nserver = \"demo\"\nkind = \n", read(&rig.lock));
    std::fs::write(&rig.lock, &broken).unwrap();

    let (status, body) = alice.approve("get_weather", Some(&live)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "lock_invalid");
    let message = body["error"]["message"].as_str().unwrap();
    let error = Lock::parse(&rig.lock, &broken).unwrap_err().to_string();
    assert!(message.contains(&error), "the file's own error: {message}");
    assert_eq!(read(&rig.lock), broken, "left as it is");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_lock_gets_the_cli_command_instead() {
    let rig = Rig::start().await;
    let alice = rig.sign_in("alice").await;
    let live = alice.live_revision("get_weather").await;
    let before = read(&rig.lock);
    let Some(read_only) = ReadOnlyDir::make(rig.lock.parent().unwrap()) else {
        eprintln!("skipped: this host cannot make a directory read-only for this user");
        return;
    };
    let (status, body) = alice.approve("get_weather", Some(&live)).await;
    drop(read_only);
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "lock_read_only");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("read-only"),
        "{body}"
    );
    let command = body["error"]["command"].as_str().unwrap();
    let config = rig.gw.dir.path().join("gateway.toml");
    let want = format!(
        "tollgate catalog approve --config {} --server demo --tool get_weather --by alice",
        config.display()
    );
    assert_eq!(command, want);
    assert_eq!(read(&rig.lock), before, "nothing written");

    // Where the lock is writable, the command does the approval.
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let out = tollgate_cli(&args).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(approves(&rig.lock, "get_weather"));
}

/// A directory made read-only for this process until dropped: `0555`,
/// and for root (whom modes do not stop) the immutable attribute.
struct ReadOnlyDir {
    dir: PathBuf,
    immutable: bool,
}

impl ReadOnlyDir {
    fn make(dir: &Path) -> Option<ReadOnlyDir> {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        let mut guard = ReadOnlyDir {
            dir: dir.to_owned(),
            immutable: false,
        };
        if guard.writable() {
            let chattr = std::process::Command::new("chattr").arg("+i").arg(dir).status();
            guard.immutable = chattr.is_ok_and(|s| s.success());
        }
        (!guard.writable()).then_some(guard)
    }

    fn writable(&self) -> bool {
        let probe = self.dir.join(".probe");
        let made = std::fs::write(&probe, "").is_ok();
        let _ = std::fs::remove_file(&probe);
        made
    }
}

impl Drop for ReadOnlyDir {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt as _;
        if self.immutable {
            let _ = std::process::Command::new("chattr").arg("-i").arg(&self.dir).status();
        }
        let _ = std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755));
    }
}
