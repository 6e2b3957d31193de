//! Per-call metrics (request path step 13): MCP operation duration, time
//! to first byte, bytes in and out, policy denials and hidden list entries.
//!
//! Every label is bounded: routes come from configuration, methods from the
//! fixed MCP method families, tools from the names the upstream listed
//! (others are `other`), teams from the first [`MAX_TEAMS`] seen (others
//! are `other`), outcomes and reasons from fixed sets.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashSet;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use tollgate_core::McpMethod;

use super::{BUCKETS, OTHER};

/// Distinct team label values before further teams count as `other`.
pub(crate) const MAX_TEAMS: usize = 100;

/// Label for calls without a team (open routes, tokens without the claim).
const NO_TEAM: &str = "none";

/// The per-call metrics.
#[derive(Clone, Debug)]
pub(crate) struct CallMetrics {
    operation: HistogramVec,
    ttfb: HistogramVec,
    bytes_in: IntCounterVec,
    bytes_out: IntCounterVec,
    denials: IntCounterVec,
    hidden: IntCounterVec,
    teams: Arc<DashSet<String>>,
}

impl CallMetrics {
    pub(crate) fn register(registry: &Registry) -> prometheus::Result<CallMetrics> {
        let histogram = |name: &str, help: &str, labels: &[&str]| {
            HistogramVec::new(HistogramOpts::new(name, help).buckets(BUCKETS.to_vec()), labels)
        };
        let counter = |name: &str, help: &str, labels: &[&str]| IntCounterVec::new(Opts::new(name, help), labels);
        let m = CallMetrics {
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
            teams: Arc::new(DashSet::new()),
        };
        registry.register(Box::new(m.operation.clone()))?;
        registry.register(Box::new(m.ttfb.clone()))?;
        registry.register(Box::new(m.bytes_in.clone()))?;
        registry.register(Box::new(m.bytes_out.clone()))?;
        registry.register(Box::new(m.denials.clone()))?;
        registry.register(Box::new(m.hidden.clone()))?;
        Ok(m)
    }

    /// The bounded label of a team.
    fn team<'a>(&self, team: Option<&'a str>) -> &'a str {
        let Some(team) = team else { return NO_TEAM };
        if self.teams.contains(team) {
            return team;
        }
        if self.teams.len() < MAX_TEAMS {
            self.teams.insert(team.to_owned());
            return team;
        }
        OTHER
    }

    pub(crate) fn operation(
        &self,
        route: &str,
        method: McpMethod,
        tool: Option<&str>,
        outcome: &str,
        team: Option<&str>,
        elapsed: Duration,
    ) {
        let method = method.as_str();
        let tool = tool.unwrap_or(if method == "tools/call" { OTHER } else { "" });
        self.operation
            .with_label_values(&[route, method, tool, outcome, self.team(team)])
            .observe(elapsed.as_secs_f64());
    }

    pub(crate) fn first_byte(&self, route: &str, family: McpMethod, ttfb: Duration) {
        self.ttfb
            .with_label_values(&[route, family.as_str()])
            .observe(ttfb.as_secs_f64());
    }

    pub(crate) fn transferred(&self, route: &str, family: McpMethod, team: Option<&str>, bytes_in: u64, out: u64) {
        let labels = [route, family.as_str(), self.team(team)];
        self.bytes_in.with_label_values(&labels).inc_by(bytes_in);
        self.bytes_out.with_label_values(&labels).inc_by(out);
    }

    pub(crate) fn denial(&self, route: &str, reason: &str, mode: &str) {
        self.denials.with_label_values(&[route, reason, mode]).inc();
    }

    pub(crate) fn hidden(&self, route: &str, n: usize, mode: &str) {
        self.hidden.with_label_values(&[route, mode]).inc_by(n as u64);
    }
}
