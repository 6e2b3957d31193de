//! The format of a policy test case (`policies/tests/*.toml`) and its
//! conversion into a principal and a call or list request.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use tollgate_core::{Era, McpMethod, Principal, PrincipalKind};
use toml::value::{Datetime, Offset};

use crate::clock::days_from_civil;
use crate::model::{TargetKind, ToolAnnotations};

/// A test file: optional settings, defaults merged into every case, cases.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TestFile {
    /// The policy directory these cases test, relative to the directory
    /// holding `tests/`; default: that directory.
    pub(crate) policies: Option<std::path::PathBuf>,
    /// The time zone of `context.hour` for these cases (`[policy]
    /// utc_offset`), and of case times written without an offset.
    pub(crate) utc_offset: Option<String>,
    /// Keys every case has unless it sets them itself.
    #[serde(default)]
    pub(crate) defaults: toml::Table,
    #[serde(default)]
    pub(crate) case: Vec<toml::Spanned<toml::Table>>,
}

/// One case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) principal: Claims,
    pub(crate) server: String,
    /// The virtual server the call comes through; unset: the route itself.
    pub(crate) virtual_server: Option<String>,
    pub(crate) method: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) resource: Option<String>,
    pub(crate) prompt: Option<String>,
    #[serde(default)]
    pub(crate) args: BTreeMap<String, toml::Value>,
    pub(crate) annotations: Option<Hints>,
    pub(crate) time: Option<When>,
    pub(crate) client_ip: Option<IpAddr>,
    #[serde(default)]
    pub(crate) era: CaseEra,
    pub(crate) expect: Option<Expect>,
    pub(crate) determining: Option<Vec<String>>,
    pub(crate) missing_scopes: Option<Vec<String>>,
    /// For list methods: the names in the response …
    pub(crate) list: Option<Vec<String>>,
    /// … and those the caller must see (in any order).
    pub(crate) visible: Option<Vec<String>>,
}

/// The token claims of a case's caller.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Claims {
    pub(crate) sub: Option<String>,
    pub(crate) iss: Option<String>,
    #[serde(default)]
    pub(crate) aud: Vec<String>,
    pub(crate) client_id: Option<String>,
    #[serde(default)]
    pub(crate) groups: Vec<String>,
    pub(crate) team: Option<String>,
    pub(crate) cost_center: Option<String>,
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
    #[serde(default)]
    pub(crate) kind: CaseKind,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CaseKind {
    #[default]
    User,
    Service,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CaseEra {
    #[default]
    Modern,
    Legacy,
}

/// A case's time: a TOML datetime, or the same as a string (defaults pass
/// through a TOML value, which turns datetimes into strings).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum When {
    Datetime(Datetime),
    Text(String),
}

/// Tool annotation hints; unset hints take the MCP defaults.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Hints {
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
}

/// The expected decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Expect {
    Allow,
    Deny,
    DenyMissingScope,
    Error,
}

impl Expect {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Expect::Allow => "allow",
            Expect::Deny => "deny",
            Expect::DenyMissingScope => "deny_missing_scope",
            Expect::Error => "error",
        }
    }
}

impl Case {
    /// The caller.
    pub(crate) fn principal(&self) -> Principal {
        let c = &self.principal;
        Principal {
            issuer: c.iss.clone().unwrap_or_else(|| "https://idp.example.com".into()),
            subject: c.sub.clone().unwrap_or_else(|| "tester".into()),
            client_id: c.client_id.clone(),
            token_id: None,
            audience: c.aud.clone(),
            groups: c.groups.clone(),
            team: c.team.clone(),
            cost_center: c.cost_center.clone(),
            scopes: c.scopes.clone(),
            expires_at: u64::MAX,
            kind: match c.kind {
                CaseKind::User => PrincipalKind::User,
                CaseKind::Service => PrincipalKind::Service,
            },
        }
    }

    /// The method: explicit, or implied by `tool`, `resource` or `prompt`.
    pub(crate) fn method(&self) -> Result<String, String> {
        let implied = [
            (&self.tool, "tools/call"),
            (&self.resource, "resources/read"),
            (&self.prompt, "prompts/get"),
        ];
        let mut named = implied.iter().filter(|(n, _)| n.is_some());
        let first = named.next();
        if named.next().is_some() {
            return Err("set only one of `tool`, `resource` and `prompt`".into());
        }
        match (&self.method, first) {
            (Some(m), _) => Ok(m.clone()),
            (None, Some((_, m))) => Ok((*m).to_owned()),
            (None, None) => Err("set `method`, or one of `tool`, `resource`, `prompt`".into()),
        }
    }

    /// The tool/prompt name or resource URI.
    pub(crate) fn name(&self) -> Option<&str> {
        self.tool
            .as_deref()
            .or(self.resource.as_deref())
            .or(self.prompt.as_deref())
    }

    /// The arguments as header values: strings as-is, integers in decimal,
    /// booleans as `true`/`false`.
    pub(crate) fn args(&self) -> Result<Vec<(String, String)>, String> {
        self.args
            .iter()
            .map(|(k, v)| match v {
                toml::Value::String(s) => Ok((k.clone(), s.clone())),
                toml::Value::Integer(i) => Ok((k.clone(), i.to_string())),
                toml::Value::Boolean(b) => Ok((k.clone(), b.to_string())),
                _ => Err(format!("argument `{k}`: use a string, an integer or a boolean")),
            })
            .collect()
    }

    pub(crate) fn annotations(&self) -> Option<ToolAnnotations> {
        self.annotations
            .map(|h| ToolAnnotations::from_hints(h.read_only, h.destructive, h.idempotent, h.open_world))
    }

    pub(crate) fn era(&self) -> Era {
        match self.era {
            CaseEra::Modern => Era::Modern,
            CaseEra::Legacy => Era::Legacy,
        }
    }

    /// The time, reading a time without offset in `utc_offset`.
    pub(crate) fn time(&self, utc_offset: i32) -> Result<Option<SystemTime>, String> {
        let parse = |w: &When| match w {
            When::Datetime(d) => Ok(*d),
            When::Text(s) => s.parse::<Datetime>().map_err(|e| format!("time {s:?}: {e}")),
        };
        self.time
            .as_ref()
            .map(|w| to_system_time(&parse(w)?, utc_offset))
            .transpose()
    }

    /// For a list case: what the list holds.
    pub(crate) fn list_kind(&self, method: &str) -> Result<TargetKind, String> {
        match McpMethod::from_name(method) {
            McpMethod::ToolsList => Ok(TargetKind::Tool),
            McpMethod::ResourcesList | McpMethod::ResourceTemplatesList => Ok(TargetKind::Resource),
            McpMethod::PromptsList => Ok(TargetKind::Prompt),
            _ => Err(format!("`list` needs a list method, not {method:?}")),
        }
    }
}

fn to_system_time(t: &Datetime, utc_offset: i32) -> Result<SystemTime, String> {
    let (Some(date), Some(time)) = (t.date, t.time) else {
        return Err(format!("time {t}: write a date and a time, e.g. 2026-12-02T09:30:00Z"));
    };
    let offset = match t.offset {
        Some(Offset::Z) => 0,
        Some(Offset::Custom { minutes }) => i64::from(minutes) * 60,
        None => i64::from(utc_offset),
    };
    let days = days_from_civil(i64::from(date.year), i64::from(date.month), i64::from(date.day));
    let secs =
        days * 86_400 + i64::from(time.hour) * 3600 + i64::from(time.minute) * 60 + i64::from(time.second) - offset;
    let secs = u64::try_from(secs).map_err(|_| format!("time {t} is before 1970"))?;
    Ok(UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_their_offset_or_the_files() {
        let t: Datetime = "2026-12-02T10:00:00+01:00".parse().unwrap();
        let utc: Datetime = "2026-12-02T09:00:00Z".parse().unwrap();
        let local: Datetime = "2026-12-02T10:00:00".parse().unwrap();
        let a = to_system_time(&t, 0).unwrap();
        assert_eq!(a, to_system_time(&utc, 0).unwrap());
        assert_eq!(a, to_system_time(&local, 3600).unwrap());
        assert!(to_system_time(&"2026-12-02".parse().unwrap(), 0).is_err());
        assert!(to_system_time(&"1960-01-01T00:00:00Z".parse().unwrap(), 0).is_err());
    }
}
