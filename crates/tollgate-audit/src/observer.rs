//! The audit trail's observer of finished calls (request path step 13) and
//! the strict-mode record written before forwarding (before step 11).
//!
//! The server builds one [`CallSummary`] per request and hands it to each
//! of the route's observers; [`AuditObserver`] is the one that turns it into
//! call records, one per JSON-RPC message (one for a request refused before
//! its messages were known), and queues them on the [`AuditHandle`]. It
//! reads the summary only; it does not know the metrics or the span.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

use tollgate_core::{CallElement, CallObserver, CallSummary, McpMethod, PolicyVerdict, Stage};

use crate::capture::Capture;
use crate::error::AuditError;
use crate::record::{CallRecord, CredentialKind, Decision, Gate, Outcome, Phase, PolicyMode};
use crate::route::RouteAudit;
use crate::sink::{AuditHandle, Durability, Recorded};

/// Writes the records of one route's calls.
#[derive(Debug, Clone)]
pub struct AuditObserver {
    handle: AuditHandle,
    route: RouteAudit,
}

impl AuditObserver {
    /// The observer of a route's calls, writing to `handle`.
    pub fn new(handle: AuditHandle, route: RouteAudit) -> AuditObserver {
        AuditObserver { handle, route }
    }

    /// The route's audit settings (capture policy, credential kind).
    pub fn route(&self) -> &RouteAudit {
        &self.route
    }

    /// The records of a summary: `complete` ones for [`Stage::Complete`],
    /// `forwarding` ones for [`Stage::Forwarding`].
    pub fn records(&self, summary: &CallSummary) -> Vec<CallRecord> {
        let phase = match summary.stage {
            Stage::Forwarding => Phase::Forwarding,
            Stage::Complete => Phase::Complete,
        };
        self.records_at(summary, phase)
    }

    /// Strict durability: write a `forwarding` record per message of the
    /// call about to be forwarded and wait until each is on disk. Returns at
    /// once when durability is not strict or audit is disabled.
    ///
    /// # Errors
    ///
    /// The sink's error when a record could not be made durable (logged
    /// here): the server refuses the call (fail closed).
    pub async fn before_forwarding(&self, summary: &CallSummary) -> Result<(), AuditError> {
        if self.handle.durability() != Durability::Strict || !self.handle.is_enabled() {
            return Ok(());
        }
        for rec in self.records_at(summary, Phase::Forwarding) {
            if let Err(e) = self.handle.record_durable(rec).await {
                tracing::error!(error = %e, route = %self.route.route, "audit record not durable: call refused");
                return Err(e);
            }
        }
        Ok(())
    }

    /// One record per element (one for a request without elements); sizes
    /// are shared out evenly across a batch, the remainder on the first.
    fn records_at(&self, s: &CallSummary, phase: Phase) -> Vec<CallRecord> {
        if s.elements.is_empty() {
            let unread = CallElement {
                jsonrpc_id: None,
                method: Default::default(),
                family: s.family,
                name: None,
                policy: None,
                definition: None,
                catalog: None,
                rpc_error: s.answer.rpc_error,
            };
            return vec![self.record(s, phase, &unread, Share { index: 0, count: 1 })];
        }
        let count = s.elements.len() as u64;
        let share = |index: usize| Share { index, count };
        s.elements
            .iter()
            .enumerate()
            .map(|(i, e)| self.record(s, phase, e, share(i)))
            .collect()
    }

    /// The record of one element.
    fn record(&self, s: &CallSummary, phase: Phase, e: &CallElement, share: Share) -> CallRecord {
        let mut rec = self.route.record(s.received, &*s.request_id);
        rec.phase = phase;
        rec.batch_index = (share.count > 1).then(|| u32::try_from(share.index).unwrap_or(u32::MAX));
        rec.jsonrpc_id = e.jsonrpc_id.as_deref().map(str::to_owned);
        rec.trace_id = s.trace_id.as_deref().map(str::to_owned);
        rec.principal.clone_from(&s.principal);
        rec.era = s.era;
        rec.protocol_version = s.protocol_version.map(Cow::Borrowed);
        rec.method = method(e);
        rec.name = e.name.as_deref().map(|n| recorded_name(&e.method, n));
        rec.rate_limit_rule.clone_from(&s.limited_by);
        rec.upstream_grant = s.upstream_grant.as_ref().map(|g| crate::record::UpstreamGrantRecord {
            id: g.id.to_string(),
            issuer: g.issuer.to_string(),
            subject: g.subject.as_deref().map(str::to_owned),
            scopes: g.scopes.to_vec(),
        });
        if let Some(b) = &s.budget {
            rec.budget = Some(b.id.clone());
            rec.budget_warning = b.warn;
        }
        if let Some(via) = &s.via {
            rec.virtual_server = Some(via.virtual_server.clone());
            rec.exposed_name = match &via.exposed_name {
                Some(n) if is_task_method(&e.method) => Some(Arc::from(task_fingerprint(n))),
                other => other.clone(),
            };
        }
        if matches!(e.method.as_str(), "tools/call" | "prompts/get" | "resources/read") {
            rec.definition_hash.clone_from(&e.definition);
        }
        if let Some(c) = &e.catalog {
            rec.definition_approved_by.clone_from(&c.approved_by);
            rec.definition_approved_at = c.approved_at;
            rec.gate = Some(Gate {
                outcome: Cow::Borrowed(c.outcome),
                mode: if c.enforced {
                    PolicyMode::Enforce
                } else {
                    PolicyMode::Observe
                },
            });
        }
        rec.decision = match &e.catalog {
            Some(c) if !c.proceeds() => refused_by_catalog(),
            _ => decision(e.policy.as_ref()),
        };
        rec.credential = if s.forwarded || phase == Phase::Forwarding {
            self.route.credential
        } else {
            CredentialKind::None
        };
        rec.bytes_in = share.of(s.bytes_in);
        if phase == Phase::Complete {
            self.complete(&mut rec, s, e, share);
        }
        rec
    }

    /// What only a finished call has: answer, sizes, timings, capture.
    fn complete(&self, rec: &mut CallRecord, s: &CallSummary, e: &CallElement, share: Share) {
        let answer = &s.answer;
        rec.capture = self.capture(s);
        rec.status = Some(answer.status);
        rec.rpc_error = e.rpc_error;
        rec.error = answer.error.map(|k| Cow::Borrowed(k.as_str()));
        rec.bytes_out = share.of(answer.bytes_out);
        rec.tokens = self.route.tokens(rec.bytes_out);
        rec.catalog = McpMethod::from_name(&e.method) == McpMethod::ToolsList;
        if let Some(ttfb) = answer.ttfb {
            rec.set_ttfb(ttfb);
        }
        rec.set_duration(answer.duration);
    }

    /// The captured arguments (and result) of a single call, when the route
    /// opted in and the server kept the request body.
    fn capture(&self, s: &CallSummary) -> Option<Box<Capture>> {
        let policy = &self.route.capture;
        if !policy.applies_to(&s.elements) {
            return None;
        }
        let payload = s.payload.as_ref()?;
        let request = payload.request.as_ref()?;
        let mut capture = Capture::default();
        if let Some((value, truncated)) = policy.arguments(request) {
            capture.arguments = Some(value);
            capture.truncated |= truncated;
        }
        let result = payload.response.as_ref();
        if let Some((value, truncated)) = result.and_then(|r| policy.result(r, payload.response_complete)) {
            capture.result = Some(value);
            capture.truncated |= truncated;
        }
        Some(Box::new(capture))
    }
}

impl CallObserver for AuditObserver {
    /// Queue the records of a complete call (never blocks); a full queue
    /// drops them, counted by the sink and logged here. A `Forwarding`
    /// summary is written by [`AuditObserver::before_forwarding`] instead.
    fn observe(&self, summary: &CallSummary) {
        if summary.stage != Stage::Complete || !self.handle.is_enabled() {
            return;
        }
        for rec in self.records_at(summary, Phase::Complete) {
            if self.handle.record(rec) == Recorded::Dropped {
                tracing::warn!(route = %self.route.route, "audit record dropped: queue full");
            }
        }
    }
}

/// An element's place in its batch, for sharing out sizes.
#[derive(Debug, Clone, Copy)]
struct Share {
    index: usize,
    count: u64,
}

impl Share {
    /// This element's share of `total`: the first takes the remainder.
    fn of(self, total: u64) -> u64 {
        total / self.count + u64::from(self.index == 0) * (total % self.count)
    }
}

/// The method as recorded: absent when unknown, borrowed when it is a
/// family's own name.
/// Whether `method` names its target by a task id (tasks extension).
fn is_task_method(method: &str) -> bool {
    method.starts_with("tasks/")
}

/// The name a record keeps: a task id only as its fingerprint (a task id
/// is a capability to read the task's result), any other name as it is.
fn recorded_name(method: &str, name: &str) -> String {
    if is_task_method(method) {
        task_fingerprint(name)
    } else {
        name.to_owned()
    }
}

/// `task:` and the first 16 hex digits of the id's SHA-256: the records
/// of one task's polls share it, and it names no task to anyone.
pub fn task_fingerprint(id: &str) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, id.as_bytes());
    let mut out = String::with_capacity(21);
    out.push_str("task:");
    for b in d.as_ref().iter().take(8) {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn method(e: &CallElement) -> Option<Cow<'static, str>> {
    if e.method.is_empty() {
        None
    } else if e.family.as_str() == e.method {
        Some(Cow::Borrowed(e.family.as_str()))
    } else {
        Some(Cow::Owned(e.method.to_string()))
    }
}

/// The decision of a call the catalog gate refused (quarantined or
/// blocked, enforced): denied for reason `catalog`, before any policy.
fn refused_by_catalog() -> Decision {
    Decision {
        outcome: Outcome::Deny,
        mode: PolicyMode::Enforce,
        policies: Vec::new(),
        reason: Some(Cow::Borrowed("catalog")),
    }
}

/// The audited form of a policy verdict; not evaluated without one.
fn decision(verdict: Option<&PolicyVerdict>) -> Decision {
    let Some(v) = verdict else {
        return Decision::default();
    };
    Decision {
        outcome: match (v.allowed, v.enforced) {
            (true, _) => Outcome::Allow,
            (false, true) => Outcome::Deny,
            (false, false) => Outcome::ObserveDeny,
        },
        mode: if v.enforced {
            PolicyMode::Enforce
        } else {
            PolicyMode::Observe
        },
        policies: v.policies.to_vec(),
        reason: Some(Cow::Borrowed(v.reason)),
    }
}

#[cfg(test)]
mod tests;
