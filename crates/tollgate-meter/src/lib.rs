//! Tollgate's metering: what a call cost and how it went, in numbers.
//!
//! Where it sits (see `DESIGN.md`, "Metering and spend", request path steps
//! 12 and 13):
//!
//! - **while the response streams** (step 12): the server counts the body
//!   with a [`ByteMeter`] and turns the count into estimated model tokens
//!   with the route's [`TokenEstimator`]; both end up in the call's
//!   [`tollgate_core::CallSummary`].
//! - **when the call ends** (step 13): [`CallMetrics`] is one of the
//!   [`tollgate_core::CallObserver`]s the summary is handed to; it updates
//!   the Prometheus call metrics (operation duration, time to first byte,
//!   bytes, policy denials, hidden list entries, upstream failures) on an
//!   injected registry. It knows neither the audit writer nor the span.
//! - **offline**: [`Usage`] sums calls described as [`UsageSample`]s (the
//!   binary reads them from the audit trail) into a [`UsageReport`] by
//!   team, cost centre, subject, server, tool or trace; the binary renders
//!   it.
//!
//! No HTTP, no I/O, no global registry; errors implement
//! [`tollgate_core::Classify`].

mod calls;
mod error;
mod percentile;
mod spend;
mod usage;

pub use calls::{BUCKETS, CallMetrics, MAX_TEAMS};
pub use error::MeterError;
pub use percentile::{EXACT_DURATIONS, duration_bucket};
pub use spend::{ByteMeter, DEFAULT_BYTES_PER_TOKEN, TokenEstimator, is_catalog};
pub use usage::{GroupBy, NONE_KEY, Usage, UsageReport, UsageRow, UsageSample, UsageSums, usage};

/// The result type of this crate.
pub type Result<T, E = MeterError> = std::result::Result<T, E>;
