//! The authorization server's administration on the admin listener (with
//! the `[admin] token` when one is configured): the clients it knows —
//! `GET /oauth/clients`, `POST /oauth/clients/disable|enable|delete` with
//! `{"client_id": …}` — and the grants users gave them — `GET
//! /oauth/grants[?subject=]`, `POST /oauth/grants/revoke` with `{"grant":
//! …}` or `{"subject": …}` (every grant of a user who left). What
//! The grants listed and revoked are both kinds: those users gave MCP
//! clients at the front door, and their own grants at upstreams kept in
//! the vault (`connections`). What `tollgate clients` and `tollgate grants`
//! call.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json;
use tollgate_issuer::Issuer;

use super::{AdminState, gate};

/// The routes, when the authorization server is enabled.
pub(super) fn routes() -> Router<AdminState> {
    Router::new()
        .route("/oauth/clients", get(list_clients))
        .route("/oauth/clients/{action}", post(change_client))
        .route("/oauth/grants", get(list_grants))
        .route("/oauth/grants/revoke", post(revoke))
}

fn issuer(s: &AdminState, headers: &HeaderMap) -> Result<Arc<Issuer>, Box<Response>> {
    if let Some(refused) = gate::refusal(&s.live, headers) {
        return Err(Box::new(refused));
    }
    s.issuer.clone().ok_or_else(|| {
        let body = json!({"error": "the authorization server is not enabled ([authorization_server])"});
        Box::new((StatusCode::NOT_FOUND, Json(body)).into_response())
    })
}

fn failed(e: &tollgate_issuer::StoreError) -> Response {
    let body = json!({"error": e.to_string()});
    (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
}

async fn list_clients(State(s): State<AdminState>, headers: HeaderMap) -> Response {
    let issuer = match issuer(&s, &headers) {
        Ok(i) => i,
        Err(res) => return *res,
    };
    match issuer.clients().await {
        Ok(all) => Json(json!({ "clients": all })).into_response(),
        Err(e) => failed(&e),
    }
}

#[derive(Debug, Deserialize)]
struct ClientBody {
    client_id: String,
}

async fn change_client(
    State(s): State<AdminState>,
    axum::extract::Path(action): axum::extract::Path<String>,
    headers: HeaderMap,
    Json(body): Json<ClientBody>,
) -> Response {
    let issuer = match issuer(&s, &headers) {
        Ok(i) => i,
        Err(res) => return *res,
    };
    let id = &body.client_id;
    let done = match action.as_str() {
        "disable" => issuer.set_client_disabled(id, true).await,
        "enable" => issuer.set_client_disabled(id, false).await,
        "delete" => issuer.delete_client(id).await,
        other => {
            let body = json!({"error": format!("unknown action {other}: disable, enable or delete")});
            return (StatusCode::NOT_FOUND, Json(body)).into_response();
        }
    };
    match done {
        Ok(true) => {
            tracing::warn!(client_id = %id, action, "client changed by an administrator");
            Json(json!({"client_id": id, "done": action})).into_response()
        }
        Ok(false) => (StatusCode::NOT_FOUND, Json(json!({"error": format!("no client {id}")}))).into_response(),
        Err(e) => failed(&e),
    }
}

#[derive(Debug, Deserialize)]
struct GrantQuery {
    subject: Option<String>,
}

async fn list_grants(State(s): State<AdminState>, headers: HeaderMap, Query(q): Query<GrantQuery>) -> Response {
    let issuer = match issuer(&s, &headers) {
        Ok(i) => i,
        Err(res) => return *res,
    };
    let all = match issuer.grants().await {
        Ok(all) => all,
        Err(e) => return failed(&e),
    };
    let grants: Vec<_> = all
        .into_iter()
        .filter(|g| q.subject.as_ref().is_none_or(|s| &g.user.subject == s))
        .collect();
    let connections = match vault(&s) {
        Some(v) => match v.grants(q.subject.as_deref()).await {
            Ok(c) => c,
            Err(e) => return unavailable(&e),
        },
        None => Vec::new(),
    };
    Json(json!({ "grants": grants, "connections": connections })).into_response()
}

/// The vault of users' upstream grants, when any server uses one.
fn vault(s: &AdminState) -> Option<Arc<tollgate_vault::Vault>> {
    s.live.current().shared.vault.clone()
}

fn unavailable(e: &tollgate_vault::VaultError) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": e.to_string()}))).into_response()
}

#[derive(Debug, Deserialize)]
struct RevokeBody {
    grant: Option<String>,
    subject: Option<String>,
}

async fn revoke(State(s): State<AdminState>, headers: HeaderMap, Json(body): Json<RevokeBody>) -> Response {
    let issuer = match issuer(&s, &headers) {
        Ok(i) => i,
        Err(res) => return *res,
    };
    let grants = match issuer.grants().await {
        Ok(all) => all,
        Err(e) => return failed(&e),
    };
    let chosen: Vec<String> = grants
        .into_iter()
        .filter(|g| body.grant.as_ref() == Some(&g.id) || body.subject.as_ref() == Some(&g.user.subject))
        .map(|g| g.id)
        .collect();
    for id in &chosen {
        if let Err(e) = issuer.revoke_grant(id).await {
            return failed(&e);
        }
    }
    let mut chosen = chosen;
    if let Some(v) = vault(&s) {
        let connections = match v.grants(body.subject.as_deref()).await {
            Ok(c) => c,
            Err(e) => return unavailable(&e),
        };
        for c in connections {
            if body.subject.is_some() || body.grant.as_ref() == Some(&c.id) {
                match v.revoke(&c.id, None).await {
                    Ok(true) => chosen.push(c.id),
                    Ok(false) => {}
                    Err(e) => return unavailable(&e),
                }
            }
        }
    }
    tracing::warn!(revoked = chosen.len(), subject = ?body.subject, "grants revoked by an administrator");
    Json(json!({"revoked": chosen})).into_response()
}
