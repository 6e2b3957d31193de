//! The console's view of the running gateway: [`tollgate_console::Backend`]
//! over the live configuration, the catalog and its lock ([`approve`]),
//! the policy engine, the audit sink, and the authorization server's
//! clients and grants. Console tokens are verified for
//! the console's one issuer and its own audiences. Mounted on the admin
//! listener with the console's router when `[console] enabled`.

mod approve;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tollgate_audit::{AuditHandle, CallRecord, Durability, Recorded};
use tollgate_catalog::Kind;
use tollgate_console::{ApprovalError, ApprovalRequest, Backend, CheckRequest};
use tollgate_core::{Era, Principal, PrincipalKind};
use tollgate_policy::CallRequest;

use crate::admin::{store_json, upstreams_json, virtuals_json};
use crate::catalog::Approvals;
use crate::governance::reload::LockFile;
use crate::governance::report;
use crate::live::{Generation, Live};
use crate::route::Route;

/// The gateway as the console sees it.
pub(crate) struct ConsoleBackend {
    pub(crate) live: Arc<Live>,
    pub(crate) audit: AuditHandle,
    pub(crate) approvals: Arc<Approvals>,
    pub(crate) lock: Arc<LockFile>,
    /// The fleet store's approvals, when approvals are rows there: an
    /// approval is written there instead of the lock file.
    pub(crate) shared: Option<Arc<crate::governance::shared::SharedApprovals>>,
    /// The fleet store, when the gateway ships to one: the console's
    /// audit search, call view, spend and budgets read it.
    pub(crate) fleet: Option<tollgate_store::Store>,
    /// One approval at a time writes the lock file.
    pub(crate) writing: Mutex<()>,
    /// The authorization server, when enabled: its clients and grants.
    pub(crate) issuer: Option<Arc<tollgate_issuer::Issuer>>,
}

fn kind_of(name: &str) -> Result<Kind, String> {
    Kind::ALL
        .into_iter()
        .find(|k| k.as_str() == name)
        .ok_or_else(|| format!("unknown kind {name:?} (tool, prompt, resource, resource_template)"))
}

/// The route of `[[servers]]` entry `name`.
fn route_named(g: &Generation, name: &str) -> Result<Arc<Route>, String> {
    g.front
        .routes
        .get(format!("/mcp/{name}").as_str())
        .cloned()
        .ok_or_else(|| format!("no server {name:?}"))
}

/// Each listed entry of a server's catalog with its live definition's
/// description and input schema (a prompt's arguments), so that a
/// reviewer reads what an approval lets through.
fn with_definitions(server: &mut Value, snapshot: &tollgate_catalog::Snapshot) {
    for state in ["approved", "quarantined", "blocked", "unlisted"] {
        for entry in server[state].as_array_mut().into_iter().flatten() {
            let kind = entry["kind"].as_str().and_then(|k| kind_of(k).ok());
            let Some(d) = kind.and_then(|k| snapshot.get(k, entry["name"].as_str().unwrap_or_default())) else {
                continue;
            };
            let schema = d.body.get("inputSchema").or_else(|| d.body.get("arguments"));
            entry["description"] = json!(d.description());
            entry["schema"] = schema.cloned().unwrap_or(Value::Null);
        }
    }
}

#[async_trait::async_trait]
impl Backend for ConsoleBackend {
    async fn authenticate(&self, token: &str, issuer: &str, audiences: &[String]) -> Result<Arc<Principal>, String> {
        let g = self.live.current();
        g.authenticator
            .authenticate_for(token, issuer, audiences)
            .await
            .map_err(|e| e.to_string())
    }

    fn report_settings(&self) -> tollgate_report::Settings {
        crate::settings::report(&self.live.current().loaded.config)
    }

    fn audit_dir(&self) -> Option<PathBuf> {
        let g = self.live.current();
        let audit = &g.loaded.config.audit;
        audit.enabled.then(|| audit.directory_for(&g.loaded.path))
    }

    fn store(&self) -> Option<tollgate_store::Store> {
        self.fleet.clone()
    }

    fn checkpoint_public_keys(&self) -> Vec<String> {
        self.live.current().loaded.config.audit.checkpoint_public_keys.clone()
    }

    fn indexer_running(&self) -> bool {
        crate::audit_index::directory(&self.live.current().loaded).is_some()
    }

    fn catalog(&self) -> Value {
        let g = self.live.current();
        let routes = g.routes();
        let lock = self.approvals.current();
        let mut answer = report::catalog_json(&routes, &lock, &self.lock);
        for route in &routes {
            let snapshot = route.catalog.snapshot();
            let diff = tollgate_catalog::diff(&lock, &snapshot);
            if let Some(server) = answer["servers"].get_mut(&*route.name) {
                server["diff"] = serde_json::to_value(&diff).unwrap_or(Value::Null);
                with_definitions(server, &snapshot);
            }
        }
        answer
    }

    fn approve(&self, request: &ApprovalRequest, by: &str) -> Result<Value, ApprovalError> {
        approve::approve(self, request, by)
    }

    fn policies(&self) -> Value {
        let g = self.live.current();
        let Some(engine) = &g.shared.policy else {
            return json!({"enabled": false, "routes": [], "policies": []});
        };
        let mut routes: Vec<Value> = g
            .routes()
            .iter()
            .map(|r| {
                let mode = match engine.mode(&r.name, None) {
                    tollgate_config::PolicyMode::Enforce => "enforce",
                    tollgate_config::PolicyMode::Observe => "observe",
                };
                json!({"server": r.name, "mode": mode})
            })
            .collect();
        routes.sort_by(|a, b| a["server"].as_str().cmp(&b["server"].as_str()));
        let policies: Vec<Value> = engine
            .policies()
            .into_iter()
            .map(|p| {
                json!({"id": p.id, "effect": p.effect, "file": p.file.display().to_string(), "line": p.line, "source": p.source})
            })
            .collect();
        json!({"enabled": true, "routes": routes, "policies": policies})
    }

    fn policy_source(&self, id: &str) -> Option<String> {
        let g = self.live.current();
        g.shared.policy.as_ref()?.policy(id).map(|p| p.source.to_string())
    }

    fn check(&self, q: &CheckRequest) -> Result<Value, String> {
        let g = self.live.current();
        let engine = g
            .shared
            .policy
            .as_ref()
            .ok_or("no policies are loaded ([policy] dir)")?;
        let route = route_named(&g, &q.server)?;
        let (method, kind) = match q.kind.as_str() {
            "tool" => ("tools/call", Kind::Tool),
            "prompt" => ("prompts/get", Kind::Prompt),
            "resource" => ("resources/read", Kind::Resource),
            other => return Err(format!("unknown kind {other:?} (tool, prompt, resource)")),
        };
        let annotations = route
            .catalog
            .live(kind, &q.name)
            .map(|d| crate::catalog::annotations_of(&d.body));
        let principal = Arc::new(Principal {
            groups: q.groups.clone(),
            team: q.team.clone().filter(|t| !t.is_empty()),
            scopes: q.scopes.clone(),
            ..Principal::bare("console", &*q.subject, PrincipalKind::User)
        });
        let request = CallRequest::new(&route.name, method)
            .name(Some(&q.name))
            .era(Era::Modern)
            .annotations(annotations);
        let d = engine.decide(&principal, &request);
        let policies: Vec<Value> = d
            .determining_policy_ids
            .iter()
            .map(|id| json!({"id": id, "source": engine.policy(id).map(|p| p.source)}))
            .collect();
        Ok(json!({
            "decision": if d.allowed { "allow" } else { "deny" },
            "enforced": d.enforced,
            "reason": d.reason.as_str(),
            "policies": policies,
        }))
    }

    fn upstreams(&self) -> Value {
        let g = self.live.current();
        let routes = g.routes();
        let health = upstreams_json(&routes);
        let mut list: Vec<Value> = routes
            .iter()
            .map(|r| {
                let mut v = health.get(&*r.name).cloned().unwrap_or_else(|| json!({}));
                v["name"] = json!(r.name);
                v["url"] = json!(r.upstream.shown);
                v["sync"] = report::sync_json(r);
                v
            })
            .collect();
        list.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        json!({"upstreams": list, "virtual_servers": virtuals_json(&g), "limit_store": store_json(&g)})
    }

    async fn record(&self, record: CallRecord) -> Result<(), String> {
        if self.audit.durability() == Durability::Strict {
            return self.audit.record_durable(record).await.map_err(|e| e.to_string());
        }
        match self.audit.record(record) {
            Recorded::Queued | Recorded::Disabled => Ok(()),
            Recorded::Dropped => Err("the audit queue is full or closed".into()),
        }
    }

    async fn oauth_clients(&self) -> Option<Result<Value, String>> {
        let issuer = self.issuer.as_ref()?;
        Some(
            issuer
                .clients()
                .await
                .map(|c| json!({ "clients": c }))
                .map_err(|e| e.to_string()),
        )
    }

    async fn oauth_client_action(&self, client_id: &str, action: &str) -> Result<bool, String> {
        let issuer = self.issuer.as_ref().ok_or("the authorization server is not enabled")?;
        let done = match action {
            "disable" => issuer.set_client_disabled(client_id, true).await,
            "enable" => issuer.set_client_disabled(client_id, false).await,
            "delete" => issuer.delete_client(client_id).await,
            other => return Err(format!("unknown action {other:?}: disable, enable or delete")),
        };
        done.map_err(|e| e.to_string())
    }

    async fn oauth_grants(&self, subject: Option<&str>) -> Option<Result<Value, String>> {
        let issuer = self.issuer.as_ref()?;
        let grants = match issuer.grants().await {
            Ok(all) => all
                .into_iter()
                .filter(|g| subject.is_none_or(|s| g.user.subject == s))
                .collect::<Vec<_>>(),
            Err(e) => return Some(Err(e.to_string())),
        };
        let connections = match self.live.current().shared.vault.clone() {
            Some(vault) => match vault.grants(subject).await {
                Ok(c) => c,
                Err(e) => return Some(Err(e.to_string())),
            },
            None => Vec::new(),
        };
        Some(Ok(json!({ "grants": grants, "connections": connections })))
    }

    async fn oauth_revoke(&self, id: &str, subject: Option<&str>) -> Result<bool, String> {
        let issuer = self.issuer.as_ref().ok_or("the authorization server is not enabled")?;
        let all = issuer.grants().await.map_err(|e| e.to_string())?;
        let Some(grant) = all
            .iter()
            .find(|g| g.id == id && subject.is_none_or(|s| g.user.subject == s))
        else {
            // Not a client's grant: maybe the user's own at an upstream.
            return match self.live.current().shared.vault.clone() {
                Some(vault) => vault.revoke(id, subject).await.map_err(|e| e.to_string()),
                None => Ok(false),
            };
        };
        issuer.revoke_grant(&grant.id).await.map_err(|e| e.to_string())?;
        Ok(true)
    }
}
