//! The authorization part of the configuration model: `[policy]` (where the
//! Cedar policies are, how they are enforced, the time zone of `context.hour`)
//! and each server's `policy` table (its enforcement mode).
//!
//! The server maps them to the settings `tollgate-policy` builds the policy
//! engine (request path step 8) from; the policy files themselves are read by
//! [`crate::read_policy_dir`].

use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

/// `[policy]`: Cedar authorization. Without `dir`, calls are not authorized
/// by policy (every call that passes authentication and the protocol checks
/// is forwarded).
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// The policy directory: `schema.cedarschema` (or one in the parent
    /// directory), `*.cedar` files and `tests/*.toml`. Relative paths are
    /// relative to the configuration file.
    pub dir: Option<PathBuf>,
    /// How decisions are applied on routes that do not set their own mode.
    pub mode: PolicyMode,
    /// Reload the policies when a file in `dir` changes (SIGHUP reloads
    /// them too).
    pub watch: bool,
    /// The time zone of `context.hour`, `context.minute` and
    /// `context.weekday`, as a fixed offset from UTC: `"Z"`, `"+01:00"`,
    /// `"-05:30"`.
    pub utc_offset: UtcOffset,
    /// Most decisions kept for reuse (per replica): a decision depends only
    /// on the caller, the call and the context values the policies read, so
    /// it is reused until the policy set changes. 0 turns the cache off.
    pub decision_cache_entries: usize,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            dir: None,
            mode: PolicyMode::Enforce,
            watch: true,
            utc_offset: UtcOffset::default(),
            decision_cache_entries: 100_000,
        }
    }
}

impl Policy {
    /// The policy directory resolved against the directory of the
    /// configuration file at `config_path`; `None` when authorization by
    /// policy is off.
    pub fn resolved_dir(&self, config_path: &Path) -> Option<PathBuf> {
        let base = config_path.parent().unwrap_or(Path::new("."));
        self.dir.as_ref().map(|d| base.join(d))
    }

    /// The mode in force on `server`.
    pub fn mode_for(&self, server: &crate::Server) -> PolicyMode {
        server.policy.mode.unwrap_or(self.mode)
    }

    /// The mode of every route that has one of its own: each server's
    /// (its own, else `mode`), and each virtual server that sets one.
    pub fn route_modes(&self, config: &crate::Config) -> std::collections::HashMap<String, PolicyMode> {
        let servers = config
            .servers
            .iter()
            .map(|s| (s.name.as_str().to_owned(), self.mode_for(s)));
        let virtuals = config
            .virtual_servers
            .iter()
            .filter_map(|v| Some((v.name.as_str().to_owned(), v.policy.mode?)));
        servers.chain(virtuals).collect()
    }
}

/// Whether policy decisions are applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMode {
    /// A denied call is refused.
    #[default]
    Enforce,
    /// Decisions are computed and recorded (log, metrics, audit) but a
    /// denied call is forwarded anyway: for rolling out new policies.
    Observe,
}

impl PolicyMode {
    /// A stable lowercase name for logs, metrics and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyMode::Enforce => "enforce",
            PolicyMode::Observe => "observe",
        }
    }
}

/// A server's `policy` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ServerPolicy {
    /// This route's mode; default: `[policy] mode`.
    pub mode: Option<PolicyMode>,
}

/// A fixed offset from UTC, written `Z`, `+HH:MM` or `-HH:MM`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(try_from = "String")]
#[schemars(with = "String")]
pub struct UtcOffset {
    seconds: i32,
}

impl UtcOffset {
    /// The offset in seconds east of UTC.
    pub fn seconds(self) -> i32 {
        self.seconds
    }
}

impl TryFrom<String> for UtcOffset {
    type Error = String;
    fn try_from(s: String) -> Result<UtcOffset, String> {
        let bad = || format!("utc offset {s:?}: write \"Z\", \"+HH:MM\" or \"-HH:MM\" (at most 18:00)");
        if s == "Z" || s == "UTC" {
            return Ok(UtcOffset { seconds: 0 });
        }
        let (sign, rest) = match s.as_bytes().first() {
            Some(b'+') => (1, &s[1..]),
            Some(b'-') => (-1, &s[1..]),
            _ => return Err(bad()),
        };
        let (h, m) = rest.split_once(':').ok_or_else(bad)?;
        let digits = |p: &str| p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit());
        if !digits(h) || !digits(m) {
            return Err(bad());
        }
        let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if m >= 60 || h * 60 + m > 18 * 60 {
            return Err(bad());
        }
        Ok(UtcOffset {
            seconds: sign * (h * 3600 + m * 60),
        })
    }
}

impl fmt::Display for UtcOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.seconds < 0 { '-' } else { '+' };
        let abs = self.seconds.unsigned_abs();
        write!(f, "{sign}{:02}:{:02}", abs / 3600, abs % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::FakeEnv;
    use crate::load_str;

    const BASE: &str = r#"
[listen]
public = "127.0.0.1:8080"
admin = "127.0.0.1:9090"

[[servers]]
name = "a"
url = "http://127.0.0.1:3001/mcp"

[[servers]]
name = "b"
url = "http://127.0.0.1:3002/mcp"
policy = { mode = "observe" }
"#;

    #[test]
    fn policy_settings_load_with_defaults_and_per_server_modes() {
        let loaded = load_str(Path::new("/etc/tollgate/gw.toml"), BASE, &FakeEnv::default()).unwrap();
        let c = &loaded.config;
        assert_eq!(c.policy.resolved_dir(&loaded.path), None);
        assert!(c.policy.watch);
        assert_eq!(c.policy.mode_for(&c.servers[0]), PolicyMode::Enforce);
        assert_eq!(c.policy.mode_for(&c.servers[1]), PolicyMode::Observe);

        let text = format!("[policy]\ndir = \"policies\"\nmode = \"observe\"\nutc_offset = \"+02:00\"\n{BASE}");
        let loaded = load_str(Path::new("/etc/tollgate/gw.toml"), &text, &FakeEnv::default()).unwrap();
        let p = &loaded.config.policy;
        assert_eq!(
            p.resolved_dir(&loaded.path),
            Some(PathBuf::from("/etc/tollgate/policies"))
        );
        assert_eq!(p.mode_for(&loaded.config.servers[0]), PolicyMode::Observe);
        assert_eq!(p.utc_offset.seconds(), 7200);

        let text = format!("[policy]\nutc_offset = \"CET\"\n{BASE}");
        let e = &load_str(Path::new("gw.toml"), &text, &FakeEnv::default())
            .unwrap_err()
            .0[0];
        assert_eq!(e.key, "policy.utc_offset");
        assert_eq!(e.line, Some(2));
        let text = BASE.replace("\"observe\"", "\"audit\"");
        let e = &load_str(Path::new("gw.toml"), &text, &FakeEnv::default())
            .unwrap_err()
            .0[0];
        assert_eq!(e.key, "servers[1].policy.mode");
    }

    #[test]
    fn offsets_parse_strictly() {
        let ok = |s: &str| UtcOffset::try_from(s.to_owned()).map(UtcOffset::seconds);
        assert_eq!(ok("Z"), Ok(0));
        assert_eq!(ok("+01:00"), Ok(3600));
        assert_eq!(ok("-05:30"), Ok(-(5 * 3600 + 30 * 60)));
        assert_eq!(ok("+18:00"), Ok(18 * 3600));
        for bad in [
            "",
            "1:00",
            "+1:00",
            "+01:60",
            "+18:01",
            "+01",
            "01:00",
            "+0a:00",
            "+01:00:00",
        ] {
            assert!(ok(bad).is_err(), "{bad:?} accepted");
        }
        let off = UtcOffset::try_from("-05:30".to_owned()).unwrap();
        assert_eq!(off.to_string(), "-05:30");
    }
}
