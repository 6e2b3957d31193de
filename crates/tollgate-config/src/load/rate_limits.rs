//! Validation of `[[limits.rules]]`: unique ids, rates and periods that
//! make sense, routes that exist, name patterns that can match.

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
}

pub(super) fn validate(c: &Config, out: &mut Problems) {
    validate_store(c, out);
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
            let known = c.servers.iter().any(|s| s.name.as_str() == route)
                || c.virtual_servers.iter().any(|v| v.name.as_str() == route);
            if !known {
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
