//! The schema against a real PostgreSQL: migrations applied once (also by
//! two replicas at the same time), a newer schema refused, version 3's
//! buckets equal to the meter's, and the ways of connecting: a password from a secret, TLS with a private CA and a
//! client certificate.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{Options, PostgresServer, issue, store};
use tollgate_store::{SCHEMA_VERSION, Store, StoreError, StoreSettings, StoreTls};

#[tokio::test]
async fn an_empty_database_is_migrated_once_and_then_current() {
    let pg = PostgresServer::start().await;
    let store = store(&pg);
    let before = store.status().await.unwrap();
    assert_eq!((before.version, before.known), (0, SCHEMA_VERSION));
    assert_eq!(before.pending.len(), usize::try_from(SCHEMA_VERSION).unwrap());
    assert!(matches!(
        store.check_schema().await,
        Err(StoreError::SchemaTooOld { found: 0, .. })
    ));

    let applied = store.migrate().await.unwrap();
    assert_eq!(applied.first().map(|m| m.version), Some(1));
    assert!(
        store.migrate().await.unwrap().is_empty(),
        "a second run applies nothing"
    );
    let after = store.status().await.unwrap();
    assert!(after.is_current() && after.pending.is_empty() && after.applied_at.is_some());
    store.check_schema().await.unwrap();
    let tables = pg
        .psql("SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'")
        .await;
    assert_eq!(
        tables,
        "audit_checkpoints,audit_records,audit_shipping,audit_usage,catalog_approvals,schema_migrations"
    );
    let partitioned = pg
        .psql("SELECT relkind FROM pg_class WHERE relname = 'audit_records'")
        .await;
    assert_eq!(partitioned, "p", "audit_records is partitioned");
}

#[tokio::test]
async fn replicas_migrating_together_apply_each_migration_once() {
    let pg = PostgresServer::start().await;
    let (a, b) = (store(&pg), store(&pg));
    let (ra, rb) = tokio::join!(a.migrate(), b.migrate());
    let applied = ra.unwrap().len() + rb.unwrap().len();
    assert_eq!(applied, usize::try_from(SCHEMA_VERSION).unwrap());
    assert_eq!(
        pg.psql("SELECT count(*) FROM schema_migrations").await,
        SCHEMA_VERSION.to_string()
    );
}

#[tokio::test]
async fn a_schema_from_a_newer_tollgate_is_refused_and_left_alone() {
    let pg = PostgresServer::start().await;
    let store = store(&pg);
    store.migrate().await.unwrap();
    pg.psql("INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')")
        .await;
    let e = store.migrate().await.unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::SchemaTooNew {
                found: 99,
                known: SCHEMA_VERSION
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("newer than this Tollgate knows"), "{e}");
    assert!(matches!(
        store.check_schema().await,
        Err(StoreError::SchemaTooNew { .. })
    ));
    assert_eq!(store.status().await.unwrap().version, 99);
}

#[tokio::test]
async fn the_password_comes_from_the_settings_and_a_wrong_one_is_refused() {
    let options = Options {
        password: Some("s3cret-from-a-file".into()),
        ..Options::default()
    };
    let pg = PostgresServer::start_with(options).await;
    let mut settings = StoreSettings::new(pg.url());
    let e = Store::new(&settings).unwrap().status().await.unwrap_err();
    assert!(matches!(e, StoreError::Unavailable(_)), "{e}");
    settings.password = Some("wrong".into());
    let e = Store::new(&settings).unwrap().status().await.unwrap_err();
    assert!(e.to_string().contains("password authentication failed"), "{e}");
    settings.password = Some("s3cret-from-a-file".into());
    Store::new(&settings).unwrap().migrate().await.unwrap();
}

#[tokio::test]
async fn tls_with_a_private_ca_and_a_client_certificate() {
    let certs = tempfile::tempdir().unwrap();
    issue(certs.path(), "server", "127.0.0.1");
    issue(certs.path(), "client", "tollgate");
    let read = |name: &str| std::fs::read(certs.path().join(name)).unwrap();
    let options = Options {
        tls_dir: Some(certs.path().to_owned()),
        ..Options::default()
    };
    let pg = PostgresServer::start_with(options).await;
    let mut settings = StoreSettings::new(pg.url());
    settings.tls = StoreTls {
        ca: Some(read("server-ca.pem")),
        client: Some((read("client.pem"), read("client.key"))),
    };
    Store::new(&settings).unwrap().migrate().await.unwrap();

    // Without a client certificate the server refuses; with another CA the
    // client refuses the server.
    let no_cert = StoreSettings {
        tls: StoreTls {
            ca: Some(read("server-ca.pem")),
            client: None,
        },
        ..settings.clone()
    };
    assert!(Store::new(&no_cert).unwrap().status().await.is_err());
    let wrong_ca = StoreSettings {
        tls: StoreTls {
            ca: Some(read("client-ca.pem")),
            client: settings.tls.client.clone(),
        },
        ..settings
    };
    let e = Store::new(&wrong_ca).unwrap().status().await.unwrap_err();
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
}

#[tokio::test]
async fn the_bucket_migration_computes_the_meters_histogram_buckets() {
    let pg = PostgresServer::start().await;
    let store = store(&pg);
    store.migrate().await.unwrap();
    // Durations around every power of two, and between.
    let mut durations: Vec<u64> = (0..63).flat_map(|e| [(1u64 << e) - 1, 1 << e, (1 << e) + 1]).collect();
    durations.extend((0..2000u64).map(|i| i * i * 7919 + i));
    durations.sort_unstable();
    durations.dedup();
    let values: Vec<String> = durations.iter().map(u64::to_string).collect();
    pg.psql(&format!(
        "CREATE TABLE audit_usage_1970_01 PARTITION OF audit_usage FOR VALUES FROM ('1970-01-01') TO ('1970-02-01'); \
         INSERT INTO audit_usage (time, replica, file, line_no, catalog, failed, denied, tokens, bytes_in, bytes_out, \
         duration_us, bucket) SELECT 'epoch', 'r', 'f', d, false, false, false, 0, 0, 0, d, 0 \
         FROM unnest('{{{}}}'::bigint[]) AS d",
        values.join(",")
    ))
    .await;
    // Version 3's statement, run again over these rows.
    pg.psql(include_str!("../migrations/0003_hdr_buckets.sql")).await;
    let stored = pg
        .psql("SELECT string_agg(duration_us || ':' || bucket, ',' ORDER BY line_no) FROM audit_usage")
        .await;
    let expected: Vec<String> = durations
        .iter()
        .map(|d| format!("{d}:{}", tollgate_meter::duration_bucket(*d)))
        .collect();
    assert_eq!(stored, expected.join(","));
}
