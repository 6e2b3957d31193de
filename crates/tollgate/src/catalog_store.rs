//! The catalog commands' side of the fleet store: where approvals are
//! kept for a command ([`StoreChoice`]: `--store URL`, `--store` for the
//! configuration's, the configuration's `[store]` when it holds approvals,
//! or `--lock-file`), the approvals in force as a gateway puts them
//! together (the lock file's and the store's, each definition's newer
//! approval), and `tollgate catalog export|import`, which move approvals
//! between the store and a lock file reviewed in a pull request.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use tollgate_catalog::{Definition, Lock};
use tollgate_config::Loaded;
use tollgate_store::{Store, StoreSettings};

/// Where a catalog command finds approvals besides the lock file.
#[derive(Args)]
pub(crate) struct StoreChoice {
    /// The fleet store holding approvals (PostgreSQL):
    /// `postgres://user@host[:port]/database`, or, without a value, the
    /// configuration's `[store] postgres` (its password and TLS files).
    /// A configuration whose `[store]` holds approvals (`approvals`, the
    /// default) uses its store without this flag.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    store: Option<String>,
    /// Only the lock file, even when the configuration has a store.
    #[arg(long, conflicts_with = "store")]
    lock_file: bool,
}

/// The store of `export` and `import`.
#[derive(Args)]
pub(crate) struct TransferArgs {
    /// The gateway's configuration, whose `[store] postgres` is used (with
    /// its password and TLS files) unless `--store` names another.
    #[arg(long, short, required_unless_present = "store")]
    config: Option<PathBuf>,
    /// The fleet store: `postgres://user@host[:port]/database`.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
}

/// A connection to the fleet store for one command.
pub(crate) struct Fleet {
    runtime: tokio::runtime::Runtime,
    store: Store,
}

impl Fleet {
    /// The store `choice` names for the configuration `loaded`, if any;
    /// its schema checked.
    pub(crate) fn open(choice: &StoreChoice, loaded: Option<&Loaded>) -> anyhow::Result<Option<Fleet>> {
        let Some(settings) = settings(choice, loaded)? else {
            return Ok(None);
        };
        let store = Store::new(&settings)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        runtime
            .block_on(store.check_schema())
            .with_context(|| format!("the fleet store {}", settings.url))?;
        Ok(Some(Fleet { runtime, store }))
    }

    /// The store's approvals in force; refused rows are reported on
    /// standard error.
    pub(crate) fn approvals(&self) -> anyhow::Result<Lock> {
        let stored = self.runtime.block_on(self.store.approvals())?;
        for row in &stored.refused {
            eprintln!("tollgate: warning: refused (it approves nothing): {row}");
        }
        Ok(stored.lock)
    }

    /// Approve each of `chosen` of `server` as a row (now, by the store's
    /// clock), saying so for each.
    pub(crate) fn approve_each(
        &self,
        server: &str,
        chosen: &[&Definition],
        by: &str,
        note: Option<&str>,
    ) -> anyhow::Result<()> {
        for d in chosen {
            self.runtime.block_on(self.store.approve(server, d, by, note))?;
            println!("approved {} {} at {}", d.kind, d.key, d.revision);
        }
        println!("wrote {} approvals to the fleet store", chosen.len());
        Ok(())
    }
}

/// The store settings `choice` names.
fn settings(choice: &StoreChoice, loaded: Option<&Loaded>) -> anyhow::Result<Option<StoreSettings>> {
    if choice.lock_file {
        return Ok(None);
    }
    let configured = loaded.and_then(|l| l.store.as_ref());
    match choice.store.as_deref() {
        Some("") => {
            let pg = configured.context("--store without a URL needs a --config with [store] postgres")?;
            Ok(Some(tollgate_server::settings::store(pg)))
        }
        Some(url) => Ok(Some(StoreSettings::new(url))),
        None => Ok(configured
            .filter(|pg| pg.approvals)
            .map(tollgate_server::settings::store)),
    }
}

/// The approvals in force for the configuration `loaded`: its lock
/// file's, and the store's when `choice` names one (each definition's
/// newer approval, as a gateway puts them together). Also the lock file's
/// path and the store.
pub(crate) fn in_force(loaded: &Loaded, choice: &StoreChoice) -> anyhow::Result<(PathBuf, Lock, Option<Fleet>)> {
    let (path, file) = lock_file(loaded)?;
    let fleet = Fleet::open(choice, Some(loaded))?;
    let lock = match &fleet {
        Some(fleet) => file.union_newest(&fleet.approvals()?),
        None => file,
    };
    Ok((path, lock, fleet))
}

/// The lock file of a configuration, and where it is.
pub(crate) fn lock_file(loaded: &Loaded) -> anyhow::Result<(PathBuf, Lock)> {
    let path = loaded.config.catalog.resolved_lock(&loaded.path);
    Ok((path.clone(), read_lock(&path)?.unwrap_or_default()))
}

/// The lock file at `path` (`None`: there is none).
fn read_lock(path: &Path) -> anyhow::Result<Option<Lock>> {
    let Some(text) = tollgate_config::read_lock_text(path)? else {
        return Ok(None);
    };
    Lock::parse(path, &text).map(Some).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The store of `export` and `import`.
fn transfer_store(args: &TransferArgs) -> anyhow::Result<Fleet> {
    let loaded = match (&args.store, &args.config) {
        (None, Some(config)) => Some(crate::catalog_cmd::load(config)?),
        _ => None,
    };
    let choice = StoreChoice {
        store: Some(args.store.clone().unwrap_or_default()),
        lock_file: false,
    };
    Fleet::open(&choice, loaded.as_ref())?
        .context("no fleet store: give --store URL, or --config with [store] postgres")
}

/// `tollgate catalog export`: the store's approvals in force, as a lock
/// file on standard output.
pub(crate) fn export(args: &TransferArgs) -> anyhow::Result<ExitCode> {
    let lock = transfer_store(args)?.approvals()?;
    print!("{}", lock.to_toml());
    Ok(ExitCode::SUCCESS)
}

/// `tollgate catalog import FILE`: a lock file's approvals as rows, each
/// unless the store holds it already.
pub(crate) fn import(file: &Path, args: &TransferArgs) -> anyhow::Result<ExitCode> {
    let lock = read_lock(file)?.with_context(|| format!("{}: no such file", file.display()))?;
    let fleet = transfer_store(args)?;
    let done = fleet.runtime.block_on(fleet.store.import(&lock))?;
    println!(
        "imported {} approvals from {} into the fleet store ({} added, {} there already)",
        lock.len(),
        file.display(),
        done.added,
        done.present
    );
    Ok(ExitCode::SUCCESS)
}
