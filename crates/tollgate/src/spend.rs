//! `tollgate usage`: the complete call records of a trail, read with
//! `tollgate-audit`'s query, priced with `[[limits.prices]]` when a
//! configuration is given, and summed with `tollgate-meter` (`Usage`);
//! `render` prints the report.
//!
//! Only `complete` records count: a strict-mode `forwarding` record is not
//! a second call.

use std::path::PathBuf;
use std::time::SystemTime;

use tollgate_audit::{CallRecord, Filter, Outcome, Phase, QueryError};
use tollgate_limit::{Priced, Prices};
use tollgate_meter::{GroupBy, Usage, UsageReport, UsageSample};

/// Sum the call records in `paths` from `since` to `until`, grouped `by`,
/// each priced with `prices`.
///
/// # Errors
///
/// A file that cannot be read or a malformed line.
pub(crate) fn report(
    paths: &[PathBuf],
    by: GroupBy,
    (since, until): (Option<SystemTime>, Option<SystemTime>),
    prices: &Prices,
) -> Result<UsageReport, QueryError> {
    let filter = Filter {
        since,
        until,
        ..Filter::default()
    };
    let mut usage = Usage::new(by);
    for entry in tollgate_audit::query(paths, filter)? {
        let record = entry?.record;
        if record.phase == Phase::Complete {
            usage.add(&sample(&record, prices));
        }
    }
    let mut report = usage.finish();
    report.currency = prices.currency().map(str::to_owned);
    Ok(report)
}

/// What a record's tokens cost under `prices`.
pub(crate) fn cost(r: &CallRecord, prices: &Prices) -> f64 {
    let call = Priced {
        route: &r.route,
        via: r.virtual_server.as_deref(),
        name: r.name.as_deref(),
        exposed: r.exposed_name.as_deref(),
    };
    prices.cost(&call, r.tokens)
}

/// A record as usage sees it.
pub(crate) fn sample<'r>(r: &'r CallRecord, prices: &Prices) -> UsageSample<'r> {
    let p = r.principal.as_deref();
    UsageSample {
        team: p.and_then(|p| p.team.as_deref()),
        cost_center: p.and_then(|p| p.cost_center.as_deref()),
        subject: p.map(|p| p.subject.as_str()),
        server: &r.route,
        name: r.name.as_deref(),
        method: r.method.as_deref(),
        trace: r.trace_id.as_deref(),
        error: r.is_error(),
        denied: r.decision.outcome == Outcome::Deny,
        bytes_in: r.bytes_in,
        bytes_out: r.bytes_out,
        tokens: r.tokens,
        catalog: r.catalog,
        duration_us: r.duration_us,
        cost: cost(r, prices),
    }
}
