//! Token budgets: how much of its `[[limits.budgets]]` cap a team, cost
//! centre or principal has spent this period, and whether a new call may
//! still go.
//!
//! Where it sits: the `limit` phase asks [`Budgets::check`] before the
//! upstream is called (an exhausted budget refuses the call; a budget past
//! its `warn_at` flags it), and an observer of the call summary adds each
//! answer's estimated tokens with [`Budgets::spend`] when the response has
//! ended — the same count the audit record holds. A count is kept per
//! budget, key and period (`period` in the configured time zone); with
//! `[limits.redis]` the counts live in Redis for every replica, and this
//! process keeps its own share as the `local` fallback and for the metrics.

mod period;

/// The key `who` is counted under in `budget` — its team, cost centre or
/// principal (issuer and subject, [`Identity::key`]) — when the budget
/// covers the call at all (its routes, its keys). The gateway and
/// `tollgate usage --budgets` count the same way.
pub fn counted_as<'a>(budget: &Budget, who: &Spender<'a>) -> Option<Cow<'a, str>> {
    let routes = &budget.routes;
    if !routes.is_empty() && !routes.iter().any(|r| r == who.route || who.via == Some(r.as_str())) {
        return None;
    }
    let listed = |named: &dyn Fn(&KeyName) -> bool| budget.keys.is_empty() || budget.keys.iter().any(named);
    let plain = |value: Option<&'a str>| value.filter(|v| listed(&|k| is_plain(k, v))).map(Cow::Borrowed);
    match budget.per {
        BudgetKey::Team => plain(who.team),
        BudgetKey::CostCenter => plain(who.cost_center),
        BudgetKey::Principal => {
            let p = who.principal?;
            listed(&|k| p.is_named_by(k)).then(|| Cow::Owned(p.key()))
        }
    }
}

/// The start and end of the `period` holding `now`, counted in the IANA
/// time zone `zone` (UTC when unknown); `None` at the edges of the
/// calendar. Reports use it to sum a budget's current period.
pub fn period_bounds(
    period: tollgate_config::BudgetPeriod,
    zone: &str,
    now: std::time::SystemTime,
) -> Option<(std::time::SystemTime, std::time::SystemTime)> {
    let zone = TimeZone::get(zone).unwrap_or(TimeZone::UTC);
    let now = Timestamp::try_from(now).ok()?;
    let (start, end) = period::bounds(period, &zone, now)?;
    Some((start.into(), end.into()))
}

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use tollgate_config::{Budget, BudgetKey, KeyName, OnStoreError};

use crate::key::{Identity, is_plain};
use crate::store::Store;

/// Who spends, as a budget looks at a call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spender<'a> {
    /// The route the call ran on.
    pub route: &'a str,
    /// The virtual server it came through, if any.
    pub via: Option<&'a str>,
    /// The verified principal.
    pub principal: Option<Identity<'a>>,
    /// The principal's team.
    pub team: Option<&'a str>,
    /// The principal's cost centre.
    pub cost_center: Option<&'a str>,
}

/// Where a call stands under the budgets it counts against: the one with
/// the least left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The budget's id.
    pub budget: Arc<str>,
    /// Estimated tokens left this period.
    pub remaining: u64,
    /// Whether a budget the call counts against is past its `warn_at`.
    pub warn: bool,
}

/// A call refused because a budget is spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetRejection {
    /// The budget's id.
    pub budget: Arc<str>,
    /// Until the period ends.
    pub resets_in: Duration,
    /// When it ends (RFC 3339).
    pub resets_at: String,
    /// Refused because the shared store could not be reached
    /// (`on_store_error = "deny"`).
    pub store_unavailable: bool,
}

/// One budget's count for one key, for metrics and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetCount {
    /// The budget's id.
    pub budget: Arc<str>,
    /// The team, cost centre or principal.
    pub key: String,
    /// Spent this period, as last seen by this process.
    pub spent: u64,
    /// The cap.
    pub tokens: u64,
}

/// The budgets of a configuration, with their counts.
#[derive(Debug)]
pub(crate) struct Budgets {
    entries: Vec<Entry>,
    zone: TimeZone,
    /// This process's counts by count key (`id:key:period start`); shared
    /// with the budgets a reload replaced.
    local: Arc<DashMap<String, u64>>,
    /// The latest total seen per budget id and key (metrics); shared like
    /// `local`.
    seen: Arc<DashMap<(Arc<str>, String), u64>>,
}

#[derive(Debug)]
struct Entry {
    id: Arc<str>,
    config: Budget,
}

/// One budget a call counts against, this period.
struct Count<'a> {
    entry: &'a Entry,
    key: String,
    id: String,
    /// A principal's count id of the format before issuers were part of
    /// it (`id:subject:start`): spend it holds in the store still counts,
    /// for every issuer's principal of that subject, until its period ends.
    legacy: Option<String>,
    end: Timestamp,
}

impl Default for Budgets {
    fn default() -> Budgets {
        Budgets::new(&[], "UTC")
    }
}

impl Budgets {
    /// The budgets of `config`, counted in `zone` (an IANA name; UTC when
    /// unknown, which validation refuses).
    pub(crate) fn new(config: &[Budget], zone: &str) -> Budgets {
        Budgets {
            entries: config
                .iter()
                .map(|b| Entry {
                    id: Arc::from(b.id.as_str()),
                    config: b.clone(),
                })
                .collect(),
            zone: TimeZone::get(zone).unwrap_or(TimeZone::UTC),
            local: Arc::new(DashMap::new()),
            seen: Arc::default(),
        }
    }

    /// Keep the spend counted by `previous` (a configuration reload): the
    /// count keys name the budget and the period, so a budget that stays
    /// keeps its spend and one that is gone leaves its counts unread.
    pub(crate) fn inherit(&mut self, previous: &Budgets) {
        self.local = Arc::clone(&previous.local);
        self.seen = Arc::clone(&previous.seen);
    }

    /// Whether there are no budgets.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The counts `who` adds to at `now`.
    fn counts<'a>(&'a self, who: &Spender<'_>, now: Timestamp) -> Vec<Count<'a>> {
        self.entries
            .iter()
            .filter_map(|entry| {
                let key = counted_as(&entry.config, who)?;
                let (start, end) = period::bounds(entry.config.period, &self.zone, now)?;
                let start = start.as_second();
                let legacy = who
                    .principal
                    .filter(|p| entry.config.per == BudgetKey::Principal && !p.issuer.is_empty())
                    .map(|p| format!("{}:{}:{start}", entry.id, p.subject));
                Some(Count {
                    entry,
                    id: format!("{}:{key}:{start}", entry.id),
                    key: key.into_owned(),
                    legacy,
                    end,
                })
            })
            .collect()
    }

    /// Whether `who` may make a call now: refused when a budget it counts
    /// against is spent; else where it stands (`None` under no budget).
    ///
    /// # Errors
    ///
    /// The first spent budget.
    pub(crate) async fn check(
        &self,
        store: Option<&Store>,
        who: &Spender<'_>,
    ) -> Result<Option<Standing>, BudgetRejection> {
        let now = Timestamp::now();
        let counts = self.counts(who, now);
        if counts.is_empty() {
            return Ok(None);
        }
        let shared = match store {
            Some(store) => Some(shared_spent(store, &counts).await),
            None => None,
        };
        let mut tightest: Option<(&Count<'_>, u64)> = None;
        let mut warn = false;
        for (i, c) in counts.iter().enumerate() {
            let spent = match &shared {
                None => self.local_spent(&c.id),
                Some(Ok(values)) => values.get(i).copied().unwrap_or_default(),
                Some(Err(_)) => match c.entry.config.on_store_error {
                    OnStoreError::Local => self.local_spent(&c.id),
                    OnStoreError::Allow => continue,
                    OnStoreError::Deny => return Err(exhausted(c, now, true)),
                },
            };
            self.saw(c, spent);
            let cap = c.entry.config.tokens;
            if spent >= cap {
                return Err(exhausted(c, now, false));
            }
            warn |= spent as f64 >= c.entry.config.warn_at * cap as f64;
            let remaining = cap - spent;
            if tightest.is_none_or(|(_, least)| remaining < least) {
                tightest = Some((c, remaining));
            }
        }
        Ok(tightest.map(|(c, remaining)| Standing {
            budget: c.entry.id.clone(),
            remaining,
            warn,
        }))
    }

    /// Add `tokens` to every budget `who` counts against.
    pub(crate) fn spend(&self, store: Option<&Arc<Store>>, who: &Spender<'_>, tokens: u64) {
        if tokens == 0 {
            return;
        }
        for c in self.counts(who, Timestamp::now()) {
            let mut local = self.local.entry(c.id.clone()).or_insert(0);
            *local = local.saturating_add(tokens);
            let total = *local;
            drop(local);
            if store.is_none() {
                self.saw(&c, total);
            }
            if let Some(store) = store {
                let store = Arc::clone(store);
                let key = store.budget_key(&c.id);
                // Kept a day past the period, for reports.
                let expire_at = c.end.as_second() + 86_400;
                tokio::spawn(async move {
                    if let Err(e) = store.add(&key, tokens, expire_at).await {
                        tracing::warn!(error = %e, "budget spend not recorded in the limit store");
                    }
                });
            }
        }
        self.sweep();
    }

    fn local_spent(&self, id: &str) -> u64 {
        self.local.get(id).map_or(0, |v| *v)
    }

    fn saw(&self, c: &Count<'_>, spent: u64) {
        self.seen.insert((c.entry.id.clone(), c.key.clone()), spent);
    }

    /// Drop this process's counts of periods that have ended.
    fn sweep(&self) {
        if self.local.len() > 4096 {
            let now = Timestamp::now().as_second();
            self.local.retain(|id, _| {
                id.rsplit(':')
                    .next()
                    .and_then(|s| s.parse::<i64>().ok())
                    .is_some_and(|start| now - start < 32 * 86_400)
            });
        }
    }

    /// Each budget's latest known count per key, for the metrics.
    pub(crate) fn counts_seen(&self) -> Vec<BudgetCount> {
        self.seen
            .iter()
            .filter_map(|item| {
                let ((id, key), spent) = item.pair();
                let entry = self.entries.iter().find(|e| e.id == *id)?;
                Some(BudgetCount {
                    budget: entry.id.clone(),
                    key: key.clone(),
                    spent: *spent,
                    tokens: entry.config.tokens,
                })
            })
            .collect()
    }
}

/// What each of `counts` has spent, as the store holds it: its count,
/// plus its legacy count when it has one, in one round trip.
async fn shared_spent(store: &Store, counts: &[Count<'_>]) -> Result<Vec<u64>, crate::StoreError> {
    let keys: Vec<String> = counts
        .iter()
        .flat_map(|c| std::iter::once(&c.id).chain(&c.legacy))
        .map(|id| store.budget_key(id))
        .collect();
    let mut values = store.get_all(&keys).await?.into_iter();
    Ok(counts
        .iter()
        .map(|c| {
            let spent = values.next().unwrap_or_default();
            let legacy = c.legacy.as_ref().and_then(|_| values.next()).unwrap_or_default();
            spent.saturating_add(legacy)
        })
        .collect())
}

fn exhausted(c: &Count<'_>, now: Timestamp, store_unavailable: bool) -> BudgetRejection {
    let secs = (c.end.as_second() - now.as_second()).max(1);
    BudgetRejection {
        budget: c.entry.id.clone(),
        resets_in: Duration::from_secs(u64::try_from(secs).unwrap_or(1)),
        resets_at: c.end.to_string(),
        store_unavailable,
    }
}
