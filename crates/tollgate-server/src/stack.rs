//! The public router and its layer stack, defined once, in reading order.

use std::any::Any;
use std::sync::Arc;

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::middleware::from_fn_with_state;
use axum::response::Response;
use axum::routing::{any, get};
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use tollgate_core::ErrorKind;
use tower::ServiceBuilder;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};

use crate::guard::{Admission, admit, track};
use crate::handler::handle;
use crate::rescue::reject;
use crate::{Shared, Upstream};

/// Build the public router: one route per upstream at `/mcp/{name}`, and
/// the layers every request passes, outermost first.
pub(crate) fn build(shared: Arc<Shared>, upstreams: &[Arc<Upstream>], allowed_origins: Arc<[String]>) -> Router {
    let mut router = Router::new();
    for up in upstreams {
        if let Some(resource) = &up.resource {
            // RFC 9728 metadata, so clients learn where to get a token.
            let body = Bytes::copy_from_slice(resource.metadata_json());
            let metadata = move || async move { ([(CONTENT_TYPE, "application/json")], body) };
            router = router.route(resource.metadata_path(), get(metadata));
        }
        let (shared, up) = (shared.clone(), up.clone());
        let path = format!("/mcp/{}", up.name);
        router = router.route(&path, any(move |req| handle(shared.clone(), up.clone(), req)));
    }
    let router = router.fallback(|| async { reject(ErrorKind::UnknownRoute, "Not found: no MCP server at this path") });
    let admission = Admission {
        max_header_bytes: shared.limits.max_header_bytes,
        allowed_origins,
    };
    let layers = ServiceBuilder::new()
        // A panic in any layer below becomes a JSON-RPC 500, not a dropped connection.
        .layer(CatchPanicLayer::custom(panic_response))
        // Every request gets an x-request-id (kept if the client sent one) that is
        // forwarded upstream and echoed to the client.
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(PropagateRequestIdLayer::x_request_id())
        // Metrics sit outside the limits so that rejected requests are counted.
        .layer(from_fn_with_state(shared.metrics.clone(), track))
        // Oversized headers are refused before anything decodes them, and
        // browsers from other origins get 403 (DNS-rebinding protection).
        .layer(from_fn_with_state(Arc::new(admission), admit))
        // Past the concurrency limit, requests are shed at once with 503
        // instead of queueing behind slow upstreams.
        .layer(HandleErrorLayer::new(|_: axum::BoxError| async {
            reject(ErrorKind::Overloaded, "Server overloaded")
        }))
        .layer(LoadShedLayer::new())
        .layer(GlobalConcurrencyLimitLayer::new(shared.limits.max_concurrent_requests));
    router.layer(layers)
}

fn panic_response(_: Box<dyn Any + Send + 'static>) -> Response {
    tracing::error!("request handler panicked");
    reject(ErrorKind::Internal, "Internal error")
}
