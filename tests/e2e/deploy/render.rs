//! The real Helm: `helm lint --strict` and `helm template` of the chart,
//! the output read back as JSON documents (through the venv's PyYAML).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tollgate_e2e::repo_root;

/// The release name every values file is rendered with: the chart's
/// objects are then named `tollgate` and `tollgate-<part>`.
pub(crate) const RELEASE: &str = "tollgate";
/// The namespace rendered into.
pub(crate) const NAMESPACE: &str = "mcp";
/// The oldest Kubernetes the chart supports (the preStop `sleep` handler).
pub(crate) const MIN_KUBE: &str = "1.30.0";

/// `deploy/helm/tollgate`.
pub(crate) fn chart_dir() -> PathBuf {
    repo_root().join("deploy/helm/tollgate")
}

/// A values file of the chart's `ci/` directory.
pub(crate) fn ci_values(name: &str) -> PathBuf {
    chart_dir().join("ci").join(name)
}

/// A tool installed by scripts/install-test-deps.sh, relative to the root.
pub(crate) fn installed(relative: &str) -> PathBuf {
    let path = repo_root().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh (make test does)",
        path.display()
    );
    path
}

fn helm() -> PathBuf {
    installed("tests/fixtures/tools/bin/helm")
}

/// Run `cmd`, feeding it `stdin`; panic with its output unless it succeeds.
pub(crate) fn run(cmd: &mut Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `helm lint --strict` with `values`.
pub(crate) fn lint(values: &Path) {
    run(
        Command::new(helm())
            .args(["lint", "--strict"])
            .arg(chart_dir())
            .arg("-f")
            .arg(values),
        b"",
    );
}

/// `helm template` with `values` for Kubernetes `kube_version`, as a
/// command (for tests that expect it to fail).
pub(crate) fn template_command(values: &Path, kube_version: &str) -> Command {
    let mut cmd = Command::new(helm());
    cmd.args(["template", RELEASE])
        .arg(chart_dir())
        .args(["--namespace", NAMESPACE, "--kube-version", kube_version, "-f"])
        .arg(values);
    cmd
}

/// Every YAML document of `yaml` as JSON (empty documents left out).
pub(crate) fn yaml_documents(yaml: &[u8]) -> Vec<Value> {
    const SCRIPT: &str = "import json, sys, yaml\n\
        docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]\n\
        json.dump(docs, sys.stdout, default=str)\n";
    let python = installed("tests/fixtures/py/.venv/bin/python");
    let out = run(Command::new(python).args(["-c", SCRIPT]), yaml);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The manifests `helm template` rendered.
pub(crate) struct Rendered {
    /// One JSON value per manifest.
    pub(crate) docs: Vec<Value>,
}

impl Rendered {
    /// Render the chart with `values`.
    pub(crate) fn template(values: &Path) -> Rendered {
        let out = run(&mut template_command(values, MIN_KUBE), b"");
        let docs = yaml_documents(&out.stdout);
        assert!(!docs.is_empty(), "helm template rendered nothing");
        Rendered { docs }
    }

    /// Every manifest of `kind`.
    pub(crate) fn all(&self, kind: &str) -> Vec<&Value> {
        self.docs.iter().filter(|d| d["kind"] == kind).collect()
    }

    /// The manifest of `kind` named `name`, if rendered.
    pub(crate) fn get(&self, kind: &str, name: &str) -> Option<&Value> {
        self.all(kind).into_iter().find(|d| d["metadata"]["name"] == name)
    }

    /// The one manifest of `kind`.
    pub(crate) fn one(&self, kind: &str) -> &Value {
        let all = self.all(kind);
        assert_eq!(all.len(), 1, "expected one {kind}, rendered {}", all.len());
        all[0]
    }

    /// The workload: the one Deployment or StatefulSet.
    pub(crate) fn workload(&self) -> &Value {
        let all: Vec<&Value> = self
            .docs
            .iter()
            .filter(|d| d["kind"] == "Deployment" || d["kind"] == "StatefulSet")
            .collect();
        assert_eq!(
            all.len(),
            1,
            "expected one Deployment or StatefulSet, rendered {}",
            all.len()
        );
        all[0]
    }

    /// The workload's pod spec.
    pub(crate) fn pod_spec(&self) -> &Value {
        &self.workload()["spec"]["template"]["spec"]
    }

    /// The gateway's container.
    pub(crate) fn container(&self) -> &Value {
        let containers = self.pod_spec()["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 1, "one container");
        &containers[0]
    }

    /// A volume of the pod, by name: one of the pod spec's, or a
    /// StatefulSet's claim template, as the claim of its first pod.
    pub(crate) fn volume(&self, name: &str) -> Option<Value> {
        let declared = self.pod_spec()["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name);
        if let Some(volume) = declared {
            return Some(volume.clone());
        }
        let workload = self.workload();
        let templates = workload["spec"]["volumeClaimTemplates"].as_array()?;
        templates.iter().find(|t| t["metadata"]["name"] == name)?;
        let claim = format!("{name}-{}-0", workload["metadata"]["name"].as_str().unwrap());
        Some(serde_json::json!({"name": name, "persistentVolumeClaim": {"claimName": claim}}))
    }

    /// A ConfigMap's or Secret's entries, decoded (a Secret's
    /// `stringData` wins over its `data`, as the API server merges them).
    pub(crate) fn entries(&self, kind: &str, name: &str) -> Option<Vec<(String, Vec<u8>)>> {
        use base64::Engine as _;
        let doc = self.get(kind, name)?;
        let data = doc["data"].as_object().cloned().unwrap_or_default();
        let decode = |v: &Value| {
            let text = v.as_str().unwrap();
            if kind == "Secret" {
                base64::engine::general_purpose::STANDARD.decode(text).unwrap()
            } else {
                text.as_bytes().to_vec()
            }
        };
        let mut entries: std::collections::BTreeMap<String, Vec<u8>> =
            data.iter().map(|(k, v)| (k.clone(), decode(v))).collect();
        if kind == "Secret"
            && let Some(strings) = doc["stringData"].as_object()
        {
            for (k, v) in strings {
                entries.insert(k.clone(), v.as_str().unwrap().as_bytes().to_vec());
            }
        }
        Some(entries.into_iter().collect())
    }

    /// The value of one entry of a rendered ConfigMap or Secret.
    pub(crate) fn entry(&self, kind: &str, name: &str, key: &str) -> Option<Vec<u8>> {
        self.entries(kind, name)?
            .into_iter()
            .find_map(|(k, v)| (k == key).then_some(v))
    }
}

/// The name of a chart object: the release's full name, or it with
/// `-suffix`.
pub(crate) fn object_name(suffix: &str) -> String {
    if suffix.is_empty() {
        RELEASE.to_owned()
    } else {
        format!("{RELEASE}-{suffix}")
    }
}
