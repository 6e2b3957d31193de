//! Access through the authorization server (the front door): `GET
//! /console/api/access` — the caller's own grants (every user's for an
//! admin), to MCP clients and at upstreams (`connections`, the vault),
//! and, for an admin, the registered clients; `POST
//! /console/api/access/revoke` `{"grant": …}` — a user revokes their own
//! grant, an admin any; `POST /console/api/access/client` `{"client_id":
//! …, "action": "disable"|"enable"|"delete"}` — admins only. Changes need
//! the CSRF token from a browser and are written to the audit trail.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use super::record_action;
use crate::caller::Caller;
use crate::error::ConsoleError;
use crate::roles::Role;
use crate::state::Shared;

fn bad_body(e: JsonRejection) -> ConsoleError {
    ConsoleError::BadRequest(e.body_text())
}

/// `GET /console/api/access`.
pub(crate) async fn access(State(s): State<Arc<Shared>>, caller: Caller) -> Result<Json<Value>, ConsoleError> {
    let admin = caller.can(Role::Admin);
    let subject = (!admin).then_some(caller.subject.as_str());
    let Some(grants) = s.backend.oauth_grants(subject).await else {
        return Ok(Json(json!({"enabled": false})));
    };
    let grants = grants.map_err(ConsoleError::Gateway)?;
    let clients = match admin {
        true => s
            .backend
            .oauth_clients()
            .await
            .transpose()
            .map_err(ConsoleError::Gateway)?,
        false => None,
    };
    Ok(Json(json!({
        "enabled": true,
        "all_users": admin,
        "grants": grants["grants"],
        "connections": grants["connections"],
        "clients": clients.map(|c| c["clients"].clone()),
    })))
}

#[derive(Debug, Deserialize)]
pub(crate) struct RevokeBody {
    grant: String,
}

/// `POST /console/api/access/revoke`.
pub(crate) async fn revoke(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Json<RevokeBody>, JsonRejection>,
) -> Result<Json<Value>, ConsoleError> {
    caller.check_csrf(&headers)?;
    let Json(body) = body.map_err(bad_body)?;
    let subject = (!caller.can(Role::Admin)).then_some(caller.subject.as_str());
    let done = s
        .backend
        .oauth_revoke(&body.grant, subject)
        .await
        .map_err(ConsoleError::Gateway)?;
    record_action(&s, &caller, "console/revoke_grant", body.grant.clone(), done).await?;
    if !done {
        return Err(ConsoleError::BadRequest(format!("no grant {} of yours", body.grant)));
    }
    Ok(Json(json!({"revoked": body.grant})))
}

#[derive(Debug, Deserialize)]
pub(crate) struct ClientBody {
    client_id: String,
    action: String,
}

/// `POST /console/api/access/client`.
pub(crate) async fn client(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Json<ClientBody>, JsonRejection>,
) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Admin)?;
    caller.check_csrf(&headers)?;
    let Json(body) = body.map_err(bad_body)?;
    let done = s
        .backend
        .oauth_client_action(&body.client_id, &body.action)
        .await
        .map_err(ConsoleError::BadRequest)?;
    let what = format!("{} {}", body.action, body.client_id);
    record_action(&s, &caller, "console/client", what, done).await?;
    if !done {
        return Err(ConsoleError::BadRequest(format!("no client {}", body.client_id)));
    }
    Ok(Json(json!({"client_id": body.client_id, "done": body.action})))
}
