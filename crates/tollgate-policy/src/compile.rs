//! Compiling a policy directory: parse the schema and the policies, give
//! each policy its `@id`, read `@scope`, validate strictly against the
//! schema, check that the schema describes what the gateway builds, and
//! build the scope index.
//!
//! Runs at start, on reload and in `tollgate policy validate|test`; every
//! problem is collected with its file and line before giving up.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use cedar_policy::{Effect, Policy, PolicyId, PolicySet, Schema, ValidationMode, Validator};
use cedar_policy_core::ast::{Entity, Expr};
use tollgate_config::{PolicyFile, PolicyFiles};

use crate::conformance;
use crate::error::{LoadErrors, SourceError};
use crate::ids::Types;
use crate::index::PolicyIndex;
use crate::locate::{diagnostics, line_col, policy_starts};
use crate::model::Action;
use crate::needs::Needs;
use crate::validate::Summary;

/// What the engine keeps about each policy.
#[derive(Debug, Clone)]
pub(crate) struct PolicyMeta {
    pub(crate) id: Arc<str>,
    /// Scopes named by `@scope` (forbid policies only).
    pub(crate) scopes: Vec<String>,
    pub(crate) file: PathBuf,
    pub(crate) line: Option<usize>,
    /// `permit` or `forbid`.
    pub(crate) effect: &'static str,
    /// The policy's text, as Cedar prints it.
    pub(crate) source: Arc<str>,
}

/// A validated, indexed policy set.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) index: PolicyIndex,
    /// Per indexed policy, in the same order.
    pub(crate) meta: Vec<PolicyMeta>,
    pub(crate) needs: Needs,
    /// Per action, its entity (child of its action groups).
    pub(crate) actions: Vec<Arc<Entity>>,
    pub(crate) summary: Summary,
    /// A hash of every file's path and text: an unchanged directory is not
    /// reloaded.
    pub(crate) fingerprint: u64,
}

/// A hash of the files of a policy directory.
pub(crate) fn fingerprint(files: &PolicyFiles) -> u64 {
    let mut h = DefaultHasher::new();
    for f in std::iter::once(&files.schema).chain(&files.policies) {
        f.path.hash(&mut h);
        f.text.hash(&mut h);
    }
    h.finish()
}

/// Compile a policy directory.
pub(crate) fn compile(files: &PolicyFiles, types: &Types) -> Result<Compiled, LoadErrors> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let schema = parse_schema(&files.schema, &mut errors, &mut warnings);
    if let Some(schema) = &schema {
        errors.extend(conformance::check(schema, types, &files.schema.path));
    }
    let mut policies = Vec::new();
    let mut bodies = Vec::new();
    let mut meta = Vec::new();
    for file in &files.policies {
        parse_file(file, &mut policies, &mut bodies, &mut meta, &mut errors);
    }
    duplicate_ids(&meta, &mut errors);
    let Some(schema) = schema else {
        return Err(LoadErrors(errors));
    };
    if errors.is_empty() {
        validate(&schema, files, &policies, &meta, &mut errors, &mut warnings);
    }
    if !errors.is_empty() {
        return Err(LoadErrors(errors));
    }
    let action_ancestors = action_ancestors(&schema, types);
    let needs = needs_of(&policies);
    let summary = Summary::new(files, &policies, &meta, needs, warnings);
    let index = PolicyIndex::new(
        policies.into_iter().zip(bodies).collect(),
        |a| types.action(a).clone(),
        |a| action_ancestors.get(a.index()).cloned().unwrap_or_default(),
    );
    Ok(Compiled {
        index,
        meta,
        needs,
        actions: action_entities(types, &action_ancestors),
        summary,
        fingerprint: fingerprint(files),
    })
}

/// What the policies read from `context`.
fn needs_of(policies: &[Policy]) -> Needs {
    let mut needs = Needs::default();
    for p in policies {
        match p.to_json() {
            Ok(est) => needs.add_policy(&est),
            Err(_) => return Needs::ALL,
        }
    }
    needs
}

/// Per action, its entity under its action groups.
fn action_entities(types: &Types, ancestors: &[Vec<cedar_policy::EntityUid>]) -> Vec<Arc<Entity>> {
    Action::ALL
        .iter()
        .zip(ancestors)
        .map(|(a, groups)| {
            let parents = groups.iter().cloned().map(Into::into).collect();
            let uid = types.action(*a).clone().into();
            Arc::new(Entity::new_with_attr_partial_value(
                uid,
                [],
                HashSet::new(),
                parents,
                [],
            ))
        })
        .collect()
}

fn parse_schema(file: &PolicyFile, errors: &mut Vec<SourceError>, warnings: &mut Vec<SourceError>) -> Option<Schema> {
    match Schema::from_cedarschema_str(&file.text) {
        Ok((schema, warns)) => {
            for w in warns {
                warnings.extend(diagnostics(&file.path, &file.text, &w));
            }
            Some(schema)
        }
        Err(e) => {
            errors.extend(diagnostics(&file.path, &file.text, &e));
            None
        }
    }
}

/// The conditions of each policy of one file, by Cedar's own id
/// (`policy0`, `policy1`, ...), from Cedar's core parser: the engine
/// evaluates them itself after matching scopes.
type Bodies = HashMap<String, Option<Arc<Expr>>>;

/// Parse one `.cedar` file, renaming each policy to its `@id`.
fn parse_file(
    file: &PolicyFile,
    out: &mut Vec<Policy>,
    bodies: &mut Vec<Option<Arc<Expr>>>,
    meta: &mut Vec<PolicyMeta>,
    errors: &mut Vec<SourceError>,
) {
    let parsed = PolicySet::from_str(&file.text)
        .map_err(|e| diagnostics(&file.path, &file.text, &e))
        .and_then(|set| core_bodies(file).map(|core| (set, core)));
    let (set, core) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            errors.extend(e);
            return;
        }
    };
    let starts = policy_starts(&file.text);
    let position = |id: &PolicyId| {
        let n: Option<usize> = id.to_string().strip_prefix("policy").and_then(|n| n.parse().ok());
        n.and_then(|n| starts.get(n)).map(|&o| line_col(&file.text, o))
    };
    for t in set.templates() {
        let e = SourceError::new(&file.path, "templates (`?principal`, `?resource`) are not supported");
        errors.push(e.at(position(t.id())));
    }
    let mut policies: Vec<&Policy> = set.policies().collect();
    policies.sort_by_key(|p| position(p.id()));
    for p in policies {
        let at = position(p.id());
        match adopt(file, p, &core, at) {
            Ok((policy, body, m)) => {
                out.push(policy);
                bodies.push(body);
                meta.push(m);
            }
            Err(e) => errors.push(e),
        }
    }
}

/// One parsed policy under its `@id`, with its condition and metadata.
fn adopt(
    file: &PolicyFile,
    p: &Policy,
    core: &Bodies,
    at: Option<(usize, usize)>,
) -> Result<(Policy, Option<Arc<Expr>>, PolicyMeta), SourceError> {
    let err = |msg: String| SourceError::new(&file.path, msg).at(at);
    let Some(id) = p.annotation("id").filter(|id| !id.trim().is_empty()) else {
        return Err(err(
            "every policy needs an @id(\"...\") annotation (it names the policy in decisions, logs and audit records)"
                .into(),
        ));
    };
    let scopes = scopes_of(p).map_err(|msg| err(msg).policy(id))?;
    let body = core
        .get(&p.id().to_string())
        .ok_or_else(|| err("Cedar's two parsers disagree on this policy".into()).policy(id))?;
    let meta = PolicyMeta {
        id: Arc::from(id),
        scopes,
        file: file.path.clone(),
        line: at.map(|(l, _)| l),
        effect: match p.effect() {
            Effect::Permit => "permit",
            Effect::Forbid => "forbid",
        },
        source: Arc::from(p.to_string()),
    };
    Ok((p.new_id(PolicyId::new(id)), body.clone(), meta))
}

/// The conditions of a file's policies, from Cedar's core parser.
fn core_bodies(file: &PolicyFile) -> Result<Bodies, Vec<SourceError>> {
    match cedar_policy_core::parser::parse_policyset(&file.text) {
        Ok(core) => Ok(core
            .policies()
            .map(|p| (p.id().to_string(), p.non_scope_constraints_arc().cloned()))
            .collect()),
        Err(e) => Err(diagnostics(&file.path, &file.text, &e)),
    }
}

/// The scopes of a policy's `@scope` annotation (space-separated).
fn scopes_of(p: &Policy) -> Result<Vec<String>, String> {
    let Some(text) = p.annotation("scope") else {
        return Ok(Vec::new());
    };
    if p.effect() != Effect::Forbid {
        return Err("@scope marks a forbid that denies callers lacking a scope; it cannot be on a permit".into());
    }
    let scopes: Vec<String> = text.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect();
    let valid = |s: &String| s.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
    if scopes.is_empty() || !scopes.iter().all(valid) {
        return Err(format!(
            "@scope({text:?}) must name scopes: printable ASCII without `\"` or `\\`, separated by spaces"
        ));
    }
    Ok(scopes)
}

fn duplicate_ids(meta: &[PolicyMeta], errors: &mut Vec<SourceError>) {
    let mut seen: HashMap<&str, &PolicyMeta> = HashMap::new();
    for m in meta {
        if let Some(first) = seen.insert(&m.id, m) {
            let msg = format!(
                "duplicate @id {:?} (also at {}:{})",
                &*m.id,
                first.file.display(),
                first.line.unwrap_or(0)
            );
            errors.push(SourceError::new(&m.file, msg).at(m.line.map(|l| (l, 1))));
        }
    }
}

fn validate(
    schema: &Schema,
    files: &PolicyFiles,
    policies: &[Policy],
    meta: &[PolicyMeta],
    errors: &mut Vec<SourceError>,
    warnings: &mut Vec<SourceError>,
) {
    let set = match PolicySet::from_policies(policies.iter().cloned()) {
        Ok(set) => set,
        Err(e) => {
            errors.push(SourceError::new(&files.dir, e.to_string()));
            return;
        }
    };
    let text_of = |path: &Path| {
        files
            .policies
            .iter()
            .find(|f| f.path == path)
            .map_or("", |f| f.text.as_str())
    };
    let locate = |id: &PolicyId, d: &dyn miette::Diagnostic| {
        let m = meta.iter().find(|m| *m.id == *id.to_string());
        let file = m.map_or(files.dir.as_path(), |m| m.file.as_path());
        let prefix = format!("for policy `{id}`, ");
        diagnostics(file, text_of(file), d)
            .into_iter()
            .map(|mut e| {
                if let Some(rest) = e.message.strip_prefix(&prefix) {
                    e.message = rest.to_owned();
                }
                e.policy(id.to_string())
            })
            .collect::<Vec<_>>()
    };
    let result = Validator::new(schema.clone()).validate(&set, ValidationMode::Strict);
    let mut found = Vec::new();
    for e in result.validation_errors() {
        found.extend(locate(e.policy_id(), e));
    }
    errors.extend(merge_per_action(found));
    let mut found = Vec::new();
    for w in result.validation_warnings() {
        found.extend(locate(w.policy_id(), w));
    }
    warnings.extend(merge_per_action(found));
}

/// Cedar reports a problem once per action a policy may apply to; report it
/// once, in a stable order.
fn merge_per_action(mut found: Vec<SourceError>) -> Vec<SourceError> {
    for e in &mut found {
        e.message = without_action(&e.message);
    }
    found.sort_by(|a, b| (&a.file, a.line, a.column, &a.message).cmp(&(&b.file, b.line, b.column, &b.message)));
    found.dedup();
    found
}

/// `... in context for Tollgate::Action::"x" not found` without the action.
fn without_action(message: &str) -> String {
    let marker = format!(" for {}::Action::\"", crate::ids::NAMESPACE);
    let Some(start) = message.find(&marker) else {
        return message.to_owned();
    };
    let rest = &message[start + marker.len()..];
    match rest.find('"') {
        Some(end) => format!("{}{}", &message[..start], &rest[end + 1..]),
        None => message.to_owned(),
    }
}

fn action_ancestors(schema: &Schema, types: &Types) -> Vec<Vec<cedar_policy::EntityUid>> {
    let entities = schema.action_entities().ok();
    Action::ALL
        .iter()
        .map(|a| {
            entities
                .as_ref()
                .and_then(|e| e.ancestors(types.action(*a)))
                .map(|it| it.cloned().collect())
                .unwrap_or_default()
        })
        .collect()
}
