//! The lists of a virtual server whose members include one with its
//! catalog gate off.
//!
//! A member whose gate is off is not governed by its catalog: what it
//! offers is whatever it offers the caller, in the caller's own session
//! (a server may list per session, or change its list after a sync). So
//! its part of a list is asked of the member itself, through the member
//! route's phases for the caller (policies filter it there, as on the
//! member's own route), every page of it, and named as the virtual server
//! exposes it (prefix, filters, renames, descriptions); the members whose
//! gate is on keep their approved, exposed entries. The parts follow the
//! members' order. Calls to a name only such a member offers are resolved
//! by its prefix and renames (`resolve`).

use std::borrow::Cow;
use std::collections::HashSet;

use http_body_util::{BodyExt, Limited};
use serde_json::Value;
use tollgate_catalog::Kind;
use tollgate_catalog::compose::{Exposed, MemberSpec};
use tollgate_mcp::answer_messages;
use tollgate_mcp::sse::is_event_stream;

use super::{Incoming, VirtualRoute, answer, delegate, per_user};

/// Pages asked of one member for one list, at most.
const MAX_PAGES: usize = 20;
/// The largest list page read from a member.
const MAX_PAGE_BYTES: usize = 4 << 20;

/// Every entry of `kind` in list order, as JSON: the exposed entries the
/// caller may use of the members whose gate is on, and what each member
/// whose gate is off lists in the caller's session.
pub(crate) async fn listed<'e>(
    v: &VirtualRoute,
    exposed: &'e Exposed,
    incoming: &Incoming,
    kind: Kind,
) -> Vec<Cow<'e, str>> {
    let visible = answer::visible(v, exposed, incoming, kind);
    let visible = per_user::narrowed(v, incoming, kind, visible).await;
    let asked = exposed
        .live
        .iter()
        .map(|(member, spec)| ask(v, incoming, *member, spec, kind));
    let mut fetched = futures_util::future::join_all(asked).await.into_iter();
    let mut out = Vec::new();
    for i in 0..v.members.len() {
        if exposed.live.iter().any(|(m, _)| *m == i) {
            out.extend(fetched.next().unwrap_or_default().into_iter().map(Cow::Owned));
        } else {
            let mine = visible.iter().filter(|e| e.member == i);
            out.extend(mine.map(|e| Cow::Borrowed(e.json.as_str())));
        }
    }
    out
}

/// What member `member` lists of `kind` in the caller's session, every
/// page, named as exposed. A member that does not answer lists nothing.
async fn ask(v: &VirtualRoute, incoming: &Incoming, member: usize, spec: &MemberSpec, kind: Kind) -> Vec<String> {
    let listed = definitions(v, incoming, member, kind).await.unwrap_or_default();
    listed.iter().filter_map(|d| exposed(spec, kind, d)).collect()
}

/// The own names of what member `member` lists of `kind` for the caller
/// (through its route's phases, with the caller's credential there);
/// `None` when it did not list.
pub(crate) async fn own_names(
    v: &VirtualRoute,
    incoming: &Incoming,
    member: usize,
    kind: Kind,
) -> Option<HashSet<String>> {
    let listed = definitions(v, incoming, member, kind).await?;
    let key = kind.key_field();
    Some(
        listed
            .iter()
            .filter_map(|d| d.get(key).and_then(Value::as_str).map(str::to_owned))
            .collect(),
    )
}

/// Every definition member `member` lists of `kind` in the caller's
/// session, every page; `None` when its first page did not come.
async fn definitions(v: &VirtualRoute, incoming: &Incoming, member: usize, kind: Kind) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for round in 0..MAX_PAGES {
        let Some(mut result) = page(v, incoming, member, cursor.as_deref()).await else {
            return (round > 0).then_some(out);
        };
        if let Some(Value::Array(listed)) = result.get_mut(kind.result_key()).map(Value::take) {
            out.extend(listed);
        }
        cursor = result.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Some(out)
}

/// One page of the member's list: the `result` of its answer.
async fn page(v: &VirtualRoute, incoming: &Incoming, member: usize, cursor: Option<&str>) -> Option<Value> {
    let mut body: Value = serde_json::from_slice(&incoming.body).ok()?;
    let params = body
        .as_object_mut()?
        .entry("params")
        .or_insert_with(|| Value::Object(Default::default()));
    let params = params.as_object_mut()?;
    match cursor {
        Some(c) => params.insert("cursor".to_owned(), Value::from(c)),
        None => params.remove("cursor"),
    };
    let req = delegate::request(v, incoming, member, serde_json::to_vec(&body).ok()?.into()).ok()?;
    let res = delegate::send_for(v, incoming, member, req).await;
    if !res.status().is_success() {
        tracing::warn!(
            virtual_server = %v.name,
            member = %v.members.get(member).map_or("?", |m| &*m.route.name),
            status = res.status().as_u16(),
            "a member whose catalog gate is off did not list: its part of the list is left out"
        );
        return None;
    }
    let sse = is_event_stream(res.headers());
    let bytes = Limited::new(res.into_body(), MAX_PAGE_BYTES)
        .collect()
        .await
        .ok()?
        .to_bytes();
    answer_messages(&bytes, sse)
        .filter_map(|m| serde_json::from_slice::<Value>(&m).ok())
        .find_map(|mut m| m.get_mut("result").map(Value::take))
}

/// A member's definition as the virtual server exposes it, as JSON (`None`:
/// left out).
fn exposed(spec: &MemberSpec, kind: Kind, definition: &Value) -> Option<String> {
    let key = kind.key_field();
    let own = definition.get(key)?.as_str()?;
    let name = spec.exposed_name(kind, own)?;
    let mut definition = definition.clone();
    if let Some(description) = spec.describe.get(own) {
        definition["description"] = Value::from(description.as_str());
    }
    definition[key] = Value::from(name);
    Some(definition.to_string())
}
