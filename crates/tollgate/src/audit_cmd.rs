//! `tollgate audit verify|query|index` and `tollgate usage`: the offline
//! tools over an audit trail's files, or with `--store` over every
//! replica's records in the fleet store (`fleet_cmd`; `docs/audit.md`).
//! Reading and verifying live in `tollgate-audit`, sums in
//! `tollgate-meter`, the text in `render`; this module owns the arguments and the exit codes: 0 when the command ran (and the trail verified), 1 when the
//! trail is not intact or a line is not an audit record, 2 when the command
//! could not run (a path that cannot be read, no audit files; clap also
//! exits 2 on bad arguments). A reader that closes the output early
//! (`| head`) ends the command quietly.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Subcommand, ValueEnum};
use tollgate_audit::{Filter, Outcome, QueryError, VerifyError, VerifyOptions};
use tollgate_meter::GroupBy;

use crate::checkpoint_cmd::{CheckpointArgs, KeyArgs};
use crate::fleet_cmd::{Fleet, StoreSource, store_stop};
use crate::index_cmd::{IndexArgs, IndexChoice};
use crate::render::{self, QueryFormat, RenderError, Selection};

/// Audit trail tooling.
#[derive(Subcommand)]
pub(crate) enum AuditCommand {
    /// Check that no record was edited, deleted, reordered or inserted.
    /// Prints what was verified; on failure names the first bad record as
    /// `FILE:LINE: problem` and exits 1.
    Verify(VerifyArgs),
    /// Print the call records that match every filter given.
    Query(Box<QueryArgs>),
    /// Bring the audit index of a trail up to date (create it when
    /// missing): `audit query` and `usage` then answer from it.
    Index(IndexArgs),
    /// Make a replica's checkpoint signing key (`[audit]
    /// checkpoint_key`), or print an existing key's public half.
    CheckpointKey(KeyArgs),
}

/// Arguments of `tollgate audit verify`.
#[derive(clap::Args)]
pub(crate) struct VerifyArgs {
    /// Audit files, or directories of `*.jsonl` files (read in file-name
    /// order, which is chain order).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The trail is closed (archived): its last file must end with a seal,
    /// so records cut from the end are detected too.
    #[arg(long)]
    sealed: bool,
    #[command(flatten)]
    checkpoint: CheckpointArgs,
}

/// Arguments of `tollgate audit query`.
#[derive(clap::Args)]
pub(crate) struct QueryArgs {
    /// Audit files, or directories of `*.jsonl` files.
    #[arg(required_unless_present = "store", conflicts_with = "store", value_name = "PATH")]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    fleet: StoreSource,
    /// The gateway configuration whose `[store] postgres` `--store`
    /// reads, when given without a URL.
    #[arg(long, value_name = "FILE", requires = "store")]
    config: Option<PathBuf>,
    #[command(flatten)]
    window: Window,
    /// The principal's subject.
    #[arg(long)]
    subject: Option<String>,
    /// The principal's team.
    #[arg(long)]
    team: Option<String>,
    /// The route (`[[servers]] name`).
    #[arg(long, value_name = "NAME")]
    server: Option<String>,
    /// The tool or prompt name, or resource URI.
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// The decision: allow, deny, observe_deny or not_evaluated.
    #[arg(long, value_parser = parse_decision)]
    decision: Option<Outcome>,
    /// The W3C trace id (32 hex digits).
    #[arg(long, value_name = "ID")]
    trace: Option<String>,
    /// The HTTP status answered (e.g. 403, 502).
    #[arg(long, value_name = "CODE")]
    status: Option<u16>,
    /// `table` for people, `csv` for spreadsheets, `json` for the
    /// matching lines exactly as stored.
    #[arg(long, value_enum, default_value = "table")]
    format: QueryOutput,
    /// At most this many records (with `--newest-first`, the newest).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// The newest record first (the trail's own order is oldest first).
    #[arg(long)]
    newest_first: bool,
    #[command(flatten)]
    source: IndexChoice,
}

/// Arguments of `tollgate usage`.
#[derive(clap::Args)]
pub(crate) struct UsageArgs {
    /// Audit files, or directories of `*.jsonl` files.
    #[arg(required_unless_present = "store", conflicts_with = "store", value_name = "PATH")]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    fleet: StoreSource,
    /// Group by team, cost_center, subject, server, tool or trace.
    #[arg(long, value_name = "GROUP", required_unless_present = "budgets")]
    by: Option<GroupBy>,
    /// Instead: each `[[limits.budgets]]` budget of `--config` this period,
    /// its spend, what is left and the projected spend at the period's end.
    #[arg(long, requires = "config", conflicts_with = "by")]
    budgets: bool,
    /// The gateway configuration whose budgets `--budgets` reports; with
    /// `--by`, its `[[limits.prices]]` add a cost column; `--store`
    /// without a URL reads its `[store] postgres`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    window: Window,
    /// `table` (with a TOTAL line), `csv` (no total) or `json` (rows and
    /// total; durations in microseconds).
    #[arg(long, value_enum, default_value = "table")]
    format: UsageOutput,
    #[command(flatten)]
    source: IndexChoice,
}

/// The time window of a query or report.
#[derive(clap::Args)]
struct Window {
    /// Records at or after this time: `2026-09-01T12:00:00Z`, `2026-09-01`
    /// (UTC) or a span back from now (`7d`, `24h`).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    since: Option<SystemTime>,
    /// Records before this time (same forms as `--since`).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    until: Option<SystemTime>,
}

#[derive(Clone, Copy, ValueEnum)]
enum QueryOutput {
    Table,
    Csv,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum UsageOutput {
    Table,
    Csv,
    Json,
}

fn parse_time(text: &str) -> Result<SystemTime, String> {
    tollgate_audit::parse_time(text, SystemTime::now())
}

fn parse_decision(text: &str) -> Result<Outcome, String> {
    Outcome::parse(text).ok_or_else(|| format!("{text:?}: use allow, deny, observe_deny or not_evaluated"))
}

/// Why a command stopped before its end.
pub(crate) enum Stop {
    /// The reader closed the output (`| head`): not an error.
    OutputClosed,
    /// The trail is not intact, or a line is not an audit record (exit 1).
    Trail(anyhow::Error),
    /// The command could not run (exit 2).
    Run(anyhow::Error),
}

/// Run an audit command.
pub(crate) fn run(command: &AuditCommand) -> ExitCode {
    exit(match command {
        AuditCommand::Verify(args) => verify(args),
        AuditCommand::Query(args) => query(args),
        AuditCommand::Index(args) => crate::index_cmd::index(args).map_err(Stop::Run).and_then(|t| print(&t)),
        AuditCommand::CheckpointKey(args) => crate::checkpoint_cmd::key(args).and_then(|t| print(&t)),
    })
}

/// Run `tollgate usage`.
pub(crate) fn run_usage(args: &UsageArgs) -> ExitCode {
    exit(usage(args))
}

fn exit(result: Result<(), Stop>) -> ExitCode {
    match result {
        Ok(()) | Err(Stop::OutputClosed) => ExitCode::SUCCESS,
        Err(Stop::Trail(e)) => {
            eprintln!("tollgate: {e:#}");
            ExitCode::FAILURE
        }
        Err(Stop::Run(e)) => {
            eprintln!("tollgate: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn verify(args: &VerifyArgs) -> Result<(), Stop> {
    let options = VerifyOptions {
        require_sealed: args.sealed,
    };
    let verified = {
        let mut bar = crate::progress_bar::TrailBar::new("verifying");
        tollgate_audit::verify_with_progress(&args.paths, options, &mut bar.hook())
    };
    match verified {
        Ok(report) => {
            print(&format!("{report}\n"))?;
            match crate::checkpoint_cmd::verify(&args.paths, &args.checkpoint)? {
                Some(lines) => print(&lines),
                None => Ok(()),
            }
        }
        Err(VerifyError::Tampered(t)) => Err(Stop::Trail(anyhow::anyhow!("the trail is not intact: {t}"))),
        Err(VerifyError::NoFiles) => Err(Stop::Run(anyhow::anyhow!(
            "no audit files (*.jsonl) in {}",
            list(&args.paths)
        ))),
        Err(VerifyError::Io { path, source }) => Err(Stop::Run(read_error(&path, source))),
        Err(e) => Err(Stop::Run(e.into())),
    }
}

fn query(args: &QueryArgs) -> Result<(), Stop> {
    let filter = Filter {
        since: args.window.since,
        until: args.window.until,
        subject: args.subject.clone(),
        team: args.team.clone(),
        server: args.server.clone(),
        tool: args.tool.clone(),
        decision: args.decision,
        status: args.status,
        trace: args.trace.clone(),
    };
    let format = match args.format {
        QueryOutput::Table => QueryFormat::Table,
        QueryOutput::Csv => QueryFormat::Csv,
        QueryOutput::Json => QueryFormat::Json,
    };
    let format = (
        format,
        Selection {
            limit: args.limit,
            newest_first: args.newest_first,
        },
    );
    if let Some(url) = &args.fleet.store {
        let fleet = Fleet::open(url, args.config.as_deref())?;
        return render_query(fleet.records(filter)?, format, store_stop);
    }
    match args.source.open(&args.paths).map_err(Stop::Run)? {
        // The index reads newest first from its end, so the newest few of
        // a long trail cost no more than the oldest few.
        Some(index) if args.newest_first => render_query(
            index.query_newest(filter).map_err(|e| Stop::Run(e.into()))?,
            (
                format.0,
                Selection {
                    newest_first: false,
                    ..format.1
                },
            ),
            query_stop,
        ),
        Some(index) => render_query(
            index.query(filter).map_err(|e| Stop::Run(e.into()))?,
            format,
            query_stop,
        ),
        None => render_query(
            tollgate_audit::query(&args.paths, filter).map_err(query_stop)?,
            format,
            query_stop,
        ),
    }
}

/// Print `records` to standard output; `stop` says what a read error
/// means.
fn render_query<E>(
    records: impl Iterator<Item = Result<tollgate_audit::Entry, E>>,
    (format, selection): (QueryFormat, Selection),
    stop: fn(E) -> Stop,
) -> Result<(), Stop> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    match render::query(records, format, selection, &mut out) {
        Ok(_) => out.flush().map_err(output_stop),
        Err(RenderError::Read(e)) => Err(stop(e)),
        Err(RenderError::Write(e)) => Err(output_stop(e)),
    }
}

fn usage(args: &UsageArgs) -> Result<(), Stop> {
    let (Some(by), false) = (args.by, args.budgets) else {
        return budget_usage(args);
    };
    let loaded = match args.config.as_deref() {
        Some(path) => Some((path, load_config(path)?)),
        None => None,
    };
    let prices = loaded.as_ref().map_or_else(tollgate_limit::Prices::default, |(_, l)| {
        tollgate_server::settings::prices(&l.config.limits)
    });
    let window = (args.window.since, args.window.until);
    let report = if let Some(url) = &args.fleet.store {
        Fleet::open_loaded(url, loaded.as_ref().map(|(path, l)| (*path, l)))?.usage(by, window, &prices)?
    } else {
        match args.source.open(&args.paths).map_err(Stop::Run)? {
            Some(index) => {
                tollgate_report::spend::report_indexed(&index, by, window, &prices).map_err(|e| Stop::Run(e.into()))?
            }
            None => tollgate_report::spend::report(&args.paths, by, window, &prices).map_err(query_stop)?,
        }
    };
    let text = match args.format {
        UsageOutput::Table => render::usage_table(&report),
        UsageOutput::Csv => render::usage_csv(&report).map_err(|e| Stop::Run(e.into()))?,
        UsageOutput::Json => render::usage_json(&report),
    };
    print(&text)
}

/// `tollgate usage --budgets --config FILE`.
fn budget_usage(args: &UsageArgs) -> Result<(), Stop> {
    let path = args
        .config
        .as_deref()
        .ok_or_else(|| Stop::Run(anyhow::anyhow!("--budgets needs --config")))?;
    let loaded = load_config(path)?;
    let settings = tollgate_server::settings::report(&loaded.config);
    let now = args.window.until.unwrap_or_else(SystemTime::now);
    if let Some(url) = &args.fleet.store {
        let fleet = Fleet::open_loaded(url, Some((path, &loaded)))?;
        let rows = match tollgate_report::budgets::window(&settings, now) {
            Some(filter) => {
                tollgate_report::budgets::report_entries(fleet.records(filter)?, &settings, now).map_err(store_stop)?
            }
            None => Vec::new(),
        };
        return print_budgets(&rows, args.format);
    }
    let rows = match args.source.open(&args.paths).map_err(Stop::Run)? {
        Some(index) => {
            tollgate_report::budgets::report_indexed(&index, &settings, now).map_err(|e| Stop::Run(e.into()))?
        }
        None => tollgate_report::budgets::report(&args.paths, &settings, now).map_err(query_stop)?,
    };
    print_budgets(&rows, args.format)
}

fn print_budgets(rows: &[tollgate_report::BudgetRow], format: UsageOutput) -> Result<(), Stop> {
    let text = match format {
        UsageOutput::Table => tollgate_report::budgets::table(rows),
        UsageOutput::Csv => tollgate_report::budgets::csv(rows).map_err(|e| Stop::Run(e.into()))?,
        UsageOutput::Json => tollgate_report::budgets::json(rows),
    };
    print(&text)
}

/// The configuration at `path`, validated as `serve` would.
fn load_config(path: &Path) -> Result<tollgate_config::Loaded, Stop> {
    tollgate_config::load(path, &tollgate_config::ProcessEnvironment).map_err(|e| Stop::Run(anyhow::anyhow!("{e}")))
}

/// Classify a read or parse error of a query or report.
fn query_stop(e: QueryError) -> Stop {
    match e {
        QueryError::Malformed { .. } => Stop::Trail(e.into()),
        QueryError::Io { path, source } => Stop::Run(read_error(&path, source)),
        e => Stop::Run(e.into()),
    }
}

/// The library's I/O errors name the path in their message and also chain
/// the cause: keep the cause once.
fn read_error(path: &Path, source: io::Error) -> anyhow::Error {
    anyhow::Error::new(source).context(format!("cannot read {}", path.display()))
}

fn output_stop(e: io::Error) -> Stop {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Stop::OutputClosed
    } else {
        Stop::Run(anyhow::Error::new(e).context("cannot write to standard output"))
    }
}

/// Write `text` to standard output (`print!` would panic on a closed pipe).
/// A missing final newline is added.
fn print(text: &str) -> Result<(), Stop> {
    let mut out = io::stdout().lock();
    let newline: &[u8] = if text.is_empty() || text.ends_with('\n') {
        b""
    } else {
        b"\n"
    };
    out.write_all(text.as_bytes())
        .and_then(|()| out.write_all(newline))
        .and_then(|()| out.flush())
        .map_err(output_stop)
}

fn list(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    shown.join(", ")
}
