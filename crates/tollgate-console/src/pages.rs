//! The console's pages and assets: one HTML shell per page (an askama
//! template, `templates/shell.html`, checked when the crate builds, filled
//! with the page, the user and the CSRF token, every value escaped by the
//! engine), whose scripts draw the page from the JSON API; assets are
//! embedded in the binary at build time.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, StatusCode};

use crate::caller::Caller;
use crate::state::Shared;

/// Every file under `assets/`, by path.
static ASSETS: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// The pages: path under `/console`, `data-page`, title.
pub(crate) const PAGES: &[(&str, &str, &str)] = &[
    ("/console/", "overview", "Overview"),
    ("/console/audit", "audit", "Audit"),
    ("/console/audit/call", "call", "Call"),
    ("/console/spend", "spend", "Spend"),
    ("/console/catalog", "catalog", "Catalog"),
    ("/console/policies", "policies", "Policies"),
    ("/console/upstreams", "upstreams", "Upstreams"),
    ("/console/access", "access", "Access"),
];

/// A page: the shell for a signed-in user, else off to sign in.
pub(crate) async fn page(State(s): State<Arc<Shared>>, headers: HeaderMap, uri: http::Uri) -> Response {
    let Some(caller) = Caller::from_cookie(&s, &headers) else {
        return Redirect::to("/console/login").into_response();
    };
    let Some((_, page, title)) = PAGES.iter().find(|(p, _, _)| *p == uri.path()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let roles: Vec<&str> = caller.roles.iter().map(|r| r.as_str()).collect();
    let shell = Shell {
        title,
        page,
        csrf: caller.csrf.as_deref().unwrap_or_default(),
        user: &caller.subject,
        roles: &roles.join(" "),
    };
    match shell.render() {
        Ok(html) => Html(html).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The page shell: what the page's scripts start from.
#[derive(Template)]
#[template(path = "shell.html")]
struct Shell<'a> {
    title: &'a str,
    page: &'a str,
    csrf: &'a str,
    user: &'a str,
    roles: &'a str,
}

/// `GET /console/assets/{path}`.
pub(crate) async fn assets(Path(path): Path<String>) -> Response {
    let Some(bytes) = asset(&path) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let kind = match path.rsplit('.').next() {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "text/plain; charset=utf-8",
    };
    ([(CONTENT_TYPE, kind), (CACHE_CONTROL, "no-cache")], bytes).into_response()
}

fn asset(path: &str) -> Option<&'static [u8]> {
    ASSETS.iter().find(|(p, _)| *p == path).map(|(_, b)| *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_are_embedded_and_shell_values_escaped() {
        for name in ["console.js", "console.css", "vendor/uplot.min.js"] {
            assert!(asset(name).is_some(), "{name} embedded");
        }
        let shell = Shell {
            title: "Audit",
            page: "audit",
            csrf: "c\"1",
            user: "<alice>",
            roles: "admin",
        };
        let html = shell.render().unwrap();
        assert!(html.contains("alice") && !html.contains("<alice>"), "{html}");
        assert!(!html.contains("c\"1"), "{html}");
    }
}
