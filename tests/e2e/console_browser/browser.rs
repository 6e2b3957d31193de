//! Running the Playwright script (`console-browser.mjs`) on Debian's
//! chromium, and where its screenshots go.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tollgate_e2e::repo_root;

/// The first program called `name` on `PATH`.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
}

/// Where the screenshots go: `console-screenshots` in this test's target
/// directory (`.../target/debug/deps/console_browser-HASH` → `.../target`).
pub(crate) fn screenshot_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_owned();
    let dir = target.join("console-screenshots");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run the browser script with `expected`; its JSON summary.
pub(crate) async fn browse(expected: &Value, work: &Path, screenshots: &Path) -> Value {
    let js = repo_root().join("tests/fixtures/js");
    let chromium = std::env::var_os("TOLLGATE_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| on_path("chromium"))
        .expect("chromium is not on PATH: run scripts/install-test-deps.sh (Debian's chromium package)");
    assert!(
        js.join("node_modules/playwright-core").is_dir() && js.join("node_modules/axe-core").is_dir(),
        "playwright-core or axe-core is missing from tests/fixtures/js: run scripts/install-test-deps.sh"
    );
    let file = work.join("expected.json");
    std::fs::write(&file, serde_json::to_string_pretty(expected).unwrap()).unwrap();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(js.join("console-browser.mjs"))
        .env("TOLLGATE_CONSOLE_EXPECTED", &file)
        .env("TOLLGATE_SCREENSHOTS", screenshots)
        .env("TOLLGATE_CHROMIUM", &chromium)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("the browser script ran for more than 120 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary: Option<Value> = serde_json::from_str(stdout.trim()).ok();
    if !out.status.success() {
        let failed = summary.as_ref().map(|s| s["failed"].clone()).unwrap_or(Value::Null);
        panic!(
            "the browser script failed ({}).\nstep: {}\nwhy: {}\nscreenshots: {}\n\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status,
            failed["step"],
            failed["message"],
            screenshots.display()
        );
    }
    summary.unwrap_or_else(|| panic!("the browser script printed no JSON summary:\n{stdout}\n{stderr}"))
}
