//! Logging setup for Tollgate: the only crate that installs global
//! subscribers. The binary calls [`init`] once at start; libraries only emit
//! `tracing` events and spans.

use tracing_subscriber::EnvFilter;

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
/// syntax. Calling it twice is harmless: the second call does nothing.
pub fn init(filter: &str, format: LogFormat) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
