//! Usage aggregation: calls, errors, bytes, estimated tokens and latency
//! percentiles per team, cost centre, subject, server, tool or trace.
//!
//! This is the arithmetic behind `tollgate usage`, off the request path: the
//! binary reads the audit trail's complete records, describes each as a
//! [`UsageSample`] and adds it to a [`Usage`]; the finished [`UsageReport`]
//! is what it renders as a table, CSV or JSON. Tokens of `tools/list`
//! responses are also summed apart as catalogue context cost.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;

use serde::Serialize;

use crate::error::MeterError;
use crate::percentile::Distribution;

/// What usage is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// The principal's team.
    Team,
    /// The principal's cost centre.
    CostCenter,
    /// The principal's subject.
    Subject,
    /// The route.
    Server,
    /// The tool, prompt or resource with its server (`github/search`:
    /// two servers' `search` are two tools); `server/(method)` for calls
    /// without a name.
    Tool,
    /// The trace id (one user instruction).
    Trace,
}

impl FromStr for GroupBy {
    type Err = MeterError;

    /// Parse `team`, `cost_center` (or `cost_centre`), `subject` (or
    /// `user`), `server` (or `route`), `tool` or `trace`; `-` may replace
    /// `_`.
    ///
    /// # Errors
    ///
    /// [`MeterError::UnknownGroup`] for any other name.
    fn from_str(s: &str) -> Result<GroupBy, MeterError> {
        match s.replace('-', "_").as_str() {
            "team" => Ok(GroupBy::Team),
            "cost_center" | "cost_centre" => Ok(GroupBy::CostCenter),
            "subject" | "user" => Ok(GroupBy::Subject),
            "server" | "route" => Ok(GroupBy::Server),
            "tool" => Ok(GroupBy::Tool),
            "trace" => Ok(GroupBy::Trace),
            _ => Err(MeterError::UnknownGroup(s.to_owned())),
        }
    }
}

/// Key used for samples without a value for the grouping.
pub const NONE_KEY: &str = "(none)";

impl GroupBy {
    /// The grouping's name, as serialized (`team`, `cost_center`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Team => "team",
            GroupBy::CostCenter => "cost_center",
            GroupBy::Subject => "subject",
            GroupBy::Server => "server",
            GroupBy::Tool => "tool",
            GroupBy::Trace => "trace",
        }
    }

    /// The group a sample belongs to; [`NONE_KEY`] when it has no value.
    pub fn key<'a>(self, s: &UsageSample<'a>) -> Cow<'a, str> {
        let value = match self {
            GroupBy::Team => s.team.map(Cow::Borrowed),
            GroupBy::CostCenter => s.cost_center.map(Cow::Borrowed),
            GroupBy::Subject => s.subject.map(Cow::Borrowed),
            GroupBy::Server => Some(Cow::Borrowed(s.server)),
            GroupBy::Tool => s
                .name
                .map(|n| format!("{}/{n}", s.server))
                .or_else(|| s.method.map(|m| format!("{}/({m})", s.server)))
                .map(Cow::Owned),
            GroupBy::Trace => s.trace.map(Cow::Borrowed),
        };
        value.unwrap_or(Cow::Borrowed(NONE_KEY))
    }
}

/// One call as usage sees it: the values it can be grouped by, and what it
/// cost. Borrowed from whatever describes the call (an audit record).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageSample<'a> {
    /// The principal's team.
    pub team: Option<&'a str>,
    /// The principal's cost centre.
    pub cost_center: Option<&'a str>,
    /// The principal's subject.
    pub subject: Option<&'a str>,
    /// The route.
    pub server: &'a str,
    /// Tool or prompt name, or resource URI.
    pub name: Option<&'a str>,
    /// The JSON-RPC method.
    pub method: Option<&'a str>,
    /// The trace id.
    pub trace: Option<&'a str>,
    /// Answered with an HTTP error status or a JSON-RPC error.
    pub error: bool,
    /// Denied by policy.
    pub denied: bool,
    /// Request bytes.
    pub bytes_in: u64,
    /// Response bytes.
    pub bytes_out: u64,
    /// Estimated tokens of the response.
    pub tokens: u64,
    /// The response is a catalogue (`tools/list`).
    pub catalog: bool,
    /// Duration, microseconds.
    pub duration_us: u64,
    /// The price of its tokens per million (`[[limits.prices]]`); 0
    /// when unpriced. A group's cost is its tokens at each price, summed
    /// per price: the same figure whatever order calls are added in, or
    /// when they arrive already summed ([`Usage::add_sums`]).
    pub per_million: f64,
}

impl UsageSample<'_> {
    /// What its tokens cost.
    #[allow(clippy::cast_precision_loss, reason = "money from a token count")]
    pub fn cost(&self) -> f64 {
        self.per_million * self.tokens as f64 / 1_000_000.0
    }
}

/// Calls of one group summed elsewhere (a database's `GROUP BY`), all at
/// one price: what [`Usage::add_sums`] adds at once. Their durations are
/// added apart ([`Usage::add_duration`], [`Usage::add_duration_bucket`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageSums {
    /// Calls.
    pub calls: u64,
    /// Calls answered with an HTTP error status or a JSON-RPC error.
    pub errors: u64,
    /// Calls denied by policy.
    pub denied: u64,
    /// Request bytes.
    pub bytes_in: u64,
    /// Response bytes.
    pub bytes_out: u64,
    /// Estimated tokens.
    pub tokens: u64,
    /// Of which in catalogue responses.
    pub catalog_tokens: u64,
    /// The price of these tokens per million; 0 when unpriced.
    pub per_million: f64,
}

/// Usage of one group.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageRow {
    /// The group's key.
    pub key: String,
    /// Calls.
    pub calls: u64,
    /// Calls answered with an HTTP error status or a JSON-RPC error.
    pub errors: u64,
    /// Calls denied by policy.
    pub denied: u64,
    /// Request bytes.
    pub bytes_in: u64,
    /// Response bytes.
    pub bytes_out: u64,
    /// Estimated tokens of all responses.
    pub tokens: u64,
    /// Of which in catalogue responses (`tools/list`).
    pub catalog_tokens: u64,
    /// Median duration, microseconds.
    pub p50_us: u64,
    /// 99th percentile duration, microseconds.
    pub p99_us: u64,
    /// What the tokens cost, in the report's currency.
    pub cost: f64,
}

/// A usage report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    /// The grouping.
    pub by: GroupBy,
    /// Groups, most tokens first (then by key).
    pub rows: Vec<UsageRow>,
    /// All groups together, keyed `TOTAL`.
    pub total: UsageRow,
    /// The currency of `cost`, when the calls were priced.
    pub currency: Option<String>,
}

#[derive(Debug, Default)]
struct Acc {
    row: UsageRow,
    durations: Distribution,
    /// Tokens per price (the price's bits: few distinct prices).
    priced: BTreeMap<u64, u64>,
}

impl Acc {
    fn add(&mut self, s: &UsageSample<'_>) {
        self.add_sums(&UsageSums {
            calls: 1,
            errors: u64::from(s.error),
            denied: u64::from(s.denied),
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
            tokens: s.tokens,
            catalog_tokens: if s.catalog { s.tokens } else { 0 },
            per_million: s.per_million,
        });
        self.durations.add(s.duration_us);
    }

    fn add_sums(&mut self, s: &UsageSums) {
        let row = &mut self.row;
        row.calls += s.calls;
        row.errors += s.errors;
        row.denied += s.denied;
        row.bytes_in += s.bytes_in;
        row.bytes_out += s.bytes_out;
        row.tokens += s.tokens;
        row.catalog_tokens += s.catalog_tokens;
        if s.per_million != 0.0 {
            *self.priced.entry(s.per_million.to_bits()).or_default() += s.tokens;
        }
    }

    #[allow(clippy::cast_precision_loss, reason = "money from a token count")]
    fn finish(mut self, key: String) -> UsageRow {
        self.row.key = key;
        self.row.p50_us = self.durations.percentile(0.5);
        self.row.p99_us = self.durations.percentile(0.99);
        self.row.cost = self
            .priced
            .iter()
            .map(|(price, tokens)| f64::from_bits(*price) * *tokens as f64 / 1_000_000.0)
            .sum::<f64>()
            + 0.0; // an empty sum is -0.0, which would print as "-0.0"
        self.row
    }
}

/// Sums samples into groups; [`Usage::finish`] makes the report. Memory is
/// bounded per group (see the percentiles), not per sample.
#[derive(Debug)]
pub struct Usage {
    by: GroupBy,
    groups: HashMap<String, Acc>,
    total: Acc,
}

impl Usage {
    /// An empty tally grouped `by`.
    pub fn new(by: GroupBy) -> Usage {
        Usage {
            by,
            groups: HashMap::new(),
            total: Acc::default(),
        }
    }

    /// Count one call.
    pub fn add(&mut self, sample: &UsageSample<'_>) {
        let key = self.by.key(sample);
        match self.groups.get_mut(key.as_ref()) {
            Some(acc) => acc.add(sample),
            None => self.groups.entry(key.into_owned()).or_default().add(sample),
        }
        self.total.add(sample);
    }

    /// Count calls of group `key` (`None`: [`NONE_KEY`]) summed elsewhere;
    /// their durations follow apart.
    pub fn add_sums(&mut self, key: Option<&str>, sums: &UsageSums) {
        self.group(key).add_sums(sums);
        self.total.add_sums(sums);
    }

    /// One duration of group `key`'s calls, exactly: for a group of at
    /// most [`crate::EXACT_DURATIONS`] calls.
    pub fn add_duration(&mut self, key: Option<&str>, duration_us: u64) {
        self.group(key).durations.add(duration_us);
        self.total.durations.add(duration_us);
    }

    /// `count` durations of group `key`'s calls in histogram bucket
    /// `bucket` ([`crate::duration_bucket`]): for a group of more than
    /// [`crate::EXACT_DURATIONS`] calls, whose percentiles come from buckets.
    pub fn add_duration_bucket(&mut self, key: Option<&str>, bucket: u64, count: u64) {
        self.group(key).durations.add_bucket(bucket, count);
        self.total.durations.add_bucket(bucket, count);
    }

    fn group(&mut self, key: Option<&str>) -> &mut Acc {
        self.groups.entry(key.unwrap_or(NONE_KEY).to_owned()).or_default()
    }

    /// The report: groups sorted by tokens (most first, then by key), and
    /// the total.
    pub fn finish(self) -> UsageReport {
        let mut rows: Vec<UsageRow> = self.groups.into_iter().map(|(k, acc)| acc.finish(k)).collect();
        rows.sort_by(|a, b| b.tokens.cmp(&a.tokens).then_with(|| a.key.cmp(&b.key)));
        UsageReport {
            by: self.by,
            rows,
            total: self.total.finish("TOTAL".to_owned()),
            currency: None,
        }
    }
}

/// The report of `samples` grouped `by`.
pub fn usage<'a>(by: GroupBy, samples: impl IntoIterator<Item = UsageSample<'a>>) -> UsageReport {
    let mut tally = Usage::new(by);
    for s in samples {
        tally.add(&s);
    }
    tally.finish()
}

#[cfg(test)]
mod tests;
