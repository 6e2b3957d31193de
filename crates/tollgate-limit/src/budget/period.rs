//! Calendar periods of budgets in a time zone.

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use tollgate_config::BudgetPeriod;

/// The start and end of the `period` holding `now`, in `zone`; `None` only
/// at the edges of the representable calendar.
pub(crate) fn bounds(period: BudgetPeriod, zone: &TimeZone, now: Timestamp) -> Option<(Timestamp, Timestamp)> {
    let date = now.to_zoned(zone.clone()).date();
    let (start, end) = match period {
        BudgetPeriod::Day => (date, date.tomorrow().ok()?),
        BudgetPeriod::Week => {
            let monday = date
                .checked_sub(i64::from(date.weekday().to_monday_zero_offset()).days())
                .ok()?;
            (monday, monday.checked_add(7.days()).ok()?)
        }
        BudgetPeriod::Month => {
            let first = date.first_of_month();
            (first, first.checked_add(1.month()).ok()?)
        }
    };
    let at = |d: jiff::civil::Date| d.to_zoned(zone.clone()).ok().map(|z| z.timestamp());
    Some((at(start)?, at(end)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn periods_follow_the_calendar_of_the_zone() {
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        // 23:30 UTC on 31 March is already 1 April in Berlin (summer time).
        let now = ts("2026-03-31T23:30:00Z");
        let (start, end) = bounds(BudgetPeriod::Month, &berlin, now).unwrap();
        assert_eq!((start, end), (ts("2026-03-31T22:00:00Z"), ts("2026-04-30T22:00:00Z")));
        let (start, end) = bounds(BudgetPeriod::Day, &TimeZone::UTC, now).unwrap();
        assert_eq!((start, end), (ts("2026-03-31T00:00:00Z"), ts("2026-04-01T00:00:00Z")));
        // Thursday 3 December 2026: the week began on Monday the 30th.
        let (start, end) = bounds(BudgetPeriod::Week, &TimeZone::UTC, ts("2026-12-03T12:00:00Z")).unwrap();
        assert_eq!((start, end), (ts("2026-11-30T00:00:00Z"), ts("2026-12-07T00:00:00Z")));
    }
}
