//! Cached metric handles: what [`super::CallMetrics`] would otherwise look
//! up with `with_label_values` (hash every label string, take the vector's
//! lock) on every call.
//!
//! Per route, small concurrent maps hold the handles of each (method
//! family, team) and each (family, tool, outcome, team) seen, keyed by
//! cheap values; rarer handles (upstream failures, hidden entries) sit in
//! `OnceLock`s. Every handle is created on first use, so a series appears
//! in the exposition only once it has been observed, as with direct
//! `with_label_values` calls. The caches hold exactly the label sets the
//! metrics hold, so they are bounded like the labels.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use prometheus::{Histogram, HistogramVec, IntCounter};
use smol_str::SmolStr;
use tollgate_core::McpMethod;

use super::{Families, MAX_TEAMS, OTHER, mode};

/// A concurrent map with a fast seeded hasher: the keys are short and from
/// bounded sets, and SipHash would cost more than the rest of a lookup.
type DashMap<K, V> = dashmap::DashMap<K, V, foldhash::quality::RandomState>;
use dashmap::mapref::one::Ref;

/// Label for calls without a team (open routes, tokens without the claim).
const NO_TEAM: &str = "none";
const NO_TEAM_ID: u16 = 0;
const OTHER_TEAM_ID: u16 = 1;

/// A bounded team label and its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Team<'a> {
    id: u16,
    label: &'a str,
}

/// The teams given their own label: the first [`MAX_TEAMS`] seen.
#[derive(Debug, Default)]
pub(super) struct Teams {
    ids: DashMap<Box<str>, u16>,
    given: AtomicUsize,
}

impl Teams {
    /// The bounded label of a caller's team.
    pub(super) fn label<'a>(&self, team: Option<&'a str>) -> Team<'a> {
        let Some(name) = team else {
            return Team {
                id: NO_TEAM_ID,
                label: NO_TEAM,
            };
        };
        if let Some(id) = self.ids.get(name) {
            return Team { id: *id, label: name };
        }
        let other = Team {
            id: OTHER_TEAM_ID,
            label: OTHER,
        };
        // Racing first calls of new teams may give one or two more than
        // the bound, never unboundedly many.
        if self.given.load(Relaxed) >= MAX_TEAMS {
            return other;
        }
        let id = *self.ids.entry(name.into()).or_insert_with(|| {
            let n = self.given.fetch_add(1, Relaxed);
            u16::try_from(n + 2).unwrap_or(OTHER_TEAM_ID)
        });
        Team { id, label: name }
    }
}

/// The handles of every route seen, by route name.
#[derive(Debug, Clone, Default)]
pub(super) struct Routes(Arc<DashMap<Arc<str>, RouteHandles>>);

impl Routes {
    /// The handles of `route`, created on its first call.
    pub(super) fn get(&self, route: &Arc<str>) -> Ref<'_, Arc<str>, RouteHandles> {
        if let Some(handles) = self.0.get(&**route) {
            return handles;
        }
        self.0
            .entry(route.clone())
            .or_insert_with(|| RouteHandles::new(route.clone()))
            .downgrade()
    }
}

/// The kinds of upstream failure counted.
#[derive(Debug, Clone, Copy)]
pub(super) enum Upstream {
    Unavailable = 0,
    Timeout = 1,
}

/// Bytes and time to first byte of one (route, method family, team).
#[derive(Debug)]
pub(super) struct Traffic {
    pub(super) bytes_in: IntCounter,
    pub(super) bytes_out: IntCounter,
    /// Labelled (route, method) only; created when first observed.
    ttfb: OnceLock<Histogram>,
    family: McpMethod,
}

impl Traffic {
    /// The time-to-first-byte histogram of this traffic's route and family.
    pub(super) fn ttfb(&self, vec: &HistogramVec, route: &str) -> &Histogram {
        self.ttfb
            .get_or_init(|| vec.with_label_values(&[route, self.family.as_str()]))
    }
}

/// One operation's labels, before bounding the tool.
#[derive(Debug)]
pub(super) struct Operation<'a> {
    pub(super) family: McpMethod,
    /// The tool when the catalog knows it.
    pub(super) tool: Option<&'a SmolStr>,
    pub(super) outcome: &'static str,
    pub(super) team: Team<'a>,
}

/// What an operation's histogram is cached under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct OperationKey {
    family: McpMethod,
    tool: Option<SmolStr>,
    outcome: &'static str,
    team: u16,
}

/// The cached handles of one route.
#[derive(Debug)]
pub(super) struct RouteHandles {
    name: Arc<str>,
    traffic: DashMap<(McpMethod, u16), Traffic>,
    operations: DashMap<OperationKey, Histogram>,
    upstream: [OnceLock<IntCounter>; 2],
    /// Indexed by `enforced`.
    hidden: [OnceLock<IntCounter>; 2],
}

impl RouteHandles {
    fn new(name: Arc<str>) -> RouteHandles {
        RouteHandles {
            name,
            traffic: DashMap::default(),
            operations: DashMap::default(),
            upstream: Default::default(),
            hidden: Default::default(),
        }
    }

    /// The route label.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// Bytes (and time to first byte) of a family and team on this route.
    pub(super) fn traffic(
        &self,
        m: &Families,
        family: McpMethod,
        team: Team<'_>,
    ) -> Ref<'_, (McpMethod, u16), Traffic> {
        if let Some(t) = self.traffic.get(&(family, team.id)) {
            return t;
        }
        let labels = [&*self.name, family.as_str(), team.label];
        let traffic = Traffic {
            bytes_in: m.bytes_in.with_label_values(&labels),
            bytes_out: m.bytes_out.with_label_values(&labels),
            ttfb: OnceLock::new(),
            family,
        };
        self.traffic.entry((family, team.id)).or_insert(traffic).downgrade()
    }

    /// The duration histogram of an operation on this route.
    pub(super) fn operation(&self, vec: &HistogramVec, op: &Operation<'_>) -> Ref<'_, OperationKey, Histogram> {
        let key = OperationKey {
            family: op.family,
            tool: op.tool.cloned(),
            outcome: op.outcome,
            team: op.team.id,
        };
        if let Some(h) = self.operations.get(&key) {
            return h;
        }
        let method = op.family.as_str();
        let tool = match op.tool {
            Some(t) => t.as_str(),
            None if op.family == McpMethod::ToolsCall => OTHER,
            None => "",
        };
        let h = vec.with_label_values(&[&*self.name, method, tool, op.outcome, op.team.label]);
        self.operations.entry(key).or_insert(h).downgrade()
    }

    /// The counter of an upstream failure kind on this route.
    pub(super) fn upstream(&self, m: &Families, kind: Upstream) -> &IntCounter {
        let label = match kind {
            Upstream::Unavailable => "unavailable",
            Upstream::Timeout => "timeout",
        };
        self.upstream[kind as usize].get_or_init(|| m.upstream_errors.with_label_values(&[&*self.name, label]))
    }

    /// The counter of entries hidden from lists on this route.
    pub(super) fn hidden(&self, m: &Families, enforced: bool) -> &IntCounter {
        self.hidden[usize::from(enforced)].get_or_init(|| m.hidden.with_label_values(&[&*self.name, mode(enforced)]))
    }
}
