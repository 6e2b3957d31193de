//! `tollgate validate`'s warning about the policies: with several trusted
//! issuers, a policy set that never reads the issuer.
//!
//! Identity is (issuer, subject), but a Cedar principal's entity id is the
//! subject alone: with two issuers, `Tollgate::User::"alice"` is both of
//! their alices. The policies are compiled here (the configuration crate
//! cannot); the configuration's own warnings come with [`Loaded`].

use tollgate_config::{ConfigError, Loaded};

/// The warning for `loaded`'s policies, in the form of its errors: several
/// issuers are trusted and no policy reads `principal.issuer` or
/// `context.issuer`. Policies that do not load are `tollgate policy
/// validate`'s to report.
pub(crate) fn policy_warning(loaded: &Loaded) -> Option<ConfigError> {
    let issuers = loaded.config.trusted_issuers();
    if issuers.len() < 2 {
        return None;
    }
    let dir = loaded.config.policy.resolved_dir(&loaded.path)?;
    let summary = tollgate_policy::validate(&dir).ok()?;
    if summary.reads_issuer {
        return None;
    }
    let message = format!(
        "{} issuers are trusted ({}) and no policy in {} reads the issuer: a principal's id is its subject alone, \
         so a policy naming `Tollgate::User::\"alice\"` matches every issuer's alice; add `when {{ \
         principal.issuer == \"…\" }}` (docs/policies.md)",
        issuers.len(),
        issuers.join(", "),
        dir.display()
    );
    Some(ConfigError {
        file: loaded.path.clone(),
        line: None,
        column: None,
        key: "policy.dir".into(),
        message,
    })
}
