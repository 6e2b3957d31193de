//! Export of audit records as OpenTelemetry log records (OTLP/HTTP, JSON
//! encoding, `POST {endpoint}/v1/logs`), off by default.
//!
//! The writer thread hands each record it has written to a bounded queue
//! (`try_send`: a full queue drops the export, never the file record); a
//! task on the server's runtime batches them (`batch_records` or
//! `batch_interval`) and posts them. A failed post drops the batch and
//! counts it: the files still hold every record, and the chain hash sent
//! with each record lets a SIEM anchor the trail outside the host.
//!
//! Hand-written over `reqwest` rather than the OpenTelemetry SDK: the SDK's
//! batch processor does not report how many records it dropped, and only
//! `tollgate-telemetry` may install OpenTelemetry globals.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::chain::Hash;
use crate::error::AuditError;
use crate::record::{CallRecord, Outcome};
use crate::sink::Shared;

/// Where and how records are exported (the server maps it from
/// `[audit.otlp]`).
#[derive(Debug, Clone)]
pub struct OtlpSettings {
    /// The collector's base URL (`/v1/logs` is appended).
    pub endpoint: String,
    /// Time one export request may take.
    pub timeout: Duration,
    /// Records waiting for export before new ones are dropped.
    pub queue_capacity: usize,
    /// Most records per request.
    pub batch_records: usize,
    /// Longest wait before a partial batch is sent.
    pub batch_interval: Duration,
}

/// One record on its way to the collector.
#[derive(Debug)]
pub(crate) struct OtlpItem {
    time_ns: u64,
    trace_id: Option<String>,
    deny: bool,
    body: String,
    attributes: Vec<(&'static str, Value)>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum Value {
    StringValue(String),
    IntValue(String),
}

/// The writer's end of the export queue.
pub(crate) struct OtlpFeed {
    tx: mpsc::Sender<OtlpItem>,
}

impl OtlpFeed {
    /// The export of one written record (`line` is its exact text).
    pub(crate) fn item(&self, rec: &CallRecord, seq: u64, hash: &Hash, line: &[u8]) -> OtlpItem {
        let s = |v: &str| Value::StringValue(v.to_owned());
        let mut attributes = vec![
            ("tollgate.audit.seq", Value::IntValue(seq.to_string())),
            ("tollgate.audit.hash", Value::StringValue(hash.to_string())),
            ("tollgate.route", s(&rec.route)),
            ("tollgate.decision", s(rec.decision.outcome.as_str())),
        ];
        let optional = [
            ("mcp.method.name", rec.method.as_deref()),
            ("gen_ai.tool.name", rec.name.as_deref()),
            ("user.id", rec.principal.as_ref().map(|p| p.subject.as_str())),
            ("tollgate.team", rec.principal.as_ref().and_then(|p| p.team.as_deref())),
        ];
        attributes.extend(optional.into_iter().filter_map(|(k, v)| v.map(|v| (k, s(v)))));
        if let Some(status) = rec.status {
            attributes.push(("http.response.status_code", Value::IntValue(status.to_string())));
        }
        OtlpItem {
            time_ns: rec.time_unix_nanos(),
            trace_id: rec.trace_id.clone(),
            deny: matches!(rec.decision.outcome, Outcome::Deny | Outcome::ObserveDeny),
            body: String::from_utf8_lossy(line).into_owned(),
            attributes,
        }
    }

    /// Queue written records; a full queue drops (and counts) them.
    pub(crate) fn send(&self, items: Vec<OtlpItem>, shared: &Shared) {
        for item in items {
            if self.tx.try_send(item).is_err() {
                shared.otlp_dropped.fetch_add(1, Relaxed);
            }
        }
    }
}

/// Starts the export task.
pub(crate) struct OtlpExporter;

impl OtlpExporter {
    pub(crate) fn start(
        settings: OtlpSettings,
        shared: Arc<Shared>,
    ) -> Result<(OtlpFeed, tokio::task::JoinHandle<()>), AuditError> {
        let setup = |msg: String| AuditError::Setup {
            path: settings.endpoint.clone().into(),
            source: Arc::new(std::io::Error::other(msg)),
        };
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| setup("OTLP export needs a Tokio runtime".into()))?;
        // TLS with the gateway's one crypto provider, set explicitly: no
        // process-wide default provider is installed.
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| setup(format!("OTLP TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .build()
            .map_err(|e| setup(format!("OTLP client: {e}")))?;
        let (tx, rx) = mpsc::channel(settings.queue_capacity.max(1));
        let task = runtime.spawn(export_loop(rx, client, settings, shared));
        Ok((OtlpFeed { tx }, task))
    }
}

async fn export_loop(
    mut rx: mpsc::Receiver<OtlpItem>,
    client: reqwest::Client,
    settings: OtlpSettings,
    shared: Arc<Shared>,
) {
    let url = format!("{}/v1/logs", settings.endpoint);
    let max = settings.batch_records.max(1);
    let mut batch = Vec::with_capacity(max);
    loop {
        let Some(first) = rx.recv().await else { return };
        batch.push(first);
        let deadline = Instant::now() + settings.batch_interval;
        let mut open = true;
        while batch.len() < max {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(item)) => batch.push(item),
                Ok(None) => {
                    open = false;
                    break;
                }
                Err(_) => break,
            }
        }
        let n = batch.len() as u64;
        match post(&client, &url, &batch).await {
            Ok(()) => shared.otlp_exported.fetch_add(n, Relaxed),
            Err(error) => {
                tracing::warn!(%error, records = n, "audit OTLP export failed; records dropped from the export");
                shared.otlp_dropped.fetch_add(n, Relaxed)
            }
        };
        batch.clear();
        if !open {
            return;
        }
    }
}

async fn post(client: &reqwest::Client, url: &str, batch: &[OtlpItem]) -> Result<(), String> {
    let body = serde_json::to_vec(&request(batch)).map_err(|e| e.to_string())?;
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if resp.status().is_success() {
        Ok(())
    } else {
        Err(format!("collector answered {}", resp.status()))
    }
}

/// An `ExportLogsServiceRequest` in OTLP's JSON encoding.
fn request(batch: &[OtlpItem]) -> serde_json::Value {
    let observed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
        .to_string();
    let records: Vec<serde_json::Value> = batch
        .iter()
        .map(|i| {
            let attributes: Vec<serde_json::Value> = i
                .attributes
                .iter()
                .map(|(k, v)| serde_json::json!({ "key": k, "value": v }))
                .collect();
            let mut rec = serde_json::json!({
                "timeUnixNano": i.time_ns.to_string(),
                "observedTimeUnixNano": observed,
                "severityNumber": if i.deny { 13 } else { 9 },
                "severityText": if i.deny { "WARN" } else { "INFO" },
                "eventName": "tollgate.audit.call",
                "body": { "stringValue": i.body },
                "attributes": attributes,
            });
            if let Some(t) = i.trace_id.as_deref().filter(|t| t.len() == 32) {
                rec["traceId"] = serde_json::Value::String(t.to_owned());
            }
            rec
        })
        .collect();
    serde_json::json!({
        "resourceLogs": [{
            "resource": { "attributes": [
                { "key": "service.name", "value": { "stringValue": "tollgate" } },
            ]},
            "scopeLogs": [{
                "scope": { "name": "tollgate.audit", "version": env!("CARGO_PKG_VERSION") },
                "logRecords": records,
            }],
        }],
    })
}
