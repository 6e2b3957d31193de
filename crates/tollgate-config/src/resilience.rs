//! Upstream resilience settings: `[[servers]] resilience`.
//!
//! A concurrency cap (bulkhead) on the calls waiting for one upstream, a
//! circuit breaker that stops calling an upstream that keeps failing, and
//! retries of connections that never reached it. The server applies them
//! around the `forward` phase; this module only describes them.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

/// `[[servers]] resilience`.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Resilience {
    /// Calls sent to the upstream and awaiting its answer's head at once;
    /// more are refused with 503 at once. 0: no cap.
    pub max_concurrent: usize,
    /// New connection attempts after one was refused or failed before any
    /// byte of the call was sent (never after the upstream may have seen it).
    pub connect_retries: u32,
    /// The circuit breaker.
    pub breaker: Breaker,
}

impl Default for Resilience {
    fn default() -> Resilience {
        Resilience {
            max_concurrent: 0,
            connect_retries: 1,
            breaker: Breaker::default(),
        }
    }
}

/// `[[servers]] resilience.breaker`: when calls stop going to a failing
/// upstream, and how they start again.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Breaker {
    /// Whether the breaker is on.
    pub enabled: bool,
    /// Opens after this many failures in a row.
    pub consecutive_failures: u32,
    /// Or when this share of the calls in `window` failed…
    pub error_rate: f64,
    /// …and there were at least this many.
    pub min_calls: u32,
    /// The window the error rate is counted over.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub window: Duration,
    /// How long it stays open before letting a probe through.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub open_for: Duration,
    /// Calls let through at once while half open; their success closes
    /// it, a failure opens it again.
    pub half_open_probes: u32,
}

impl Default for Breaker {
    fn default() -> Breaker {
        Breaker {
            enabled: true,
            consecutive_failures: 5,
            error_rate: 0.5,
            min_calls: 20,
            window: Duration::from_secs(30),
            open_for: Duration::from_secs(10),
            half_open_probes: 1,
        }
    }
}
