//! The OTLP exporter's HTTP transport: the workspace's `reqwest` (rustls
//! with the aws-lc-rs provider, Web PKI roots), on a runtime of its own.
//!
//! The SDK's batch span processor exports from its own thread and blocks on
//! each export; a `reqwest` future needs a Tokio reactor. So every POST is
//! spawned onto a one-thread runtime owned by the tracing pipeline, and the
//! batch thread only waits for its result: exports never run on (or wait
//! for) the server's runtime, and shutting down from inside it is safe.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError, ResponseBodyTooLarge};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::TracingError;

/// Largest collector answer read (an `ExportTraceServiceResponse`).
const MAX_RESPONSE_BODY: usize = 64 * 1024;

/// The exporter's runtime: one thread, stopped by [`ExportRuntime::stop`].
#[derive(Debug)]
pub(crate) struct ExportRuntime {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ExportRuntime {
    pub(crate) fn start() -> Result<ExportRuntime, TracingError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(TracingError::Runtime)?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tollgate-otlp".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(TracingError::Runtime)?;
        Ok(ExportRuntime {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub(crate) fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// End the runtime; an export still under way is abandoned.
    pub(crate) fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ExportRuntime {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The HTTP client handed to the OTLP exporter.
#[derive(Debug)]
pub(crate) struct OtlpHttp {
    client: reqwest::Client,
    runtime: Handle,
}

impl OtlpHttp {
    /// A client whose requests (connection included) end after `timeout`.
    pub(crate) fn new(runtime: Handle, timeout: Duration) -> Result<OtlpHttp, TracingError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TracingError::Setup(format!("TLS setup: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .connect_timeout(timeout)
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tollgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| TracingError::Setup(format!("HTTP client setup: {e}")))?;
        Ok(OtlpHttp { client, runtime })
    }
}

#[async_trait]
impl HttpClient for OtlpHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let task = self.runtime.spawn(post(self.client.clone(), request));
        task.await?
    }
}

async fn post(client: reqwest::Client, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
    let request = reqwest::Request::try_from(request.map(reqwest::Body::from))?;
    let mut response = client.execute(request).await?;
    let status = response.status();
    let headers = std::mem::take(response.headers_mut());
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_RESPONSE_BODY {
            return Err(Box::new(ResponseBodyTooLarge::new()));
        }
        body.extend_from_slice(&chunk);
    }
    let mut answer = Response::new(Bytes::from(body));
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    Ok(answer)
}
