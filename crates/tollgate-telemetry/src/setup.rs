//! The trace pipeline: sampler, batch span processor, OTLP/HTTP exporter,
//! built from [`TracingSettings`] (the server's mapping of `[tracing]`) and
//! owned by a [`TracingGuard`].
//!
//! [`TracingGuard::new`] installs nothing process-wide (tests build several
//! side by side); [`init_tracing`] also installs the OpenTelemetry globals
//! (tracer provider, W3C Trace Context propagator) for the binary.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider};

use crate::counted::{CountingExporter, CountingProcessor, SpanCounts};
use crate::export::{ExportRuntime, OtlpHttp};
use crate::span::Spans;

/// Why tracing could not be set up or shut down.
#[derive(Debug, thiserror::Error)]
pub enum TracingError {
    /// The exporter's runtime thread could not be started.
    #[error("tracing: cannot start the exporter's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The HTTP client or the exporter could not be built.
    #[error("tracing: {0}")]
    Setup(String),
    /// Spans could not be flushed or the exporter shut down in time.
    #[error("tracing: {0}")]
    Flush(String),
}

/// How spans are exported.
#[derive(Debug, Clone, PartialEq)]
pub struct TracingSettings {
    /// Export spans; when off no pipeline is built.
    pub enabled: bool,
    /// The collector's OTLP/HTTP URL spans are posted to
    /// (`{endpoint}/v1/traces`).
    pub traces_url: String,
    /// The `service.name` resource attribute of every span.
    pub service_name: String,
    /// Share of new traces recorded, from 0.0 to 1.0 (a caller's sampled
    /// trace is always recorded: parent-based).
    pub sample_ratio: f64,
    /// Time one export request may take.
    pub timeout: Duration,
    /// Ended spans waiting for export; beyond it spans are dropped from
    /// the export, never from the request path.
    pub queue_capacity: NonZeroUsize,
}

/// Spans waiting longer than this are exported even if the batch is small.
const SCHEDULED_DELAY: Duration = Duration::from_secs(5);
/// Most spans in one export request.
const MAX_BATCH: usize = 512;

/// The running trace pipeline. Dropping it flushes the spans still queued
/// and shuts the exporter down (as [`TracingGuard::shutdown`], ignoring
/// errors); spans started afterwards record nothing.
#[derive(Debug)]
pub struct TracingGuard {
    provider: SdkTracerProvider,
    spans: Spans,
    counts: Arc<SpanCounts>,
    timeout: Duration,
    runtime: ExportRuntime,
    down: bool,
}

/// Build the pipeline when `settings.enabled` and install it process-wide
/// (global tracer provider and W3C Trace Context propagator). The binary
/// calls it once at start, beside [`crate::init`], and keeps the guard for
/// the life of the process.
///
/// # Errors
///
/// The exporter could not be built.
pub fn init_tracing(settings: &TracingSettings) -> Result<Option<TracingGuard>, TracingError> {
    let guard = TracingGuard::new(settings)?;
    if let Some(g) = &guard {
        g.install_global();
    }
    Ok(guard)
}

impl TracingGuard {
    /// Build the pipeline; `None` when tracing is off. Installs nothing
    /// process-wide.
    ///
    /// # Errors
    ///
    /// The exporter's runtime or HTTP client could not be built.
    pub fn new(settings: &TracingSettings) -> Result<Option<TracingGuard>, TracingError> {
        if !settings.enabled {
            return Ok(None);
        }
        let runtime = ExportRuntime::start()?;
        let http = OtlpHttp::new(runtime.handle(), settings.timeout)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(http)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.traces_url.as_str())
            .with_timeout(settings.timeout)
            .build()
            .map_err(|e| TracingError::Setup(format!("OTLP exporter: {e}")))?;
        let queue = settings.queue_capacity.get();
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(queue)
            .with_max_export_batch_size(MAX_BATCH.min(queue))
            .with_scheduled_delay(SCHEDULED_DELAY)
            .build();
        let counts = Arc::new(SpanCounts::default());
        let exporter = CountingExporter {
            inner: exporter,
            counts: counts.clone(),
        };
        let processor = CountingProcessor {
            inner: BatchSpanProcessor::builder(exporter).with_batch_config(batch).build(),
            counts: counts.clone(),
        };
        let resource = Resource::builder_empty()
            .with_service_name(settings.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let ratio = Sampler::TraceIdRatioBased(settings.sample_ratio);
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(Sampler::ParentBased(Box::new(ratio)))
            .with_resource(resource)
            .build();
        let spans = Spans::new(provider.tracer("tollgate"));
        Ok(Some(TracingGuard {
            provider,
            spans,
            counts,
            timeout: settings.timeout,
            runtime,
            down: false,
        }))
    }

    /// The span factory the request path uses (cheap to clone).
    pub fn spans(&self) -> Spans {
        self.spans.clone()
    }

    /// The pipeline's span totals, for the status metrics (shared: they
    /// keep counting after the call).
    pub fn span_counts(&self) -> Arc<SpanCounts> {
        self.counts.clone()
    }

    /// Make this pipeline the process-wide OpenTelemetry tracer provider,
    /// and W3C Trace Context the global propagator.
    pub fn install_global(&self) {
        opentelemetry::global::set_tracer_provider(self.provider.clone());
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    }

    /// Export every ended span now; returns once the collector answered
    /// (or the export failed).
    ///
    /// # Errors
    ///
    /// The export failed or timed out.
    pub fn force_flush(&self) -> Result<(), TracingError> {
        self.provider
            .force_flush()
            .map_err(|e| TracingError::Flush(format!("flush: {e}")))
    }

    /// Flush the queued spans, shut the exporter down and stop its thread.
    ///
    /// # Errors
    ///
    /// The last export failed or did not end in time.
    pub fn shutdown(mut self) -> Result<(), TracingError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), TracingError> {
        if std::mem::replace(&mut self.down, true) {
            return Ok(());
        }
        // One export (bounded by `timeout`) plus a margin for the hand-off.
        let result = self
            .provider
            .shutdown_with_timeout(self.timeout + Duration::from_secs(1))
            .map_err(|e| TracingError::Flush(format!("shutdown: {e}")));
        self.runtime.stop();
        result
    }
}

impl Drop for TracingGuard {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
