//! The public front, above the request path: every request is admitted
//! (`phase::admit`), then routed by its path to an MCP route's phases
//! (`phases`), a virtual server (`vserver`), a protected-resource
//! metadata document, or the authorization server (`tollgate-issuer`);
//! anything else is answered "not found".

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::Request;
use http::header::CONTENT_TYPE;
use tollgate_core::ErrorKind;
use tracing::field::display;

use crate::phase::admit::{Admission, admit};
use crate::phases::call;
use crate::rescue::{Rejection, render};
use crate::route::Route;
use crate::vserver::VirtualRoute;

/// The public front: every request is admitted, then routed.
#[derive(Debug)]
pub(crate) struct Front {
    /// Header size and origin checks.
    pub(crate) admission: Admission,
    /// `/mcp/{name}` → route.
    pub(crate) routes: HashMap<Box<str>, Arc<Route>>,
    /// `/mcp/{name}` → virtual server.
    pub(crate) virtuals: HashMap<Box<str>, Arc<VirtualRoute>>,
    /// RFC 9728 metadata documents by path.
    pub(crate) metadata: HashMap<Box<str>, Bytes>,
    /// The authorization server's endpoints, when it is enabled.
    pub(crate) front_door: Option<axum::Router>,
}

impl Front {
    /// Whether the route `name` is a member of a virtual server.
    pub(crate) fn is_member(&self, name: &str) -> bool {
        self.virtuals
            .values()
            .any(|v| v.members.iter().any(|m| &*m.route.name == name))
    }

    /// Admit and route one request. The authorization server's paths are
    /// answered before the origin check: its script endpoints serve
    /// browser clients of any origin (CORS), and its pages guard their
    /// forms themselves (sign-in cookie, CSRF token).
    pub(crate) async fn call(&self, req: Request<Body>) -> Response {
        if let Some(door) = &self.front_door
            && tollgate_issuer::is_own_path(req.uri().path())
        {
            return match tower::ServiceExt::oneshot(door.clone(), req).await {
                Ok(res) => res,
                Err(never) => match never {},
            };
        }
        if let Err(rejection) = admit(&self.admission, req.headers()) {
            return render(&rejection);
        }
        let path = req.uri().path();
        if let Some(route) = self.routes.get(path) {
            tracing::Span::current().record("route", display(&route.name));
            return call(route, req).await;
        }
        if let Some(v) = self.virtuals.get(path) {
            tracing::Span::current().record("route", display(&v.name));
            // Boxed: a virtual server's future holds a member route's whole
            // request path besides its own work; unboxed, every route's
            // request future would be that large, and be copied as such.
            return Box::pin(crate::vserver::call(v, req)).await;
        }
        if let Some(doc) = self.metadata.get(path)
            && req.method() == http::Method::GET
        {
            let mut res = Response::new(Body::from(doc.clone()));
            res.headers_mut()
                .insert(CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
            return res;
        }
        render(&Rejection::new(
            ErrorKind::UnknownRoute,
            "Not found: no MCP server at this path",
        ))
    }
}
