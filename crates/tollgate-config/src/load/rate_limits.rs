//! Validation of what protects upstreams and budgets: `[[limits.rules]]`
//! (unique ids, rates and periods that make sense, routes that exist, name
//! patterns that can match, principals of trusted issuers),
//! `[[limits.budgets]]`, `[limits.redis]`, and each server's `resilience`.

use std::collections::HashSet;

use super::Problems;
use crate::locate::Seg;
use crate::{Config, KeyName};

fn rule_key(i: usize, field: &str) -> Vec<Seg> {
    vec![
        Seg::Key("limits".into()),
        Seg::Key("rules".into()),
        Seg::Index(i),
        Seg::Key(field.into()),
    ]
}

fn redis_key(field: &str) -> Vec<Seg> {
    vec![
        Seg::Key("limits".into()),
        Seg::Key("redis".into()),
        Seg::Key(field.into()),
    ]
}

/// `[limits.redis]`: a Redis URL, a timeout and a replica count that make
/// sense.
fn validate_store(c: &Config, out: &mut Problems) {
    let Some(r) = &c.limits.redis else {
        return;
    };
    match url::Url::parse(&r.url) {
        Ok(u) if u.scheme() == "redis" && r.tls.is_some() => out.push((
            redis_key("tls"),
            "needs a rediss:// url (TLS); redis:// is plain TCP".into(),
        )),
        Ok(u) if matches!(u.scheme(), "redis" | "rediss") && u.host_str().is_some() => {}
        Ok(_) => out.push((
            redis_key("url"),
            "must be redis://host[:port] or rediss://host[:port]".into(),
        )),
        Err(e) => out.push((redis_key("url"), format!("not a URL: {e}"))),
    }
    if r.timeout.is_zero() {
        out.push((redis_key("timeout"), "must be greater than 0".into()));
    }
    if r.replicas == 0 {
        out.push((redis_key("replicas"), "must be at least 1".into()));
    }
    if r.key_prefix.is_empty() {
        out.push((redis_key("key_prefix"), "must not be empty".into()));
    }
    if let Some(t) = &r.tls
        && t.cert.is_some() != t.key.is_some()
    {
        out.push((redis_key("tls"), "set both `cert` and `key`, or neither".into()));
    }
}

fn budget_key(i: usize, field: &str) -> Vec<Seg> {
    vec![
        Seg::Key("limits".into()),
        Seg::Key("budgets".into()),
        Seg::Index(i),
        Seg::Key(field.into()),
    ]
}

/// `[[limits.budgets]]` and `[limits] time_zone`.
fn validate_budgets(c: &Config, out: &mut Problems) {
    if jiff::tz::TimeZone::get(&c.limits.time_zone).is_err() {
        out.push((
            vec![Seg::Key("limits".into()), Seg::Key("time_zone".into())],
            format!(
                "unknown time zone {:?} (an IANA name such as \"Europe/Berlin\")",
                c.limits.time_zone
            ),
        ));
    }
    let mut ids = HashSet::new();
    for (i, b) in c.limits.budgets.iter().enumerate() {
        if b.id.trim().is_empty() {
            out.push((budget_key(i, "id"), "must not be empty".into()));
        } else if !ids.insert(b.id.as_str()) {
            out.push((budget_key(i, "id"), format!("duplicate budget id {:?}", b.id)));
        }
        if b.tokens == 0 {
            out.push((budget_key(i, "tokens"), "must be at least 1".into()));
        }
        if !(b.warn_at > 0.0 && b.warn_at <= 1.0) {
            out.push((budget_key(i, "warn_at"), "must be a share in (0, 1]".into()));
        }
        for route in &b.routes {
            if !known_route(c, route) {
                out.push((
                    budget_key(i, "routes"),
                    format!("no server or virtual server named {route:?}"),
                ));
            }
        }
        let per_principal = b.per == crate::BudgetKey::Principal;
        check_names(c, &b.keys, per_principal, budget_key(i, "keys"), out);
    }
}

/// A rule's `principals` or a budget's `keys`: a name with an issuer
/// names a principal (`principal` says whether principals are meant) of a
/// trusted issuer.
fn check_names(c: &Config, names: &[KeyName], principal: bool, at: Vec<Seg>, out: &mut Problems) {
    let trusted = c.trusted_issuers();
    for name in names {
        let KeyName::Principal(p) = name else { continue };
        if !principal {
            out.push((
                at.clone(),
                "names a principal; this budget counts teams or cost centres".into(),
            ));
        } else if !trusted.contains(&p.issuer) {
            let why = format!(
                "no trusted issuer {:?} (`[[auth.issuers]]` or `[dev_issuer]`)",
                p.issuer
            );
            out.push((at.clone(), why));
        }
    }
}

/// `[[limits.prices]]` and `[limits] currency`.
fn validate_prices(c: &Config, out: &mut Problems) {
    let at = |i: usize, field: &str| {
        vec![
            Seg::Key("limits".into()),
            Seg::Key("prices".into()),
            Seg::Index(i),
            Seg::Key(field.into()),
        ]
    };
    if c.limits.currency.trim().is_empty() {
        out.push((
            vec![Seg::Key("limits".into()), Seg::Key("currency".into())],
            "must not be empty".into(),
        ));
    }
    for (i, p) in c.limits.prices.iter().enumerate() {
        if !(p.per_million_tokens.is_finite() && p.per_million_tokens >= 0.0) {
            out.push((at(i, "per_million_tokens"), "must be a number of at least 0".into()));
        }
        for route in p.routes.iter().filter(|r| !known_route(c, r)) {
            out.push((at(i, "routes"), format!("no server or virtual server named {route:?}")));
        }
        if p.tools.iter().any(String::is_empty) {
            out.push((at(i, "tools"), "an empty pattern matches nothing".into()));
        }
    }
}

fn known_route(c: &Config, route: &str) -> bool {
    c.servers.iter().any(|s| s.name.as_str() == route) || c.virtual_servers.iter().any(|v| v.name.as_str() == route)
}

pub(super) fn validate(c: &Config, out: &mut Problems) {
    validate_store(c, out);
    validate_budgets(c, out);
    validate_prices(c, out);
    let mut ids = HashSet::new();
    for (i, r) in c.limits.rules.iter().enumerate() {
        if r.id.trim().is_empty() {
            out.push((rule_key(i, "id"), "must not be empty".into()));
        } else if !ids.insert(r.id.as_str()) {
            out.push((rule_key(i, "id"), format!("duplicate rule id {:?}", r.id)));
        }
        if r.rate == 0 {
            out.push((rule_key(i, "rate"), "must be at least 1".into()));
        }
        if r.burst == Some(0) {
            out.push((rule_key(i, "burst"), "must be at least 1".into()));
        }
        if r.period.is_zero() {
            out.push((rule_key(i, "period"), "must be greater than 0".into()));
        } else if r.rate > 0 && (r.period / r.rate).is_zero() {
            out.push((rule_key(i, "rate"), "is more than one call per nanosecond".into()));
        }
        for route in &r.routes {
            if !known_route(c, route) {
                out.push((
                    rule_key(i, "routes"),
                    format!("no server or virtual server named {route:?}"),
                ));
            }
        }
        if r.tools.iter().any(String::is_empty) {
            out.push((rule_key(i, "tools"), "an empty pattern matches nothing".into()));
        }
        check_names(c, &r.principals, true, rule_key(i, "principals"), out);
    }
}

/// With several trusted issuers, a plain name in a rule's `principals` or a
/// `per = "principal"` budget's `keys` is the subject of each of them: valid
/// (a limit then holds for more callers, never fewer), but likely meant for
/// one issuer's principal.
pub(super) fn warnings(c: &Config, out: &mut Problems) {
    let issuers = c.trusted_issuers();
    let Some(first) = issuers.first().filter(|_| issuers.len() > 1) else {
        return;
    };
    let rules = c.limits.rules.iter().enumerate();
    let rules = rules.map(|(i, r)| (rule_key(i, "principals"), &r.principals));
    let budgets = c.limits.budgets.iter().enumerate();
    let budgets = budgets
        .filter(|(_, b)| b.per == crate::BudgetKey::Principal)
        .map(|(i, b)| (budget_key(i, "keys"), &b.keys));
    for (at, names) in rules.chain(budgets) {
        if let Some(KeyName::Plain(subject)) = names.iter().find(|n| matches!(n, KeyName::Plain(_))) {
            let message = format!(
                "{subject:?} is that subject of each of the {} trusted issuers; to name one issuer's, write \
                 {{ issuer = {first:?}, subject = {subject:?} }} (docs/limits.md)",
                issuers.len()
            );
            out.push((at, message));
        }
    }
}

/// `[[servers]] resilience`: a breaker that can open and close.
pub(super) fn validate_resilience(c: &Config, out: &mut Problems) {
    for (i, s) in c.servers.iter().enumerate() {
        if let Some(t) = &s.tls
            && t.cert.is_some() != t.key.is_some()
        {
            let at = vec![Seg::Key("servers".into()), Seg::Index(i), Seg::Key("tls".into())];
            out.push((at, "set both `cert` and `key`, or neither".into()));
        }
        let b = &s.resilience.breaker;
        let at = |field: &str| {
            vec![
                Seg::Key("servers".into()),
                Seg::Index(i),
                Seg::Key("resilience".into()),
                Seg::Key("breaker".into()),
                Seg::Key(field.into()),
            ]
        };
        if !(b.error_rate > 0.0 && b.error_rate <= 1.0) {
            out.push((at("error_rate"), "must be a share in (0, 1]".into()));
        }
        for (field, d) in [("window", b.window), ("open_for", b.open_for)] {
            if d.is_zero() {
                out.push((at(field), "must be greater than 0".into()));
            }
        }
        for (field, n) in [
            ("consecutive_failures", b.consecutive_failures),
            ("half_open_probes", b.half_open_probes),
        ] {
            if n == 0 {
                out.push((at(field), "must be at least 1".into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::path::Path;

    use crate::load::tests::FakeEnv;
    use crate::{IssuedSubject, KeyName, load_str};

    const BASE: &str = r#"
[listen]
public = "127.0.0.1:8080"
admin = "127.0.0.1:9090"

[[auth.issuers]]
issuer = "https://idp.corp.example"

[[auth.issuers]]
issuer = "https://partner.example"

[[servers]]
name = "github"
url = "http://127.0.0.1:3001/mcp"
"#;

    fn load(extra: &str) -> Result<crate::Loaded, Vec<(String, String)>> {
        let text = format!("{BASE}\n{extra}");
        load_str(Path::new("gw.toml"), &text, &FakeEnv::default())
            .map_err(|e| e.0.into_iter().map(|e| (e.key, e.message)).collect())
    }

    #[test]
    fn a_principal_is_named_by_subject_or_by_issuer_and_subject() {
        let loaded = load(
            "[[limits.rules]]\nid = \"r\"\nrate = 1\nperiod = \"1m\"\n\
             principals = [\"alice\", { issuer = \"https://partner.example\", subject = \"bob\" }]\n\n\
             [[limits.budgets]]\nid = \"b\"\nper = \"principal\"\nperiod = \"day\"\ntokens = 10\n\
             keys = [{ issuer = \"https://idp.corp.example\", subject = \"carol\" }]\n",
        )
        .unwrap();
        let rule = &loaded.config.limits.rules[0];
        assert_eq!(rule.principals[0], KeyName::from("alice"));
        let bob = KeyName::Principal(IssuedSubject {
            issuer: "https://partner.example".into(),
            subject: "bob".into(),
        });
        assert_eq!(rule.principals[1], bob);
        let warned: Vec<&str> = loaded.warnings.iter().map(|w| w.key.as_str()).collect();
        assert_eq!(warned, ["limits.rules[0].principals"], "a named issuer is no warning");
    }

    #[test]
    fn a_plain_subject_with_several_issuers_is_a_warning() {
        let loaded = load(
            "[[limits.rules]]\nid = \"r\"\nrate = 1\nperiod = \"1m\"\nprincipals = [\"alice\"]\n\n\
             [[limits.budgets]]\nid = \"b\"\nper = \"team\"\nperiod = \"day\"\ntokens = 10\nkeys = [\"payments\"]\n",
        )
        .unwrap();
        let warnings: Vec<(&str, &str)> = loaded
            .warnings
            .iter()
            .map(|w| (w.key.as_str(), w.message.as_str()))
            .collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].0, "limits.rules[0].principals");
        assert!(warnings[0].1.contains("each of the 2 trusted issuers"), "{warnings:?}");
        assert!(loaded.warnings[0].line.is_some());
    }

    #[test]
    fn a_named_issuer_must_be_trusted_and_only_principal_budgets_name_principals() {
        let errors = load(
            "[[limits.rules]]\nid = \"r\"\nrate = 1\nperiod = \"1m\"\n\
             principals = [{ issuer = \"https://idp.corp.exampl\", subject = \"alice\" }]\n\n\
             [[limits.budgets]]\nid = \"b\"\nper = \"team\"\nperiod = \"day\"\ntokens = 10\n\
             keys = [{ issuer = \"https://idp.corp.example\", subject = \"carol\" }]\n",
        )
        .unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(errors[0].0, "limits.budgets[0].keys");
        assert!(errors[0].1.contains("names a principal"), "{errors:?}");
        assert_eq!(errors[1].0, "limits.rules[0].principals");
        assert!(errors[1].1.contains("no trusted issuer"), "{errors:?}");
        let typo = load("[[limits.rules]]\nid = \"r\"\nrate = 1\nperiod = \"1m\"\nprincipals = [{ issuer = \"x\" }]\n")
            .unwrap_err();
        assert_eq!(typo.len(), 1, "{typo:?}");
        assert!(typo[0].1.contains("a table with an issuer and a subject"), "{typo:?}");
    }
}
