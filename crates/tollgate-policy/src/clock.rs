//! Calendar arithmetic for `context.hour`, `context.minute`,
//! `context.weekday` and `context.now`, without a time-zone database: the
//! configured zone is a fixed UTC offset.
//!
//! Part of building a request's context (request path step 8): integer
//! arithmetic on the Unix time, no parsing.

use std::time::{SystemTime, UNIX_EPOCH};

/// Local wall-clock facts of one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Local {
    /// 0..=23.
    pub(crate) hour: i64,
    /// 0..=59.
    pub(crate) minute: i64,
    /// 1 = Monday .. 7 = Sunday.
    pub(crate) weekday: i64,
}

/// Seconds since the Unix epoch (negative before it).
pub(crate) fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// The local facts of `secs` (Unix time) at `offset` seconds east of UTC.
pub(crate) fn local(secs: i64, offset: i32) -> Local {
    let t = secs.saturating_add(i64::from(offset));
    let days = t.div_euclid(86_400);
    let of_day = t.rem_euclid(86_400);
    Local {
        hour: of_day / 3600,
        minute: of_day % 3600 / 60,
        // 1970-01-01 was a Thursday (4).
        weekday: (days + 3).rem_euclid(7) + 1,
    }
}

/// `secs` as a UTC timestamp Cedar's `datetime()` accepts:
/// `YYYY-MM-DDThh:mm:ssZ` (years 0000..=9999; outside, clamped).
pub(crate) fn rfc3339_utc(secs: i64) -> String {
    // 0000-01-01 and 9999-12-31T23:59:59.
    let secs = secs.clamp(-62_167_219_200, 253_402_300_799);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    // Howard Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn local_facts_follow_the_offset() {
        // 2026-12-02T17:30:00Z is a Wednesday.
        let t = days_from_civil(2026, 12, 2) * 86_400 + 17 * 3600 + 30 * 60;
        assert_eq!(
            local(t, 0),
            Local {
                hour: 17,
                minute: 30,
                weekday: 3
            }
        );
        assert_eq!(local(t, 3600).hour, 18);
        // Seven hours later at +01:00 it is Thursday 01:30.
        assert_eq!(
            local(t + 7 * 3600, 3600),
            Local {
                hour: 1,
                minute: 30,
                weekday: 4
            }
        );
        assert_eq!(local(t, -18 * 3600).hour, 23);
        assert_eq!(local(0, 0).weekday, 4);
        assert_eq!(
            local(-1, 0),
            Local {
                hour: 23,
                minute: 59,
                weekday: 3
            }
        );
    }

    #[test]
    fn timestamps_round_trip() {
        let t = days_from_civil(2024, 2, 29) * 86_400 + 59;
        assert_eq!(rfc3339_utc(t), "2024-02-29T00:00:59Z");
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(i64::MAX), "9999-12-31T23:59:59Z");
        assert_eq!(unix_seconds(UNIX_EPOCH + Duration::from_secs(5)), 5);
        assert_eq!(unix_seconds(UNIX_EPOCH - Duration::from_secs(5)), -5);
        for days in [-700_000, -1, 0, 59, 10_957, 20_000, 2_900_000] {
            let s = rfc3339_utc(days * 86_400);
            let (y, m, d) = (&s[..4], &s[5..7], &s[8..10]);
            let back = days_from_civil(y.parse().unwrap(), m.parse().unwrap(), d.parse().unwrap());
            assert_eq!(back, days, "{s}");
        }
    }
}
