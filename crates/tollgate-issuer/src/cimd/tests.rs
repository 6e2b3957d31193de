//! The fetcher against a real local axum server serving documents (and
//! misbehaving), and the client_id URL rules. Raw TCP and TLS servers, for
//! what axum will not send, are in [`raw`].

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod raw;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use http::{HeaderMap, Uri};
use serde_json::json;
use tokio::net::TcpListener;

use super::transport::next_hop;
use super::*;

/// The document server: its base URL and the requests each path received.
#[derive(Clone)]
struct Docs {
    base: String,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl Docs {
    async fn start() -> Docs {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let docs = Docs {
            base,
            hits: Arc::default(),
        };
        let app = Router::new().fallback(answer).with_state(docs.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        docs
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    fn total_hits(&self) -> usize {
        self.hits.lock().unwrap().values().sum()
    }
}

fn document(client_id: &str, cache_control: &'static str, extra: serde_json::Value) -> Response {
    let mut doc =
        json!({"client_id": client_id, "client_name": "Test client", "redirect_uris": ["http://127.0.0.1:9/cb"]});
    doc.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let headers = [(CACHE_CONTROL, cache_control), (CONTENT_TYPE, "application/json")];
    (headers, doc.to_string()).into_response()
}

async fn answer(State(docs): State<Docs>, uri: Uri) -> Response {
    let path = uri.path().to_owned();
    *docs.hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    let me = docs.url(&path);
    let none = json!({});
    match path.as_str() {
        "/client" | "/other-client" => document(&me, "max-age=300", none),
        "/nocache" => document(&me, "no-store", none),
        "/mismatch" => document(&docs.url("/someone-else"), "max-age=300", none),
        "/secret" => document(&me, "max-age=300", json!({"client_secret": "hunter2"})),
        "/big" => document(&me, "max-age=300", json!({"padding": "x".repeat(70 * 1024)})),
        "/redirect" => ([(LOCATION, "/moved")], http::StatusCode::FOUND).into_response(),
        "/moved" => document(&docs.url("/redirect"), "max-age=300", none),
        "/redirect-away" => {
            let away = me
                .replace("127.0.0.1", "localhost")
                .replace("/redirect-away", "/client");
            ([(LOCATION, away)], http::StatusCode::TEMPORARY_REDIRECT).into_response()
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            document(&me, "max-age=300", none)
        }
        "/html" => ([(CONTENT_TYPE, "text/html")], "<p>hi</p>").into_response(),
        _ => http::StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

fn dev() -> CimdSettings {
    CimdSettings {
        development: true,
        ..CimdSettings::default()
    }
}

fn fetcher(settings: CimdSettings) -> CimdFetcher {
    CimdFetcher::new(settings).unwrap()
}

#[tokio::test]
async fn development_fetches_over_http() {
    let docs = Docs::start().await;
    let meta = fetcher(dev()).fetch(&docs.url("/client")).await.unwrap();
    assert_eq!(meta.client_id, docs.url("/client"));
    assert_eq!(meta.client_name.as_deref(), Some("Test client"));
    assert_eq!(meta.redirect_uris, ["http://127.0.0.1:9/cb"]);
    assert_eq!(meta.token_endpoint_auth_method, "none");
}

#[tokio::test]
async fn loopback_is_refused_outside_development() {
    let docs = Docs::start().await;
    let f = fetcher(CimdSettings::default());
    let https = docs.url("/client").replace("http://", "https://");
    match f.fetch(&https).await {
        Err(CimdError::PrivateAddress { addr, kind, .. }) => {
            assert_eq!(addr, IpAddr::from([127, 0, 0, 1]));
            assert_eq!(kind, "loopback");
        }
        other => panic!("expected PrivateAddress, got {other:?}"),
    }
    // A name goes through the guarded resolver, which refuses what it finds.
    let by_name = https.replace("127.0.0.1", "localhost");
    match f.fetch(&by_name).await {
        Err(e @ CimdError::PrivateAddress { .. }) => {
            assert!(e.to_string().contains("localhost"), "{e}");
            assert!(e.to_string().contains(&by_name), "{e}");
        }
        other => panic!("expected PrivateAddress, got {other:?}"),
    }
    assert!(matches!(
        f.fetch(&docs.url("/client")).await,
        Err(CimdError::NotHttps { .. })
    ));
    assert_eq!(docs.total_hits(), 0, "nothing reached the server");
}

#[test]
fn redirect_hops_are_checked_like_the_first_url() {
    let allowed = CimdSettings {
        allowed_hosts: vec!["app.example".into(), "127.0.0.1".into()],
        ..CimdSettings::default()
    };
    let open = CimdSettings::default();
    let from = Url::parse("https://app.example/client").unwrap();
    let hop = |location: &str, settings: &CimdSettings| {
        let mut headers = HeaderMap::new();
        headers.insert(LOCATION, location.parse().unwrap());
        next_hop(&from, &headers, settings)
    };
    assert_eq!(
        hop("/elsewhere", &allowed).unwrap().as_str(),
        "https://app.example/elsewhere"
    );
    assert_eq!(
        hop("https://app.example/x#frag", &allowed).unwrap().as_str(),
        "https://app.example/x"
    );
    let refused = |location: &str, settings: &CimdSettings| match hop(location, settings) {
        Err(CimdError::PrivateAddress { .. }) => {}
        other => panic!("{location}: expected PrivateAddress, got {other:?}"),
    };
    refused("https://127.0.0.1/admin", &allowed);
    refused("https://127.0.0.1:8443/x", &open);
    refused("https://[::ffff:127.0.0.1]/x", &open);
    refused("https://169.254.169.254/latest/meta-data/", &open);
    refused("https://[fd00::1]/x", &open);
    assert!(matches!(
        hop("http://app.example/x", &allowed),
        Err(CimdError::NotHttps { .. })
    ));
    assert!(matches!(
        hop("file:///etc/passwd", &open),
        Err(CimdError::NotHttps { .. })
    ));
    assert!(matches!(
        hop("https://evil.example/x", &allowed),
        Err(CimdError::HostNotAllowed { .. })
    ));
    assert!(matches!(
        hop("https://u:p@app.example/x", &allowed),
        Err(CimdError::BadUrl { .. })
    ));
    assert!(matches!(
        next_hop(&from, &HeaderMap::new(), &open),
        Err(CimdError::BadUrl { .. })
    ));
}

#[tokio::test]
async fn redirects_are_followed_by_hand_up_to_the_limit() {
    let docs = Docs::start().await;
    let meta = fetcher(dev()).fetch(&docs.url("/redirect")).await.unwrap();
    assert_eq!(
        meta.client_id,
        docs.url("/redirect"),
        "the document names the original URL"
    );
    assert_eq!((docs.hits("/redirect"), docs.hits("/moved")), (1, 1));

    let none = fetcher(CimdSettings {
        max_redirects: 0,
        ..dev()
    });
    assert!(matches!(
        none.fetch(&docs.url("/redirect")).await,
        Err(CimdError::TooManyRedirects { limit: 0, .. })
    ));

    let listed = fetcher(CimdSettings {
        allowed_hosts: vec!["127.0.0.1".into()],
        ..dev()
    });
    match listed.fetch(&docs.url("/redirect-away")).await {
        Err(CimdError::HostNotAllowed { host, .. }) => assert_eq!(host, "localhost"),
        other => panic!("expected HostNotAllowed, got {other:?}"),
    }
    assert_eq!(docs.hits("/client"), 0, "the refused hop was not requested");
}

#[tokio::test]
async fn bad_documents_are_refused() {
    let docs = Docs::start().await;
    let f = fetcher(dev());
    let reason = |r: Result<Arc<ClientMetadata>, CimdError>| r.unwrap_err().to_string();
    assert!(reason(f.fetch(&docs.url("/mismatch")).await).contains("not the URL it was fetched from"));
    assert!(reason(f.fetch(&docs.url("/secret")).await).contains("client_secret"));
    assert!(matches!(
        f.fetch(&docs.url("/big")).await,
        Err(CimdError::TooLarge { limit: 65536, .. })
    ));
    assert!(matches!(
        f.fetch(&docs.url("/html")).await,
        Err(CimdError::NotJson { .. })
    ));
    assert!(matches!(
        f.fetch(&docs.url("/gone")).await,
        Err(CimdError::Status { status: 500, .. })
    ));
}

#[tokio::test]
async fn max_age_is_honoured() {
    let docs = Docs::start().await;
    let f = fetcher(dev());
    let first = f.fetch(&docs.url("/client")).await.unwrap();
    let second = f.fetch(&docs.url("/client")).await.unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(docs.hits("/client"), 1, "the second fetch was served from memory");
    f.fetch(&docs.url("/other-client")).await.unwrap();
    assert_eq!(docs.hits("/other-client"), 1, "the cache is keyed by client_id");

    f.fetch(&docs.url("/nocache")).await.unwrap();
    f.fetch(&docs.url("/nocache")).await.unwrap();
    assert_eq!(docs.hits("/nocache"), 1, "no-store is kept for min_cache");
    let no_floor = fetcher(CimdSettings {
        min_cache: Duration::ZERO,
        ..dev()
    });
    no_floor.fetch(&docs.url("/nocache")).await.unwrap();
    no_floor.fetch(&docs.url("/nocache")).await.unwrap();
    assert_eq!(docs.hits("/nocache"), 3, "without a floor no-store is refetched");
}

#[tokio::test]
async fn failures_are_remembered_briefly() {
    let docs = Docs::start().await;
    let f = fetcher(dev());
    for _ in 0..3 {
        assert!(matches!(
            f.fetch(&docs.url("/fail")).await,
            Err(CimdError::Status { status: 500, .. })
        ));
        assert!(matches!(
            f.fetch(&docs.url("/mismatch")).await,
            Err(CimdError::Invalid { .. })
        ));
    }
    assert_eq!((docs.hits("/fail"), docs.hits("/mismatch")), (1, 1));
}

#[tokio::test]
async fn concurrent_fetches_share_one_request() {
    let docs = Docs::start().await;
    let f = Arc::new(fetcher(dev()));
    let url = docs.url("/slow");
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let (f, url) = (Arc::clone(&f), url.clone());
            tokio::spawn(async move { f.fetch(&url).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(docs.hits("/slow"), 1);
}

#[test]
fn client_id_rules() {
    let open = CimdSettings::default();
    let check = |id: &str| guard::check_client_id(id, &open);
    for id in [
        "https://app.example/c",
        "https://app.example:8443/c?v=1",
        "https://APP.example/c.json",
        "https://a/b/",
    ] {
        assert!(check(id).is_ok(), "{id}");
    }
    for id in ["client", "urn:x:y", "ftp://app.example/c", " https://app.example/c", ""] {
        assert!(matches!(check(id), Err(CimdError::NotAUrl { .. })), "{id}");
    }
    assert!(matches!(check("http://app.example/c"), Err(CimdError::NotHttps { .. })));
    let bad = [
        "https://app.example",
        "https://app.example/",
        "https://app.example/?q",
        "https://app.example/c#f",
        "https://app.example/c#",
        "https://u:p@app.example/c",
        "https://@app.example/c",
        "https://app.example/a/../c",
        "https://app.example/a/./c",
        "https://app.example/a/%2E%2e/c",
        "https://app.example/c d",
        "https://app.example/c\n",
    ];
    for id in bad {
        assert!(
            matches!(check(id), Err(CimdError::BadUrl { .. })),
            "{id}: {:?}",
            check(id)
        );
    }
}

#[test]
fn client_id_hosts() {
    let open = CimdSettings::default();
    let check = |id: &str| guard::check_client_id(id, &open);
    for id in [
        "https://10.0.0.1/c",
        "https://[::1]/c",
        "https://[::ffff:127.0.0.1]/c",
        "https://2130706433/c",
    ] {
        assert!(matches!(check(id), Err(CimdError::PrivateAddress { .. })), "{id}");
    }
    let listed = CimdSettings {
        allowed_hosts: vec!["*.example.com".into(), "tools.example".into()],
        ..open
    };
    assert!(guard::check_client_id("https://a.example.com/c", &listed).is_ok());
    assert!(guard::check_client_id("https://TOOLS.example/c", &listed).is_ok());
    let refused = guard::check_client_id("https://example.org/c", &listed);
    assert!(matches!(refused, Err(CimdError::HostNotAllowed { .. })), "{refused:?}");
}

#[test]
fn metadata_urls_are_recognised() {
    for id in [
        "https://app.example/c",
        "HTTPS://app.example/c",
        "http://127.0.0.1:3000/c",
    ] {
        assert!(is_metadata_url(id), "{id}");
    }
    for id in ["", "abc123", "https", "urn:client", "mcp-client-7f3a"] {
        assert!(!is_metadata_url(id), "{id}");
    }
}
