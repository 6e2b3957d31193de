//! `tollgate`: the command-line entry point.
//!
//! `serve` runs the gateway, `validate` checks a configuration file with the
//! same code path as `serve` without binding anything, `schema` prints the
//! configuration's JSON Schema, `policy` checks Cedar policies, `token mint`
//! issues development tokens, `catalog show|diff|approve` review and
//! approve upstream definitions, and `audit verify|query` and `usage` read
//! the audit trail offline.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod audit_cmd;
mod catalog_cmd;
mod catalog_store;
mod checkpoint_cmd;
mod fleet_cmd;
mod index_cmd;
mod oauth_cmd;
mod policy_cmd;
mod progress_bar;
mod render;
mod store_cmd;
mod table;
mod warnings;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use tollgate_config::{Loaded, ProcessEnvironment};
use tollgate_server::Gateway;
use tollgate_telemetry::LogFormat;

#[derive(Parser)]
#[command(
    name = "tollgate",
    version,
    about = "Tollgate: an enterprise gateway for MCP traffic"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway.
    Serve {
        /// The configuration file (TOML). Without it, the embedded demo
        /// configuration (examples/demo.toml) is used.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Log filter, `RUST_LOG` syntax.
        #[arg(long, env = "TOLLGATE_LOG", default_value = "info")]
        log: String,
        /// Log format.
        #[arg(long, value_enum, default_value = "text")]
        log_format: Format,
    },
    /// Check a configuration file; exits non-zero and lists every error.
    Validate {
        /// The configuration file (TOML).
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Print the JSON Schema of the configuration file.
    Schema,
    /// Validate and test Cedar policies.
    Policy {
        #[command(subcommand)]
        command: policy_cmd::PolicyCommand,
    },
    /// Review the upstreams' catalogs against catalog.lock, and approve.
    Catalog {
        #[command(subcommand)]
        command: catalog_cmd::CatalogCommand,
    },
    /// Verify and query the audit trail.
    Audit {
        #[command(subcommand)]
        command: audit_cmd::AuditCommand,
    },
    /// Spend from the audit trail: calls, errors, bytes, tokens, latency.
    ///
    /// Grouped by team, cost centre, subject, server, tool or trace.
    Usage(audit_cmd::UsageArgs),
    /// The authorization server's clients (list, disable, enable, delete).
    Clients {
        #[command(subcommand)]
        command: oauth_cmd::ClientsCommand,
    },
    /// Users' grants at the authorization server (list, revoke).
    Grants {
        #[command(subcommand)]
        command: oauth_cmd::GrantsCommand,
    },
    /// The fleet store's schema in PostgreSQL (`[store] postgres`).
    Store {
        #[command(subcommand)]
        command: store_cmd::StoreCommand,
    },
    /// Development tokens from the configured `[dev_issuer]`.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Print a shell completion script: `tollgate completions bash >
    /// /etc/bash_completion.d/tollgate`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Print a signed access token the configured gateway accepts.
    Mint(MintArgs),
}

#[derive(clap::Args)]
struct MintArgs {
    /// The configuration file; without it, the embedded demo configuration.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Subject (`sub`).
    #[arg(long)]
    sub: String,
    /// Team claim.
    #[arg(long)]
    team: Option<String>,
    /// Cost-centre claim (`cost_center`): what budgets and spend reports
    /// group by.
    #[arg(long = "cost-center")]
    cost_center: Option<String>,
    /// Space-separated scopes.
    #[arg(long, default_value = "")]
    scope: String,
    /// Lifetime, e.g. `1h`, `15m`.
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    ttl: std::time::Duration,
    /// Limit the audience to this server's or virtual server's route (default: every route
    /// that requires authentication).
    #[arg(long, conflicts_with = "console")]
    server: Option<String>,
    /// A token for the console's JSON API instead (audience: `[console] url`).
    #[arg(long)]
    console: bool,
    /// A `groups` claim value (repeatable): what console roles map from.
    #[arg(long = "group")]
    groups: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            config,
            log,
            log_format,
        } => {
            let format = match log_format {
                Format::Text => LogFormat::Text,
                Format::Json => LogFormat::Json,
            };
            tollgate_telemetry::init(&log, format);
            let loaded = match &config {
                Some(path) => load(path),
                None => load_demo(),
            };
            let Some(loaded) = loaded else { return ExitCode::from(2) };
            match serve(loaded, config.is_none()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("tollgate: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Validate { config } => match load(&config) {
            Some(loaded) => {
                for w in &loaded.warnings {
                    eprintln!("warning: {w}");
                }
                if let Some(w) = warnings::policy_warning(&loaded) {
                    eprintln!("warning: {w}");
                }
                println!("{}: ok ({} servers)", config.display(), loaded.config.servers.len());
                ExitCode::SUCCESS
            }
            None => ExitCode::from(2),
        },
        Command::Schema => {
            println!("{:#}", tollgate_config::schema());
            ExitCode::SUCCESS
        }
        Command::Policy { command } => policy_cmd::run(&command),
        Command::Catalog { command } => catalog_cmd::run(&command),
        Command::Audit { command } => audit_cmd::run(&command),
        Command::Usage(args) => audit_cmd::run_usage(&args),
        Command::Clients { command } => oauth_cmd::run_clients(&command),
        Command::Grants { command } => oauth_cmd::run_grants(&command),
        Command::Store { command } => store_cmd::run(&command),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "tollgate",
                &mut script,
            );
            match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Command::Token {
            command: TokenCommand::Mint(args),
        } => match mint(&args) {
            Ok(token) => {
                println!("{token}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tollgate: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}

/// Mint a development token for the routes of a configuration.
fn mint(args: &MintArgs) -> anyhow::Result<String> {
    let loaded = match &args.config {
        Some(path) => load(path),
        None => load_demo(),
    }
    .context("the configuration is not valid")?;
    let settings = loaded
        .dev_issuer
        .as_ref()
        .context("the development issuer is not enabled ([dev_issuer] enabled = true)")?;
    let pem = tollgate_config::read_or_create_file(&settings.key_file, tollgate_auth::DevIssuer::generate_pem)
        .map_err(anyhow::Error::msg)?;
    let dev = tollgate_auth::DevIssuer::from_pem(&settings.issuer, pem.expose())?;
    let config = &loaded.config;
    let wanted = |name: &str| args.server.as_deref().is_none_or(|n| n == name);
    let servers = config
        .servers
        .iter()
        .filter(|s| wanted(s.name.as_str()) && config.auth_required(s))
        .filter_map(|s| config.resource_url(s));
    let virtuals = config
        .virtual_servers
        .iter()
        .filter(|v| wanted(v.name.as_str()) && config.virtual_auth_required(v))
        .filter_map(|v| config.virtual_resource_url(v));
    let audience: Vec<String> = if args.console {
        vec![config.console_url()]
    } else {
        servers.chain(virtuals).collect()
    };
    anyhow::ensure!(
        !audience.is_empty(),
        "no route requires authentication (check --server)"
    );
    let scopes: Vec<String> = args.scope.split_whitespace().map(str::to_owned).collect();
    let mut claims = serde_json::Map::new();
    if let Some(team) = &args.team {
        claims.insert("team".into(), team.clone().into());
    }
    if let Some(cost_center) = &args.cost_center {
        claims.insert("cost_center".into(), cost_center.clone().into());
    }
    if !args.groups.is_empty() {
        claims.insert("groups".into(), args.groups.clone().into());
    }
    Ok(dev.mint_with(&args.sub, claims, &scopes, args.ttl, &audience)?)
}

/// The demo configuration compiled into the binary.
const DEMO_CONFIG: &str = include_str!("../../../examples/demo.toml");

fn load_demo() -> Option<Loaded> {
    // It reads as if from examples/demo.toml in the working directory (the
    // repository root): its relative paths (the policies, the development
    // key, the audit trail) resolve as for `--config examples/demo.toml`.
    tracing::info!("no --config given: using the embedded demo configuration (examples/demo.toml)");
    report(tollgate_config::load_str(
        Path::new("examples/demo.toml"),
        DEMO_CONFIG,
        &ProcessEnvironment,
    ))
}

/// Load and validate; print every error to stderr.
fn load(path: &Path) -> Option<Loaded> {
    report(tollgate_config::load(path, &ProcessEnvironment))
}

fn report(result: Result<Loaded, tollgate_config::ConfigErrors>) -> Option<Loaded> {
    match result {
        Ok(loaded) => Some(loaded),
        Err(errors) => {
            for e in &errors.0 {
                eprintln!("error: {e}");
            }
            None
        }
    }
}

fn serve(loaded: Loaded, embedded: bool) -> anyhow::Result<()> {
    // The control runtime: admin listener, key refresh, reloads. The public
    // listener is served by the gateway's own worker threads
    // (`[runtime] worker_threads`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listen = loaded.config.listen.clone();
        let gateway = Gateway::new(&loaded, prometheus::Registry::new())?;
        let gateway = if embedded { gateway.without_config_reload() } else { gateway };
        // A schema this binary does not know refuses the start; a store
        // that cannot be reached does not (shipping waits for it).
        gateway.prepare_store().await?;
        let public = bind(listen.public, "listen.public").await?;
        let admin = bind(listen.admin, "listen.admin").await?;
        tracing::info!(public = %listen.public, admin = %listen.admin, config = %loaded.path.display(), "tollgate serving");
        for s in &loaded.config.servers {
            let scheme = if listen.tls.is_some() { "https" } else { "http" };
            tracing::info!(route = %format!("{scheme}://{}/mcp/{}", listen.public, s.name.as_str()), upstream = %tollgate_config::redact_url(&s.url), "route");
        }
        gateway.run(public, admin, shutdown_signal()).await;
        Ok(())
    })
}

async fn bind(addr: SocketAddr, key: &str) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} ({key})"))
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
