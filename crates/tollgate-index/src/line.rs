//! What the index reads of one trail line: only the fields it filters and
//! sums by, borrowed from the line where JSON allows.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

/// A call record's indexed fields.
#[derive(Debug, Deserialize)]
pub(crate) struct CallLine<'a> {
    #[serde(default, borrow)]
    pub(crate) time: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) phase: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) principal: Option<PrincipalLine<'a>>,
    #[serde(default, borrow)]
    pub(crate) route: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) virtual_server: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) exposed_name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) trace_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) decision: Option<DecisionLine<'a>>,
    #[serde(default)]
    pub(crate) status: Option<u16>,
    #[serde(default)]
    pub(crate) rpc_error: Option<i64>,
    /// The gateway's error class, when it rejected or failed the call.
    #[serde(default, borrow)]
    pub(crate) error: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) bytes_in: u64,
    #[serde(default)]
    pub(crate) bytes_out: u64,
    #[serde(default)]
    pub(crate) tokens: u64,
    #[serde(default)]
    pub(crate) catalog: bool,
    #[serde(default)]
    pub(crate) duration_us: u64,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PrincipalLine<'a> {
    #[serde(default, borrow)]
    pub(crate) subject: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) team: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) cost_center: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct DecisionLine<'a> {
    #[serde(borrow)]
    pub(crate) outcome: Cow<'a, str>,
}

/// The `error` column's flag for an HTTP error status or a JSON-RPC error.
pub(crate) const ERROR: i64 = 1;
/// The `error` column's flag for a call the gateway rejected or failed.
pub(crate) const REFUSED: i64 = 2;

/// Decisions as stored: the order of [`tollgate_audit::Outcome`].
const OUTCOMES: [&str; 4] = ["allow", "deny", "observe_deny", "not_evaluated"];

/// How the decision named `outcome` is stored: its place in [`OUTCOMES`]
/// (an unknown name as `not_evaluated`).
pub(crate) fn outcome_code(outcome: &str) -> i64 {
    OUTCOMES.iter().position(|o| *o == outcome).map_or(3, |i| i as i64)
}

impl CallLine<'_> {
    /// Microseconds since the epoch, from the RFC 3339 `time`.
    pub(crate) fn time_us(&self) -> Option<i64> {
        let t = humantime::parse_rfc3339_weak(self.time.as_deref()?).ok()?;
        micros(t)
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.phase.as_deref().is_none_or(|p| p == "complete")
    }

    pub(crate) fn decision_code(&self) -> i64 {
        outcome_code(self.decision.as_ref().map_or("not_evaluated", |d| d.outcome.as_ref()))
    }

    /// The `error` column: [`ERROR`] as `CallRecord::is_error`, and
    /// [`REFUSED`] when the gateway rejected or failed the call (its
    /// error class is set: budgets do not count it).
    pub(crate) fn error_flags(&self) -> i64 {
        let error = self.status.is_some_and(|s| s >= 400) || self.rpc_error.is_some();
        (i64::from(error) * ERROR) | (i64::from(self.error.is_some()) * REFUSED)
    }
}

/// Microseconds since the Unix epoch.
pub(crate) fn micros(t: SystemTime) -> Option<i64> {
    i64::try_from(t.duration_since(UNIX_EPOCH).ok()?.as_micros()).ok()
}

/// The time `micros` after the Unix epoch (the epoch itself when negative).
pub(crate) fn from_micros(micros: i64) -> SystemTime {
    UNIX_EPOCH + std::time::Duration::from_micros(micros.max(0).unsigned_abs())
}
