//! `[catalog]`, a server's `catalog`, and the lock file's I/O.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::load::tests::FakeEnv;
use crate::{Config, ConfigError, load_str};

const BASE: &str = r#"
[listen]
public = "127.0.0.1:8080"
admin  = "127.0.0.1:9090"

[[servers]]
name = "a"
url = "http://127.0.0.1:3001/mcp"

[[servers]]
name = "b"
url = "http://127.0.0.1:3002/mcp"
catalog = "enforce"
"#;

fn load(extra: &str) -> Result<Config, Vec<ConfigError>> {
    let text = format!("{BASE}{extra}");
    load_str(Path::new("conf/gw.toml"), &text, &FakeEnv::default())
        .map(|l| l.config)
        .map_err(|e| e.0)
}

#[test]
fn defaults_keep_the_gate_off() {
    let c = load("").unwrap();
    assert_eq!(c.catalog, Catalog::default());
    assert_eq!(c.catalog.mode, CatalogMode::Off);
    assert_eq!(c.catalog.sync_interval, Duration::from_secs(300));
    assert_eq!(c.catalog.sync_timeout, Duration::from_secs(10));
    assert!(c.catalog.watch);
    assert_eq!(c.catalog_mode(&c.servers[0]), CatalogMode::Off);
    assert_eq!(c.catalog_mode(&c.servers[1]), CatalogMode::Enforce);
    assert_eq!(
        c.catalog.resolved_lock(Path::new("conf/gw.toml")),
        Path::new("conf/catalog.lock")
    );
}

#[test]
fn every_key_is_read() {
    let c = load(
        "\n[catalog]\nmode = \"observe\"\nlock = \"locks/prod.lock\"\nsync_interval = \"1m\"\nsync_timeout = \
         \"3s\"\nwatch = false\n",
    )
    .unwrap();
    assert_eq!(c.catalog.mode, CatalogMode::Observe);
    assert_eq!(c.catalog_mode(&c.servers[0]), CatalogMode::Observe);
    assert_eq!(c.catalog_mode(&c.servers[1]), CatalogMode::Enforce);
    assert_eq!(c.catalog.sync_interval, Duration::from_secs(60));
    assert_eq!(c.catalog.sync_timeout, Duration::from_secs(3));
    assert!(!c.catalog.watch);
    assert_eq!(
        c.catalog.resolved_lock(Path::new("/etc/tollgate/gw.toml")),
        Path::new("/etc/tollgate/locks/prod.lock")
    );
    assert_eq!(CatalogMode::Observe.as_str(), "observe");
}

#[test]
fn bad_values_are_refused_with_their_key_and_line() {
    let at = |extra: &str| {
        let e = load(extra).unwrap_err();
        assert_eq!(e.len(), 1, "{e:#?}");
        (e[0].key.clone(), e[0].line, e[0].message.clone())
    };
    let (key, line, msg) = at("\n[catalog]\nmode = \"block\"\n");
    assert_eq!((key.as_str(), line), ("catalog.mode", Some(16)));
    assert!(msg.contains("unknown variant"), "{msg}");
    let (key, _, msg) = at("\n[catalog]\nsync_interval = \"500ms\"\n");
    assert_eq!(
        (key.as_str(), msg.as_str()),
        ("catalog.sync_interval", "must be at least 1s")
    );
    let (key, _, _) = at("\n[catalog]\nsync_timeout = \"0s\"\n");
    assert_eq!(key, "catalog.sync_timeout");
    let (key, _, msg) = at("\n[catalog]\npin = true\n");
    assert_eq!(key, "catalog.pin");
    assert!(msg.contains("unknown field"), "{msg}");
    let (key, line, _) = at("\n[catalog]\nsync_interval = \"2s\"\nsync_timeout = \"5s\"\n");
    assert_eq!((key.as_str(), line), ("catalog.sync_timeout", Some(17)));
    let (key, _, _) = at("\n[catalog]\nlock = \"\"\n");
    assert_eq!(key, "catalog.lock");
    let text = BASE.replace("catalog = \"enforce\"", "catalog = \"strict\"");
    let e = load_str(Path::new("gw.toml"), &text, &FakeEnv::default())
        .unwrap_err()
        .0;
    assert_eq!((e[0].key.as_str(), e[0].line), ("servers[1].catalog", Some(13)));
}

#[test]
fn a_missing_lock_file_reads_as_none() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(read_lock_text(&dir.path().join("catalog.lock")).unwrap(), None);
    // A directory where the file should be is an error naming the path.
    let e = read_lock_text(dir.path()).unwrap_err();
    assert_eq!(e.file, dir.path());
    assert!(e.message.starts_with("cannot read the lock file"), "{e}");
}

#[test]
fn writing_replaces_the_file_whole_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.lock");
    write_lock_text(&path, "# one\n").unwrap();
    assert_eq!(read_lock_text(&path).unwrap().as_deref(), Some("# one\n"));
    write_lock_text(&path, "# two\n").unwrap();
    assert_eq!(read_lock_text(&path).unwrap().as_deref(), Some("# two\n"));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["catalog.lock"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o644);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_lock_text(&path, "# three\n").unwrap();
        assert_eq!(mode(&path), 0o640, "a replaced file keeps its mode");
    }
    let e = write_lock_text(&dir.path().join("missing/catalog.lock"), "x").unwrap_err();
    assert!(
        e.message
            .starts_with("cannot write a temporary file beside the lock file"),
        "{e}"
    );
}

#[test]
fn the_schema_describes_the_catalog_keys() {
    let schema = crate::schema().to_string();
    for key in ["sync_interval", "sync_timeout", "\"enforce\"", "\"observe\""] {
        assert!(schema.contains(key), "{key} missing from the schema");
    }
}

#[test]
fn a_lock_whose_directory_takes_no_files_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.lock");
    assert!(!lock_is_read_only(&path));
    assert!(
        !lock_is_read_only(&dir.path().join("missing/catalog.lock")),
        "left for the write to report"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
        // Root writes anyway: then there is nothing to find.
        let root = std::fs::write(dir.path().join("x"), "").is_ok();
        assert_eq!(lock_is_read_only(&path), !root);
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    assert!(names <= 1, "the probe leaves nothing behind");
}
