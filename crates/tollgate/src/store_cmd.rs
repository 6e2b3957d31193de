//! `tollgate store migrate|status`: the fleet store's schema, from the
//! configuration's `[store] postgres` (its password and TLS files as the
//! gateway reads them).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;
use tollgate_store::{SchemaStatus, Store, StoreError};

#[derive(Subcommand)]
pub(crate) enum StoreCommand {
    /// Apply the schema migrations this Tollgate has and the store lacks
    /// (exit 1 when the store's schema is newer than this Tollgate).
    Migrate {
        /// The gateway's configuration file (`[store] postgres`).
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Print the store's schema version and the migrations pending (exit 0
    /// when current, 1 when migrations are pending or the schema is newer).
    Status {
        /// The gateway's configuration file (`[store] postgres`).
        #[arg(long, short)]
        config: PathBuf,
    },
}

pub(crate) fn run(command: &StoreCommand) -> ExitCode {
    let (StoreCommand::Migrate { config } | StoreCommand::Status { config }) = command;
    let Some(loaded) = crate::load(config) else {
        return ExitCode::from(2);
    };
    let Some(pg) = &loaded.store else {
        eprintln!("tollgate: {} has no [store] postgres", config.display());
        return ExitCode::from(2);
    };
    let result = Store::new(&tollgate_server::settings::store(pg))
        .context("the store's settings")
        .and_then(|store| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(async {
                match command {
                    StoreCommand::Migrate { .. } => migrate(&store).await,
                    StoreCommand::Status { .. } => status(&store, &pg.url).await,
                }
            })
        });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tollgate: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn migrate(store: &Store) -> anyhow::Result<ExitCode> {
    match store.migrate().await {
        Ok(applied) if applied.is_empty() => {
            println!("the schema is current (version {})", tollgate_store::SCHEMA_VERSION);
        }
        Ok(applied) => {
            for m in applied {
                println!("applied {} {}", m.version, m.name);
            }
        }
        Err(e @ StoreError::SchemaTooNew { .. }) => {
            eprintln!("tollgate: {e}");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    }
    Ok(ExitCode::SUCCESS)
}

async fn status(store: &Store, url: &str) -> anyhow::Result<ExitCode> {
    let s = store.status().await?;
    print!("{}", render(&s, url));
    Ok(if s.is_current() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn render(s: &SchemaStatus, url: &str) -> String {
    let applied = s
        .applied_at
        .map(|t| format!(", applied {}", humantime::format_rfc3339_seconds(t)))
        .unwrap_or_default();
    let mut out = format!(
        "store: {url}\nschema version: {} (this Tollgate: {}){applied}\n",
        s.version, s.known
    );
    if s.version > s.known {
        out.push_str("the schema is newer than this Tollgate knows: upgrade Tollgate\n");
    } else if s.pending.is_empty() {
        out.push_str("pending migrations: none\n");
    } else {
        out.push_str("pending migrations (tollgate store migrate):\n");
        for m in &s.pending {
            out.push_str(&format!("  {} {}\n", m.version, m.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_the_version_and_each_pending_migration() {
        let s = SchemaStatus {
            version: 0,
            applied_at: None,
            known: 3,
            pending: tollgate_store::MIGRATIONS.to_vec(),
        };
        let text = render(&s, "postgres://tollgate@db/tg");
        assert_eq!(
            text,
            "store: postgres://tollgate@db/tg\nschema version: 0 (this Tollgate: 3)\n\
             pending migrations (tollgate store migrate):\n  1 governance\n  2 usage\n  3 hdr buckets\n"
        );
        let newer = SchemaStatus {
            version: 7,
            pending: Vec::new(),
            ..s
        };
        assert!(render(&newer, "u").contains("newer than this Tollgate knows"));
    }
}
