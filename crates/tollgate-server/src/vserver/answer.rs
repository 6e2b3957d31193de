//! The answers a virtual server gives itself ([`here`]): `server/discover`,
//! the four lists and `find_tools`, all from the exposed catalog and filtered per
//! caller by the members' policies (with the members' entities in the
//! virtual server's, as for a routed call), never by calling an upstream.
//!
//! Lists are paginated with opaque cursors (100 entries a page). A page is
//! written by joining the entries' pre-serialized definitions; only the
//! envelope is built here.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use tollgate_catalog::Kind;
use tollgate_catalog::compose::Announced;
use tollgate_config::Expose;
use tollgate_core::{Era, ErrorKind};
use tollgate_mcp::RequestId;
use tollgate_policy::{ListItem, ListRequest, TargetKind};

use super::exposed::{Entry, Exposed};
use super::resolve::Here;
use super::{Answered, FIND_TOOLS, Incoming, VirtualRoute, live, per_user, relay, session};
use crate::rescue::Rejection;

/// Entries per list page.
const PAGE: usize = 100;
/// Tools `find_tools` returns unless asked for another number, and at most.
const FIND_DEFAULT: usize = 5;
const FIND_MAX: usize = 20;

/// The answer to a call resolved to the virtual server itself.
///
/// # Errors
///
/// The refusal of a list cursor not handed out, of a session no member
/// opened, or of a legacy request outside a session of ours.
pub(crate) async fn here(
    v: &Arc<VirtualRoute>,
    exposed: &Exposed,
    incoming: &Incoming,
    here: Here,
) -> Result<Answered, Rejection> {
    let id = incoming.message.id.as_ref();
    Ok(match here {
        Here::Initialize => Answered::Own(session::open(v, incoming, exposed).await?),
        Here::Ping => Answered::Own(result(id, "{}")),
        Here::Discover => Answered::Own(discover(v, exposed, id)),
        Here::List => Answered::Own(list(v, exposed, incoming).await?),
        Here::FindTools => Answered::Own(find_tools(v, exposed, incoming).await),
        Here::Accept => Answered::Own(StatusCode::ACCEPTED.into_response()),
        Here::SetLevel => Answered::Members(session::set_level(v, incoming).await?),
        Here::ClientAnswer => Answered::Members(relay::client_answer(v, incoming).await?),
        Here::Notify => Answered::Members(session::notify(v, incoming).await?),
    })
}

/// A JSON-RPC result answer whose `result` is `result` (JSON text).
pub(crate) fn result(id: Option<&RequestId>, result: &str) -> Response {
    let id = id.map_or("null", RequestId::as_json);
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
    let mut res = Response::new(Body::from(body));
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// `server/discover`: the versions every member serves, and what the
/// virtual server offers.
pub(crate) fn discover(v: &VirtualRoute, exposed: &Exposed, id: Option<&RequestId>) -> Response {
    let mut versions: Vec<&'static str> = tollgate_mcp::supported_versions(tollgate_mcp::Versions::all());
    for m in &v.members {
        let snapshot = m.route.catalog.snapshot();
        if !snapshot.versions.is_empty() {
            versions.retain(|ours| snapshot.versions.iter().any(|theirs| theirs == ours));
        }
    }
    let body = serde_json::json!({
        "supportedVersions": versions,
        "capabilities": capabilities(exposed),
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": server_info(v)},
    });
    result(id, &body.to_string())
}

/// The capabilities of the exposed catalog, with the list changes and
/// subscriptions its members' synced capabilities announce.
pub(crate) fn capabilities(exposed: &Exposed) -> Value {
    capabilities_with(exposed, exposed.announced)
}

/// The capabilities of the exposed catalog, announcing what `announced`
/// does: a member's list changes and resource updates reach the client on
/// the member's streams, so the virtual server keeps the member's word.
pub(crate) fn capabilities_with(exposed: &Exposed, announced: Announced) -> Value {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "tools".into(),
        serde_json::json!({"listChanged": announced.tools_list_changed}),
    );
    if exposed.of_kind(Kind::Prompt).next().is_some() {
        caps.insert(
            "prompts".into(),
            serde_json::json!({"listChanged": announced.prompts_list_changed}),
        );
    }
    let resources =
        exposed.of_kind(Kind::Resource).next().is_some() || exposed.of_kind(Kind::ResourceTemplate).next().is_some();
    if resources {
        let mut r = serde_json::json!({"listChanged": announced.resources_list_changed});
        if announced.subscribe {
            r["subscribe"] = Value::Bool(true);
        }
        caps.insert("resources".into(), r);
    }
    if exposed.of_kind(Kind::Prompt).next().is_some() || exposed.of_kind(Kind::ResourceTemplate).next().is_some() {
        caps.insert("completions".into(), serde_json::json!({}));
    }
    if exposed.tasks {
        caps.insert(
            "extensions".into(),
            serde_json::json!({ crate::task_handle::EXTENSION: {} }),
        );
    }
    Value::Object(caps)
}

/// `serverInfo`: the virtual server's name.
pub(crate) fn server_info(v: &VirtualRoute) -> Value {
    serde_json::json!({"name": &*v.name, "title": format!("{} (Tollgate virtual server)", v.name), "version": env!("CARGO_PKG_VERSION")})
}

#[derive(Deserialize)]
struct ListParams<'a> {
    #[serde(borrow, default)]
    params: Option<Cursor<'a>>,
}

#[derive(Deserialize)]
struct Cursor<'a> {
    #[serde(borrow, default)]
    cursor: Option<std::borrow::Cow<'a, str>>,
}

/// A list method's answer: one page of what the caller may use.
async fn list(v: &VirtualRoute, exposed: &Exposed, incoming: &Incoming) -> Result<Response, Rejection> {
    let id = incoming.message.id.clone();
    let kind = match incoming.message.method.as_str() {
        "tools/list" => Kind::Tool,
        "prompts/list" => Kind::Prompt,
        "resources/list" => Kind::Resource,
        _ => Kind::ResourceTemplate,
    };
    let bad_cursor = || Rejection::new(ErrorKind::UnknownName, "Invalid cursor").with_id(id.clone());
    let cursor = serde_json::from_slice::<ListParams<'_>>(&incoming.body)
        .ok()
        .and_then(|p| p.params)
        .and_then(|p| p.cursor);
    let start = match cursor {
        None => 0,
        Some(c) => decode_cursor(&c, kind).ok_or_else(bad_cursor)?,
    };
    let search = kind == Kind::Tool && v.expose == Expose::Search;
    let listed: Vec<Cow<'_, str>> = if search {
        let pinned = per_user::narrowed(v, incoming, kind, visible(v, exposed, incoming, kind)).await;
        let pinned = pinned.into_iter();
        pinned
            .filter(|e| v.pinned.contains(&e.exposed))
            .map(|e| Cow::Borrowed(e.json.as_str()))
            .collect()
    } else if exposed.live.is_empty() {
        let entries = per_user::narrowed(v, incoming, kind, visible(v, exposed, incoming, kind)).await;
        let entries = entries.into_iter();
        entries.map(|e| Cow::Borrowed(e.json.as_str())).collect()
    } else {
        live::listed(v, exposed, incoming, kind).await
    };
    if start > listed.len() {
        return Err(bad_cursor());
    }
    let page = &listed[start..listed.len().min(start + PAGE)];
    let mut body = format!(r#"{{"{}":["#, kind.result_key());
    if kind == Kind::Tool && v.expose == Expose::Search && start == 0 {
        body.push_str(&find_tools_definition().to_string());
        if !page.is_empty() {
            body.push(',');
        }
    }
    for (i, e) in page.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(e);
    }
    body.push(']');
    if start + PAGE < listed.len() {
        let _ = write!(body, r#","nextCursor":"{}""#, encode_cursor(start + PAGE, kind));
    }
    if incoming.era == Era::Modern {
        // A 2026-07-28 result says how it may be cached: per caller (the
        // list is filtered by the caller's policies), and not for long (the
        // catalog changes at the next sync).
        body.push_str(r#","resultType":"complete","ttlMs":0,"cacheScope":"private""#);
    }
    body.push('}');
    Ok(result(id.as_ref(), &body))
}

fn encode_cursor(offset: usize, kind: Kind) -> String {
    URL_SAFE_NO_PAD.encode(format!("tg1:{}:{offset}", kind.as_str()))
}

fn decode_cursor(cursor: &str, kind: Kind) -> Option<usize> {
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()?;
    let rest = text
        .strip_prefix("tg1:")?
        .strip_prefix(kind.as_str())?
        .strip_prefix(':')?;
    rest.parse().ok()
}

/// The entries of `kind` the caller may use, in list order: each member's
/// policies judge that member's entries, as reached through `v` (in its
/// `VirtualServer` entity), the way a call through `v` is judged.
pub(crate) fn visible<'e>(v: &VirtualRoute, exposed: &'e Exposed, incoming: &Incoming, kind: Kind) -> Vec<&'e Entry> {
    let all: Vec<&Entry> = exposed.of_kind(kind).collect();
    let Some(engine) = v.shared.policy.as_deref() else {
        return all;
    };
    let principal = incoming.principal.as_ref().unwrap_or(&v.shared.anonymous);
    let target = match kind {
        Kind::Tool => TargetKind::Tool,
        Kind::Prompt => TargetKind::Prompt,
        Kind::Resource | Kind::ResourceTemplate => TargetKind::Resource,
    };
    let mut hidden: HashSet<*const Entry> = HashSet::new();
    for (i, member) in v.members.iter().enumerate() {
        let mine: Vec<&Entry> = all.iter().copied().filter(|e| e.member == i).collect();
        if mine.is_empty() {
            continue;
        }
        let items: Vec<ListItem<'_>> = mine
            .iter()
            .map(|e| ListItem {
                name: &e.own,
                annotations: e.hints.map(crate::catalog::annotations_from),
            })
            .collect();
        let request = ListRequest {
            era: incoming.era,
            client_ip: incoming
                .parts
                .extensions
                .get::<crate::facts::ClientAddr>()
                .map(|a| a.0.ip()),
            virtual_server: Some(&v.name),
            ..ListRequest::new(&member.route.name, target)
        };
        let decision = engine.filter(principal, &request, &items);
        for (j, e) in mine.iter().enumerate() {
            if !decision.keeps(j) {
                hidden.insert(std::ptr::from_ref(*e));
            }
        }
    }
    all.into_iter()
        .filter(|e| !hidden.contains(&std::ptr::from_ref(*e)))
        .collect()
}

/// The definition of `find_tools`.
pub(crate) fn find_tools_definition() -> Value {
    serde_json::json!({
        "name": FIND_TOOLS,
        "title": "Find tools",
        "description": "Search the tools of this server by what you want to do. Returns the best-matching tool definitions; call a returned tool by its name.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in a few words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": FIND_MAX, "description": "How many tools to return (default 5)."}
            },
            "required": ["query"]
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

#[derive(Deserialize)]
struct FindCall {
    params: FindParams,
}

#[derive(Deserialize)]
struct FindParams {
    #[serde(default)]
    arguments: FindArguments,
}

#[derive(Deserialize, Default)]
struct FindArguments {
    #[serde(default)]
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

/// `find_tools`: the best-matching tools the caller may use, and which of
/// them need a connection the caller lacks (a member acting per user).
/// Arguments it cannot use are a tool error (`isError`), which the model
/// can read and correct, as MCP asks of tool failures.
pub(crate) async fn find_tools(v: &VirtualRoute, exposed: &Exposed, incoming: &Incoming) -> Response {
    let args = serde_json::from_slice::<FindCall>(&incoming.body)
        .ok()
        .map(|c| c.params.arguments)
        .filter(|a| !a.query.trim().is_empty());
    let Some(args) = args else {
        let text =
            "find_tools needs a non-empty `query` (what you want to do) and an optional integer `limit` (1 to 20).";
        return tool_result(
            incoming,
            serde_json::json!({"content": [{"type": "text", "text": text}], "isError": true}),
        );
    };
    let limit = args.limit.unwrap_or(FIND_DEFAULT).clamp(1, FIND_MAX);
    let found = search(v, exposed, incoming, &args.query, limit);
    let members: HashSet<usize> = found.iter().map(|e| e.member).collect();
    let unconnected = per_user::unconnected(v, incoming, &members).await;
    let connect: Vec<Value> = found
        .iter()
        .filter(|e| unconnected.contains(&e.member))
        .filter_map(|e| {
            let server = &v.members.get(e.member)?.route.name;
            Some(serde_json::json!({"tool": e.exposed, "server": &**server}))
        })
        .collect();
    let tools: Vec<&Value> = found.iter().map(|e| &e.definition).collect();
    let mut content =
        vec![serde_json::json!({"type": "text", "text": serde_json::to_string(&tools).unwrap_or_default()})];
    if !connect.is_empty() {
        let names: Vec<&str> = connect.iter().filter_map(|c| c["tool"].as_str()).collect();
        let text = format!(
            "These need a connection you have not made yet: {}. Calling one answers with a link to connect.",
            names.join(", ")
        );
        content.push(serde_json::json!({"type": "text", "text": text}));
    }
    tool_result(
        incoming,
        serde_json::json!({
            "content": content,
            "structuredContent": {"tools": tools, "needsConnection": connect},
            "isError": false,
        }),
    )
}

/// The best `limit` matches for `query` among the tools the caller may use.
fn search<'e>(
    v: &VirtualRoute,
    exposed: &'e Exposed,
    incoming: &Incoming,
    query: &str,
    limit: usize,
) -> Vec<&'e Entry> {
    let allowed: HashSet<*const Entry> = visible(v, exposed, incoming, Kind::Tool)
        .into_iter()
        .map(std::ptr::from_ref)
        .collect();
    let hits = exposed.index.search(query, limit, |pos| {
        exposed
            .tools
            .get(pos)
            .and_then(|i| exposed.entries.get(*i))
            .is_some_and(|e| allowed.contains(&std::ptr::from_ref(e)))
    });
    hits.iter()
        .filter_map(|(pos, _)| exposed.tools.get(*pos).and_then(|i| exposed.entries.get(*i)))
        .collect()
}

/// A `tools/call` result the gateway gives itself.
fn tool_result(incoming: &Incoming, mut body: Value) -> Response {
    if incoming.era == Era::Modern {
        body["resultType"] = Value::from("complete");
    }
    result(incoming.message.id.as_ref(), &body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_what_was_not_handed_out() {
        let c = encode_cursor(200, Kind::Tool);
        assert_eq!(decode_cursor(&c, Kind::Tool), Some(200));
        assert_eq!(
            decode_cursor(&c, Kind::Prompt),
            None,
            "a tools cursor is not a prompts one"
        );
        assert_eq!(decode_cursor("not base64!", Kind::Tool), None);
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("tg1:tool:x"), Kind::Tool), None);
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("200"), Kind::Tool), None);
    }
}
