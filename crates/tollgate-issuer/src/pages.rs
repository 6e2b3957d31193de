//! The pages a user's browser sees at the authorization server: the
//! development user picker, the consent page, error pages, and short
//! notices other crates show (the vault's connect page). Each is an askama
//! template under `templates/`, checked when the crate builds, with every
//! value HTML-escaped by the engine; every page forbids framing and
//! caching and runs no script.

use askama::Template;
use axum::response::{Html, IntoResponse, Response};
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, X_FRAME_OPTIONS};

use crate::error::OAuthError;
use crate::records::{Request, User};

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    code: &'a str,
    description: &'a str,
}

#[derive(Template)]
#[template(path = "picker.html")]
struct Picker<'a> {
    title: &'a str,
    request: &'a str,
    logins: &'a [String],
}

#[derive(Template)]
#[template(path = "consent.html")]
struct Consent<'a> {
    title: &'a str,
    name: &'a str,
    host: &'a str,
    who: &'a str,
    client: &'a str,
    redirect: &'a str,
    servers: &'a [String],
    scopes: &'a [String],
    request: &'a str,
    csrf: &'a str,
}

#[derive(Template)]
#[template(path = "notice.html")]
struct Notice<'a> {
    title: &'a str,
    paragraphs: &'a [String],
}

/// A rendered page: no framing (clickjacking), no caching, no scripts.
fn respond(status: StatusCode, rendered: askama::Result<String>) -> Response {
    let Ok(html) = rendered else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "page could not be rendered").into_response();
    };
    (
        status,
        [
            (X_FRAME_OPTIONS, "DENY"),
            (
                CONTENT_SECURITY_POLICY,
                // No form-action: the consent form's answer redirects to the
                // client, whose scheme may be its own (cursor://).
                "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
            ),
            (CACHE_CONTROL, "no-store"),
        ],
        Html(html),
    )
        .into_response()
}

/// A short notice: a title and paragraphs of plain text (escaped).
pub fn notice(status: StatusCode, title: &str, paragraphs: &[String]) -> Response {
    respond(status, Notice { title, paragraphs }.render())
}

/// An error shown to the user (the client could not be trusted with it).
pub(crate) fn error_page(e: &OAuthError) -> Response {
    let page = ErrorPage {
        title: "Sign-in refused",
        code: e.code,
        description: &e.description,
    };
    respond(e.status(), page.render())
}

/// The development user picker.
pub(crate) fn picker(request: &str, logins: &[String]) -> Response {
    let page = Picker {
        title: "Sign in",
        request,
        logins,
    };
    respond(StatusCode::OK, page.render())
}

/// The consent page: who the client acts for and what it asks.
pub(crate) fn consent(request_id: &str, csrf: &str, req: &Request, user: &User, host: &str) -> Response {
    let page = Consent {
        title: "Allow access?",
        name: req.client_name.as_deref().unwrap_or("An unnamed client"),
        host,
        who: user.email.as_deref().unwrap_or(&user.subject),
        client: &req.client_id,
        redirect: &req.redirect_uri,
        servers: &req.resources,
        scopes: &req.scopes,
        request: request_id,
        csrf,
    };
    respond(StatusCode::OK, page.render())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(res: Response) -> String {
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn values_are_escaped_and_pages_cannot_be_framed() {
        let res = notice(StatusCode::OK, "<b>t</b>", &["<script>x</script> & 'y'".to_owned()]);
        assert_eq!(res.headers()[X_FRAME_OPTIONS], "DENY");
        let html = body(res).await;
        assert!(html.contains("script") && !html.contains("<script>"), "{html}");
        assert!(!html.contains("<b>t</b>") && !html.contains("'y'"), "{html}");
        let html = body(picker("r\"1", &["a<b".to_owned()])).await;
        assert!(html.contains("value=\"r&#34;1\""), "{html}");
        assert!(!html.contains("a<b"), "{html}");
    }
}
