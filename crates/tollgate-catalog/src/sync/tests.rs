//! The sync conversation against scripted upstreams: a 2026-07-28 one with
//! paged lists, a legacy one with a session, and failures.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Mutex;

use serde_json::json;

use super::*;

/// What one message carried: method, `Mcp-Method` header, session id.
type Seen = (String, Option<String>, Option<String>);

/// An upstream played from a script: each request method answers a result
/// (or an error); tools/list is paged in two.
struct Scripted {
    modern: bool,
    seen: Mutex<Vec<Seen>>,
    ended: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(modern: bool) -> Scripted {
        Scripted {
            modern,
            seen: Mutex::new(Vec::new()),
            ended: Mutex::new(Vec::new()),
        }
    }

    fn answer(&self, msg: &Value) -> Value {
        let method = msg["method"].as_str().unwrap_or("");
        let cursor = msg["params"]["cursor"].as_str();
        let result = match (method, cursor) {
            ("server/discover", _) if self.modern => json!({"supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "resources": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}, "serverInfo": {"name": "m", "version": "1"}}),
            ("server/discover", _) => {
                return json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32000, "message": "Bad Request: Server not initialized"}});
            }
            ("initialize", _) => json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "prompts": {}},
                "serverInfo": {"name": "l", "version": "2"}}),
            ("tools/list", None) => json!({"tools": [{"name": "a"}], "nextCursor": "p2"}),
            ("tools/list", Some("p2")) => json!({"tools": [{"name": "b", "description": "second page"}]}),
            ("prompts/list", _) => json!({"prompts": [{"name": "greet"}]}),
            ("resources/list", _) => json!({"resources": [{"uri": "m://r", "name": "r"}]}),
            ("resources/templates/list", _) => json!({"resourceTemplates": []}),
            _ => return json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}),
        };
        json!({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    }
}

#[async_trait]
impl Transport for Scripted {
    async fn post(&self, out: Outgoing<'_>) -> Result<Reply, CatalogError> {
        let msg: Value = serde_json::from_slice(&out.body).unwrap();
        let method = msg["method"].as_str().unwrap_or("").to_owned();
        self.seen.lock().unwrap().push((
            method.clone(),
            out.method.map(str::to_owned),
            out.session.map(str::to_owned),
        ));
        if msg.get("id").is_none() {
            return Ok(Reply {
                accepted: true,
                refusal: None,
                session: None,
                sse: false,
                body: Bytes::new(),
            });
        }
        let answer = self.answer(&msg).to_string();
        // The legacy upstream answers in SSE, the modern one in JSON.
        let (sse, body) = if self.modern {
            (false, answer)
        } else {
            (true, format!("event: message\ndata: {answer}\n\n"))
        };
        let session = (method == "initialize").then(|| "s-1".to_owned());
        Ok(Reply {
            accepted: true,
            refusal: None,
            session,
            sse,
            body: Bytes::from(body),
        })
    }

    async fn end_session(&self, session: &str) {
        self.ended.lock().unwrap().push(session.to_owned());
    }
}

fn keys(s: &Snapshot) -> Vec<(Kind, String)> {
    s.definitions.keys().cloned().collect()
}

#[tokio::test]
async fn a_modern_upstream_is_discovered_and_listed_statelessly_page_by_page() {
    let up = Scripted::new(true);
    let snap = sync("m", &up).await.unwrap();
    assert!(snap.speaks_modern());
    assert_eq!(
        keys(&snap),
        vec![
            (Kind::Tool, "a".into()),
            (Kind::Tool, "b".into()),
            (Kind::Resource, "m://r".into())
        ]
    );
    assert_eq!(snap.server_info.unwrap()["name"], "m");
    assert_eq!(snap.extensions, vec!["io.modelcontextprotocol/tasks".to_owned()]);
    let seen = up.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|(_, header, session)| header.is_some() && session.is_none()),
        "{seen:?}"
    );
    assert_eq!(seen.iter().filter(|(m, ..)| m == "tools/list").count(), 2, "both pages");
    assert!(up.ended.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_legacy_upstream_is_initialized_listed_in_its_session_and_the_session_ended() {
    let up = Scripted::new(false);
    let snap = sync("l", &up).await.unwrap();
    assert!(!snap.speaks_modern());
    assert_eq!(snap.versions, vec!["2025-06-18".to_owned()]);
    assert_eq!(
        keys(&snap),
        vec![
            (Kind::Tool, "a".into()),
            (Kind::Tool, "b".into()),
            (Kind::Prompt, "greet".into())
        ]
    );
    let seen = up.seen.lock().unwrap().clone();
    let methods: Vec<&str> = seen.iter().map(|(m, ..)| m.as_str()).collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/list",
            "prompts/list"
        ]
    );
    assert!(
        seen[3..]
            .iter()
            .all(|(_, header, session)| header.is_none() && session.as_deref() == Some("s-1"))
    );
    assert_eq!(up.ended.lock().unwrap().clone(), vec!["s-1".to_owned()]);
}

#[tokio::test]
async fn the_snapshot_keeps_the_order_listed_and_the_capabilities_announced() {
    let snap = sync("l", &Scripted::new(false)).await.unwrap();
    assert_eq!(
        snap.listed,
        vec![
            (Kind::Tool, "a".into()),
            (Kind::Tool, "b".into()),
            (Kind::Prompt, "greet".into())
        ],
        "page after page, kinds in sync order"
    );
    assert_eq!(snap.capabilities, json!({"tools": {}, "prompts": {}}));
}

struct Down;

#[async_trait]
impl Transport for Down {
    async fn post(&self, _: Outgoing<'_>) -> Result<Reply, CatalogError> {
        Err(CatalogError::Sync("connection refused".into()))
    }
    async fn end_session(&self, _: &str) {}
}

#[tokio::test]
async fn an_unreachable_upstream_fails_the_sync() {
    let e = sync("x", &Down).await.unwrap_err();
    assert!(e.to_string().contains("connection refused"), "{e}");
}
