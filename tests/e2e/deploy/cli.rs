//! The real `tollgate` on the rebuilt pod, with only the pod's
//! environment: `validate` on the configuration, `policy validate` on the
//! mounted policy directory, `catalog show` on the mounted lock.

use std::path::Path;
use std::process::{Command, Output};

use tollgate_config::Loaded;
use tollgate_e2e::children::tollgate_bin;

use super::pod::{Pod, PodEnvironment};

/// Run every check the pod's files allow; the configuration as loaded.
pub(crate) fn check(pod: &Pod) -> Loaded {
    let config = pod.config_file();
    let config_arg = config.to_str().unwrap();
    let out = tollgate(pod, &["validate", "--config", config_arg]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(": ok ("));
    let loaded = tollgate_config::load(&config, &PodEnvironment(pod))
        .unwrap_or_else(|e| panic!("the configuration does not load:\n{e}"));
    let c = &loaded.config;
    if let Some(dir) = c.policy.resolved_dir(&config).filter(|d| rendered_here(pod, d)) {
        tollgate(pod, &["policy", "validate", "--policies", dir.to_str().unwrap()]);
    }
    if c.catalog.resolved_lock(&config).exists() && rendered_here(pod, &c.catalog.resolved_lock(&config)) {
        let out = tollgate(pod, &["catalog", "show", "--config", config_arg]);
        assert!(out.status.success());
    }
    loaded
}

/// Whether `path` (in the rebuilt pod) comes from an object the chart
/// rendered, rather than a placeholder.
fn rendered_here(pod: &Pod, path: &Path) -> bool {
    let inside = pod.inside(path);
    pod.mount_of(&inside).is_some_and(|m| !m.external)
}

fn tollgate(pod: &Pod, args: &[&str]) -> Output {
    let out = Command::new(tollgate_bin())
        .args(args)
        .env_clear()
        .envs(&pod.env)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tollgate {}:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What `tollgate validate` says when it refuses the pod's configuration;
/// panics when it accepts it.
pub(crate) fn refused(pod: &Pod) -> String {
    let config = pod.config_file();
    let out = Command::new(tollgate_bin())
        .args(["validate", "--config", config.to_str().unwrap()])
        .env_clear()
        .envs(&pod.env)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "tollgate validate accepted the pod's configuration"
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The store's URL is one the PostgreSQL client takes: `tollgate store
/// status` fails to reach the (absent) server, not to read the URL, which
/// `tollgate validate` does not parse as the client does.
pub(crate) fn store_url_is_understood(pod: &Pod) {
    real_store_certificates(pod);
    let config = pod.config_file();
    let out = Command::new(tollgate_bin())
        .args(["store", "status", "--config", config.to_str().unwrap()])
        .env_clear()
        .envs(&pod.env)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot reach the store") && !stderr.contains("store settings"),
        "{stderr}"
    );
}

/// Replace the placeholders of a store TLS Secret the chart does not
/// render with a real certificate and key (by `openssl`), which the client
/// parses before it connects.
fn real_store_certificates(pod: &Pod) {
    let dir = pod.path("/etc/tollgate/store-tls");
    let external = pod
        .mount_of(Path::new("/etc/tollgate/store-tls"))
        .is_some_and(|m| m.external);
    if !external {
        return;
    }
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args([
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=store",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (from, to) in [("cert.pem", "ca.crt"), ("cert.pem", "tls.crt"), ("key.pem", "tls.key")] {
        if dir.join(to).exists() {
            std::fs::copy(dir.join(from), dir.join(to)).unwrap();
        }
    }
}
