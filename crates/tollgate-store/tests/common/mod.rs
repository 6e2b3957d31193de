//! What the store's tests share: a real PostgreSQL (the black-box tests'
//! helper, included by path so that this crate does not depend on the
//! black-box test crate) and certificates made by `openssl`.

#![allow(
    dead_code,
    unused_imports,
    unreachable_pub,
    reason = "each test binary uses part of it, and `pub` here is for the test crate"
)]

#[path = "../../../../tests/src/postgres.rs"]
pub mod postgres;

use std::path::Path;

use tollgate_store::{Store, StoreSettings};

pub use postgres::{Options, PostgresServer};

/// A store on `pg` with default settings.
pub fn store(pg: &PostgresServer) -> Store {
    Store::new(&StoreSettings::new(pg.url())).unwrap()
}

/// A store on `pg`, migrated.
pub async fn migrated(pg: &PostgresServer) -> Store {
    let store = store(pg);
    store.migrate().await.unwrap();
    store
}

/// Run `openssl` with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA `{name}-ca.pem` and a certificate `{name}.pem`/`{name}.key` it
/// signed, for the subject `cn` (with `127.0.0.1` as its IP address).
pub fn issue(dir: &Path, name: &str, cn: &str) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    let (ca_key, ca_pem) = (format!("{name}-ca.key"), format!("{name}-ca.pem"));
    let subject = format!("/CN={name} test CA");
    let mut args = vec!["req", "-x509"];
    args.extend(ec);
    args.extend(["-keyout", &ca_key, "-out", &ca_pem, "-days", "2", "-subj", &subject]);
    openssl(dir, &args);
    let (key, csr, pem) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"));
    let cn = format!("/CN={cn}");
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend(["-keyout", &key, "-out", &csr, "-subj", &cn]);
    openssl(dir, &args);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_pem,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
    );
}
