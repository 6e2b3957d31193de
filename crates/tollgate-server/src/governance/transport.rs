//! How the catalog sync reaches an upstream: the route's own connections,
//! `Host`, and the gateway's brokered credential for the upstream — the
//! same road a forwarded call takes, without a caller.

use std::time::Duration;

use async_trait::async_trait;
use axum::body::Body;
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request};
use http_body_util::{BodyExt as _, Limited};
use tollgate_catalog::{CatalogError, Outgoing, Reply, Transport};
use tollgate_mcp::headers::{METHOD, PROTOCOL_VERSION, SESSION_ID};

use tollgate_auth::CredentialBroker;

use crate::route::Route;
use crate::upstream::Upstream;

/// Largest sync answer read.
const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// The catalog sync's road to one route's upstream.
pub(crate) struct UpstreamTransport<'a> {
    /// The route's name (for the credential and the log).
    pub(crate) name: &'a str,
    pub(crate) upstream: &'a Upstream,
    /// The credential broker, when the upstream gets a credential.
    pub(crate) broker: Option<&'a CredentialBroker>,
    /// Deadline of each message.
    pub(crate) timeout: Duration,
}

impl<'a> UpstreamTransport<'a> {
    /// The road to `route`'s upstream.
    pub(crate) fn of(route: &'a Route, timeout: Duration) -> UpstreamTransport<'a> {
        UpstreamTransport {
            name: &route.name,
            upstream: &route.upstream,
            broker: route.brokered.then_some(&route.shared.broker),
            timeout,
        }
    }
}

impl UpstreamTransport<'_> {
    async fn request(
        &self,
        method: Method,
        body: Vec<u8>,
        headers: &[(http::HeaderName, &str)],
    ) -> Result<Reply, CatalogError> {
        let up = self.upstream;
        let mut req = Request::new(Body::from(body));
        *req.method_mut() = method;
        *req.uri_mut() = up.path.clone();
        let h = req.headers_mut();
        h.insert(HOST, up.host.clone());
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        for (name, value) in headers {
            let value = HeaderValue::from_str(value).map_err(|e| CatalogError::Sync(e.to_string()))?;
            h.insert(name.clone(), value);
        }
        if let Some(broker) = self.broker {
            let credential = broker.credential(self.name, None).await;
            let credential = credential.map_err(|e| CatalogError::Sync(format!("upstream credential: {e}")))?;
            if let Some(c) = credential {
                h.insert(c.name, c.value);
            }
        }
        let exchange = async {
            let res = up
                .client
                .send(&up.origin, &up.absolute, req)
                .await
                .map_err(|e| CatalogError::Sync(e.to_string()))?;
            read(res).await
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CatalogError::Sync(format!("no answer within {:?}", self.timeout)))?
    }
}

/// The whole answer as a sync reply.
async fn read(res: http::Response<crate::upstream::Pooled>) -> Result<Reply, CatalogError> {
    let (parts, body) = res.into_parts();
    let session = parts
        .headers
        .get(&SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let sse = tollgate_mcp::sse::is_event_stream(&parts.headers);
    let body: Bytes = Limited::new(body, MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| CatalogError::Sync(format!("answer unreadable: {e}")))?
        .to_bytes();
    let accepted = parts.status.is_success();
    Ok(Reply {
        accepted,
        refusal: (!accepted).then(|| format!("HTTP {}", parts.status)),
        session,
        sse,
        body,
    })
}

#[async_trait]
impl Transport for UpstreamTransport<'_> {
    async fn post(&self, message: Outgoing<'_>) -> Result<Reply, CatalogError> {
        let mut headers = vec![(PROTOCOL_VERSION, message.protocol_version)];
        if let Some(m) = message.method {
            headers.push((METHOD, m));
        }
        if let Some(s) = message.session {
            headers.push((SESSION_ID, s));
        }
        self.request(Method::POST, message.body, &headers).await
    }

    async fn end_session(&self, session: &str) {
        if let Err(e) = self.request(Method::DELETE, Vec::new(), &[(SESSION_ID, session)]).await {
            tracing::debug!(route = %self.name, error = %e, "catalog sync session not ended");
        }
    }
}
