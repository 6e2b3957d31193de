//! Serde helpers for record fields whose types live in `tollgate-core`
//! (which has no `Deserialize`) or need a fixed text form.

/// `SystemTime` as RFC 3339 UTC with microseconds: `2026-09-01T12:00:00.123456Z`.
pub(crate) mod timestamp {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339_micros(*t))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        humantime::parse_rfc3339_weak(&text).map_err(serde::de::Error::custom)
    }
}

/// `Option<SystemTime>` as [`timestamp`].
pub(crate) mod timestamp_opt {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => super::timestamp::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
        let text = <Option<std::borrow::Cow<'de, str>>>::deserialize(d)?;
        text.map(|t| humantime::parse_rfc3339_weak(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// `Option<Era>` as `"modern"` / `"legacy"`.
pub(crate) mod era_opt {
    use serde::{Deserialize, Deserializer, Serializer};
    use tollgate_core::Era;

    #[allow(clippy::ref_option, reason = "the signature serde's `with` requires")]
    pub(crate) fn serialize<S: Serializer>(era: &Option<Era>, s: S) -> Result<S::Ok, S::Error> {
        match era {
            Some(e) => s.serialize_str(e.as_str()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Era>, D::Error> {
        let text = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?;
        match text.as_deref() {
            None => Ok(None),
            Some("modern") => Ok(Some(Era::Modern)),
            Some("legacy") => Ok(Some(Era::Legacy)),
            Some(other) => Err(serde::de::Error::custom(format!("unknown era {other:?}"))),
        }
    }
}

/// `Option<Arc<Principal>>` as the identity fields an auditor needs: no
/// scopes or expiry, never a token.
pub(crate) mod principal_opt {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use tollgate_core::{Principal, PrincipalKind};

    #[derive(Serialize)]
    struct Out<'a> {
        kind: PrincipalKind,
        issuer: &'a str,
        subject: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        client_id: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        token_id: Option<&'a str>,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        audience: &'a [String],
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        groups: &'a [String],
        #[serde(skip_serializing_if = "Option::is_none")]
        team: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cost_center: Option<&'a str>,
    }

    #[derive(Deserialize)]
    struct In {
        #[serde(default)]
        kind: Option<String>,
        issuer: String,
        subject: String,
        #[serde(default)]
        client_id: Option<String>,
        #[serde(default)]
        token_id: Option<String>,
        #[serde(default)]
        audience: Vec<String>,
        #[serde(default)]
        groups: Vec<String>,
        #[serde(default)]
        team: Option<String>,
        #[serde(default)]
        cost_center: Option<String>,
    }

    #[allow(clippy::ref_option, reason = "the signature serde's `with` requires")]
    pub(crate) fn serialize<S: Serializer>(p: &Option<Arc<Principal>>, s: S) -> Result<S::Ok, S::Error> {
        let Some(p) = p else { return s.serialize_none() };
        Out {
            kind: p.kind,
            issuer: &p.issuer,
            subject: &p.subject,
            client_id: p.client_id.as_deref(),
            token_id: p.token_id.as_deref(),
            audience: &p.audience,
            groups: &p.groups,
            team: p.team.as_deref(),
            cost_center: p.cost_center.as_deref(),
        }
        .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<Principal>>, D::Error> {
        let Some(p) = Option::<In>::deserialize(d)? else {
            return Ok(None);
        };
        Ok(Some(Arc::new(Principal {
            issuer: p.issuer,
            subject: p.subject,
            client_id: p.client_id,
            token_id: p.token_id,
            audience: p.audience,
            groups: p.groups,
            team: p.team,
            cost_center: p.cost_center,
            scopes: Vec::new(),
            expires_at: 0,
            kind: match p.kind.as_deref() {
                Some("service") => PrincipalKind::Service,
                _ => PrincipalKind::User,
            },
        })))
    }
}
