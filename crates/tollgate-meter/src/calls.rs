//! Per-call Prometheus metrics (request path step 13): MCP operation
//! duration, time to first byte, bytes in and out, policy denials, hidden
//! list entries and upstream failures, all derived from the finished call's
//! [`CallSummary`].
//!
//! [`CallMetrics`] is one of the route's [`CallObserver`]s; it reads the
//! summary and knows nothing of the audit trail or the span. Every label
//! is bounded: routes come from configuration, methods from the fixed MCP
//! method families, tools from the names the catalog knows (others are
//! `other`), teams from the first [`MAX_TEAMS`] seen (others are `other`,
//! calls without a team `none`), outcomes, reasons, modes and kinds from
//! fixed sets.
//!
//! Cost: `with_label_values` hashes every label string and takes the
//! vector's lock on each call, so the handles a call needs are cached per
//! route in small concurrent maps keyed by cheap values (method family,
//! team index, tool name, outcome), created on first use. Observing a
//! typical call allocates nothing (`benches/observe.rs`).

mod handles;
#[cfg(test)]
mod tests;

use std::fmt;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use tollgate_core::{CallElement, CallObserver, CallSummary, ErrorKind, McpMethod, Stage};

use handles::{RouteHandles, Teams, Upstream};

/// Distinct team label values before further teams count as `other`.
pub const MAX_TEAMS: usize = 100;

/// Buckets for durations, in seconds: 100 µs to 60 s. Shared with the
/// server's request duration histogram.
pub const BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Label for a value beyond a bound (an unknown tool, the 101st team).
const OTHER: &str = "other";

/// The metric families, registered once.
#[derive(Clone)]
struct Families {
    operation: HistogramVec,
    ttfb: HistogramVec,
    bytes_in: IntCounterVec,
    bytes_out: IntCounterVec,
    denials: IntCounterVec,
    hidden: IntCounterVec,
    upstream_errors: IntCounterVec,
}

/// The per-call metrics: a [`CallObserver`] of complete calls.
#[derive(Clone)]
pub struct CallMetrics {
    families: Families,
    routes: handles::Routes,
    teams: std::sync::Arc<Teams>,
}

impl fmt::Debug for CallMetrics {
    /// The metric families only (the handle caches are not interesting, and
    /// the server's documentation test counts the families in this output).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.families;
        f.debug_struct("CallMetrics")
            .field("operation", &m.operation)
            .field("ttfb", &m.ttfb)
            .field("bytes_in", &m.bytes_in)
            .field("bytes_out", &m.bytes_out)
            .field("denials", &m.denials)
            .field("hidden", &m.hidden)
            .field("upstream_errors", &m.upstream_errors)
            .finish_non_exhaustive()
    }
}

impl Families {
    fn new() -> prometheus::Result<Families> {
        let histogram = |name: &str, help: &str, labels: &[&str]| {
            HistogramVec::new(HistogramOpts::new(name, help).buckets(BUCKETS.to_vec()), labels)
        };
        let counter = |name: &str, help: &str, labels: &[&str]| IntCounterVec::new(Opts::new(name, help), labels);
        Ok(Families {
            operation: histogram(
                "mcp_server_operation_duration_seconds",
                "Duration of each MCP operation (JSON-RPC request) through the gateway, to the end of its answer.",
                &["route", "mcp_method_name", "gen_ai_tool_name", "outcome", "team"],
            )?,
            ttfb: histogram(
                "tollgate_time_to_first_byte_seconds",
                "Time from request received to the upstream's response headers.",
                &["route", "method"],
            )?,
            bytes_in: counter(
                "tollgate_request_bytes_total",
                "Request body bytes received from clients.",
                &["route", "method", "team"],
            )?,
            bytes_out: counter(
                "tollgate_response_bytes_total",
                "Response body bytes sent to clients, counted while streaming.",
                &["route", "method", "team"],
            )?,
            denials: counter(
                "tollgate_policy_denials_total",
                "Calls the policies denied, by reason (deny, deny_missing_scope, error) and mode.",
                &["route", "reason", "mode"],
            )?,
            hidden: counter(
                "tollgate_policy_hidden_entries_total",
                "List entries the policies hid from callers (or would hide, in observe mode).",
                &["route", "mode"],
            )?,
            upstream_errors: counter(
                "tollgate_upstream_errors_total",
                "Upstream failures by route and kind (unavailable, timeout).",
                &["route", "kind"],
            )?,
        })
    }
}

impl CallMetrics {
    /// Create the metrics and register them on `registry`.
    ///
    /// # Errors
    ///
    /// When a metric of the same name is already registered.
    pub fn register(registry: &Registry) -> prometheus::Result<CallMetrics> {
        let families = Families::new()?;
        let m = &families;
        registry.register(Box::new(m.operation.clone()))?;
        registry.register(Box::new(m.ttfb.clone()))?;
        registry.register(Box::new(m.bytes_in.clone()))?;
        registry.register(Box::new(m.bytes_out.clone()))?;
        registry.register(Box::new(m.denials.clone()))?;
        registry.register(Box::new(m.hidden.clone()))?;
        registry.register(Box::new(m.upstream_errors.clone()))?;
        Ok(CallMetrics {
            families,
            routes: handles::Routes::default(),
            teams: std::sync::Arc::default(),
        })
    }

    /// The operation of one element, or of a request without elements.
    fn operation(&self, route: &RouteHandles, s: &CallSummary, e: Option<&CallElement>, team: handles::Team<'_>) {
        let family = e.map_or(s.family, |e| e.family);
        let tool = match e {
            Some(e) if e.family == McpMethod::ToolsCall && e.definition.is_some() => e.name.as_ref(),
            _ => None,
        };
        let op = handles::Operation {
            family,
            tool,
            outcome: s.outcome(e),
            team,
        };
        route
            .operation(&self.families.operation, &op)
            .observe(s.answer.duration.as_secs_f64());
    }

    /// Denials, hidden entries and upstream failures: rare, so looked up
    /// (or created) only when they happen.
    fn exceptions(&self, route: &RouteHandles, s: &CallSummary) {
        let m = &self.families;
        match s.answer.error {
            Some(ErrorKind::UpstreamUnavailable) => route.upstream(m, Upstream::Unavailable).inc(),
            Some(ErrorKind::UpstreamTimeout) => route.upstream(m, Upstream::Timeout).inc(),
            _ => {}
        }
        if let Some(h) = s.hidden.filter(|h| h.entries > 0) {
            route.hidden(m, h.enforced).inc_by(h.entries as u64);
        }
        for p in s
            .elements
            .iter()
            .filter_map(|e| e.policy.as_ref())
            .filter(|p| !p.allowed)
        {
            m.denials
                .with_label_values(&[route.name(), p.reason, mode(p.enforced)])
                .inc();
        }
    }
}

/// The `mode` label of a policy outcome.
fn mode(enforced: bool) -> &'static str {
    if enforced { "enforce" } else { "observe" }
}

impl CallObserver for CallMetrics {
    /// Count a complete call; a strict-mode `Forwarding` summary is not a
    /// call yet and is ignored.
    fn observe(&self, s: &CallSummary) {
        if s.stage != Stage::Complete {
            return;
        }
        let route = self.routes.get(&s.route);
        let team = self.teams.label(s.team());
        let traffic = route.traffic(&self.families, s.family, team);
        traffic.bytes_in.inc_by(s.bytes_in);
        traffic.bytes_out.inc_by(s.answer.bytes_out);
        if let Some(ttfb) = s.answer.ttfb {
            traffic.ttfb(&self.families.ttfb, &s.route).observe(ttfb.as_secs_f64());
        }
        drop(traffic);
        if s.elements.is_empty() {
            self.operation(&route, s, None, team);
        }
        for e in &s.elements {
            self.operation(&route, s, Some(e), team);
        }
        self.exceptions(&route, s);
    }
}
