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
fn a_config_without_tracing_keys_does_not_trace() {
    let loaded = load_str(Path::new("gw.toml"), BASE, &FakeEnv::default()).unwrap();
    let t = &loaded.config.tracing;
    assert!(!t.enabled);
    assert_eq!(t.traces_url(), "http://127.0.0.1:4318/v1/traces");
    assert_eq!(t.service_name, "tollgate");
    assert!((t.sample_ratio - 1.0).abs() < f64::EPSILON);
    assert_eq!(t.timeout, Duration::from_secs(5));
    assert_eq!(t.queue_capacity.get(), 2048);
}

#[test]
fn every_tracing_key_loads() {
    let text = format!(
        "{BASE}\n[tracing]\nenabled = true\nendpoint = \"https://collector.example.com:4318/otlp/\"\n\
         service_name = \"gw-eu\"\nsample_ratio = 0.25\ntimeout = \"750ms\"\nqueue_capacity = 10\n"
    );
    let loaded = load_str(Path::new("gw.toml"), &text, &FakeEnv::default()).unwrap();
    let t = &loaded.config.tracing;
    assert!(t.enabled);
    assert_eq!(t.traces_url(), "https://collector.example.com:4318/otlp/v1/traces");
    assert_eq!(t.service_name, "gw-eu");
    assert!((t.sample_ratio - 0.25).abs() < f64::EPSILON);
    assert_eq!(t.timeout, Duration::from_millis(750));
    assert_eq!(t.queue_capacity.get(), 10);
}

#[test]
fn the_ratio_bounds_are_allowed() {
    for ratio in ["0.0", "1.0", "0", "1"] {
        let text = format!("{BASE}\n[tracing]\nsample_ratio = {ratio}\n");
        assert!(
            load_str(Path::new("gw.toml"), &text, &FakeEnv::default()).is_ok(),
            "{ratio}"
        );
    }
}

#[test]
fn bad_values_name_their_key_and_line() {
    for (snippet, key) in [
        ("sample_ratio = 1.5", "tracing.sample_ratio"),
        ("sample_ratio = -0.1", "tracing.sample_ratio"),
        ("sample_ratio = nan", "tracing.sample_ratio"),
        ("timeout = \"0s\"", "tracing.timeout"),
        ("timeout = \"soon\"", "tracing.timeout"),
        ("queue_capacity = 0", "tracing.queue_capacity"),
        ("endpoint = \"ftp://collector:4318\"", "tracing.endpoint"),
        ("endpoint = \"http://collector:4318/?token=x\"", "tracing.endpoint"),
        ("service_name = \" \"", "tracing.service_name"),
        ("sampling = 0.5", "tracing.sampling"),
    ] {
        let e = &errors(&format!("{BASE}\n[tracing]\n{snippet}\n"))[0];
        assert_eq!(e.key, key, "{e}");
        assert_eq!(e.line, Some(11), "{e}");
    }
}

#[test]
fn the_ratio_error_says_what_is_allowed() {
    let e = &errors(&format!("{BASE}\n[tracing]\nsample_ratio = 2.0\n"))[0];
    let shown = e.to_string();
    assert!(shown.starts_with("/etc/tollgate/gw.toml:11:"), "{shown}");
    assert!(shown.contains("key `tracing.sample_ratio`"), "{shown}");
    assert!(shown.contains("from 0.0 to 1.0"), "{shown}");
}
