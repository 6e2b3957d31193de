//! The rendered manifests against the Kubernetes API: built-in kinds by
//! kubernetes-validate (strict: no unknown field), for the oldest
//! Kubernetes the chart supports and the newest the schemas know; the
//! Prometheus Operator's kinds, which it has no schema for, field by field.

use std::process::Command;

use serde_json::Value;
use tollgate_e2e::repo_root;

use super::render::{NAMESPACE, Rendered, installed, run, yaml_documents};

/// Kubernetes versions the manifests must be valid for.
const VERSIONS: [&str; 2] = ["1.30.0", "1.37.0"];
/// The Prometheus Operator's API group and version.
const OPERATOR_API: &str = "monitoring.coreos.com/v1";

/// Validate every rendered manifest.
pub(crate) fn validate(rendered: &Rendered) {
    let (operator, builtin): (Vec<&Value>, Vec<&Value>) =
        rendered.docs.iter().partition(|d| d["apiVersion"] == OPERATOR_API);
    validate_builtin(&builtin);
    for doc in operator {
        match doc["kind"].as_str().unwrap() {
            "ServiceMonitor" => service_monitor(rendered, doc),
            "PrometheusRule" => prometheus_rule(doc),
            other => panic!("no check for the operator kind {other}"),
        }
    }
}

fn validate_builtin(docs: &[&Value]) {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = docs
        .iter()
        .enumerate()
        .map(|(i, doc)| {
            let path = dir
                .path()
                .join(format!("{i:02}-{}.json", doc["kind"].as_str().unwrap()));
            std::fs::write(&path, doc.to_string()).unwrap();
            path
        })
        .collect();
    let validate = installed("tests/fixtures/py/.venv/bin/kubernetes-validate");
    for version in VERSIONS {
        let out = run(
            Command::new(&validate)
                .args(["--strict", "--quiet", "--kubernetes-version", version])
                .args(&files),
            b"",
        );
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !said.contains("WARN") && !said.contains("ERROR"),
            "kubernetes-validate {version}:\n{said}"
        );
    }
}

/// A ServiceMonitor scrapes `/metrics` from the admin Service's port, in
/// the scheme the admin listener speaks.
fn service_monitor(rendered: &Rendered, monitor: &Value) {
    let spec = &monitor["spec"];
    let admin = rendered
        .all("Service")
        .into_iter()
        .find(|s| s["spec"]["ports"][0]["name"] == "admin")
        .expect("an admin Service");
    let selector = spec["selector"]["matchLabels"].as_object().expect("a label selector");
    assert!(!selector.is_empty());
    for (label, value) in selector {
        assert_eq!(
            &admin["metadata"]["labels"][label], value,
            "the admin Service's {label}"
        );
    }
    assert_eq!(spec["namespaceSelector"]["matchNames"][0], NAMESPACE);
    let scheme = rendered.container()["readinessProbe"]["httpGet"]["scheme"]
        .as_str()
        .unwrap()
        .to_lowercase();
    let endpoints = spec["endpoints"].as_array().expect("endpoints");
    assert_eq!(endpoints.len(), 1);
    let endpoint = &endpoints[0];
    assert_eq!(endpoint["port"], "admin");
    assert_eq!(endpoint["path"], "/metrics");
    assert_eq!(endpoint["scheme"], scheme.as_str());
    assert!(
        endpoint["interval"]
            .as_str()
            .is_some_and(|i| i.ends_with('s') || i.ends_with('m')),
        "{endpoint}"
    );
    if scheme == "https" {
        assert!(endpoint["tlsConfig"].is_object(), "an HTTPS scrape needs tlsConfig");
    }
}

/// A PrometheusRule carries the alert rules of
/// deploy/prometheus/tollgate-alerts.yml unchanged.
fn prometheus_rule(rule: &Value) {
    let text = std::fs::read(repo_root().join("deploy/prometheus/tollgate-alerts.yml")).unwrap();
    let alerts = yaml_documents(&text).remove(0);
    assert_eq!(rule["spec"], alerts, "the PrometheusRule's spec is the alert file");
    let groups = rule["spec"]["groups"].as_array().expect("groups");
    assert!(!groups.is_empty());
    for group in groups {
        assert!(group["name"].is_string(), "{group}");
        for r in group["rules"].as_array().expect("rules") {
            assert!(r["alert"].is_string() && r["expr"].is_string(), "{r}");
        }
    }
}
