//! Logging and tracing setup for Tollgate: the only crate that installs
//! global subscribers or OpenTelemetry globals. Libraries only emit
//! `tracing` events and spans.
//!
//! It owns two things:
//!
//! - **Logs**: the binary calls [`init`] once at start.
//! - **Traces** (OpenTelemetry, `[tracing]`, off by default): the binary
//!   calls [`init_tracing`] once at start and keeps the [`TracingGuard`],
//!   which flushes the last spans when dropped; it hands
//!   [`TracingGuard::spans`] (or [`Spans::disabled`]) to the server.
//!
//! On the request path the server's MCP handler (`tollgate-server`) starts
//! one [`ServerSpan`] per request once it knows the call (after the body
//! scan, back-dated to the request's arrival), whose parent is the caller's
//! `params._meta.traceparent`, else its HTTP `traceparent` header; the
//! forwarder starts one [`ClientSpan`] per upstream call and sends its
//! [`Traceparent`] upstream. The audit record takes
//! [`ServerSpan::trace_id`]; when the call ends, [`RequestSpans::finish`]
//! records the answer from the call summary. With tracing off all of this costs a
//! `traceparent` parse and no allocation. `docs/observability.md` lists the
//! spans and their attributes.

mod context;
mod counted;
mod export;
mod finish;
mod setup;
mod span;

use tracing_subscriber::EnvFilter;

pub use context::{TraceId, Traceparent};
pub use counted::{SpanCounts, SpanStats};
pub use finish::RequestSpans;
pub use setup::{TracingError, TracingGuard, TracingSettings, init_tracing};
pub use span::{ClientSpan, McpCall, ServerSpan, Spans};

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Install the global `tracing` subscriber writing to stderr. The filter
/// comes from `filter` (e.g. `info,tollgate_server=debug`); `RUST_LOG`
/// syntax. Text lines carry ANSI colours only when stderr is a terminal,
/// so a log file or a log shipper gets plain text. Calling it twice is
/// harmless: the second call does nothing.
pub fn init(filter: &str, format: LogFormat) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
