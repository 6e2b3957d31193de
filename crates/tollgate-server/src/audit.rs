//! Step 13 of the request path: the audit record and the usage metrics of
//! each call.
//!
//! The handler fills a [`CallAudit`] as the request goes (principal, era,
//! the messages and their policy decisions, whether it was forwarded) and
//! hands it the response; the response body is then metered as it streams
//! ([`crate::metered`]) and, when it ends or the client goes away, one
//! record per JSON-RPC request (per element of a batch) goes to the audit
//! sink and the usage metrics are updated. In strict durability the
//! handler also writes a `forwarding` record and waits for it to be on
//! disk before anything is forwarded ([`CallAudit::before_forwarding`]).

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::response::Response;
use tokio::time::Instant;
use tollgate_audit::{CallRecord, Capture, Decision as Audited, Durability, Outcome, Phase, PolicyMode, Recorded};
use tollgate_core::{Era, ErrorKind, McpMethod, Principal};
use tollgate_mcp::{Call, McpError, Message};
use tollgate_policy::Decision;
use tollgate_telemetry::{ClientSpan, McpCall, ServerSpan};

use crate::metered::{MeteredBody, Metering, Sent};
use crate::rescue::status_and_code;
use crate::{Shared, Upstream};

/// One JSON-RPC message of the request, as audited.
#[derive(Debug, Clone)]
pub(crate) struct Element {
    pub(crate) jsonrpc_id: Option<String>,
    pub(crate) method: String,
    pub(crate) name: Option<String>,
    pub(crate) decision: Option<Decision>,
}

impl Element {
    /// A GET stream or session DELETE, audited under its HTTP method.
    pub(crate) fn http(method: &str) -> Element {
        Element {
            jsonrpc_id: None,
            method: method.to_owned(),
            name: None,
            decision: None,
        }
    }
}

/// What is known of a request so far; becomes its audit records.
pub(crate) struct CallAudit {
    pub(crate) shared: Arc<Shared>,
    pub(crate) up: Arc<Upstream>,
    pub(crate) start: Instant,
    time: SystemTime,
    request_id: String,
    pub(crate) client_ip: Option<IpAddr>,
    pub(crate) principal: Option<Arc<Principal>>,
    pub(crate) era: Option<Era>,
    pub(crate) version: Option<&'static str>,
    pub(crate) elements: Vec<Element>,
    pub(crate) bytes_in: u64,
    /// Bytes of a request body forwarded unread without a length, counted
    /// as they stream to the upstream; replaces `bytes_in` at the end.
    pub(crate) streamed_in: Option<Arc<AtomicU64>>,
    pub(crate) trace_id: Option<String>,
    pub(crate) forwarded: bool,
    pub(crate) ttfb: Option<Duration>,
    /// The method family when it is not that of the first message (GET
    /// streams, session DELETEs).
    pub(crate) family: Option<McpMethod>,
    /// The request's server span, ended with the response body.
    span: Option<ServerSpan>,
    /// The upstream call's client span.
    client: Option<ClientSpan>,
    /// Opt-in capture of the call's arguments (and later its result).
    capture: Option<Capture>,
}

impl CallAudit {
    /// Start the record of a request received now.
    pub(crate) fn start(shared: Arc<Shared>, up: Arc<Upstream>, request_id: String, client_ip: Option<IpAddr>) -> Self {
        CallAudit {
            shared,
            up,
            start: Instant::now(),
            time: SystemTime::now(),
            request_id,
            client_ip,
            principal: None,
            era: None,
            version: None,
            elements: Vec::new(),
            bytes_in: 0,
            streamed_in: None,
            trace_id: None,
            forwarded: false,
            ttfb: None,
            family: None,
            span: None,
            client: None,
            capture: None,
        }
    }

    /// Note the classified call (era, version, messages) and start its
    /// server span, whose trace id the records carry.
    pub(crate) fn classified(&mut self, call: &Call, http_traceparent: Option<&str>) {
        self.era = Some(call.era);
        self.version = call.version.map(|v| v.as_str());
        self.scanned(&call.messages);
        let first = call.messages.first();
        let up = self.up.clone();
        let mcp = McpCall {
            target: first.and_then(|m| m.name.as_deref()),
            protocol_version: self.version,
            request_id: first.and_then(|m| m.id.as_ref()).map(|id| id.as_json()),
            meta_traceparent: call.messages.iter().find_map(|m| m.traceparent.as_deref()),
            header_traceparent: http_traceparent,
            started: Some(self.time),
            ..McpCall::new(&up.name, first.map_or("", |m| m.method.as_str()), call.era)
        };
        self.start_span(&mcp);
    }

    /// Capture the arguments of a single scanned `tools/call`,
    /// `prompts/get` or `resources/read` when the route opted in.
    pub(crate) fn capture_arguments(&mut self, body: &[u8]) {
        let policy = &self.up.audit.capture;
        let single_call = self.elements.len() == 1
            && self.elements.first().is_some_and(|e| {
                matches!(
                    McpMethod::from_name(&e.method),
                    McpMethod::ToolsCall | McpMethod::PromptsGet | McpMethod::ResourcesRead
                )
            });
        if !single_call || !(policy.captures_arguments() || policy.captures_results()) {
            return;
        }
        let mut capture = Capture::default();
        if let Some((value, truncated)) = policy.arguments(body) {
            capture.arguments = Some(value);
            capture.truncated |= truncated;
        }
        self.capture = Some(capture);
    }

    /// How much of the answer the records need to see: enough for error
    /// codes, or for the captured result.
    pub(crate) fn tee_limit(&self) -> Option<usize> {
        let results = self.capture.is_some() && self.up.audit.capture.captures_results();
        results.then(|| self.up.audit.capture.tee_limit())
    }

    /// Note the messages of a body read before the call could be
    /// classified (it may still be refused).
    pub(crate) fn scanned(&mut self, messages: &[Message]) {
        self.elements = messages
            .iter()
            .map(|m| Element {
                jsonrpc_id: m.id.as_ref().map(|id| id.as_json().to_owned()),
                method: m.method.clone(),
                name: m.name.clone(),
                decision: None,
            })
            .collect();
    }

    /// Start the server span of a GET stream or session DELETE.
    pub(crate) fn http_span(&mut self, method: &str, header_traceparent: Option<&str>) {
        let up = self.up.clone();
        self.start_span(&McpCall {
            header_traceparent,
            started: Some(self.time),
            ..McpCall::new(&up.name, method, Era::Legacy)
        });
    }

    /// Start the server span of the request.
    fn start_span(&mut self, call: &McpCall<'_>) {
        let span = self.shared.spans.server_span(call);
        self.trace_id = span.trace_id().map(|t| t.to_string());
        self.span = Some(span);
    }

    /// Start the client span of the upstream call; its `traceparent`
    /// replaces the caller's in `headers`.
    pub(crate) fn start_client_span(&mut self, headers: &mut http::HeaderMap) {
        let Some(span) = &self.span else { return };
        let client = span.client_span(&self.up.authority);
        match client.traceparent() {
            Some(tp) => headers.insert("traceparent", tp.header_value()),
            None => headers.remove("traceparent"),
        };
        self.client = Some(client);
    }

    /// Note the policy decisions, in message order.
    pub(crate) fn decided(&mut self, decisions: Vec<Option<Decision>>) {
        for (e, d) in self.elements.iter_mut().zip(decisions) {
            e.decision = d;
        }
    }

    /// The method family of the request, for metrics.
    pub(crate) fn family(&self) -> McpMethod {
        if let Some(f) = self.family {
            return f;
        }
        self.elements.first().map_or(McpMethod::Other, |e| {
            if e.method.is_empty() {
                McpMethod::Response
            } else {
                McpMethod::from_name(&e.method)
            }
        })
    }

    /// Strict durability: write a `forwarding` record per message and wait
    /// until it is on disk.
    ///
    /// # Errors
    ///
    /// `audit_unavailable` when a record could not be made durable.
    pub(crate) async fn before_forwarding(&self) -> Result<(), McpError> {
        let sink = &self.shared.audit;
        if sink.durability() != Durability::Strict {
            return Ok(());
        }
        for rec in self.records(Phase::Forwarding, &Sent::default()) {
            if let Err(e) = sink.record_durable(rec).await {
                tracing::error!(error = %e, route = %self.up.name, "audit record not durable: call refused");
                return Err(McpError::new(ErrorKind::AuditUnavailable, "Audit trail unavailable"));
            }
        }
        Ok(())
    }

    /// Wrap the response so that its records are written when its body
    /// ends.
    pub(crate) fn attach(self, res: Response) -> Response {
        let kind = res.extensions().get::<ErrorKind>().copied();
        let status = res.status().as_u16();
        let sse = res
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let metering = Metering::new(self, status, kind, sse);
        res.map(|body| Body::new(MeteredBody::new(body, metering)))
    }

    /// Write the records of the finished request, end its spans and update
    /// the metrics.
    pub(crate) fn finish(&mut self, sent: &Sent) {
        self.end_spans(sent);
        if let Some(count) = &self.streamed_in {
            self.bytes_in = count.load(Relaxed);
        }
        match sent.kind {
            Some(ErrorKind::UpstreamUnavailable) => self.shared.metrics.upstream_error(&self.up.label, "unavailable"),
            Some(ErrorKind::UpstreamTimeout) => self.shared.metrics.upstream_error(&self.up.label, "timeout"),
            _ => {}
        }
        let elapsed = self.start.elapsed();
        let m = &self.shared.calls;
        let route = &*self.up.label;
        let team = self.principal.as_ref().and_then(|p| p.team.as_deref());
        m.transferred(route, self.family(), team, self.bytes_in, sent.bytes);
        if let Some(ttfb) = self.ttfb {
            m.first_byte(route, self.family(), ttfb);
        }
        for e in self.elements_or_one().iter() {
            let tool = (e.method == "tools/call").then_some(e.name.as_deref()).flatten();
            let tool = tool.filter(|t| self.shared.catalog.knows(&self.up.name, t));
            let family = self.family.unwrap_or_else(|| McpMethod::from_name(&e.method));
            let outcome = sent.outcome(e.jsonrpc_id.as_deref(), &e.decision);
            m.operation(route, family, tool, outcome, team, elapsed);
        }
        for rec in self.records(Phase::Complete, sent) {
            if self.shared.audit.record(rec) == Recorded::Dropped {
                tracing::warn!(route = %self.up.name, "audit record dropped: queue full");
            }
        }
    }

    /// The capture for the record, with the result when it was asked for.
    fn captured(&self, sent: &Sent) -> Option<Box<Capture>> {
        let mut capture = self.capture.clone()?;
        if let Some(tee) = &sent.tee
            && let Some((value, truncated)) = self.up.audit.capture.result(tee, sent.bytes <= tee.len() as u64)
        {
            capture.result = Some(value);
            capture.truncated |= truncated;
        }
        Some(Box::new(capture))
    }

    fn end_spans(&mut self, sent: &Sent) {
        if let Some(mut client) = self.client.take() {
            match sent.kind.filter(|_| self.ttfb.is_none()) {
                Some(kind) => client.set_error(kind.as_str(), "upstream call failed"),
                None => client.set_http_status(sent.status),
            }
            client.end();
        }
        let Some(mut span) = self.span.take() else { return };
        span.set_http_status(sent.status);
        let first = self.elements.first().and_then(|e| e.jsonrpc_id.as_deref());
        if let Some(code) = sent.rpc_error(first) {
            span.set_jsonrpc_error(code, sent.kind.map_or("JSON-RPC error", ErrorKind::as_str));
        }
        span.end();
    }

    fn elements_or_one(&self) -> Cow<'_, [Element]> {
        if self.elements.is_empty() {
            Cow::Owned(vec![Element::http("")])
        } else {
            Cow::Borrowed(&self.elements)
        }
    }

    /// One record per message (one for a request that was never
    /// classified); sizes are shared out evenly across a batch.
    fn records(&self, phase: Phase, sent: &Sent) -> Vec<CallRecord> {
        let elements = self.elements_or_one();
        let n = elements.len() as u64;
        let estimator = &self.shared.estimator;
        elements
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let share = |total: u64| total / n + u64::from(i == 0) * (total % n);
                let mut rec = self.up.audit.record(self.time, self.request_id.clone());
                rec.phase = phase;
                rec.batch_index = (n > 1).then(|| u32::try_from(i).unwrap_or(u32::MAX));
                rec.jsonrpc_id.clone_from(&e.jsonrpc_id);
                rec.trace_id.clone_from(&self.trace_id);
                rec.principal.clone_from(&self.principal);
                rec.era = self.era;
                rec.protocol_version = self.version.map(Cow::Borrowed);
                rec.method = (!e.method.is_empty()).then(|| Cow::Owned(e.method.clone()));
                rec.name.clone_from(&e.name);
                if e.method == "tools/call" {
                    let catalog = &self.shared.catalog;
                    rec.definition_hash = e.name.as_deref().and_then(|t| catalog.definition(&self.up.name, t));
                }
                rec.decision = audited(self.shared.policy.is_some(), e.decision.as_ref());
                rec.credential = if self.forwarded || phase == Phase::Forwarding {
                    self.up.audit.credential
                } else {
                    tollgate_audit::CredentialKind::None
                };
                if phase == Phase::Complete {
                    rec.capture = self.captured(sent);
                    rec.status = Some(sent.status);
                    rec.rpc_error = sent.rpc_error(e.jsonrpc_id.as_deref());
                    rec.error = sent.kind.map(|k| Cow::Borrowed(k.as_str()));
                    (rec.bytes_in, rec.bytes_out) = (share(self.bytes_in), share(sent.bytes));
                    rec.tokens = estimator.estimate(rec.bytes_out);
                    rec.catalog = tollgate_audit::is_catalog(McpMethod::from_name(&e.method));
                    if let Some(t) = self.ttfb {
                        rec.set_ttfb(t);
                    }
                    rec.set_duration(self.start.elapsed());
                } else {
                    rec.bytes_in = share(self.bytes_in);
                }
                rec
            })
            .collect()
    }
}

/// The JSON-RPC code of a gateway error kind.
pub(crate) fn rpc_code(kind: ErrorKind) -> i64 {
    i64::from(status_and_code(kind).1)
}

/// The audited form of a policy decision.
fn audited(policy: bool, d: Option<&Decision>) -> Audited {
    let Some(d) = d.filter(|_| policy) else {
        return Audited::default();
    };
    Audited {
        outcome: match (d.allowed, d.enforced) {
            (true, _) => Outcome::Allow,
            (false, true) => Outcome::Deny,
            (false, false) => Outcome::ObserveDeny,
        },
        mode: if d.enforced {
            PolicyMode::Enforce
        } else {
            PolicyMode::Observe
        },
        policies: d.determining_policy_ids.clone(),
        reason: Some(Cow::Borrowed(d.reason.as_str())),
    }
}
