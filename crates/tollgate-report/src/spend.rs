//! `tollgate usage`: the complete call records of a trail, read with
//! `tollgate-audit`'s query (or from the audit index, `report_indexed`, or
//! any source of entries such as the fleet store, `report_entries`),
//! priced with `[[limits.prices]]` when a configuration is given, and
//! summed with `tollgate-meter` (`Usage`); `render` prints the report.
//!
//! Only `complete` records count: a strict-mode `forwarding` record is not
//! a second call.

use std::path::PathBuf;
use std::time::SystemTime;

use tollgate_audit::{CallRecord, Entry, Filter, Phase, QueryError};
use tollgate_index::{Index, IndexError, IndexedCall};
use tollgate_limit::{Priced, Prices};
use tollgate_meter::{GroupBy, Usage, UsageReport, UsageSample};

/// Sum the call records in `paths` from `since` to `until`, grouped `by`,
/// each priced with `prices`.
///
/// # Errors
///
/// A file that cannot be read or a malformed line.
pub fn report(
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
    report_entries(tollgate_audit::query(paths, filter)?, by, prices)
}

/// Sum `entries` (read with a time-window [`Filter`] from any source:
/// the files, or the fleet store), grouped `by`, each priced with
/// `prices`: what [`report`] does with the files' entries.
///
/// # Errors
///
/// The first error an entry carries.
pub fn report_entries<E>(
    entries: impl IntoIterator<Item = Result<Entry, E>>,
    by: GroupBy,
    prices: &Prices,
) -> Result<UsageReport, E> {
    let mut usage = Usage::new(by);
    for entry in entries {
        let record = entry?.record;
        if record.phase == Phase::Complete {
            usage.add(&sample(&record, prices));
        }
    }
    let mut report = usage.finish();
    report.currency = prices.currency().map(str::to_owned);
    Ok(report)
}

/// [`report`] answered from the audit index: the same sums, from the
/// index's columns instead of the files.
///
/// # Errors
///
/// A database error.
pub fn report_indexed(
    index: &Index,
    by: GroupBy,
    window: (Option<SystemTime>, Option<SystemTime>),
    prices: &Prices,
) -> Result<UsageReport, IndexError> {
    report_indexed_with(index, by, window, prices, |_, _| {})
}

/// [`report_indexed`], also showing `each` every priced call it sums (for
/// a series beside the report, in the same pass over the index).
///
/// # Errors
///
/// A database error.
pub fn report_indexed_with(
    index: &Index,
    by: GroupBy,
    (since, until): (Option<SystemTime>, Option<SystemTime>),
    prices: &Prices,
    mut each: impl FnMut(&IndexedCall<'_>, &UsageSample<'_>),
) -> Result<UsageReport, IndexError> {
    let mut usage = Usage::new(by);
    index.calls(since, until, |c| {
        let sample = indexed_sample(c, prices);
        each(c, &sample);
        usage.add(&sample);
    })?;
    let mut report = usage.finish();
    report.currency = prices.currency().map(str::to_owned);
    Ok(report)
}

/// An indexed call (or a record seen as one) as usage sees it, priced.
fn indexed_sample<'c>(c: &IndexedCall<'c>, prices: &Prices) -> UsageSample<'c> {
    UsageSample {
        per_million: indexed_price(c, prices),
        ..c.usage
    }
}

/// What a record's tokens cost under `prices`.
pub fn cost(r: &CallRecord, prices: &Prices) -> f64 {
    indexed_cost(&IndexedCall::from(r), prices)
}

/// What an indexed call's tokens cost under `prices`.
pub fn indexed_cost(c: &IndexedCall<'_>, prices: &Prices) -> f64 {
    UsageSample {
        per_million: indexed_price(c, prices),
        ..c.usage
    }
    .cost()
}

/// The price per million tokens of an indexed call under `prices`; 0
/// when unpriced.
pub fn indexed_price(c: &IndexedCall<'_>, prices: &Prices) -> f64 {
    let call = Priced {
        route: c.usage.server,
        via: c.via,
        name: c.usage.name,
        exposed: c.exposed,
    };
    prices.per_million(&call).unwrap_or(0.0)
}

/// A record as usage sees it.
pub fn sample<'r>(r: &'r CallRecord, prices: &Prices) -> UsageSample<'r> {
    indexed_sample(&IndexedCall::from(r), prices)
}
