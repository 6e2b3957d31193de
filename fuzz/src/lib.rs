//! Fuzz targets for the parsers that read untrusted input.
//!
//! Each target takes arbitrary bytes, drives one parser the way the
//! request path does, and checks the invariants a caller relies on; a
//! broken invariant panics, which the fuzzer records as a crash. The same
//! functions run three ways: under AFL++ (`fuzz/afl`, `make fuzz`), in a
//! short run of each target in `make test`, and over every stored input
//! of `fuzz/corpus` and `fuzz/regressions` in this crate's tests, so an
//! input that once crashed stays fixed.

mod config;
mod jwt;
mod mcp;
mod session;
mod sse;

/// A fuzz target: a name (its corpus directory) and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by name.
pub const TARGETS: [Target; 6] = [
    ("headers", mcp::headers),
    ("body_scan", mcp::body_scan),
    ("session_id", session::session_id),
    ("jwt_header", jwt::jwt_header),
    ("sse", sse::sse),
    ("config", config::config),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The input split at the first `0` byte: a small selector and the rest.
/// Targets that need two values (a chunk size and a stream, a header
/// value and a body) read them this way so the fuzzer can vary both.
fn split_first(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (*first, rest),
        None => (0, data),
    }
}
