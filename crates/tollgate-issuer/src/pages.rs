//! The pages a user's browser sees at the authorization server: the
//! development user picker, the consent page and error pages. Every value
//! is HTML-escaped; every page forbids framing and caching.

use axum::response::{Html, IntoResponse, Response};
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, X_FRAME_OPTIONS};

use crate::error::OAuthError;
use crate::records::{Request, User};

/// `text` with HTML's special characters escaped (pages of other crates
/// use it, such as the vault's connect page).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
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

/// A page: no framing (clickjacking), no caching, no scripts.
pub fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Tollgate — {title}</title><style>{STYLE}</style></head>\
         <body><main><h1>{title}</h1>{body}</main></body></html>",
        title = escape(title)
    );
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

const STYLE: &str = "body{font-family:system-ui,sans-serif;background:#f6f7f9;color:#1c2330;margin:0}\
main{max-width:34rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 3px #0002}\
h1{font-size:1.3rem}dt{font-weight:600;margin-top:.6rem}dd{margin:0}code{word-break:break-all}\
button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem;border-radius:6px;border:1px solid #889;cursor:pointer}\
button[value=allow]{background:#1d5fd6;color:#fff;border-color:#1d5fd6}.warn{color:#8a4b00}";

/// An error shown to the user (the client could not be trusted with it).
pub(crate) fn error_page(e: &OAuthError) -> Response {
    let body = format!(
        "<p>This sign-in cannot go on: <code>{}</code></p><p>{}</p>",
        escape(e.code),
        escape(&e.description)
    );
    page(e.status(), "Sign-in refused", &body)
}

/// The development user picker.
pub(crate) fn picker(request: &str, logins: &[String]) -> Response {
    let options: String = logins
        .iter()
        .map(|l| format!("<option value=\"{0}\">{0}</option>", escape(l)))
        .collect();
    let body = format!(
        "<p class=\"warn\">Development sign-in: pick a user of <code>[[dev_issuer.users]]</code>.</p>\
         <form method=\"post\" action=\"/oauth/signin\">\
         <input type=\"hidden\" name=\"request\" value=\"{}\">\
         <label>User <input name=\"login\" list=\"users\" autocomplete=\"off\"></label>\
         <datalist id=\"users\">{options}</datalist> <button type=\"submit\" value=\"allow\">Sign in</button></form>",
        escape(request)
    );
    page(StatusCode::OK, "Sign in", &body)
}

/// The consent page: who the client acts for and what it asks.
pub(crate) fn consent(request_id: &str, csrf: &str, req: &Request, user: &User, host: &str) -> Response {
    let name = req.client_name.as_deref().unwrap_or("An unnamed client");
    let list = |items: &[String]| -> String {
        if items.is_empty() {
            return "<dd>none</dd>".into();
        }
        items
            .iter()
            .map(|i| format!("<dd><code>{}</code></dd>", escape(i)))
            .collect()
    };
    let body = format!(
        "<p><strong>{name}</strong> wants to use MCP servers at {host} as <strong>{who}</strong>.</p>\
         <dl><dt>Client</dt><dd><code>{client}</code></dd>\
         <dt>It will receive the answer at</dt><dd><code>{redirect}</code></dd>\
         <dt>Servers</dt>{servers}<dt>Scopes</dt>{scopes}</dl>\
         <p>Allow it? You can revoke this later on the console.</p>\
         <form method=\"post\" action=\"/oauth/consent\">\
         <input type=\"hidden\" name=\"request\" value=\"{request}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
         <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
        name = escape(name),
        host = escape(host),
        who = escape(user.email.as_deref().unwrap_or(&user.subject)),
        client = escape(&req.client_id),
        redirect = escape(&req.redirect_uri),
        servers = list(&req.resources),
        scopes = list(&req.scopes),
        request = escape(request_id),
        csrf = escape(csrf),
    );
    page(StatusCode::OK, "Allow access?", &body)
}
