use std::path::Path;

use super::*;
use crate::load::tests::FakeEnv;
use crate::{ConfigError, load_str};

const BASE: &str = r#"
[listen]
public = "127.0.0.1:8080"
admin  = "127.0.0.1:9090"

[[servers]]
name = "github"
url = "http://127.0.0.1:3001/mcp"
"#;

fn errors(text: &str) -> Vec<ConfigError> {
    match load_str(Path::new("/etc/tollgate/gw.toml"), text, &FakeEnv::default()) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.0,
    }
}

#[test]
fn a_config_without_audit_keys_gets_safe_defaults() {
    let loaded = load_str(Path::new("/etc/tollgate/gw.toml"), BASE, &FakeEnv::default()).unwrap();
    let a = &loaded.config.audit;
    assert!(a.enabled);
    assert_eq!(a.durability, Durability::Batch);
    assert_eq!(a.sync_interval, Duration::from_millis(10));
    assert_eq!(a.sync_records.get(), 1000);
    assert!(!a.otlp.enabled);
    assert!(a.redact_keys.iter().any(|k| k == "password"));
    assert_eq!(a.directory_for(&loaded.path), PathBuf::from("/etc/tollgate/audit"));
    let s = &loaded.config.servers[0].audit;
    assert!(!s.capture_arguments && !s.capture_results);
    assert_eq!(s.server_version, None);
}

#[test]
fn every_audit_key_loads() {
    let text = format!(
        "{BASE}audit = {{ server_version = \"1.4.2\", approved_by = \"alice\", capture_arguments = true, \
         capture_results = true, capture_max_bytes = 100, redact_keys = [\"ssn\"] }}\n\n\
         [audit]\nenabled = true\ndirectory = \"/var/lib/tollgate/audit\"\nfile_prefix = \"gw-1\"\n\
         durability = \"strict\"\nsync_interval = \"5ms\"\nsync_records = 10\nqueue_capacity = 100\n\
         rotate_bytes = 1000000\nrotate_interval = \"1h\"\nbytes_per_token = 3.5\nredact_keys = []\n\n\
         [audit.otlp]\nenabled = true\nendpoint = \"http://collector:4318\"\ntimeout = \"2s\"\n\
         queue_capacity = 10\nbatch_records = 5\nbatch_interval = \"100ms\"\n"
    );
    let loaded = load_str(Path::new("gw.toml"), &text, &FakeEnv::default()).unwrap();
    let a = &loaded.config.audit;
    assert_eq!(a.durability, Durability::Strict);
    assert_eq!(a.directory_for(&loaded.path), PathBuf::from("/var/lib/tollgate/audit"));
    assert!((a.bytes_per_token - 3.5).abs() < f64::EPSILON);
    assert!(a.redact_keys.is_empty());
    assert_eq!(a.otlp.batch_records.get(), 5);
    let s = &loaded.config.servers[0].audit;
    assert_eq!(s.approved_by.as_deref(), Some("alice"));
    assert_eq!(s.capture_max_bytes.get(), 100);
}

#[test]
fn bad_values_name_their_key_and_line() {
    for (snippet, key) in [
        ("sync_interval = \"0s\"", "audit.sync_interval"),
        ("sync_records = 0", "audit.sync_records"),
        ("bytes_per_token = 0.0", "audit.bytes_per_token"),
        ("file_prefix = \"../x\"", "audit.file_prefix"),
        ("durability = \"sometimes\"", "audit.durability"),
    ] {
        let e = &errors(&format!("{BASE}\n[audit]\n{snippet}\n"))[0];
        assert_eq!(e.key, key, "{e}");
        assert_eq!(e.line, Some(11), "{e}");
    }
}
