//! Checks of `[store]`, and its connection resolved at load: the
//! password from its secret source, the TLS files read, the replica's name.

use std::path::Path;
use std::time::Duration;

use super::{Environment, Problems, key, read_secret};
use crate::locate::Seg;
use crate::{Config, Secret};

/// The store's connection resolved at load.
#[derive(Debug, Clone, PartialEq)]
pub struct PostgresSettings {
    /// `postgres://…`, without a password.
    pub url: String,
    /// The password, when configured.
    pub password: Option<Secret>,
    /// CA certificates (PEM) trusted for the server.
    pub ca: Option<Vec<u8>>,
    /// A client certificate chain and its key (PEM).
    pub client: Option<(Vec<u8>, Vec<u8>)>,
    /// Connections each replica keeps.
    pub pool_size: u32,
    /// The longest one statement may run.
    pub statement_timeout: Duration,
    /// This replica's name in the store.
    pub replica: String,
    /// Whether to apply pending migrations at start.
    pub migrate: bool,
    /// Whether catalog approvals are rows in the store.
    pub approvals: bool,
}

fn pg_key(field: &str) -> Vec<Seg> {
    key(&["store", "postgres", field])
}

/// `[store]`: a PostgreSQL URL without a password, TLS files in pairs,
/// sizes that make sense, a usable replica name.
pub(super) fn validate(c: &Config, out: &mut Problems) {
    if let Some(r) = &c.store.replica
        && !valid_replica(r)
    {
        out.push((
            key(&["store", "replica"]),
            "must be 1 to 128 characters: letters, digits, `.`, `-`, `_`".into(),
        ));
    }
    let Some(pg) = &c.store.postgres else { return };
    match url::Url::parse(&pg.url) {
        Ok(u) if !matches!(u.scheme(), "postgres" | "postgresql") || u.host_str().is_none() => {
            out.push((pg_key("url"), "must be postgres://user@host[:port]/database".into()));
        }
        Ok(u) if u.password().is_some() => out.push((
            pg_key("url"),
            "must not carry a password: set `password` to a secret source".into(),
        )),
        Ok(_) => {}
        Err(e) => out.push((pg_key("url"), format!("not a URL: {e}"))),
    }
    if pg.cert_file.is_some() != pg.key_file.is_some() {
        out.push((
            pg_key("cert_file"),
            "set both `cert_file` and `key_file`, or neither".into(),
        ));
    }
    if pg.pool_size == 0 {
        out.push((pg_key("pool_size"), "must be at least 1".into()));
    }
    if pg.statement_timeout.is_zero() {
        out.push((pg_key("statement_timeout"), "must be greater than 0".into()));
    }
}

fn valid_replica(r: &str) -> bool {
    (1..=128).contains(&r.len())
        && r.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// The store's connection, when `[store] postgres` is set.
pub(super) fn resolve(c: &Config, base: &Path, env: &dyn Environment, out: &mut Problems) -> Option<PostgresSettings> {
    let pg = c.store.postgres.as_ref()?;
    let password = pg.password.as_ref().and_then(|s| {
        read_secret(s, base, env)
            .map_err(|m| out.push((pg_key("password"), m)))
            .ok()
    });
    let mut file = |field: &str, path: &Option<std::path::PathBuf>| {
        let full = base.join(path.as_ref()?);
        env.read_file(&full)
            .map_err(|e| out.push((pg_key(field), format!("cannot read {}: {e}", full.display()))))
            .ok()
    };
    let ca = file("ca_file", &pg.ca_file);
    let client = file("cert_file", &pg.cert_file).zip(file("key_file", &pg.key_file));
    let replica = replica_name(c, env, out)?;
    Some(PostgresSettings {
        url: pg.url.clone(),
        password,
        ca,
        client,
        pool_size: pg.pool_size,
        statement_timeout: pg.statement_timeout,
        replica,
        migrate: c.store.migrate,
        approvals: c.store.approvals,
    })
}

/// `[store] replica`, else the host name (`HOSTNAME`, else the kernel's).
pub(super) fn replica_name(c: &Config, env: &dyn Environment, out: &mut Problems) -> Option<String> {
    if let Some(r) = &c.store.replica {
        return Some(r.clone());
    }
    let host = env.var("HOSTNAME").or_else(|| {
        let raw = env.read_file(Path::new("/proc/sys/kernel/hostname")).ok()?;
        Some(String::from_utf8_lossy(&raw).trim().to_owned())
    });
    match host.filter(|h| valid_replica(h)) {
        Some(h) => Some(h),
        None => {
            out.push((
                key(&["store", "replica"]),
                "the host name is unknown or unusable as a replica name: set one".into(),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::super::load_str;
    use super::*;

    /// Variables and files a test puts in.
    #[derive(Default)]
    struct Env(HashMap<String, String>, HashMap<PathBuf, Vec<u8>>);

    impl Environment for Env {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
        fn read_file(&self, path: &Path) -> Result<Vec<u8>, String> {
            self.1.get(path).cloned().ok_or_else(|| "No such file".into())
        }
    }

    const BASE: &str = "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n\n\
                        [[servers]]\nname = \"a\"\nurl = \"http://127.0.0.1:3001/mcp\"\n\n[store]\n";

    fn problems(store: &str, env: &Env) -> Vec<(String, Option<usize>)> {
        let text = format!("{BASE}{store}");
        let e = load_str(Path::new("/etc/tg/gw.toml"), &text, env).unwrap_err();
        e.0.into_iter().map(|e| (e.key, e.line)).collect()
    }

    #[test]
    fn a_store_resolves_its_password_files_and_replica() {
        let mut env = Env::default();
        env.0.insert("PG_PW".into(), "pw\n".into());
        env.0.insert("HOSTNAME".into(), "tollgate-1".into());
        env.1.insert("/etc/tg/ca.pem".into(), b"CA".to_vec());
        env.1.insert("/etc/tg/me.pem".into(), b"CERT".to_vec());
        env.1.insert("/etc/tg/me.key".into(), b"KEY".to_vec());
        let text = format!(
            "{BASE}postgres = {{ url = \"postgres://tollgate@db.internal:5432/gov?sslmode=require\", \
             password = {{ env = \"PG_PW\" }}, ca_file = \"ca.pem\", cert_file = \"me.pem\", \
             key_file = \"me.key\", pool_size = 8, statement_timeout = \"5s\" }}\n"
        );
        let loaded = load_str(Path::new("/etc/tg/gw.toml"), &text, &env).unwrap();
        let s = loaded.store.unwrap();
        assert_eq!(s.password.map(|p| p.expose().to_vec()), Some(b"pw".to_vec()));
        assert_eq!(s.ca.as_deref(), Some(&b"CA"[..]));
        assert_eq!(s.client, Some((b"CERT".to_vec(), b"KEY".to_vec())));
        assert_eq!((s.pool_size, s.statement_timeout), (8, Duration::from_secs(5)));
        assert_eq!(s.replica, "tollgate-1");
        assert!(s.migrate && s.approvals);
        let without = load_str(Path::new("gw.toml"), BASE, &env).unwrap();
        assert_eq!(without.store, None);
    }

    #[test]
    fn store_problems_name_their_key_and_line() {
        let env = Env::default();
        let found = problems(
            "replica = \"no spaces\"\n[store.postgres]\nurl = \"postgres://u:pw@db/gov\"\n\
             cert_file = \"me.pem\"\npool_size = 0\nstatement_timeout = \"0s\"\n",
            &env,
        );
        let want = [
            ("store.replica", 10),
            ("store.postgres.url", 12),
            ("store.postgres.cert_file", 13),
            ("store.postgres.pool_size", 14),
            ("store.postgres.statement_timeout", 15),
        ];
        for (key, line) in want {
            assert!(
                found.contains(&(key.to_owned(), Some(line))),
                "{key}:{line} not in {found:?}"
            );
        }
        let found = problems(
            "replica = \"r1\"\npostgres = { url = \"postgres://db/gov\", password = { env = \"NOPE\" }, \
             ca_file = \"missing.pem\" }\n",
            &env,
        );
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["store.postgres.password", "store.postgres.ca_file"],
            "every problem is reported"
        );
    }
}
