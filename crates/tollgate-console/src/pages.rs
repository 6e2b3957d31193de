//! The console's pages and assets: one HTML shell per page (filled with
//! the page, the user and the CSRF token, every value escaped), whose
//! scripts draw the page from the JSON API; assets are embedded in the
//! binary at build time.

use std::sync::Arc;

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
    let shell = asset("shell.html").map(String::from_utf8_lossy).unwrap_or_default();
    let roles: Vec<&str> = caller.roles.iter().map(|r| r.as_str()).collect();
    let html = shell
        .replace("{{title}}", &escape(title))
        .replace("{{page}}", &escape(page))
        .replace("{{csrf}}", &escape(caller.csrf.as_deref().unwrap_or_default()))
        .replace("{{user}}", &escape(&caller.subject))
        .replace("{{roles}}", &escape(&roles.join(" ")));
    Html(html).into_response()
}

/// `GET /console/assets/{path}`.
pub(crate) async fn assets(Path(path): Path<String>) -> Response {
    let Some(bytes) = asset(&path).filter(|_| path != "shell.html") else {
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

/// `text` with HTML's special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_and_scripts_are_embedded_and_values_escaped() {
        for name in ["shell.html", "console.js", "console.css", "vendor/uplot.min.js"] {
            assert!(asset(name).is_some(), "{name} embedded");
        }
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }
}
