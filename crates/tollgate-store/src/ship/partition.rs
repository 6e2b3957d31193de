//! The monthly partitions of `audit_records` and `audit_usage`: created
//! together on demand, before the first line of a month is shipped, under an advisory lock so that
//! replicas crossing into a new month together create it once.

use std::time::SystemTime;

use jiff::tz::TimeZone;

use crate::error::{Result, StoreError};

/// A calendar month, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Month {
    year: i16,
    month: i8,
}

impl Month {
    /// The month `t` falls in (UTC); times outside jiff's range clamp to
    /// the epoch's month.
    pub(crate) fn of(t: SystemTime) -> Month {
        let z = jiff::Timestamp::try_from(t)
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
            .to_zoned(TimeZone::UTC);
        Month {
            year: z.year(),
            month: z.month(),
        }
    }

    fn next(self) -> Month {
        match self.month {
            12 => Month {
                year: self.year + 1,
                month: 1,
            },
            m => Month {
                year: self.year,
                month: m + 1,
            },
        }
    }

    /// `{parent}_2026_09`: `audit_records_2026_09`.
    fn table_of(self, parent: &str) -> String {
        format!("{parent}_{:04}_{:02}", self.year, self.month)
    }

    fn start(self) -> String {
        format!("{:04}-{:02}-01 00:00:00+00", self.year, self.month)
    }
}

/// Same number as the migrations' lock would do, but distinct from it.
const PARTITION_LOCK: i64 = 0x746f_6c6c_7061_7274; // "tollpart"

/// The partitioned tables, each with a partition per month.
const PARENTS: [&str; 2] = ["audit_records", "audit_usage"];

/// Create the partitions of `month` unless they exist.
pub(crate) async fn ensure(client: &mut deadpool_postgres::Object, month: Month) -> Result<()> {
    let tx = client
        .transaction()
        .await
        .map_err(StoreError::db("creating a month's partition"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PARTITION_LOCK])
        .await
        .map_err(StoreError::db("creating a month's partition"))?;
    // Names and bounds are made here from numbers, never from input.
    for parent in PARENTS {
        let sql = format!(
            "CREATE TABLE IF NOT EXISTS {} PARTITION OF {parent} FOR VALUES FROM ('{}') TO ('{}')",
            month.table_of(parent),
            month.start(),
            month.next().start()
        );
        tx.batch_execute(&sql)
            .await
            .map_err(StoreError::db("creating a month's partition"))?;
    }
    tx.commit()
        .await
        .map_err(StoreError::db("creating a month's partition"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_name_their_table_and_bounds_across_a_year() {
        let t: jiff::Timestamp = "2026-12-31T23:59:59.999999Z".parse().unwrap();
        let m = Month::of(SystemTime::from(t));
        assert_eq!(m.table_of("audit_records"), "audit_records_2026_12");
        assert_eq!(m.start(), "2026-12-01 00:00:00+00");
        assert_eq!(m.next().start(), "2027-01-01 00:00:00+00");
        assert_eq!(
            Month::of(SystemTime::UNIX_EPOCH).table_of("audit_records"),
            "audit_records_1970_01"
        );
        assert_eq!(m.table_of("audit_usage"), "audit_usage_2026_12");
    }
}
