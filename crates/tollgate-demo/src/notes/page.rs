//! The pages a user's browser sees at Notes' authorization server: the
//! sign-in picker (no password: a demo) and error pages. Every value is
//! HTML-escaped; no page may be framed, cached or run scripts.

use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, X_FRAME_OPTIONS};
use axum::response::{Html, IntoResponse, Response};

const STYLE: &str = "body{font-family:system-ui,sans-serif;background:#fbf7ee;color:#2b2417;margin:0}\
main{max-width:30rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 3px #0002}\
h1{font-size:1.3rem}input,button{font-size:1rem;padding:.4rem .6rem;border-radius:6px;border:1px solid #998}\
button{background:#b7791f;color:#fff;border-color:#b7791f;cursor:pointer}.warn{color:#8a4b00}";

/// `text` with HTML's special characters escaped.
fn escape(text: &str) -> String {
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

/// A page with `title` and `body` (already HTML).
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Notes — {title}</title><style>{STYLE}</style></head>\
         <body><main><h1>{title}</h1>{body}</main></body></html>",
        title = escape(title)
    );
    let headers = [
        (X_FRAME_OPTIONS, "DENY"),
        (
            CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        ),
        (CACHE_CONTROL, "no-store"),
    ];
    (status, headers, Html(html)).into_response()
}

/// What the sign-in picker shows.
pub(crate) struct Picker<'a> {
    /// The authorization request's id.
    pub(crate) request: &'a str,
    /// The client asking.
    pub(crate) client: &'a str,
    /// The users offered.
    pub(crate) users: &'a [String],
    /// The name filled in.
    pub(crate) hint: &'a str,
    /// A warning above the form.
    pub(crate) warning: Option<&'a str>,
}

/// The sign-in picker: a user name, the hint filled in, the known users offered.
pub(crate) fn picker(status: StatusCode, p: &Picker<'_>) -> Response {
    let options: String = p
        .users
        .iter()
        .map(|u| format!("<option value=\"{0}\">{0}</option>", escape(u)))
        .collect();
    let names: Vec<String> = p.users.iter().map(|u| format!("<code>{}</code>", escape(u))).collect();
    let warning = p
        .warning
        .map_or_else(String::new, |w| format!("<p class=\"warn\">{}</p>", escape(w)));
    let body = format!(
        "{warning}<p><code>{client}</code> asks to read and write your notes. Demo users: {names} \
         (no password).</p>\
         <form method=\"post\" action=\"/authorize\">\
         <input type=\"hidden\" name=\"request\" value=\"{request}\">\
         <label>User <input name=\"login\" list=\"users\" value=\"{hint}\" autocomplete=\"off\" required></label>\
         <datalist id=\"users\">{options}</datalist> <button type=\"submit\">Sign in and allow</button></form>",
        names = names.join(", "),
        client = escape(p.client),
        request = escape(p.request),
        hint = escape(p.hint),
    );
    page(status, "Sign in to Notes as", &body)
}

/// An error shown to the user, who is sent nowhere.
pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    page(
        status,
        "Not signed in",
        &format!("<p class=\"warn\">{}</p>", escape(message)),
    )
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_what_html_reads() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
