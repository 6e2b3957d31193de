//! `tollgate-demo` binary: parses flags, installs a stderr logger, binds the
//! listener and runs [`tollgate_demo::serve_with`] until Ctrl-C or SIGTERM.

use std::io::IsTerminal as _;

use anyhow::Context as _;
use clap::Parser;
use tokio::net::TcpListener;
use tollgate_demo::{DemoConfig, MCP_PATH, serve_with};
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

    println!("tollgate-demo listening on http://{addr}{MCP_PATH}");
    serve_with(listener, config, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
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
