//! Which `context` attributes the loaded policies read.
//!
//! Computed once per policy set from the policies' JSON form, so the request
//! path builds only the context attributes some policy can look at: a set
//! that never mentions `context.client_ip` or `context.now` pays nothing for
//! them. A policy that uses `context` other than through `.attr`, `["attr"]`
//! or `has attr` makes every attribute needed.

use serde_json::Value as Json;

/// The context attributes of the schema, one bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Needs(u32);

/// An attribute of the schema's `RequestContext`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attr {
    Route,
    Method,
    Era,
    Issuer,
    Audience,
    Scopes,
    ClientIp,
    Now,
    Hour,
    Minute,
    Weekday,
    Annotations,
    Args,
    UpstreamGrant,
}

impl Attr {
    pub(crate) const ALL: [Attr; 14] = [
        Attr::Route,
        Attr::Method,
        Attr::Era,
        Attr::Issuer,
        Attr::Audience,
        Attr::Scopes,
        Attr::ClientIp,
        Attr::Now,
        Attr::Hour,
        Attr::Minute,
        Attr::Weekday,
        Attr::Annotations,
        Attr::Args,
        Attr::UpstreamGrant,
    ];

    /// Its name in the schema.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Attr::Route => "route",
            Attr::Method => "method",
            Attr::Era => "era",
            Attr::Issuer => "issuer",
            Attr::Audience => "audience",
            Attr::Scopes => "scopes",
            Attr::ClientIp => "client_ip",
            Attr::Now => "now",
            Attr::Hour => "hour",
            Attr::Minute => "minute",
            Attr::Weekday => "weekday",
            Attr::Annotations => "annotations",
            Attr::Args => "args",
            Attr::UpstreamGrant => "upstream_grant",
        }
    }
}

impl Needs {
    pub(crate) const ALL: Needs = Needs((1 << Attr::ALL.len()) - 1);

    /// Whether `attr` is needed.
    pub(crate) fn has(self, attr: Attr) -> bool {
        self.0 & (1 << attr as u32) != 0
    }

    fn add(&mut self, name: &str) {
        match Attr::ALL.iter().find(|a| a.name() == name) {
            Some(a) => self.0 |= 1 << *a as u32,
            // Not a known attribute: strict validation refuses such a
            // policy, so this is unreachable; be conservative anyway.
            None => *self = Needs::ALL,
        }
    }

    /// Add what one policy (in Cedar's JSON policy format) reads.
    pub(crate) fn add_policy(&mut self, est: &Json) {
        visit(est, self);
    }

    /// The names of the needed attributes, for the summary.
    pub(crate) fn names(self) -> Vec<&'static str> {
        Attr::ALL.iter().filter(|a| self.has(**a)).map(|a| a.name()).collect()
    }
}

fn is_context(v: &Json) -> bool {
    v.get("Var").and_then(Json::as_str) == Some("context")
}

fn visit(v: &Json, needs: &mut Needs) {
    match v {
        Json::Object(map) => {
            for op in [".", "has"] {
                if let Some(access) = map.get(op)
                    && access.get("left").is_some_and(is_context)
                {
                    match access.get("attr").and_then(Json::as_str) {
                        Some(attr) => needs.add(attr),
                        None => *needs = Needs::ALL,
                    }
                    return;
                }
            }
            if is_context(v) {
                *needs = Needs::ALL;
                return;
            }
            map.values().for_each(|c| visit(c, needs));
        }
        Json::Array(items) => items.iter().for_each(|c| visit(c, needs)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use cedar_policy::Policy;

    use super::*;

    fn needs(src: &str) -> Needs {
        let mut n = Needs::default();
        n.add_policy(&Policy::from_str(src).unwrap().to_json().unwrap());
        n
    }

    #[test]
    fn only_the_attributes_read_are_needed() {
        let n = needs(
            r#"permit (principal, action, resource)
               when { context.hour > 8 && context has client_ip && context["scopes"].contains("a") };"#,
        );
        assert_eq!(n.names(), ["scopes", "client_ip", "hour"]);
        assert!(n.has(Attr::Hour) && !n.has(Attr::Now));
        let n = needs(r#"permit (principal, action, resource) when { context.annotations.read_only };"#);
        assert_eq!(n.names(), ["annotations"]);
        assert_eq!(needs("permit (principal, action, resource);"), Needs::default());
    }

    #[test]
    fn context_used_as_a_whole_needs_everything() {
        let n = needs(r#"permit (principal, action, resource) when { context == {} };"#);
        assert_eq!(n, Needs::ALL);
    }
}
