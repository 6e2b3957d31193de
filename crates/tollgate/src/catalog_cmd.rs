//! `tollgate catalog show|diff|approve|export|import`: review what the
//! upstreams list against the approvals in force, and approve it.
//!
//! The approvals in force are `catalog.lock`'s and, with a fleet store that
//! holds approvals (`catalog_store`), the store's. `diff` and `approve`
//! sync the live catalogs the way the gateway does (its own upstream
//! credentials); `approve` writes a row to the store when there is one,
//! else the lock file, and a running gateway puts either in force without
//! a restart. `export` and `import` move approvals between the store and
//! a lock file. For a virtual server they
//! work on its renamed and re-described definitions as it exposes them
//! (built from its members' live catalogs), approved under its own name.
//! Exit codes: 0 success (for `diff`: no difference), 1 a difference, 2 an
//! error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use tollgate_catalog::{CheckContext, Definition, Kind, Lock, Snapshot};
use tollgate_config::Loaded;

use crate::catalog_store::{self, StoreChoice, TransferArgs};

/// Catalog governance.
#[derive(Subcommand)]
pub(crate) enum CatalogCommand {
    /// List the approvals of the lock.
    Show {
        /// The configuration file (its `[catalog] lock`).
        #[arg(long, short)]
        config: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[command(flatten)]
        source: StoreChoice,
    },
    /// Fetch the live catalogs and show what differs from the lock:
    /// new, changed (with a word diff of descriptions and a structural
    /// diff of schemas) and removed definitions, with poisoning warnings.
    /// Exit 0 when nothing differs, 1 when something does, 2 on error.
    Diff {
        /// The configuration file.
        #[arg(long, short)]
        config: PathBuf,
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[command(flatten)]
        source: StoreChoice,
    },
    /// Approve live definitions of one server (for a virtual server: its
    /// renamed and re-described definitions, as it exposes them): as rows
    /// of the fleet store when there is one, else in the lock file.
    Approve(ApproveArgs),
    /// Print the fleet store's approvals in force as a lock file
    /// (`tollgate catalog export --config FILE > catalog.lock`).
    Export(TransferArgs),
    /// Load a lock file's approvals into the fleet store as rows; an
    /// approval the store holds already is not added again, and one older
    /// than the store's approval of the same definition is kept but not in
    /// force.
    Import {
        /// The lock file.
        file: PathBuf,
        #[command(flatten)]
        store: TransferArgs,
    },
}

/// What `approve` approves.
#[derive(Args)]
pub(crate) struct ApproveArgs {
    /// The configuration file.
    #[arg(long, short)]
    config: PathBuf,
    /// The server whose definitions are approved, or a virtual server whose
    /// renamed and re-described definitions are.
    #[arg(long)]
    server: String,
    /// A tool, by name.
    #[arg(long, group = "what")]
    tool: Option<String>,
    /// A prompt, by name.
    #[arg(long, group = "what")]
    prompt: Option<String>,
    /// A resource, by URI (or a resource template, by its template).
    #[arg(long, group = "what")]
    resource: Option<String>,
    /// Everything the server lists (approvals of definitions it no longer
    /// lists are removed).
    #[arg(long, group = "what")]
    all: bool,
    /// Who approves (recorded in the lock and in every audit record of a
    /// call to the definition).
    #[arg(long)]
    by: String,
    /// Why, or a change ticket.
    #[arg(long)]
    note: Option<String>,
    #[command(flatten)]
    source: StoreChoice,
}

/// Output formats.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

/// Run a catalog command.
pub(crate) fn run(command: &CatalogCommand) -> ExitCode {
    let outcome = match command {
        CatalogCommand::Show { config, format, source } => show(config, *format, source),
        CatalogCommand::Diff {
            config,
            server,
            format,
            source,
        } => diff(config, server.as_deref(), *format, source),
        CatalogCommand::Approve(args) => approve(args),
        CatalogCommand::Export(args) => catalog_store::export(args),
        CatalogCommand::Import { file, store } => catalog_store::import(file, store),
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("tollgate: {e:#}");
        ExitCode::from(2)
    })
}

pub(crate) fn load(config: &Path) -> anyhow::Result<Loaded> {
    tollgate_config::load(config, &tollgate_config::ProcessEnvironment).map_err(|errors| {
        let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("invalid configuration:\n{}", lines.join("\n"))
    })
}

fn show(config: &Path, format: Format, source: &StoreChoice) -> anyhow::Result<ExitCode> {
    let loaded = load(config)?;
    let (path, lock, fleet) = catalog_store::in_force(&loaded, source)?;
    match format {
        Format::Json => {
            let rows: Vec<serde_json::Value> = lock.iter().map(approval_json).collect();
            println!("{}", serde_json::to_string_pretty(&rows)?);
        }
        Format::Text => {
            let store = if fleet.is_some() { " and the fleet store" } else { "" };
            println!("{}{store} ({} approvals)", path.display(), lock.iter().count());
            print!("{}", approvals_table(&lock));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The approvals in aligned columns, one per line.
fn approvals_table(lock: &Lock) -> String {
    let header = [
        "server",
        "kind",
        "name",
        "revision",
        "approved_by",
        "approved_at",
        "note",
    ]
    .map(String::from);
    let rows: Vec<Vec<String>> = lock
        .iter()
        .map(|a| {
            vec![
                a.server.clone(),
                a.kind.as_str().to_owned(),
                a.key.clone(),
                short(a.revision.as_str()).to_owned(),
                a.approved_by.clone(),
                humantime::format_rfc3339_seconds(a.approved_at).to_string(),
                a.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    crate::table::aligned(&header, &rows, &[])
}

fn approval_json(a: &tollgate_catalog::Approval) -> serde_json::Value {
    serde_json::json!({
        "server": a.server, "kind": a.kind.as_str(), "name": a.key, "revision": a.revision.as_str(),
        "approved_by": a.approved_by, "approved_at": humantime::format_rfc3339_seconds(a.approved_at).to_string(),
        "note": a.note,
    })
}

/// The first 12 hex digits of a revision, for tables.
fn short(revision: &str) -> &str {
    revision.get(..19).unwrap_or(revision)
}

/// Sync the live catalogs of `only` (or every server).
fn live(loaded: &Loaded, only: Option<&str>) -> anyhow::Result<Vec<Snapshot>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let synced = runtime.block_on(tollgate_server::sync_configured(loaded, only))?;
    anyhow::ensure!(
        !synced.is_empty(),
        "no server {} in the configuration",
        only.unwrap_or("at all")
    );
    synced
        .into_iter()
        .map(|(name, result)| result.with_context(|| format!("server {name}: the catalog could not be fetched")))
        .collect()
}

/// The catalogs `diff` and `approve` work on: the live catalog of server
/// `only` (or of every server, and every virtual server's renamed and
/// re-described definitions); for a virtual server, those definitions from
/// its members' live catalogs.
fn catalogs(loaded: &Loaded, lock: &Lock, only: Option<&str>) -> anyhow::Result<Vec<Snapshot>> {
    let config = &loaded.config;
    if let Some(v) = only.and_then(|name| config.virtual_server(name)) {
        let mut members = Vec::with_capacity(v.members.len());
        for m in &v.members {
            members.extend(live(loaded, Some(&m.server))?);
        }
        return Ok(vec![tollgate_server::rewritten(config, v, lock, &members)]);
    }
    let mut snapshots = live(loaded, only)?;
    if only.is_none() {
        let virtuals: Vec<Snapshot> = config
            .virtual_servers
            .iter()
            .map(|v| tollgate_server::rewritten(config, v, lock, &snapshots))
            .collect();
        snapshots.extend(virtuals);
    }
    Ok(snapshots)
}

fn diff(config: &Path, server: Option<&str>, format: Format, source: &StoreChoice) -> anyhow::Result<ExitCode> {
    let loaded = load(config)?;
    let (_, lock, _) = catalog_store::in_force(&loaded, source)?;
    let servers: Vec<String> = loaded
        .config
        .servers
        .iter()
        .map(|s| s.name.as_str().to_owned())
        .collect();
    let snapshots = catalogs(&loaded, &lock, server)?;
    let diffs: Vec<tollgate_catalog::CatalogDiff> = snapshots
        .iter()
        .map(|snapshot| {
            let others: Vec<String> = servers.iter().filter(|s| **s != snapshot.server).cloned().collect();
            let other_tools = snapshots.iter().filter(|o| o.server != snapshot.server).flat_map(|o| {
                o.definitions
                    .values()
                    .filter(|d| d.kind == Kind::Tool)
                    .map(|d| d.key.clone())
            });
            let context = CheckContext::for_snapshot(snapshot, &others).with_other_tools(other_tools);
            tollgate_catalog::diff_with(&lock, snapshot, &context)
        })
        .collect();
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&diffs)?),
        Format::Text => {
            for d in &diffs {
                print!("{}", d.render_text());
            }
        }
    }
    Ok(if diffs.iter().all(tollgate_catalog::CatalogDiff::is_empty) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn approve(args: &ApproveArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(&args.config)?;
    let (path, in_force, fleet) = catalog_store::in_force(&loaded, &args.source)?;
    let snapshot = catalogs(&loaded, &in_force, Some(&args.server))?
        .pop()
        .context("the server's catalog could not be fetched")?;
    let chosen = chosen(args, &snapshot)?;
    if let Some(fleet) = fleet {
        fleet.approve_each(&args.server, &chosen, &args.by, args.note.as_deref())?;
        if args.all {
            println!(
                "approvals of definitions no longer listed stay in the store; they approve nothing while unlisted"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (_, mut lock) = catalog_store::lock_file(&loaded)?;
    if args.all {
        let gone: Vec<(Kind, String)> = lock
            .of_server(&args.server)
            .filter(|a| snapshot.get(a.kind, &a.key).is_none())
            .map(|a| (a.kind, a.key.clone()))
            .collect();
        for (kind, key) in gone {
            lock.remove(&args.server, kind, &key);
            println!("removed {kind} {key} (no longer listed)");
        }
    }
    let now = SystemTime::now();
    for definition in &chosen {
        lock.approve(&args.server, definition, &args.by, now, args.note.as_deref());
        println!(
            "approved {} {} at {}",
            definition.kind, definition.key, definition.revision
        );
    }
    tollgate_config::write_lock_text(&path, &lock.to_toml())?;
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The live definitions the arguments name.
fn chosen<'s>(args: &ApproveArgs, snapshot: &'s Snapshot) -> anyhow::Result<Vec<&'s Definition>> {
    if args.all {
        return Ok(snapshot.definitions.values().collect());
    }
    let (kinds, key): (&[Kind], &str) = match (&args.tool, &args.prompt, &args.resource) {
        (Some(t), _, _) => (&[Kind::Tool], t),
        (_, Some(p), _) => (&[Kind::Prompt], p),
        (_, _, Some(r)) => (&[Kind::Resource, Kind::ResourceTemplate], r),
        _ => anyhow::bail!("say what to approve: --tool, --prompt, --resource or --all"),
    };
    let found = kinds.iter().find_map(|k| snapshot.get(*k, key));
    let found = found.with_context(|| format!("server {} lists no {} {key}", args.server, kinds[0]))?;
    Ok(vec![found])
}
