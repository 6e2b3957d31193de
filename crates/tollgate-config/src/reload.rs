//! What a configuration reload needs from this crate: when a file changed,
//! and which settings only a restart puts in force.
//!
//! The gateway swaps in everything else of a reloaded configuration
//! (servers, virtual servers, auth issuers, limits, budgets, catalog modes,
//! per-route audit settings); the settings named here are bound at start
//! (listeners, threads, the audit writer, the trace exporter, the policy
//! engine and the lock file) and keep their old values until a restart.

use std::path::Path;

use crate::Config;

/// What tells that the file at `path` changed since it was last read: its
/// modification time and length (`None` while it cannot be examined, e.g.
/// mid-replacement or missing). The gateway polls this to reload the
/// configuration and the catalog lock; it also sees a Kubernetes
/// ConfigMap's symlink swap.
#[must_use]
pub fn file_stamp(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The keys whose change between `running` and `next` takes effect only
/// after a restart, in file order; empty when a reload applies everything.
#[must_use]
pub fn restart_required(running: &Config, next: &Config) -> Vec<&'static str> {
    let (a, b) = (running, next);
    let (aa, ba) = (&a.audit, &b.audit);
    let (al, bl) = (&a.limits, &b.limits);
    let checks: [(&'static str, bool); 23] = [
        ("listen", a.listen == b.listen),
        ("limits.max_body_bytes", al.max_body_bytes == bl.max_body_bytes),
        ("limits.max_header_bytes", al.max_header_bytes == bl.max_header_bytes),
        (
            "limits.max_concurrent_requests",
            al.max_concurrent_requests == bl.max_concurrent_requests,
        ),
        (
            "limits.header_read_timeout",
            al.header_read_timeout == bl.header_read_timeout,
        ),
        ("shutdown", a.shutdown == b.shutdown),
        ("runtime", a.runtime == b.runtime),
        ("dev_issuer", a.dev_issuer == b.dev_issuer),
        ("console", a.console == b.console),
        ("audit.enabled", aa.enabled == ba.enabled),
        ("audit.index", aa.index == ba.index),
        ("audit.directory", aa.directory == ba.directory),
        ("audit.file_prefix", aa.file_prefix == ba.file_prefix),
        ("audit.durability", aa.durability == ba.durability),
        (
            "audit.sync_interval, audit.sync_records, audit.queue_capacity",
            (aa.sync_interval, aa.sync_records, aa.queue_capacity)
                == (ba.sync_interval, ba.sync_records, ba.queue_capacity),
        ),
        (
            "audit.rotate_bytes, audit.rotate_interval",
            (aa.rotate_bytes, aa.rotate_interval) == (ba.rotate_bytes, ba.rotate_interval),
        ),
        ("audit.otlp", aa.otlp == ba.otlp),
        (
            "audit.checkpoint_interval, audit.checkpoint_key",
            (aa.checkpoint_interval, &aa.checkpoint_key) == (ba.checkpoint_interval, &ba.checkpoint_key),
        ),
        ("policy", a.policy == b.policy),
        ("tracing", a.tracing == b.tracing),
        ("catalog.lock", a.catalog.lock == b.catalog.lock),
        ("catalog.watch", a.catalog.watch == b.catalog.watch),
        // The store is connected to once, at start.
        ("store", a.store == b.store),
    ];
    checks
        .into_iter()
        .filter(|(_, same)| !same)
        .map(|(key, _)| key)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::FakeEnv;
    use crate::load_str;

    fn config(extra: &str) -> Config {
        let text = format!(
            "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n{extra}\n\
             [[servers]]\nname = \"a\"\nurl = \"http://127.0.0.1:9000/mcp\"\n"
        );
        match load_str(Path::new("t.toml"), &text, &FakeEnv::default()) {
            Ok(l) => l.config,
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn live_settings_need_no_restart() {
        let a = config("");
        let b = config("[limits]\nrules = [{ id = \"r\", rate = 5, period = \"1m\" }]\n[audit]\nbytes_per_token = 3.0");
        assert!(restart_required(&a, &b).is_empty());
    }

    #[test]
    fn bound_settings_are_named() {
        let a = config("");
        let b =
            config("[limits]\nmax_body_bytes = 1024\n[audit]\ndurability = \"strict\"\n[runtime]\nworker_threads = 3");
        assert_eq!(
            restart_required(&a, &b),
            ["limits.max_body_bytes", "runtime", "audit.durability"]
        );
    }
}
