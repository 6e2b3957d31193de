//! `--store`: `tollgate audit query` and `tollgate usage` over every
//! replica's records in the fleet store (`docs/fleet.md`) instead of one
//! machine's files.
//!
//! The store is read with the files' own filter (`tollgate_store`'s
//! `records`), and what it yields — the stored lines, parsed — goes to the
//! same renderer and the same report functions as the files' entries, so
//! the two sources print the same output for the same records. Usage by
//! group is summed in SQL (`tollgate_store`'s `usage`), into the same
//! report the files give.

use std::path::Path;
use std::time::SystemTime;

use anyhow::Context as _;
use tollgate_audit::{Entry, Filter};
use tollgate_limit::Prices;
use tollgate_meter::{GroupBy, UsageReport};
use tollgate_store::{Store, StoreError, StoredRecords, UsageQuestion};

use crate::audit_cmd::Stop;

/// Where `audit query` and `usage` read from instead of PATH….
#[derive(clap::Args)]
pub(crate) struct StoreSource {
    /// Read every replica's records from the fleet store (PostgreSQL)
    /// instead of files: `postgres://user@host[:port]/database`, or, given
    /// without a value, the `[store] postgres` of `--config` (with its
    /// password and TLS files).
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub(crate) store: Option<String>,
}

/// A connection to the fleet store for one command.
pub(crate) struct Fleet {
    runtime: tokio::runtime::Runtime,
    store: Store,
}

impl Fleet {
    /// The store at `url`, or when it is empty the `[store] postgres` of
    /// the configuration at `config`.
    pub(crate) fn open(url: &str, config: Option<&Path>) -> Result<Fleet, Stop> {
        let loaded = match config.filter(|_| url.is_empty()) {
            Some(path) => Some((path, load(path)?)),
            None => None,
        };
        Fleet::open_loaded(url, loaded.as_ref().map(|(path, l)| (*path, l)))
    }

    /// [`Fleet::open`] with the configuration already loaded (`path`, as
    /// loaded).
    pub(crate) fn open_loaded(url: &str, config: Option<(&Path, &tollgate_config::Loaded)>) -> Result<Fleet, Stop> {
        let settings = if url.is_empty() {
            let (path, loaded) =
                config.ok_or_else(|| run_err(anyhow::anyhow!("--store without a URL needs --config")))?;
            let pg = loaded
                .store
                .as_ref()
                .ok_or_else(|| run_err(anyhow::anyhow!("{} has no [store] postgres", path.display())))?;
            tollgate_server::settings::store(pg)
        } else {
            tollgate_store::StoreSettings::new(url)
        };
        let store = Store::new(&settings).map_err(|e| Stop::Run(e.into()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")
            .map_err(run_err)?;
        Ok(Fleet { runtime, store })
    }

    /// What `ask` asks of the store, awaited.
    pub(crate) fn block_on<'s, F: Future>(&'s self, ask: impl FnOnce(&'s Store) -> F) -> F::Output {
        self.runtime.block_on(ask(&self.store))
    }

    /// The records matching `filter`, read as they are iterated.
    pub(crate) fn records(&self, filter: Filter) -> Result<Records<'_>, Stop> {
        let records = self.runtime.block_on(self.store.records(filter)).map_err(store_stop)?;
        Ok(Records {
            runtime: &self.runtime,
            records,
        })
    }

    /// The usage report of every replica's calls in `window`, summed by
    /// the store (`tollgate_store`'s `usage`): the numbers the files give.
    pub(crate) fn usage(
        &self,
        by: GroupBy,
        (since, until): (Option<SystemTime>, Option<SystemTime>),
        prices: &Prices,
    ) -> Result<UsageReport, Stop> {
        let question = UsageQuestion {
            by,
            since,
            until,
            step: None,
        };
        let (report, _) = self
            .runtime
            .block_on(self.store.usage(question, prices))
            .map_err(store_stop)?;
        Ok(report)
    }
}

/// The store's records as an iterator, for the renderer and the reports.
pub(crate) struct Records<'f> {
    runtime: &'f tokio::runtime::Runtime,
    records: StoredRecords,
}

impl Iterator for Records<'_> {
    type Item = Result<Entry, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.runtime.block_on(self.records.next())
    }
}

/// A store error as the exit status says it: a stored line that is not a
/// record is the trail's problem (1), anything else the command's (2).
pub(crate) fn store_stop(e: StoreError) -> Stop {
    match e {
        e @ StoreError::Malformed { .. } => Stop::Trail(e.into()),
        e => Stop::Run(e.into()),
    }
}

fn run_err(e: anyhow::Error) -> Stop {
    Stop::Run(e)
}

/// The configuration at `path` (its errors already printed when invalid).
pub(crate) fn load(path: &Path) -> Result<tollgate_config::Loaded, Stop> {
    crate::load(path).ok_or_else(|| run_err(anyhow::anyhow!("{} is not valid", path.display())))
}
