//! `tollgate policy validate`: check a policy directory and summarize it.
//!
//! The same compilation the gateway runs at start and on reload, so what
//! validates is exactly what loads. The summary also says whether any
//! policy reads the issuer (`principal.issuer`, `context.issuer`), which
//! `tollgate validate` wants when several issuers are trusted.

use std::fmt;
use std::path::{Path, PathBuf};

use cedar_policy::{Effect, Policy};
use serde_json::Value as Json;
use tollgate_config::PolicyFiles;

use crate::compile::{self, PolicyMeta};
use crate::error::SourceError;
use crate::ids::Types;
use crate::needs::Needs;

/// What a valid policy directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The directory.
    pub dir: PathBuf,
    /// The schema file used.
    pub schema: PathBuf,
    /// `*.cedar` files read.
    pub files: usize,
    /// Policies.
    pub policies: usize,
    /// Of which `permit`.
    pub permits: usize,
    /// Of which `forbid`.
    pub forbids: usize,
    /// Of which `forbid` annotated with `@scope` (missing-scope denials).
    pub scope_forbids: usize,
    /// The policy ids, in file order.
    pub ids: Vec<String>,
    /// The `context` attributes the policies read (only these are built per
    /// request).
    pub context: Vec<&'static str>,
    /// Whether a policy reads the token's issuer (`principal.issuer` or
    /// `context.issuer`): with several trusted issuers, a policy naming a
    /// principal by its id alone (the subject) matches every issuer's.
    pub reads_issuer: bool,
    /// Cedar's warnings (confusable strings, shadowed names): the set
    /// still loads.
    pub warnings: Vec<SourceError>,
}

impl Summary {
    pub(crate) fn new(
        files: &PolicyFiles,
        policies: &[Policy],
        meta: &[PolicyMeta],
        needs: Needs,
        warnings: Vec<SourceError>,
    ) -> Summary {
        let permits = policies.iter().filter(|p| p.effect() == Effect::Permit).count();
        Summary {
            dir: files.dir.clone(),
            schema: files.schema.path.clone(),
            files: files.policies.len(),
            policies: policies.len(),
            permits,
            forbids: policies.len() - permits,
            scope_forbids: meta.iter().filter(|m| !m.scopes.is_empty()).count(),
            ids: meta.iter().map(|m| m.id.to_string()).collect(),
            context: needs.names(),
            reads_issuer: policies.iter().any(reads_issuer),
            warnings,
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} policies ({} permit, {} forbid, {} with @scope) in {} files, schema {}",
            self.dir.display(),
            self.policies,
            self.permits,
            self.forbids,
            self.scope_forbids,
            self.files,
            self.schema.display()
        )?;
        if !self.context.is_empty() {
            writeln!(f, "context read: {}", self.context.join(", "))?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

/// Validate the policy directory `dir`: read it, parse the schema and every
/// policy, check ids and annotations, validate strictly against the schema
/// and check the schema against what the gateway sends.
///
/// # Errors
///
/// Every problem found, each with its file and (when Cedar reports one) its
/// line and column.
pub fn validate(dir: &Path) -> Result<Summary, Vec<SourceError>> {
    let files = read(dir).map_err(|e| vec![e])?;
    validate_files(&files)
}

/// [`validate`] for files already read.
///
/// # Errors
///
/// As [`validate`].
pub fn validate_files(files: &PolicyFiles) -> Result<Summary, Vec<SourceError>> {
    let types = Types::new().map_err(|e| vec![SourceError::new(&files.dir, e.to_string())])?;
    compile::compile(files, &types).map(|c| c.summary).map_err(|e| e.0)
}

/// Read a policy directory, as a located error.
pub(crate) fn read(dir: &Path) -> Result<PolicyFiles, SourceError> {
    tollgate_config::read_policy_dir(dir).map_err(|e| SourceError::new(e.file, e.message))
}

/// Whether `policy` reads `issuer` of the principal or the context
/// (`.issuer`, `["issuer"]` or `has issuer`); a policy Cedar cannot show
/// as JSON counts as reading it (no false warning).
fn reads_issuer(policy: &Policy) -> bool {
    policy.to_json().map_or(true, |est| mentions_issuer(&est))
}

fn mentions_issuer(v: &Json) -> bool {
    match v {
        Json::Object(map) => {
            let on_issuer = [".", "has"].iter().any(|op| {
                map.get(*op).is_some_and(|access| {
                    let var = access.get("left").and_then(|l| l.get("Var")).and_then(Json::as_str);
                    access.get("attr").and_then(Json::as_str) == Some("issuer")
                        && matches!(var, Some("principal" | "context"))
                })
            });
            on_issuer || map.values().any(mentions_issuer)
        }
        Json::Array(items) => items.iter().any(mentions_issuer),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::str::FromStr;

    use super::*;

    fn reads(src: &str) -> bool {
        reads_issuer(&Policy::from_str(src).unwrap())
    }

    #[test]
    fn a_policy_reads_the_issuer_of_the_principal_or_the_context() {
        let permit = "permit (principal == Tollgate::User::\"alice\", action, resource)";
        assert!(reads(&format!(
            "{permit} when {{ principal.issuer == \"https://idp\" }};"
        )));
        assert!(reads(&format!(
            "{permit} when {{ context[\"issuer\"] == \"https://idp\" }};"
        )));
        assert!(reads(&format!("{permit} when {{ principal has issuer }};")));
        assert!(!reads(&format!("{permit};")));
        assert!(!reads(&format!("{permit} when {{ resource.name == \"issuer\" }};")));
    }
}
