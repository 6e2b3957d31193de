//! The Helm chart `deploy/helm/tollgate`, rendered by the real Helm with
//! each values file of its `ci/` directory (one test per file, in
//! `deploy/cases.rs`):
//!
//! - `helm lint --strict` passes (values checked against
//!   `values.schema.json`) and `helm template` renders for Kubernetes 1.30,
//!   the oldest the chart supports;
//! - every manifest of a built-in kind is valid for Kubernetes 1.30 and
//!   1.37 (kubernetes-validate, strict); ServiceMonitor and PrometheusRule
//!   are checked field by field;
//! - the pod's shape: probes on the admin port, a preStop sleep, non-root
//!   with a read-only root file system, resources, no config checksum;
//! - the pod is rebuilt from the manifests (mounts filled from the rendered
//!   ConfigMaps and Secrets, the environment from `secretKeyRef`s), and the
//!   real `tollgate validate`, `policy validate` and `catalog show` accept
//!   it; every file the configuration names is mounted, the audit
//!   directory is writable, ports and the grace period agree;
//! - per file, what its features render; the example
//!   `examples/values-fleet.yaml` too.
//!
//! The plain manifest `deploy/kubernetes/tollgate.yaml` gets the same
//! checks (`deploy/manifest.rs`).
//!
//! Helm and kubernetes-validate come from scripts/install-test-deps.sh.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "deploy/cases.rs"]
mod cases;
#[path = "deploy/checks.rs"]
mod checks;
#[path = "deploy/cli.rs"]
mod cli;
#[path = "deploy/kube.rs"]
mod kube;
#[path = "deploy/manifest.rs"]
mod manifest;
#[path = "deploy/pod.rs"]
mod pod;
#[path = "deploy/render.rs"]
mod render;

use tollgate_config::Loaded;
use tollgate_e2e::repo_root;

use pod::Pod;
use render::{Rendered, chart_dir, ci_values};

/// The values files of `ci/`, each with a test in `cases.rs`.
const VALUES_FILES: [&str; 5] = [
    "config-values.yaml",
    "default-values.yaml",
    "existing-config-values.yaml",
    "full-values.yaml",
    "statefulset-values.yaml",
];

/// A values file, rendered and checked.
struct Checked {
    rendered: Rendered,
    pod: Pod,
    /// The configuration as the pod loads it, when the chart renders it.
    loaded: Option<Loaded>,
}

/// Every check that applies to any values file of `ci/`.
fn check(name: &str) -> Checked {
    check_file(&ci_values(name))
}

/// Every check that applies to any values file.
fn check_file(values: &std::path::Path) -> Checked {
    let values = values.to_owned();
    render::lint(&values);
    let rendered = Rendered::template(&values);
    kube::validate(&rendered);
    checks::pod_shape(&rendered);
    let pod = Pod::build(&rendered);
    let loaded = pod.config_file().exists().then(|| cli::check(&pod));
    if let Some(loaded) = &loaded {
        checks::against_config(&rendered, &pod, loaded);
    }
    Checked { rendered, pod, loaded }
}

#[test]
fn every_ci_values_file_has_a_test() {
    let mut found: Vec<String> = std::fs::read_dir(chart_dir().join("ci"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    found.sort();
    assert_eq!(
        found, VALUES_FILES,
        "add a test in deploy/cases.rs for a new values file"
    );
}

#[test]
fn the_chart_copies_match_their_sources() {
    for (copy, source) in [
        ("files/tollgate-alerts.yml", "deploy/prometheus/tollgate-alerts.yml"),
        ("files/schema.cedarschema", "policies/schema.cedarschema"),
    ] {
        let copy_text = std::fs::read_to_string(chart_dir().join(copy)).unwrap();
        let source_text = std::fs::read_to_string(repo_root().join(source)).unwrap();
        assert!(
            copy_text == source_text,
            "deploy/helm/tollgate/{copy} differs from {source}: copy it"
        );
    }
}

#[test]
fn console_routes_are_refused_without_the_console_or_its_path() {
    for (sets, says) in [
        (&["console.ingress.enabled=true"][..], "need console.enabled"),
        (
            &["console.enabled=true", "console.httpRoute.enabled=true"][..],
            "console.url is required",
        ),
        (
            &[
                "console.enabled=true",
                "console.url=https://ops.example.com/tollgate/console",
                "console.ingress.enabled=true",
            ][..],
            "must end in the host and /console",
        ),
        (
            &[
                "console.enabled=true",
                "console.url=https://ops.example.com/console",
                "console.httpRoute.enabled=true",
            ][..],
            "parentRefs",
        ),
    ] {
        let mut cmd = render::template_command(&ci_values("default-values.yaml"), render::MIN_KUBE);
        for set in sets {
            cmd.args(["--set", set]);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{sets:?}: {stderr}");
    }
}

#[test]
fn kubernetes_before_1_30_is_refused() {
    let out = render::template_command(&ci_values("default-values.yaml"), "1.29.0")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the preStop sleep handler needs Kubernetes 1.30");
    assert!(String::from_utf8_lossy(&out.stderr).contains("kubeVersion"));
}
