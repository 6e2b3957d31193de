//! The plain manifest `deploy/kubernetes/tollgate.yaml`, held to the same
//! checks as the chart's renderings: valid for Kubernetes 1.30 and 1.37,
//! the pod's shape (security context, probes, preStop sleep, resources),
//! an image pinned to a release, the Secret it reads shipped beside it,
//! and the configuration accepted by the real `tollgate validate` once
//! the Secret's placeholders are replaced — and refused before.

use serde_json::{Value, json};
use tollgate_e2e::repo_root;

use super::pod::Pod;
use super::render::{Rendered, chart_dir, yaml_documents};
use super::{checks, cli, kube};

/// `deploy/kubernetes/tollgate.yaml`, read as the API server would.
fn manifest() -> Rendered {
    let text = std::fs::read(repo_root().join("deploy/kubernetes/tollgate.yaml")).unwrap();
    Rendered {
        docs: yaml_documents(&text),
    }
}

/// The manifest with the Secret's placeholders replaced, as its header
/// tells the reader to.
fn filled(mut rendered: Rendered) -> Rendered {
    for doc in &mut rendered.docs {
        if doc["kind"] == "Secret" {
            doc["stringData"] = json!({
                "session-key": super::pod::PLACEHOLDER_SECRET,
                "admin-token": "d2hhdC1hLWdvb2QtdG9rZW4tbG9va3MtbGlrZQ",
            });
        }
    }
    rendered
}

#[test]
fn the_plain_manifest_is_valid_and_its_pod_runs_the_configuration() {
    let rendered = manifest();
    kube::validate(&rendered);
    checks::pod_shape(&rendered);
    let kinds: Vec<&str> = rendered.docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Secret", "ConfigMap", "Deployment", "Service", "Service"]);
    let config = rendered.entry("ConfigMap", "tollgate", "tollgate.toml").unwrap();
    let file = std::fs::read(repo_root().join("deploy/tollgate.toml")).unwrap();
    assert!(
        config == file,
        "deploy/tollgate.toml differs from the manifest's ConfigMap: copy it"
    );

    let filled = filled(manifest());
    let pod = Pod::build(&filled);
    let loaded = cli::check(&pod);
    checks::against_config(&filled, &pod, &loaded);
    let mounts: Vec<(&str, bool)> = pod.mounts.iter().map(|m| (m.path.as_str(), m.writable)).collect();
    assert_eq!(
        mounts,
        [("/etc/tollgate", false), ("/var/lib/tollgate/audit", true)],
        "the configuration read-only, the audit directory a volume of its own"
    );
}

#[test]
fn the_plain_manifests_placeholders_keep_the_gateway_from_starting() {
    let rendered = manifest();
    let secret = rendered.one("Secret");
    let env = rendered.container()["env"].as_array().unwrap();
    assert_eq!(env.len(), 2);
    for var in env {
        let reference = &var["valueFrom"]["secretKeyRef"];
        assert_eq!(reference["name"], secret["metadata"]["name"], "{var}");
        let key = reference["key"].as_str().unwrap();
        assert!(secret["stringData"].get(key).is_some(), "the Secret has no {key}");
    }
    let said = cli::refused(&Pod::build(&rendered));
    for key in ["sessions.key", "admin.token"] {
        assert!(said.contains(key), "validate does not name {key}:\n{said}");
    }
}

#[test]
fn the_plain_manifest_pins_the_charts_release() {
    let rendered = manifest();
    let image = rendered.container()["image"].as_str().unwrap();
    let chart = yaml_documents(&std::fs::read(chart_dir().join("Chart.yaml")).unwrap()).remove(0);
    let app_version = chart["appVersion"].as_str().unwrap();
    assert_eq!(image, format!("tollgate:{app_version}"), "the image of this release");
    assert_eq!(rendered.container()["imagePullPolicy"], Value::from("IfNotPresent"));
}
