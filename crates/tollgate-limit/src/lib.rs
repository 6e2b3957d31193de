//! Rate limits: which `[[limits.rules]]` a call matches, and whether each
//! of them still has room for it.
//!
//! Where it sits: the `limit` phase of the request path, after `authorize`
//! (a call the policies refuse costs nothing) and before `credential`.
//! Each rule keeps GCRA counters (the `governor` crate) keyed by what the
//! rule counts by — the verified principal, never the session, so a new
//! `initialize` does not reset anything — in this process. A call is
//! refused by the first matching rule without room, with the time until
//! it would have room. No HTTP here: the server maps a [`Refusal`] to 429.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tollgate_config::{RateKey, RateRule};

/// How many checks between sweeps of counters that are back at full
/// capacity (which then cost no memory).
const SWEEP_EVERY: u64 = 4096;

/// What the rules look at in one call (one JSON-RPC request).
#[derive(Debug, Clone, Copy, Default)]
pub struct Call<'a> {
    /// The route (server) the call runs on.
    pub route: &'a str,
    /// The virtual server it came through, if any.
    pub via: Option<&'a str>,
    /// The JSON-RPC method.
    pub method: &'a str,
    /// The tool or prompt name (the member's own), if any.
    pub name: Option<&'a str>,
    /// The name the virtual server exposes it under, if any.
    pub exposed: Option<&'a str>,
    /// The verified principal's subject; `None` when anonymous.
    pub principal: Option<&'a str>,
    /// The principal's team.
    pub team: Option<&'a str>,
}

/// A call a rule has no room for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The rule's id.
    pub rule: Arc<str>,
    /// How long until the rule has room again.
    pub retry_after: Duration,
}

/// The rate-limit rules of a configuration, with their counters.
#[derive(Debug, Default)]
pub struct Limiter {
    rules: Vec<Rule>,
    checks: AtomicU64,
}

#[derive(Debug)]
struct Rule {
    id: Arc<str>,
    config: RateRule,
    counters: DefaultKeyedRateLimiter<String>,
    refused: AtomicU64,
}

impl Limiter {
    /// The limiter of `rules` (validated by the configuration: a rule with
    /// a zero rate or period is skipped).
    pub fn new(rules: &[RateRule]) -> Limiter {
        let rules = rules
            .iter()
            .filter_map(|r| {
                let quota = quota(r)?;
                Some(Rule {
                    id: Arc::from(r.id.as_str()),
                    config: r.clone(),
                    counters: RateLimiter::keyed(quota),
                    refused: AtomicU64::new(0),
                })
            })
            .collect();
        Limiter {
            rules,
            checks: AtomicU64::new(0),
        }
    }

    /// Whether there are no rules (the phase then does nothing).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Count `call` against every rule it matches; the first rule without
    /// room refuses it (rules before it have counted it).
    ///
    /// # Errors
    ///
    /// The [`Refusal`] of the first matching rule without room.
    pub fn check(&self, call: &Call<'_>) -> Result<(), Refusal> {
        if self.rules.is_empty() {
            return Ok(());
        }
        self.sweep();
        for rule in self.rules.iter().filter(|r| matches(&r.config, call)) {
            let key = key(rule.config.per, call);
            if let Err(not_until) = rule.counters.check_key(&key) {
                rule.refused.fetch_add(1, Ordering::Relaxed);
                return Err(Refusal {
                    rule: rule.id.clone(),
                    retry_after: not_until.wait_time_from(DefaultClock::default().now()),
                });
            }
        }
        Ok(())
    }

    /// Each rule's id and the calls it refused since start.
    pub fn refusals(&self) -> impl Iterator<Item = (&str, u64)> {
        self.rules.iter().map(|r| (&*r.id, r.refused.load(Ordering::Relaxed)))
    }

    /// Drop counters that are back at full capacity, now and then.
    fn sweep(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            for rule in &self.rules {
                rule.counters.retain_recent();
                rule.counters.shrink_to_fit();
            }
        }
    }
}

/// `rate` calls per `period`, bursts of `burst`.
fn quota(r: &RateRule) -> Option<Quota> {
    let interval = r.period.checked_div(r.rate)?;
    let burst = NonZeroU32::new(r.burst())?;
    Some(Quota::with_period(interval)?.allow_burst(burst))
}

/// What `call` is counted by under `per`.
fn key(per: RateKey, call: &Call<'_>) -> String {
    match per {
        RateKey::Principal => call.principal.unwrap_or("").to_owned(),
        RateKey::Team => call.team.unwrap_or("").to_owned(),
        RateKey::Route => call.via.unwrap_or(call.route).to_owned(),
        RateKey::Global => String::new(),
    }
}

/// Whether `rule` counts `call`.
fn matches(rule: &RateRule, call: &Call<'_>) -> bool {
    let any =
        |list: &[String], value: Option<&str>| list.is_empty() || value.is_some_and(|v| list.iter().any(|x| x == v));
    let route = rule.routes.is_empty()
        || rule
            .routes
            .iter()
            .any(|r| r == call.route || call.via == Some(r.as_str()));
    let tool = rule.tools.is_empty()
        || [call.name, call.exposed]
            .into_iter()
            .flatten()
            .any(|n| rule.tools.iter().any(|p| wildcard(p, n)));
    route
        && tool
        && any(&rule.methods, Some(call.method))
        && any(&rule.principals, call.principal)
        && any(&rule.teams, call.team)
}

/// Whether `text` matches `pattern`, where `*` stands for any run of
/// characters (`delete_*`, `*_admin`, `*`).
fn wildcard(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests;
