//! The rendered manifests against the Kubernetes API: built-in kinds by
//! kubernetes-validate (strict: no unknown field), for the oldest
//! Kubernetes the chart supports and the newest the schemas know; the
//! Prometheus Operator's kinds and the Gateway API's HTTPRoute, which it has
//! no schema for, field by field.

use std::process::Command;

use serde_json::Value;
use tollgate_e2e::repo_root;

use super::render::{NAMESPACE, Rendered, installed, run, yaml_documents};

/// Kubernetes versions the manifests must be valid for.
const VERSIONS: [&str; 2] = ["1.30.0", "1.37.0"];
/// The Prometheus Operator's API group and version.
const OPERATOR_API: &str = "monitoring.coreos.com/v1";
/// The Gateway API's group and version.
const GATEWAY_API: &str = "gateway.networking.k8s.io/v1";

/// Validate every rendered manifest.
pub(crate) fn validate(rendered: &Rendered) {
    let (custom, builtin): (Vec<&Value>, Vec<&Value>) = rendered
        .docs
        .iter()
        .partition(|d| d["apiVersion"] == OPERATOR_API || d["apiVersion"] == GATEWAY_API);
    validate_builtin(&builtin);
    for doc in custom {
        match doc["kind"].as_str().unwrap() {
            "ServiceMonitor" => service_monitor(rendered, doc),
            "PrometheusRule" => prometheus_rule(doc),
            "HTTPRoute" => http_route(rendered, doc),
            other => panic!("no check for the kind {other}"),
        }
    }
}

/// The admin Service.
fn admin_service(rendered: &Rendered) -> &Value {
    rendered
        .all("Service")
        .into_iter()
        .find(|s| s["spec"]["ports"][0]["name"] == "admin")
        .expect("an admin Service")
}

/// An HTTPRoute (Gateway API v1, which kubernetes-validate has no schema
/// for) sends one host's /console, and nothing else, to the admin Service.
fn http_route(rendered: &Rendered, route: &Value) {
    let spec = &route["spec"];
    let mut fields: Vec<&str> = spec.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["hostnames", "parentRefs", "rules"], "{spec}");
    let parents = spec["parentRefs"].as_array().expect("parentRefs");
    assert!(!parents.is_empty());
    for parent in parents {
        assert!(parent["name"].as_str().is_some_and(|n| !n.is_empty()), "{parent}");
        for (field, value) in parent.as_object().unwrap() {
            assert!(
                ["group", "kind", "namespace", "name", "sectionName", "port"].contains(&field.as_str()),
                "parentRefs.{field}"
            );
            assert!(value.is_string() || field == "port", "parentRefs.{field}: {value}");
        }
    }
    assert_eq!(spec["hostnames"].as_array().map(Vec::len), Some(1));
    let rules = spec["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0]["matches"],
        serde_json::json!([{"path": {"type": "PathPrefix", "value": "/console"}}])
    );
    let admin = admin_service(rendered);
    assert_eq!(
        rules[0]["backendRefs"],
        serde_json::json!([{
            "name": admin["metadata"]["name"],
            "port": admin["spec"]["ports"][0]["port"],
        }])
    );
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
    let admin = admin_service(rendered);
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
/// deploy/prometheus/tollgate-alerts.yml unchanged, but for where the
/// runbook URLs point (`runbookBaseUrl`): still at each alert's anchor.
fn prometheus_rule(rule: &Value) {
    let text = std::fs::read(repo_root().join("deploy/prometheus/tollgate-alerts.yml")).unwrap();
    let alerts = yaml_documents(&text).remove(0);
    let base = runbook_base(&rule["spec"]);
    assert!(
        base == "docs/operations.md" || base.starts_with("https://") || base.starts_with("http://"),
        "runbook URLs at {base}"
    );
    assert_eq!(
        without_runbook_base(&rule["spec"]),
        without_runbook_base(&alerts),
        "the PrometheusRule's spec is the alert file"
    );
    let groups = rule["spec"]["groups"].as_array().expect("groups");
    assert!(!groups.is_empty());
    for group in groups {
        assert!(group["name"].is_string(), "{group}");
        for r in group["rules"].as_array().expect("rules") {
            assert!(r["alert"].is_string() && r["expr"].is_string(), "{r}");
        }
    }
}

/// What every rule's `runbook_url` has before its anchor (the same for all).
pub(crate) fn runbook_base(spec: &Value) -> String {
    let mut bases = std::collections::BTreeSet::new();
    for group in spec["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            let url = rule["annotations"]["runbook_url"].as_str().expect("a runbook_url");
            let (base, anchor) = url.split_once('#').expect("a runbook anchor");
            assert!(!anchor.is_empty(), "{url}");
            bases.insert(base.to_owned());
        }
    }
    assert_eq!(bases.len(), 1, "one place for every runbook: {bases:?}");
    bases.pop_first().unwrap()
}

/// The rules with each `runbook_url` cut to its anchor.
fn without_runbook_base(spec: &Value) -> Value {
    let mut spec = spec.clone();
    for group in spec["groups"].as_array_mut().unwrap() {
        for rule in group["rules"].as_array_mut().unwrap() {
            let url = &mut rule["annotations"]["runbook_url"];
            let anchor = url.as_str().unwrap().split_once('#').unwrap().1.to_owned();
            *url = Value::from(anchor);
        }
    }
    spec
}
