//! Which calls a rule (or a price) covers, and what a count is kept under.
//!
//! Identity is (issuer, subject): a principal's count is keyed by both
//! ([`Identity::key`]), so two issuers' equal `sub` values never share a
//! count, and a listed principal names its issuer or stands for its
//! subject under every trusted issuer. A per-route count is kept for every
//! route a call is on — the route it ends up on and the virtual server it
//! came through — so a rule naming a member route cannot be side-stepped
//! through a virtual server.

use tollgate_config::{KeyName, RateKey, RateRule};

use crate::Call;

/// A verified caller, as limits and budgets count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Identity<'a> {
    /// The token's issuer (`iss`), exactly as configured. Empty only where
    /// it is not known (a report from the audit index, which keeps no
    /// issuer): the subject alone then keys and matches.
    pub issuer: &'a str,
    /// The subject.
    pub subject: &'a str,
}

impl Identity<'_> {
    /// The text its counts are kept under: `<issuer>#<subject>`, with `%`
    /// and `#` in the issuer written `%25` and `%23` so that no two
    /// identities share one; the subject alone when the issuer is unknown.
    pub fn key(&self) -> String {
        if self.issuer.is_empty() {
            return self.subject.to_owned();
        }
        let mut key = String::with_capacity(self.issuer.len() + self.subject.len() + 1);
        if self.issuer.contains(['%', '#']) {
            key.push_str(&self.issuer.replace('%', "%25").replace('#', "%23"));
        } else {
            key.push_str(self.issuer);
        }
        key.push('#');
        key.push_str(self.subject);
        key
    }

    /// Whether `name` (a rule's `principals`, a budget's `keys`) names this
    /// caller: a plain name is the subject under any issuer; a named issuer
    /// must be this one (or unknown, in a report).
    pub fn is_named_by(&self, name: &KeyName) -> bool {
        match name {
            KeyName::Plain(subject) => subject == self.subject,
            KeyName::Principal(p) => p.subject == self.subject && (p.issuer == self.issuer || self.issuer.is_empty()),
        }
    }
}

/// Whether `name` is the plain name `value` (a team or cost centre).
pub(crate) fn is_plain(name: &KeyName, value: &str) -> bool {
    matches!(name, KeyName::Plain(n) if n == value)
}

/// What `call` is counted by under `rule`: one key, or for `per = "route"`
/// one per route of the call the rule covers — the route it ends up on and
/// the virtual server it came through.
pub(crate) fn keys(rule: &RateRule, call: &Call<'_>) -> [Option<String>; 2] {
    match rule.per {
        RateKey::Principal => [Some(call.principal.map(|p| p.key()).unwrap_or_default()), None],
        RateKey::Team => [Some(call.team.unwrap_or("").to_owned()), None],
        RateKey::Global => [Some(String::new()), None],
        RateKey::Route => {
            let named = |r: &str| rule.routes.is_empty() || rule.routes.iter().any(|x| x == r);
            [
                named(call.route).then(|| call.route.to_owned()),
                call.via.filter(|v| named(v)).map(str::to_owned),
            ]
        }
    }
}

/// Whether `rule` counts `call`.
pub(crate) fn matches(rule: &RateRule, call: &Call<'_>) -> bool {
    let any =
        |list: &[String], value: Option<&str>| list.is_empty() || value.is_some_and(|v| list.iter().any(|x| x == v));
    let names = [call.name, call.exposed];
    let principal = rule.principals.is_empty()
        || call
            .principal
            .is_some_and(|p| rule.principals.iter().any(|n| p.is_named_by(n)));
    covers((&rule.routes, &rule.tools), (call.route, call.via), names)
        && any(&rule.methods, Some(call.method))
        && principal
        && any(&rule.teams, call.team)
        && any(&rule.cost_centers, call.cost_center)
}

/// Whether a setting's `routes` and name patterns `tools` (each empty for
/// "any") cover a call on `route` (made through the virtual server `via`)
/// named by any of `names`: a rule's or a price's match.
pub(crate) fn covers(
    (routes, tools): (&[String], &[String]),
    (route, via): (&str, Option<&str>),
    names: [Option<&str>; 2],
) -> bool {
    let on_route = routes.is_empty() || routes.iter().any(|r| r == route || via == Some(r.as_str()));
    let named = tools.is_empty()
        || names
            .into_iter()
            .flatten()
            .any(|n| tools.iter().any(|p| wildcard(p, n)));
    on_route && named
}

/// Whether `text` matches `pattern`, where `*` stands for any run of
/// characters (`delete_*`, `*_admin`, `*`).
pub(crate) fn wildcard(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use tollgate_config::{IssuedSubject, KeyName};

    use super::Identity;

    fn id<'a>(issuer: &'a str, subject: &'a str) -> Identity<'a> {
        Identity { issuer, subject }
    }

    #[test]
    fn a_key_names_issuer_and_subject_and_no_two_identities_share_one() {
        assert_eq!(id("https://idp.example", "alice").key(), "https://idp.example#alice");
        // A `#` in an issuer cannot make it read as another identity's.
        let (a, b) = (id("https://a#b", "c"), id("https://a", "b#c"));
        assert_eq!(a.key(), "https://a%23b#c");
        assert_ne!(a.key(), b.key());
        assert_ne!(id("https://a%23b", "c").key(), a.key());
        // Unknown issuer (a report): the subject alone.
        assert_eq!(id("", "alice").key(), "alice");
    }

    #[test]
    fn a_named_issuer_must_match_and_a_plain_name_is_any_issuers_subject() {
        let partner = KeyName::Principal(IssuedSubject {
            issuer: "https://partner.example".into(),
            subject: "alice".into(),
        });
        assert!(id("https://partner.example", "alice").is_named_by(&partner));
        assert!(!id("https://idp.example", "alice").is_named_by(&partner));
        assert!(!id("https://partner.example", "bob").is_named_by(&partner));
        assert!(id("https://idp.example", "alice").is_named_by(&"alice".into()));
        assert!(
            id("", "alice").is_named_by(&partner),
            "a report cannot tell issuers apart"
        );
    }
}
