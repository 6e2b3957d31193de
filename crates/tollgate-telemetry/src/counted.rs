//! Counts of the trace pipeline, for the gateway's status metrics: sampled
//! spans handed to the batch processor, and spans the exporter delivered or
//! failed to deliver. What was handed over but neither delivered nor failed
//! is still queued, or was dropped because the queue was full (the
//! OpenTelemetry batch processor does not report its drops).
//!
//! Both wrappers sit around the SDK's parts in [`crate::TracingGuard`] and
//! only add an atomic increment per span or per batch.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry::trace::SpanContext;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

/// Running totals of one trace pipeline since it started.
#[derive(Debug, Default)]
pub struct SpanCounts {
    ended: AtomicU64,
    exported: AtomicU64,
    failed: AtomicU64,
}

/// A snapshot of [`SpanCounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpanStats {
    /// Sampled spans that ended and were handed to the batch processor.
    pub ended: u64,
    /// Spans in export requests the collector accepted.
    pub exported: u64,
    /// Spans in export requests that failed (collector down, timeout,
    /// refusal): they are not retried.
    pub failed: u64,
}

impl SpanStats {
    /// Spans still queued, or dropped because the queue was full.
    pub fn unexported(&self) -> u64 {
        self.ended.saturating_sub(self.exported + self.failed)
    }
}

impl SpanCounts {
    /// The totals now.
    pub fn stats(&self) -> SpanStats {
        SpanStats {
            ended: self.ended.load(Relaxed),
            exported: self.exported.load(Relaxed),
            failed: self.failed.load(Relaxed),
        }
    }
}

/// Counts the sampled spans that reach `inner`.
#[derive(Debug)]
pub(crate) struct CountingProcessor<P> {
    pub(crate) inner: P,
    pub(crate) counts: Arc<SpanCounts>,
}

impl<P: SpanProcessor> SpanProcessor for CountingProcessor<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if SpanContext::is_sampled(&span.span_context) {
            self.counts.ended.fetch_add(1, Relaxed);
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Counts the spans `inner` delivers, and those it fails to.
#[derive(Debug)]
pub(crate) struct CountingExporter<E> {
    pub(crate) inner: E,
    pub(crate) counts: Arc<SpanCounts>,
}

impl<E: SpanExporter> SpanExporter for CountingExporter<E> {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        let n = batch.len() as u64;
        let counts = self.counts.clone();
        let export = self.inner.export(batch);
        async move {
            let result = export.await;
            let counter = if result.is_ok() {
                &counts.exported
            } else {
                &counts.failed
            };
            counter.fetch_add(n, Relaxed);
            result
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
