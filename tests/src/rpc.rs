//! HTTP and JSON-RPC helpers for black-box tests: requests in either era,
//! assertions on the gateway's answers, a policy directory, and a minimal
//! JSON server.

use crate::repo_root;

/// A client for raw HTTP assertions (no connection reuse surprises).
pub fn http() -> reqwest::Client {
    install_crypto_provider();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// A client that follows no redirect: a test reads each `Location` itself
/// (OAuth and sign-in flows).
pub fn http_no_redirect() -> reqwest::Client {
    install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// reqwest is built with rustls but no default crypto provider (the
/// gateway configures its own): tests use aws-lc-rs, like the gateway.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// The standard headers of a modern request plus the JSON content type.
pub fn modern_headers(method: &str, name: Option<&str>) -> reqwest::header::HeaderMap {
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("content-type", "application/json".parse().unwrap());
    h.insert("accept", "application/json, text/event-stream".parse().unwrap());
    h.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
    h.insert("mcp-method", method.parse().unwrap());
    if let Some(n) = name {
        h.insert("mcp-name", n.parse().unwrap());
    }
    h
}

/// POST a modern-era request: standard headers for `method` / `name`, and
/// `body` as given (it may disagree with the headers on purpose).
pub async fn modern_call(
    url: String,
    method: &str,
    name: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    http()
        .post(url)
        .headers(modern_headers(method, name))
        .body(body)
        .send()
        .await
        .unwrap()
}

/// A modern-era JSON-RPC request body.
pub fn modern_body(id: u64, method: &str, params: serde_json::Value) -> String {
    let mut params = params;
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Assert a JSON-RPC error response: status, code and echoed id.
pub async fn assert_rpc_error(
    res: reqwest::Response,
    status: u16,
    code: i64,
    id: serde_json::Value,
) -> serde_json::Value {
    assert_eq!(res.status().as_u16(), status, "status");
    assert_eq!(res.headers()["content-type"], "application/json");
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["id"], id, "{body}");
    body
}

/// The JSON-RPC message of an answer, JSON or SSE (the last `data:` event
/// that carries an `id`).
pub async fn rpc_message(res: reqwest::Response) -> serde_json::Value {
    let sse = res
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let text = res.text().await.unwrap();
    if !sse {
        return serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    }
    text.lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in the stream: {text}"))
}

/// A policy directory for a test: the repository's schema and `policies`
/// as `test.cedar`.
pub fn policy_dir(policies: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo_root().join("policies/schema.cedarschema"),
        dir.path().join("schema.cedarschema"),
    )
    .unwrap();
    std::fs::write(dir.path().join("test.cedar"), policies).unwrap();
    dir
}

/// A legacy-era (2025-06-18) JSON-RPC POST of `body` to `url`, with the
/// bearer token `bearer` (the whole header value) and in `session` when
/// given.
pub fn legacy_request(
    url: &str,
    bearer: Option<&str>,
    session: Option<&str>,
    body: &serde_json::Value,
) -> reqwest::RequestBuilder {
    let mut req = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(b) = bearer {
        req = req.header("authorization", b);
    }
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-06-18");
    }
    req
}

/// Open a legacy session on `url` (`initialize`, then
/// `notifications/initialized`); its `Mcp-Session-Id`.
pub async fn legacy_session(url: &str, bearer: Option<&str>) -> String {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tollgate-tests", "version": "1"}}});
    let res = legacy_request(url, bearer, None, &init).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = res.bytes().await;
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let res = legacy_request(url, bearer, Some(&session), &initialized)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    session
}

/// The JSON a GET of `url` answers.
pub async fn get_json(url: &str) -> serde_json::Value {
    http().get(url).send().await.unwrap().json().await.unwrap()
}

/// Answer one HTTP/1.1 request on `stream` with `body` as JSON, then close:
/// a minimal server for documents such as a key set (JWKS), whose host is
/// stopped by aborting the task.
pub async fn answer_json(mut stream: tokio::net::TcpStream, body: String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 4096];
    let mut read = 0;
    while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") && read < buf.len() {
        match stream.read(&mut buf[read..]).await {
            Ok(0) | Err(_) => return,
            Ok(n) => read += n,
        }
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
}
