//! Sync: ask an upstream what it lists, as an MCP client would, with the
//! gateway's own credential.
//!
//! A 2026-07-28 upstream is asked `server/discover`, then each list it has
//! the capability for, statelessly. Any other upstream is asked
//! `initialize` (then `notifications/initialized`), the lists in that
//! session, and the session is ended. Every page of every list is read
//! (`nextCursor`), up to a bound. How a message travels is the
//! [`Transport`]'s business (the server's upstream connections, or the
//! CLI's); this module owns only the MCP conversation.

use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{Value, json};
use tollgate_mcp::answer_messages;

use crate::definition::{Definition, Kind};
use crate::error::CatalogError;
use crate::snapshot::Snapshot;

/// The modern protocol revision.
const MODERN: &str = "2026-07-28";
/// The legacy revision asked for in `initialize`.
const LEGACY: &str = "2025-11-25";
/// Most pages read of one list.
const MAX_PAGES: usize = 100;

/// One message to send.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    /// The JSON-RPC message.
    pub body: Vec<u8>,
    /// `MCP-Protocol-Version` to send.
    pub protocol_version: &'a str,
    /// `Mcp-Method` to send (2026-07-28 only).
    pub method: Option<&'a str>,
    /// The session id (legacy, after `initialize`).
    pub session: Option<&'a str>,
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Whether the upstream accepted the message (a success status).
    pub accepted: bool,
    /// A short description for logs when it did not (e.g. the status).
    pub refusal: Option<String>,
    /// The session id the upstream set, if any.
    pub session: Option<String>,
    /// Whether the body is an SSE stream.
    pub sse: bool,
    /// The body, read whole.
    pub body: Bytes,
}

/// How sync messages reach an upstream.
#[async_trait]
pub trait Transport: Send + Sync {
    /// POST one message and read the whole answer.
    ///
    /// # Errors
    ///
    /// When nothing could be sent or read (connection, timeout, credential).
    async fn post(&self, message: Outgoing<'_>) -> Result<Reply, CatalogError>;

    /// End a legacy session (DELETE). Failures are not the sync's.
    async fn end_session(&self, session: &str);
}

/// Sync the catalog of `server` through `transport`.
///
/// # Errors
///
/// When the upstream cannot be reached, refuses the conversation, or
/// answers something that is not a catalog.
pub async fn sync(server: &str, transport: &dyn Transport) -> Result<Snapshot, CatalogError> {
    let mut ask = Asker {
        transport,
        session: None,
        version: MODERN,
        next_id: 1,
    };
    let (versions, capabilities, server_info) = match ask.discover().await {
        Ok(Some(found)) => found,
        Ok(None) | Err(_) => ask.initialize().await?,
    };
    let listed = ask.lists(&capabilities).await;
    if let Some(session) = ask.session.take() {
        transport.end_session(&session).await;
    }
    let mut snapshot = Snapshot::empty(server);
    for definition in listed? {
        snapshot.insert(definition);
    }
    snapshot.versions = versions;
    snapshot.server_info = server_info;
    snapshot.extensions = capabilities
        .get("extensions")
        .and_then(Value::as_object)
        .map(|e| e.keys().cloned().collect())
        .unwrap_or_default();
    snapshot.capabilities = capabilities;
    snapshot.synced_at = SystemTime::now();
    Ok(snapshot)
}

/// Versions, capabilities and `serverInfo` an upstream announced.
type Announced = (Vec<String>, Value, Option<Value>);

/// One sync conversation.
struct Asker<'t> {
    transport: &'t dyn Transport,
    session: Option<String>,
    version: &'static str,
    next_id: u64,
}

impl Asker<'_> {
    /// `server/discover`; `None` when the upstream does not speak 2026-07-28.
    async fn discover(&mut self) -> Result<Option<Announced>, CatalogError> {
        let result = self.request("server/discover", json!({})).await?;
        let versions: Vec<String> = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        if !versions.iter().any(|v| v == MODERN) {
            return Ok(None);
        }
        let capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        Ok(Some((versions, capabilities, result.get("serverInfo").cloned())))
    }

    /// `initialize` and `notifications/initialized`, opening a session.
    async fn initialize(&mut self) -> Result<Announced, CatalogError> {
        self.version = LEGACY;
        let params = json!({
            "protocolVersion": LEGACY,
            // A client able to sample and elicit: some servers offer the
            // tools that need them only to such clients, and the catalog
            // governs what any client could be offered.
            "capabilities": {"sampling": {}, "elicitation": {}},
            "clientInfo": {"name": "tollgate-catalog", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = self.request("initialize", params).await?;
        let version = result.get("protocolVersion").and_then(Value::as_str).unwrap_or(LEGACY);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.send(&note, None).await?;
        let capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        Ok((
            vec![version.to_owned()],
            capabilities,
            result.get("serverInfo").cloned(),
        ))
    }

    /// Every page of every list the upstream has the capability for.
    async fn lists(&mut self, capabilities: &Value) -> Result<Vec<Definition>, CatalogError> {
        let mut out = Vec::new();
        for kind in Kind::ALL {
            let capability = match kind {
                Kind::Tool => "tools",
                Kind::Prompt => "prompts",
                Kind::Resource | Kind::ResourceTemplate => "resources",
            };
            if capabilities.get(capability).is_none() {
                continue;
            }
            out.extend(self.list(kind).await?);
        }
        Ok(out)
    }

    async fn list(&mut self, kind: Kind) -> Result<Vec<Definition>, CatalogError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
            let result = self.request(kind.list_method(), params).await?;
            let entries = result.get(kind.result_key()).and_then(Value::as_array).ok_or_else(|| {
                CatalogError::Sync(format!("{} answer without `{}`", kind.list_method(), kind.result_key()))
            })?;
            for entry in entries {
                out.push(Definition::new(kind, entry.clone())?);
            }
            cursor = result.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            if cursor.is_none() {
                return Ok(out);
            }
        }
        Err(CatalogError::Sync(format!(
            "{} has more than {MAX_PAGES} pages",
            kind.list_method()
        )))
    }

    /// Send a request and return its `result`.
    async fn request(&mut self, method: &'static str, mut params: Value) -> Result<Value, CatalogError> {
        let id = self.next_id;
        self.next_id += 1;
        if self.version == MODERN {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let reply = self.send(&message, Some(method)).await?;
        result_of(&reply, id, method)
    }

    async fn send(&mut self, message: &Value, method: Option<&'static str>) -> Result<Reply, CatalogError> {
        let body = serde_json::to_vec(message).map_err(|e| CatalogError::Sync(e.to_string()))?;
        let outgoing = Outgoing {
            body,
            protocol_version: self.version,
            method: method.filter(|_| self.version == MODERN),
            session: self.session.as_deref(),
        };
        let reply = self.transport.post(outgoing).await?;
        if !reply.accepted {
            let why = reply.refusal.clone().unwrap_or_else(|| "refused".to_owned());
            return Err(CatalogError::Sync(format!(
                "{}: {why}",
                method.unwrap_or("notification")
            )));
        }
        if let Some(session) = &reply.session {
            self.session = Some(session.clone());
        }
        Ok(reply)
    }
}

/// The `result` of the answer to request `id`.
fn result_of(reply: &Reply, id: u64, method: &str) -> Result<Value, CatalogError> {
    for msg in answer_messages(&reply.body, reply.sse) {
        let Ok(msg) = serde_json::from_slice::<Value>(&msg) else {
            continue;
        };
        if msg.get("id").and_then(Value::as_u64) != Some(id) {
            continue; // a notification or another request's answer
        }
        if let Some(result) = msg.get("result") {
            return Ok(result.clone());
        }
        let error = msg
            .get("error")
            .map_or_else(|| "no result".to_owned(), Value::to_string);
        return Err(CatalogError::Sync(format!("{method}: {error}")));
    }
    Err(CatalogError::Sync(format!("{method}: no answer")))
}

#[cfg(test)]
mod tests;
