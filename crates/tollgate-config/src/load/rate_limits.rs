//! Validation of what protects upstreams and budgets: `[[limits.rules]]`
//! (unique ids, rates and periods that make sense, routes that exist, name
//! patterns that can match), `[[limits.budgets]]`, `[limits.redis]`, and
//! each server's `resilience`.

use std::collections::HashSet;

use super::Problems;
use crate::Config;
use crate::locate::Seg;

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
