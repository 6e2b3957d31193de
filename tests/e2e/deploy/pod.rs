//! The pod as the kubelet would set it up, rebuilt from the rendered
//! manifests in a temporary directory: each volume mount filled from the
//! rendered ConfigMap or Secret it names (honouring `items`), and the
//! container's environment with every `secretKeyRef` resolved. Objects the
//! chart only refers to (`existing*` values) are not rendered: a Secret's
//! files are placeholders, its values a well-formed session key, and a
//! ConfigMap's directory stays empty.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::render::Rendered;

/// A value for secrets the chart does not render: 32 bytes, base64, so it
/// also passes as a session key.
pub(crate) const PLACEHOLDER_SECRET: &str = "uZxf+pjE4pjhS1J+YX4XA+aYD1fL7/Rt+Zs4pe93oxc=";

/// One volume mount of the container.
pub(crate) struct Mount {
    /// The path in the container.
    pub(crate) path: String,
    /// Whether the container may write it.
    pub(crate) writable: bool,
    /// Filled from a ConfigMap or Secret the chart does not render.
    pub(crate) external: bool,
}

/// The pod's files and environment.
pub(crate) struct Pod {
    root: tempfile::TempDir,
    /// The container's environment.
    pub(crate) env: BTreeMap<String, String>,
    /// The `--config` argument, a path in the container.
    pub(crate) config: String,
    /// The container's volume mounts.
    pub(crate) mounts: Vec<Mount>,
}

impl Pod {
    /// Set up the pod of `rendered`'s Deployment.
    pub(crate) fn build(rendered: &Rendered) -> Pod {
        let container = rendered.container();
        let args: Vec<&str> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let at = args.iter().position(|a| *a == "--config").expect("serve --config FILE");
        let mut pod = Pod {
            root: tempfile::tempdir().unwrap(),
            env: BTreeMap::new(),
            config: args[at + 1].to_owned(),
            mounts: Vec::new(),
        };
        for mount in container["volumeMounts"].as_array().unwrap() {
            let name = mount["name"].as_str().unwrap();
            let volume = rendered.volume(name).unwrap_or_else(|| panic!("no volume {name}"));
            pod.mount(rendered, &volume, mount);
        }
        for var in container["env"].as_array().unwrap() {
            let value = env_value(rendered, var);
            let name = var["name"].as_str().unwrap().to_owned();
            assert!(pod.env.insert(name.clone(), value).is_none(), "{name} set twice");
        }
        let workload = rendered.workload();
        if workload["kind"] == "StatefulSet" {
            // The container runtime sets HOSTNAME to the pod's host name,
            // which for a StatefulSet's pod is its name: RELEASE-0, ...
            let first = format!("{}-0", workload["metadata"]["name"].as_str().unwrap());
            assert!(
                pod.env.insert("HOSTNAME".into(), first).is_none(),
                "HOSTNAME set by the chart"
            );
        }
        pod
    }

    /// Where the container's `path` is in the rebuilt pod.
    pub(crate) fn path(&self, path: impl AsRef<Path>) -> PathBuf {
        self.root.path().join(path.as_ref().strip_prefix("/").unwrap())
    }

    /// The configuration file in the rebuilt pod.
    pub(crate) fn config_file(&self) -> PathBuf {
        self.path(&self.config)
    }

    /// The container's path of `path` in the rebuilt pod, with `..`
    /// resolved; an absolute path outside it is taken as the container's.
    pub(crate) fn inside(&self, path: &Path) -> PathBuf {
        let relative = match path.strip_prefix(self.root.path()) {
            Ok(p) => Path::new("/").join(p),
            Err(_) => path.to_owned(),
        };
        let mut out = PathBuf::from("/");
        for c in relative.components() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(n) => out.push(n),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        out
    }

    /// The mount the container's `path` lies in.
    pub(crate) fn mount_of(&self, path: &Path) -> Option<&Mount> {
        self.mounts.iter().find(|m| path.starts_with(&m.path))
    }

    fn mount(&mut self, rendered: &Rendered, volume: &Value, mount: &Value) {
        let path = mount["mountPath"].as_str().unwrap().to_owned();
        let read_only = mount["readOnly"] == true;
        let dir = self.path(&path);
        std::fs::create_dir_all(&dir).unwrap();
        let external = if let Some(source) = volume.get("configMap") {
            fill(rendered, "ConfigMap", &source["name"], source, &dir)
        } else if let Some(source) = volume.get("secret") {
            fill(rendered, "Secret", &source["secretName"], source, &dir)
        } else {
            assert!(
                ["emptyDir", "ephemeral", "persistentVolumeClaim"]
                    .iter()
                    .any(|k| volume.get(k).is_some()),
                "unexpected volume {volume}"
            );
            false
        };
        let configured = volume.get("configMap").or_else(|| volume.get("secret")).is_some();
        assert!(
            !configured || read_only,
            "{path}: ConfigMaps and Secrets are mounted read-only"
        );
        self.mounts.push(Mount {
            path,
            writable: !read_only,
            external,
        });
    }
}

/// Write the entries of the ConfigMap or Secret `name` into `dir`, as the
/// volume `source` selects them; whether the object is external.
fn fill(rendered: &Rendered, kind: &str, name: &Value, source: &Value, dir: &Path) -> bool {
    let name = name.as_str().unwrap();
    let items: Option<Vec<(String, String)>> = source["items"].as_array().map(|items| {
        items
            .iter()
            .map(|i| {
                (
                    i["key"].as_str().unwrap().to_owned(),
                    i["path"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    });
    let Some(entries) = rendered.entries(kind, name) else {
        // Certificates and keys, which `tollgate validate` does not read;
        // a ConfigMap managed elsewhere is left empty (nothing to validate).
        if kind == "Secret" {
            for (_, path) in items.iter().flatten() {
                std::fs::write(dir.join(path), format!("placeholder for {kind} {name}\n")).unwrap();
            }
        }
        return true;
    };
    let selected = match items {
        Some(items) => items
            .into_iter()
            .map(|(key, path)| {
                let found = entries.iter().find(|(k, _)| *k == key);
                let (_, value) = found.unwrap_or_else(|| panic!("{kind} {name} has no key {key}"));
                (path, value.clone())
            })
            .collect(),
        None => entries,
    };
    for (path, value) in selected {
        std::fs::write(dir.join(path), value).unwrap();
    }
    false
}

/// The value of one `env` entry.
fn env_value(rendered: &Rendered, var: &Value) -> String {
    if let Some(value) = var["value"].as_str() {
        return value.to_owned();
    }
    let reference = &var["valueFrom"]["secretKeyRef"];
    let (name, key) = (reference["name"].as_str(), reference["key"].as_str());
    let (Some(name), Some(key)) = (name, key) else {
        panic!("unexpected env entry {var}")
    };
    if rendered.get("Secret", name).is_none() {
        return PLACEHOLDER_SECRET.to_owned();
    }
    let value = rendered
        .entry("Secret", name, key)
        .unwrap_or_else(|| panic!("{}: the Secret {name} has no key {key}", var["name"]));
    String::from_utf8(value).unwrap()
}

/// The pod's environment and files, for loading the configuration in
/// this process.
pub(crate) struct PodEnvironment<'a>(pub(crate) &'a Pod);

impl tollgate_config::Environment for PodEnvironment<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.0.env.get(name).cloned()
    }

    fn read_file(&self, path: &Path) -> Result<Vec<u8>, String> {
        std::fs::read(path).map_err(|e| e.to_string())
    }
}
