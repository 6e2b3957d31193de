//! The spans of one request: a `SERVER` span for the MCP call the gateway
//! serves and a `CLIENT` span for each upstream call it makes, named and
//! attributed after the OpenTelemetry MCP semantic conventions.
//!
//! The server starts the server span once it knows the call (after the
//! body scan, or from the standard headers), back-dated to the request's
//! arrival; the parent is the caller's `params._meta.traceparent`, else its
//! HTTP `traceparent` header (then linked when both are present). With
//! tracing off, every type here is a plain value: no allocation, no lock,
//! and the trace id of the caller's context is still reported for the
//! audit record.

use std::borrow::Cow;
use std::time::SystemTime;

use opentelemetry::trace::{Link, Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, Span};
use tollgate_core::Era;

use crate::context::{RemoteParent, TraceId, Traceparent};

/// Makes the spans of requests. Cheap to clone; [`Spans::disabled`] (the
/// default) makes spans that record nothing.
#[derive(Debug, Clone, Default)]
pub struct Spans {
    tracer: Option<SdkTracer>,
}

/// What the server knows of a request when its span starts.
#[derive(Debug, Clone, Copy)]
pub struct McpCall<'a> {
    /// The route (`/mcp/{route}`), recorded as `tollgate.route`.
    pub route: &'a str,
    /// The JSON-RPC method verbatim (`tools/call`); for a request without
    /// one, the name the server labels it with (`stream`).
    pub method: &'a str,
    /// `params.name` (tools, prompts) or `params.uri` (resources).
    pub target: Option<&'a str>,
    /// The protocol era, recorded as `tollgate.era`.
    pub era: Era,
    /// The MCP protocol version the client named.
    pub protocol_version: Option<&'a str>,
    /// The JSON-RPC id as JSON text (`7` or `"abc"`), for requests.
    pub request_id: Option<&'a str>,
    /// `params._meta.traceparent`, when the body was scanned.
    pub meta_traceparent: Option<&'a str>,
    /// The HTTP `traceparent` header.
    pub header_traceparent: Option<&'a str>,
    /// When the request arrived (the span's start); `None` is now.
    pub started: Option<SystemTime>,
}

impl<'a> McpCall<'a> {
    /// A call on `route` with `method`; every other field empty.
    pub fn new(route: &'a str, method: &'a str, era: Era) -> McpCall<'a> {
        McpCall {
            route,
            method,
            target: None,
            era,
            protocol_version: None,
            request_id: None,
            meta_traceparent: None,
            header_traceparent: None,
            started: None,
        }
    }

    /// The caller's context: `_meta` first, then the header.
    fn parent(&self) -> Option<RemoteParent> {
        self.meta_traceparent
            .and_then(RemoteParent::parse)
            .or_else(|| self.header_traceparent.and_then(RemoteParent::parse))
    }

    /// The header's context when `_meta` named a different one: linked, as
    /// the conventions ask for the transport's context.
    fn link(&self, parent: Option<&RemoteParent>) -> Option<RemoteParent> {
        let header = self.header_traceparent.and_then(RemoteParent::parse)?;
        (self.meta_traceparent.is_some() && parent != Some(&header)).then_some(header)
    }

    /// `{mcp.method.name} {target}` for tools and prompts, else the method.
    fn span_name(&self) -> Cow<'static, str> {
        match (self.method, self.target) {
            ("tools/call" | "prompts/get", Some(target)) => format!("{} {target}", self.method).into(),
            ("", _) => Cow::Borrowed("mcp"),
            (method, _) => method.to_owned().into(),
        }
    }

    /// The attributes shared by the server span and its client spans.
    fn call_attributes(&self) -> Vec<KeyValue> {
        let mut out = Vec::with_capacity(4);
        if !self.method.is_empty() {
            out.push(KeyValue::new("mcp.method.name", self.method.to_owned()));
        }
        let target = self.target.map(str::to_owned);
        match (self.method, target) {
            ("tools/call", Some(t)) => {
                out.push(KeyValue::new("gen_ai.tool.name", t));
                out.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
            ("prompts/get", Some(t)) => out.push(KeyValue::new("gen_ai.prompt.name", t)),
            ("resources/read" | "resources/subscribe" | "resources/unsubscribe", Some(t)) => {
                out.push(KeyValue::new("mcp.resource.uri", t));
            }
            _ => {}
        }
        if let Some(v) = self.protocol_version {
            out.push(KeyValue::new("mcp.protocol.version", v.to_owned()));
        }
        if let Some(id) = self.request_id {
            out.push(KeyValue::new("jsonrpc.request.id", json_id_text(id).to_owned()));
        }
        out.push(KeyValue::new("tollgate.route", self.route.to_owned()));
        out
    }
}

/// A JSON id's string form: a string without its quotes, a number as is.
fn json_id_text(id: &str) -> &str {
    let inner = id.strip_prefix('"').and_then(|s| s.strip_suffix('"'));
    match inner {
        Some(s) if !s.contains('\\') => s,
        _ => id,
    }
}

impl Spans {
    /// Spans that record nothing (tracing off).
    pub fn disabled() -> Spans {
        Spans::default()
    }

    pub(crate) fn new(tracer: SdkTracer) -> Spans {
        Spans { tracer: Some(tracer) }
    }

    /// Whether spans are recorded and exported at all.
    pub fn is_enabled(&self) -> bool {
        self.tracer.is_some()
    }

    /// Start the server span of a request. With tracing off this only
    /// reads the caller's trace id.
    pub fn server_span(&self, call: &McpCall<'_>) -> ServerSpan {
        let parent = call.parent();
        let Some(tracer) = &self.tracer else {
            return ServerSpan {
                on: None,
                trace_id: parent.map(|p| p.trace_id()),
            };
        };
        let parent_cx = match &parent {
            Some(p) => Context::new().with_remote_span_context(p.span_context()),
            None => Context::new(),
        };
        let name = call.span_name();
        let links = call
            .link(parent.as_ref())
            .map(|l| vec![Link::with_context(l.span_context())]);
        let mut builder = tracer
            .span_builder(name.clone())
            .with_kind(SpanKind::Server)
            .with_start_time(call.started.unwrap_or_else(SystemTime::now));
        builder.links = links;
        let mut span = tracer.build_with_context(builder, &parent_cx);
        let shared = if span.is_recording() {
            let shared = call.call_attributes();
            span.set_attributes(shared.iter().cloned());
            span.set_attributes([
                KeyValue::new("tollgate.era", call.era.as_str()),
                KeyValue::new("network.transport", "tcp"),
                KeyValue::new("network.protocol.name", "http"),
            ]);
            shared
        } else {
            Vec::new()
        };
        let trace_id = TraceId::from_otel(span.span_context().trace_id());
        ServerSpan {
            on: Some(Box::new(On {
                tracer: tracer.clone(),
                name,
                shared,
                span,
            })),
            trace_id,
        }
    }
}

/// The server span of one request. Ends when [`ServerSpan::end`] is called
/// or when it is dropped (e.g. with the response body it travels with).
#[derive(Debug)]
pub struct ServerSpan {
    /// Boxed: with tracing off a span is two words, so that the request's
    /// future does not carry an SDK span's worth of bytes it never uses.
    on: Option<Box<On>>,
    trace_id: Option<TraceId>,
}

#[derive(Debug)]
struct On {
    tracer: SdkTracer,
    name: Cow<'static, str>,
    shared: Vec<KeyValue>,
    span: Span,
}

impl ServerSpan {
    /// The trace this request belongs to: the span's, or with tracing off
    /// the caller's (`None` when the caller sent no valid context).
    pub fn trace_id(&self) -> Option<TraceId> {
        self.trace_id
    }

    /// Whether this span is recorded (tracing on and the trace sampled).
    pub fn is_recording(&self) -> bool {
        self.on.as_ref().is_some_and(|on| on.span.is_recording())
    }

    /// Start the `CLIENT` span of a call to the upstream at `authority`
    /// (`host[:port]`, recorded as `server.address` and `server.port`).
    pub fn client_span(&self, authority: &http::uri::Authority) -> ClientSpan {
        let Some(on) = &self.on else {
            return ClientSpan { span: None };
        };
        let parent_cx = Context::new().with_remote_span_context(on.span.span_context().clone());
        let builder = on.tracer.span_builder(on.name.clone()).with_kind(SpanKind::Client);
        let mut span = on.tracer.build_with_context(builder, &parent_cx);
        if span.is_recording() {
            span.set_attributes(on.shared.iter().cloned());
            span.set_attribute(KeyValue::new("server.address", authority.host().to_owned()));
            if let Some(port) = authority.port_u16() {
                span.set_attribute(KeyValue::new("server.port", i64::from(port)));
            }
        }
        ClientSpan {
            span: Some(Box::new(span)),
        }
    }

    /// Record the HTTP status of the gateway's response.
    pub fn set_http_status(&mut self, status: u16) {
        if let Some(span) = self.recording() {
            span.set_attribute(KeyValue::new("http.response.status_code", i64::from(status)));
        }
    }

    /// Record a failure answered with a JSON-RPC error: `error.type` and
    /// `rpc.response.status_code` are the code, the status the message.
    pub fn set_jsonrpc_error(&mut self, code: i64, message: &str) {
        if let Some(span) = self.recording() {
            let code = code.to_string();
            span.set_attribute(KeyValue::new("rpc.response.status_code", code.clone()));
            fail(span, code, message);
        }
    }

    /// Record a failure of another kind: `error.type` is `error_type` (low
    /// cardinality, e.g. `tool_error`, `timeout`), the status `message`.
    pub fn set_error(&mut self, error_type: &str, message: &str) {
        if let Some(span) = self.recording() {
            fail(span, error_type.to_owned(), message);
        }
    }

    /// End the span now.
    pub fn end(mut self) {
        if let Some(on) = &mut self.on {
            on.span.end();
        }
    }

    fn recording(&mut self) -> Option<&mut Span> {
        self.on.as_mut().map(|on| &mut on.span).filter(|s| s.is_recording())
    }
}

fn fail(span: &mut Span, error_type: String, message: &str) {
    span.set_attribute(KeyValue::new("error.type", error_type));
    span.set_status(Status::error(message.to_owned()));
}

/// The span of one upstream call, child of the request's server span.
#[derive(Debug)]
pub struct ClientSpan {
    span: Option<Box<Span>>,
}

impl ClientSpan {
    /// The `traceparent` to send upstream (replacing the caller's), `None`
    /// with tracing off: the caller's context then passes through as sent.
    pub fn traceparent(&self) -> Option<Traceparent> {
        self.span
            .as_ref()
            .and_then(|s| Traceparent::from_span_context(s.span_context()))
    }

    /// Record the upstream's HTTP status.
    pub fn set_http_status(&mut self, status: u16) {
        if let Some(span) = self.recording() {
            span.set_attribute(KeyValue::new("http.response.status_code", i64::from(status)));
        }
    }

    /// Record a failed upstream call (`error.type`, e.g. `timeout`,
    /// `connect`, or the HTTP status as text).
    pub fn set_error(&mut self, error_type: &str, message: &str) {
        if let Some(span) = self.recording() {
            fail(span, error_type.to_owned(), message);
        }
    }

    /// End the span now (it also ends when dropped).
    pub fn end(mut self) {
        if let Some(span) = &mut self.span {
            span.end();
        }
    }

    fn recording(&mut self) -> Option<&mut Span> {
        self.span.as_deref_mut().filter(|s| s.is_recording())
    }
}
