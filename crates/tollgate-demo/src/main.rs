//! `tollgate-demo` binary: parses flags, installs a stderr logger, binds the
//! listener and runs [`tollgate_demo::serve_with`] (or, with `--notes`,
//! [`tollgate_demo::serve_notes`]) until Ctrl-C or SIGTERM.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use tokio::net::TcpListener;
use tollgate_demo::{DemoConfig, MCP_PATH, NotesConfig, serve_notes, serve_with};
use tracing_subscriber::EnvFilter;

/// Demo upstream MCP server for the Tollgate gateway.
#[derive(Debug, Parser)]
#[command(
    name = "tollgate-demo",
    version,
    about = "Demo upstream MCP server for the Tollgate gateway",
    long_about = "Demo upstream MCP server for the Tollgate gateway.\n\n\
        `make run` starts it behind Tollgate so the gateway has something to route, \
        authorize and meter. It serves MCP Streamable HTTP at /mcp and speaks both \
        protocol eras on that one endpoint: legacy 2025-03-26/2025-06-18/2025-11-25 \
        (initialize, Mcp-Session-Id sessions, GET SSE stream, DELETE) and stateless \
        2026-07-28 (MCP-Protocol-Version, Mcp-Method and Mcp-Name headers, \
        server/discover).\n\n\
        Tools: echo, add, countdown (progress notifications; a task when the request declares the tasks extension), delete_item (destructive; \
        deletes nothing), get_weather (open world; canned data). Resources: \
        demo://readme, demo://secrets/api-keys. Prompt: greeting.\n\n\
        With --notes it serves \"Notes\" instead: a SaaS acting for each user with \
        their own OAuth grant, its MCP endpoint at /mcp protected by its own \
        authorization server on the same port (RFC 9728 and RFC 8414 metadata, \
        /authorize with PKCE S256, /token), for one pre-registered client. Tools: \
        whoami, add_note, list_notes. Everything is kept in memory.\n\n\
        Logs go to stderr; set the level with --log or RUST_LOG."
)]
struct Cli {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3001")]
    listen: String,

    /// Also accept this Host header value (repeatable); localhost, 127.0.0.1
    /// and ::1 are always accepted, on any port.
    #[arg(long = "allow-host", value_name = "HOST[:PORT]")]
    allow_hosts: Vec<String>,

    /// Accept any Host header (turns off DNS-rebinding protection).
    #[arg(long)]
    allow_any_host: bool,

    /// Accept this browser Origin (repeatable), e.g. 'http://localhost:*';
    /// once one is given, requests with any other Origin get 403.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,

    /// Always answer 2026-07-28 requests with SSE, even simple ones.
    #[arg(long)]
    always_sse: bool,

    #[command(flatten)]
    notes: NotesArgs,

    /// Log filter, in tracing-subscriber EnvFilter syntax. The default hides
    /// rmcp's per-request service chatter; use 'debug' to see everything.
    #[arg(
        long,
        env = "RUST_LOG",
        value_name = "FILTER",
        default_value = "info,rmcp::service=warn"
    )]
    log: String,
}

/// The Notes server's flags.
#[derive(Debug, clap::Args)]
struct NotesArgs {
    /// Serve Notes, the OAuth-protected demo SaaS, instead of the demo server.
    #[arg(long)]
    notes: bool,

    /// Notes: the registered client's id.
    #[arg(long, value_name = "ID", requires = "notes", required_if_eq("notes", "true"))]
    client_id: Option<String>,

    /// Notes: a file holding the client's secret (trailing whitespace ignored).
    #[arg(long, value_name = "FILE", requires = "notes", required_if_eq("notes", "true"))]
    client_secret_file: Option<PathBuf>,

    /// Notes: the client's redirect URI, matched exactly.
    #[arg(long, value_name = "URL", requires = "notes", required_if_eq("notes", "true"))]
    redirect_uri: Option<String>,

    /// Notes: a user offered on the sign-in page (repeatable).
    #[arg(long = "user", value_name = "NAME", requires = "notes", default_values_t = ["alice".to_owned(), "victor".to_owned()])]
    users: Vec<String>,

    /// Notes: lifetime of access tokens, in seconds.
    #[arg(long, value_name = "SECONDS", requires = "notes", default_value_t = 3600)]
    token_ttl: u64,

    /// Notes: the URL clients reach it at (its OAuth issuer; the MCP URL is
    /// this plus /mcp). Default: http://ADDR of --listen.
    #[arg(long, value_name = "URL", requires = "notes")]
    public_url: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The demo is a standalone tool outside the gateway, so it installs its
    // own subscriber rather than going through tollgate-telemetry.
    let filter = EnvFilter::try_new(&cli.log).context("invalid --log filter")?;
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .init();

    let listener = TcpListener::bind(&cli.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cli.listen))?;
    let addr = listener.local_addr().context("no local address")?;
    let mut config = DemoConfig::default();
    config.extra_allowed_hosts = cli.allow_hosts;
    config.allow_any_host = cli.allow_any_host;
    config.allowed_origins = cli.allow_origins;
    config.json_response = !cli.always_sse;
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        config.extra_allowed_hosts.push(addr.ip().to_string());
    }
    if addr.ip().is_unspecified() && !cli.allow_any_host {
        tracing::warn!(
            "listening on all interfaces: requests are still only accepted with a \
            loopback Host header unless --allow-host or --allow-any-host is given"
        );
    }

    if cli.notes.notes {
        let notes = notes_config(cli.notes, config)?;
        let url = notes.public_url.clone().unwrap_or_else(|| format!("http://{addr}"));
        println!("tollgate-demo (Notes) listening on {url}{MCP_PATH}");
        serve_notes(listener, notes, shutdown_signal()).await?;
    } else {
        println!("tollgate-demo listening on http://{addr}{MCP_PATH}");
        serve_with(listener, config, shutdown_signal()).await?;
    }
    tracing::info!("stopped");
    Ok(())
}

/// The Notes settings from its flags, over the MCP side's `http`.
fn notes_config(args: NotesArgs, http: DemoConfig) -> anyhow::Result<NotesConfig> {
    let (Some(client_id), Some(secret_file), Some(redirect_uri)) =
        (args.client_id, args.client_secret_file, args.redirect_uri)
    else {
        anyhow::bail!("--notes needs --client-id, --client-secret-file and --redirect-uri");
    };
    let mut secret = std::fs::read(&secret_file).with_context(|| format!("cannot read {}", secret_file.display()))?;
    while secret.last().is_some_and(u8::is_ascii_whitespace) {
        secret.pop();
    }
    anyhow::ensure!(!secret.is_empty(), "{} is empty", secret_file.display());
    let mut config = NotesConfig::new(client_id, secret, redirect_uri);
    config.http = http;
    config.users = args.users;
    config.token_ttl = Duration::from_secs(args.token_ttl);
    config.public_url = args.public_url;
    Ok(config)
}

/// Completes on Ctrl-C or, on Unix, SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("received Ctrl-C"),
        () = terminate => tracing::info!("received SIGTERM"),
    }
}
