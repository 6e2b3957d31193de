//! What every rendering must satisfy: the pod's shape (probes, drain,
//! security, resources, Services), and agreement between the pod and the
//! configuration it runs (ports, grace period, mounted files, a writable
//! audit directory, an admin token in front of the admin listener's
//! detail, secrets kept out of ConfigMaps).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tollgate_config::Loaded;

use super::pod::{PLACEHOLDER_SECRET, Pod};
use super::render::Rendered;

/// The pod and Services, whatever the values.
pub(crate) fn pod_shape(rendered: &Rendered) {
    let c = rendered.container();
    probes(c);
    assert!(
        c["lifecycle"]["preStop"]["sleep"]["seconds"]
            .as_u64()
            .is_some_and(|s| s >= 1),
        "a preStop sleep (the image has no shell): {}",
        c["lifecycle"]
    );
    assert!(c["lifecycle"]["preStop"].get("exec").is_none());
    security(rendered.pod_spec(), c);
    for (kind, what) in [("requests", "cpu"), ("requests", "memory"), ("limits", "memory")] {
        assert!(c["resources"][kind][what].is_string(), "resources.{kind}.{what}");
    }
    let template = &rendered.workload()["spec"]["template"];
    let annotations = template["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(
        !annotations.keys().any(|k| k.contains("checksum")),
        "a changed ConfigMap is reloaded live, not rolled out"
    );
    assert_eq!(rendered.pod_spec()["automountServiceAccountToken"], false);
    services(rendered);
}

fn probes(c: &Value) {
    let scheme = &c["readinessProbe"]["httpGet"]["scheme"];
    let mut probes = vec![("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")];
    if c.get("startupProbe").is_some() {
        probes.push(("startupProbe", "/healthz"));
    }
    for (probe, path) in probes {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(get["port"], "admin", "{probe} on the admin port");
        assert_eq!(&get["scheme"], scheme, "{probe}");
    }
    let ports: Vec<&Value> = c["ports"].as_array().unwrap().iter().map(|p| &p["name"]).collect();
    assert_eq!(ports, ["mcp", "admin"]);
}

fn security(pod: &Value, c: &Value) {
    let (p, s) = (&pod["securityContext"], &c["securityContext"]);
    assert_eq!(p["runAsNonRoot"], true);
    assert!(p["runAsUser"].as_u64().is_some_and(|u| u > 0), "a non-root user id");
    assert_eq!(s["runAsNonRoot"], true);
    assert_eq!(s["readOnlyRootFilesystem"], true);
    assert_eq!(s["allowPrivilegeEscalation"], false);
    assert_eq!(s["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(s["capabilities"].get("add").is_none());
    assert_eq!(s["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(p["seccompProfile"]["type"], "RuntimeDefault");
}

fn services(rendered: &Rendered) {
    let (headless, services): (Vec<&Value>, Vec<&Value>) = rendered
        .all("Service")
        .into_iter()
        .partition(|s| s["spec"]["clusterIP"] == "None");
    headless_service(rendered, &headless);
    assert_eq!(services.len(), 2, "the MCP Service and the admin Service");
    for (service, port) in services.iter().zip(["mcp", "admin"]) {
        let ports = service["spec"]["ports"].as_array().unwrap();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0]["name"], port);
        assert_eq!(ports[0]["targetPort"], port);
    }
    assert_eq!(
        services[1]["spec"]["type"], "ClusterIP",
        "the admin listener stays inside"
    );
}

/// A StatefulSet is governed by one headless Service selecting its pods
/// (their DNS names); a Deployment has none.
fn headless_service(rendered: &Rendered, headless: &[&Value]) {
    let workload = rendered.workload();
    if workload["kind"] == "Deployment" {
        assert!(headless.is_empty(), "a headless Service without a StatefulSet");
        return;
    }
    assert_eq!(headless.len(), 1, "one headless Service");
    let service = headless[0];
    assert_eq!(service["metadata"]["name"], workload["spec"]["serviceName"]);
    assert_eq!(service["spec"]["selector"], workload["spec"]["selector"]["matchLabels"]);
    let ports: Vec<&Value> = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["targetPort"])
        .collect();
    assert_eq!(ports, ["mcp", "admin"]);
}

/// The pod and the configuration it runs agree.
pub(crate) fn against_config(rendered: &Rendered, pod: &Pod, loaded: &Loaded) {
    let c = &loaded.config;
    let container = rendered.container();
    let port = |name: &str| {
        let ports = container["ports"].as_array().unwrap();
        ports.iter().find(|p| p["name"] == name).unwrap()["containerPort"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(u64::from(c.listen.public.port()), port("mcp"), "listen.public");
    assert_eq!(u64::from(c.listen.admin.port()), port("admin"), "listen.admin");
    let scheme = if c.listen.admin_tls.is_some() { "HTTPS" } else { "HTTP" };
    assert_eq!(container["readinessProbe"]["httpGet"]["scheme"], scheme);
    grace(rendered, c.shutdown.grace);
    assert!(
        loaded.admin_token.is_some(),
        "the admin listener binds {} and its detail needs [admin] token",
        c.listen.admin
    );
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    files_mounted(pod, loaded);
    if c.audit.enabled {
        let dir = pod.inside(&c.audit.directory_for(&pod.config_file()));
        let mount = pod
            .mount_of(&dir)
            .unwrap_or_else(|| panic!("{}: not mounted", dir.display()));
        assert!(mount.writable, "{}: the audit directory is read-only", dir.display());
    }
    secrets_kept_out_of_config_maps(rendered, pod);
    console_routes(rendered, loaded);
}

/// An Ingress or HTTPRoute for the console routes the host of the
/// configuration's `[console] url`, and its path, to the admin port.
fn console_routes(rendered: &Rendered, loaded: &Loaded) {
    let console = &loaded.config.console;
    let ingresses = rendered.all("Ingress");
    let routes = rendered.all("HTTPRoute");
    if ingresses.is_empty() && routes.is_empty() {
        return;
    }
    assert!(console.enabled, "a route to a console that is off");
    let url = console.url.as_ref().expect("[console] url, the host routed");
    let host = url.host_str().unwrap();
    assert_eq!(url.path().trim_end_matches('/'), "/console");
    for ingress in ingresses {
        let rules = ingress["spec"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0]["host"], host);
        let paths = rules[0]["http"]["paths"].as_array().unwrap();
        assert_eq!(paths.len(), 1, "only the console leaves the cluster");
        assert_eq!(
            (&paths[0]["path"], &paths[0]["pathType"]),
            (&"/console".into(), &"Prefix".into())
        );
        let admin = rendered
            .all("Service")
            .into_iter()
            .find(|s| s["spec"]["ports"][0]["name"] == "admin");
        let backend = &paths[0]["backend"]["service"];
        assert_eq!(backend["name"], admin.unwrap()["metadata"]["name"]);
        assert_eq!(backend["port"]["name"], "admin");
        for tls in ingress["spec"]["tls"].as_array().into_iter().flatten() {
            assert_eq!(tls["hosts"], serde_json::json!([host]));
        }
    }
    for route in routes {
        assert_eq!(route["spec"]["hostnames"], serde_json::json!([host]));
    }
}

/// SIGKILL comes after the preStop sleep and the whole `[shutdown] grace`.
fn grace(rendered: &Rendered, grace: Duration) {
    let total = rendered.pod_spec()["terminationGracePeriodSeconds"].as_u64().unwrap();
    let sleep = rendered.container()["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .unwrap();
    assert!(
        total > sleep + grace.as_secs(),
        "terminationGracePeriodSeconds {total} must exceed the preStop sleep {sleep} + grace {grace:?}"
    );
}

/// Every file and directory the configuration names is in a mounted volume.
fn files_mounted(pod: &Pod, loaded: &Loaded) {
    let config = pod.config_file();
    let base = config.parent().unwrap();
    let c = &loaded.config;
    let mut named: Vec<PathBuf> = Vec::new();
    for tls in [&c.listen.tls, &c.listen.admin_tls].into_iter().flatten() {
        named.extend([&tls.cert, &tls.key].map(|p| base.join(p)));
        named.extend(tls.client_ca.iter().map(|p| base.join(p)));
    }
    if let Some(tls) = c.limits.redis.as_ref().and_then(|r| r.tls.as_ref()) {
        named.extend(
            [&tls.ca, &tls.cert, &tls.key]
                .into_iter()
                .flatten()
                .map(|p| base.join(p)),
        );
    }
    for tls in c.servers.iter().filter_map(|s| s.tls.as_ref()) {
        named.extend(
            [&tls.ca, &tls.cert, &tls.key]
                .into_iter()
                .flatten()
                .map(|p| base.join(p)),
        );
    }
    if let Some(pg) = &c.store.postgres {
        named.extend(
            [&pg.ca_file, &pg.cert_file, &pg.key_file]
                .into_iter()
                .flatten()
                .map(|p| base.join(p)),
        );
    }
    named.extend(c.policy.resolved_dir(&config));
    let off = tollgate_config::CatalogMode::Off;
    if c.catalog.mode != off || c.servers.iter().any(|s| s.catalog.is_some_and(|m| m != off)) {
        named.push(c.catalog.resolved_lock(&config));
    }
    for path in named {
        assert_mounted(pod, &path);
    }
}

fn assert_mounted(pod: &Pod, path: &Path) {
    let inside = pod.inside(path);
    assert!(pod.mount_of(&inside).is_some(), "{}: in no volume", inside.display());
    assert!(path.exists(), "{}: not in its volume", inside.display());
}

/// No secret value of the pod's environment is written in a ConfigMap.
fn secrets_kept_out_of_config_maps(rendered: &Rendered, pod: &Pod) {
    let texts: Vec<String> = rendered
        .all("ConfigMap")
        .iter()
        .map(|m| m["data"].to_string())
        .collect();
    for (name, value) in &pod.env {
        if value.len() < 8 || value == PLACEHOLDER_SECRET || name == "HOSTNAME" {
            continue;
        }
        assert!(
            !texts.iter().any(|t| t.contains(value.as_str())),
            "{name}'s value is in a ConfigMap"
        );
    }
}

/// The prometheus.io annotations on the pod template.
pub(crate) fn scrape_annotations(rendered: &Rendered, scheme: &str) {
    let annotations = &rendered.workload()["spec"]["template"]["metadata"]["annotations"];
    let admin = rendered.container()["ports"][1]["containerPort"].to_string();
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], admin.as_str());
    assert_eq!(annotations["prometheus.io/path"], "/metrics");
    assert_eq!(annotations["prometheus.io/scheme"], scheme);
}

/// The Secret and key an environment variable is read from.
pub(crate) fn secret_ref(rendered: &Rendered, var: &str) -> (String, String) {
    let env = rendered.container()["env"].as_array().unwrap();
    let entry = env
        .iter()
        .find(|e| e["name"] == var)
        .unwrap_or_else(|| panic!("no {var}"));
    let r = &entry["valueFrom"]["secretKeyRef"];
    (
        r["name"].as_str().unwrap().to_owned(),
        r["key"].as_str().unwrap().to_owned(),
    )
}
