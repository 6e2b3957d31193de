//! Checking that a schema describes the requests the gateway builds.
//!
//! Strict validation proves policies correct against the schema; this proves
//! the schema correct against the gateway: sample entities and requests,
//! made by the same builders the request path uses (every optional
//! attribute and context attribute present), are checked with the schema.
//! A schema edited out of step with the code is refused at load instead of
//! turning into evaluation errors (denials) at run time.
//!
//! The entities of a call through a virtual server are checked when the
//! schema declares `VirtualServer`. A schema from before it still loads:
//! its policies cannot name a virtual server, so the extra ancestor is
//! invisible to them.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::Arc;

use cedar_policy::{Context, Entities, Entity, EntityUid, Request, Schema};
use cedar_policy_core::ast::{Context as CoreContext, Entity as CoreEntity, Value};
use ref_cast::RefCast as _;
use smol_str::SmolStr;
use tollgate_core::{Era, Principal, PrincipalKind};

use crate::error::SourceError;
use crate::ids::Types;
use crate::model::{Action, TargetKind};
use crate::needs::Needs;
use crate::principal::PrincipalFacts;
use crate::request::{self, Facts, Statics, Within};

/// Every mismatch between `schema` (read from `path`) and the gateway.
pub(crate) fn check(schema: &Schema, types: &Types, path: &Path) -> Vec<SourceError> {
    let mut problems = Vec::new();
    let declared: Vec<_> = schema.actions().collect();
    for a in Action::ALL {
        if !declared.contains(&types.action(a)) {
            problems.push(format!("action {} is not declared", types.action(a)));
        }
    }
    let statics = Statics::new(types);
    let principals = [PrincipalKind::User, PrincipalKind::Service].map(|k| PrincipalFacts::new(types, &sample(k)));
    let targets = resources(types, None);
    let args = request::args_entity(&statics, &[("Repo", "acme/x")]);
    let fixed: Vec<&Arc<CoreEntity>> = principals.iter().map(|p| &p.entity).chain([&args]).collect();
    let virtual_server = schema.entity_types().any(|t| *t == types.virtual_server);
    let through = virtual_server.then(|| resources(types, Some("eng")));
    // One store each: the same ids, on the route and through a virtual server.
    for resources in std::iter::once(&targets).chain(&through) {
        let entities = fixed
            .iter()
            .copied()
            .chain(resources.iter().map(|(_, e)| e))
            .map(|e| Entity::ref_cast(e.as_ref()).clone());
        if let Err(e) = Entities::from_entities(entities, Some(schema)) {
            problems.push(chain(&e));
        }
    }
    for p in &principals {
        for a in Action::ALL.into_iter().filter(|a| declared.contains(&types.action(*a))) {
            let resource = match a.target() {
                Some(TargetKind::Tool) => &targets[0].0,
                Some(TargetKind::Resource) => &targets[1].0,
                Some(TargetKind::Prompt) => &targets[2].0,
                None => &targets[3].0,
            };
            problems.extend(check_request(schema, types, &statics, p, a, resource));
        }
    }
    problems.sort();
    problems.dedup();
    let describe = |what| format!("the schema does not describe what the gateway sends: {what}");
    problems
        .into_iter()
        .map(|p| SourceError::new(path, describe(p)))
        .collect()
}

/// An error with its causes: Cedar puts what does not conform in the
/// source.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A tool, a resource, a prompt and their server, on the member's own
/// route or through `virtual_server`.
fn resources(types: &Types, virtual_server: Option<&str>) -> [(EntityUid, Arc<CoreEntity>); 4] {
    let within = Within::target(types, "demo", virtual_server);
    let target = |kind, name| request::target_entity(types, kind, "demo", name, &within);
    [
        target(TargetKind::Tool, "echo"),
        target(TargetKind::Resource, "demo://readme"),
        target(TargetKind::Prompt, "greeting"),
        request::server_entity(types, "demo", &Within::server(types, virtual_server)),
    ]
}

/// The problems of the request `p` doing `a` on `resource` with a full
/// context: the context attributes whose removal makes it valid (sent by the
/// gateway, not declared so by the schema), else Cedar's message.
fn check_request(
    schema: &Schema,
    types: &Types,
    statics: &Statics,
    p: &PrincipalFacts,
    a: Action,
    resource: &EntityUid,
) -> Vec<String> {
    let scopes = ["repo".to_owned()];
    let facts = Facts {
        route: "demo",
        method: "tools/call",
        era: Era::Modern,
        client_ip: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        annotations: None,
        now: 0,
        utc_offset: 0,
        virtual_server: None,
        upstream_grant: Some(crate::model::UpstreamGrantFacts {
            present: true,
            scopes: &scopes,
        }),
    };
    let context = match request::context(Needs::ALL, statics, p, &facts, crate::clock::local(0, 0)) {
        Ok(CoreContext::Value(attrs)) => attrs,
        Ok(CoreContext::RestrictedResidual(_)) => return vec!["context: not a value".into()],
        Err(e) => return vec![format!("context: {e}")],
    };
    let valid = |attrs: Arc<BTreeMap<SmolStr, Value>>| {
        let ctx = Context::ref_cast(&CoreContext::Value(attrs)).clone();
        Request::new(
            p.uid.clone(),
            types.action(a).clone(),
            resource.clone(),
            ctx,
            Some(schema),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    let Err(message) = valid(Arc::clone(&context)) else {
        return Vec::new();
    };
    let culprits: Vec<String> = context
        .keys()
        .filter(|name| {
            let mut fewer = (*context).clone();
            fewer.remove(*name);
            valid(Arc::new(fewer)).is_ok()
        })
        .map(|name| format!("context.{name} is not in the schema's context, or has another type"))
        .collect();
    if culprits.is_empty() {
        return vec![format!("{} by {}: {message}", a.as_str(), p.uid.type_name())];
    }
    culprits
}

fn sample(kind: PrincipalKind) -> Principal {
    Principal {
        issuer: "https://idp.example.com".into(),
        subject: "sample".into(),
        client_id: Some("client".into()),
        token_id: Some("jti".into()),
        audience: vec!["https://gw.example.com/mcp/demo".into()],
        groups: vec!["group".into()],
        team: Some("team".into()),
        cost_center: Some("cc".into()),
        scopes: vec!["mcp:tools".into()],
        expires_at: 0,
        kind,
    }
}
