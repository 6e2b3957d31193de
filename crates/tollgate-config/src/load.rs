//! Loading: parse, deserialize with key paths, validate, resolve secrets.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use toml::de::DeTable;

use crate::locate::{Seg, line_col, render, span_of};
use crate::redact::{has_userinfo, scrub};

mod admin;
mod auth;
mod authorization_server;
mod checkpoint;
mod console;
mod rate_limits;
mod store;
mod unknown;
mod vault;
mod virtual_servers;

use crate::{Config, ConfigError, ConfigErrors, Secret, SecretSource};
pub use auth::{AuthSecrets, DevIssuerSettings};
pub use authorization_server::AuthorizationServerSettings;
pub use checkpoint::CheckpointSettings;
pub use store::PostgresSettings;
pub use vault::VaultSettings;

/// Where secrets referenced by the configuration are looked up. Tests pass
/// their own; the binary passes [`ProcessEnvironment`].
pub trait Environment {
    /// The value of an environment variable.
    fn var(&self, name: &str) -> Option<String>;
    /// The contents of a file.
    ///
    /// # Errors
    ///
    /// The I/O error, as text.
    fn read_file(&self, path: &Path) -> Result<Vec<u8>, String>;
}

/// The real process environment and file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    // This crate is the one place allowed to read the environment.
    #[allow(clippy::disallowed_methods)]
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn read_file(&self, path: &Path) -> Result<Vec<u8>, String> {
        std::fs::read(path).map_err(|e| e.to_string())
    }
}

/// A validated configuration with its secrets resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The file it came from.
    pub path: PathBuf,
    /// The configuration.
    pub config: Config,
    /// Session sealing keys: the current key first, then previous keys.
    /// Empty when none is configured.
    pub session_keys: Vec<Secret>,
    /// Secrets of the introspection clients and upstream credentials.
    pub auth_secrets: AuthSecrets,
    /// The development issuer, when enabled.
    pub dev_issuer: Option<DevIssuerSettings>,
    /// The authorization server (`[authorization_server]`), when enabled.
    pub authorization_server: Option<AuthorizationServerSettings>,
    /// The vault's keys and file, when `[vault] keys` are configured.
    pub vault: Option<VaultSettings>,
    /// The `[limits.redis] password`, when one is configured.
    pub limit_store_password: Option<Secret>,
    /// The `[console] client_secret`, when one is configured.
    pub console_secret: Option<Secret>,
    /// The `[admin] token`, when one is configured.
    pub admin_token: Option<Secret>,
    /// The fleet store's connection, when `[store] postgres` is set.
    pub store: Option<PostgresSettings>,
    /// What signs audit checkpoints, when `[audit] checkpoint_key` is set.
    pub checkpoint: Option<CheckpointSettings>,
    /// What loads but deserves attention (e.g. an admin listener other
    /// hosts reach without a token), each with file, line and key.
    pub warnings: Vec<ConfigError>,
}

/// Read and validate a configuration file.
///
/// # Errors
///
/// Every problem found, each with file, line, column and key.
pub fn load(path: &Path, env: &dyn Environment) -> Result<Loaded, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: path.to_owned(),
            line: None,
            column: None,
            key: String::new(),
            message: format!("cannot read the file: {e}"),
        }])
    })?;
    load_str(path, &text, env)
}

/// Validate configuration text; `path` is used in error messages and to
/// resolve relative secret files.
///
/// # Errors
///
/// Every problem found, each with file, line, column and key.
pub fn load_str(path: &Path, text: &str, env: &dyn Environment) -> Result<Loaded, ConfigErrors> {
    let at = |span: Option<std::ops::Range<usize>>, key: String, message: String| {
        let (line, column) = span.map(|s| line_col(text, s.start)).unzip();
        ConfigError {
            file: path.to_owned(),
            line,
            column,
            key,
            message,
        }
    };
    let (root, config) = parse(text, &at).map_err(ConfigErrors)?;
    let mut problems = Vec::new();
    validate(&config, &mut problems);
    let base = path.parent().unwrap_or(Path::new("."));
    let session_keys = resolve_keys(&config, base, env, &mut problems);
    let auth_secrets = auth::resolve(&config, base, env, &mut problems);
    let limit_store_password = store_password(&config, base, env, &mut problems);
    let console_secret = console::secret(&config, base, env, &mut problems);
    let admin_token = admin::token(&config, base, env, &mut problems);
    let authorization_server = authorization_server::resolve(&config, base, env, &mut problems);
    let vault = vault::resolve(&config, base, env, &mut problems);
    let store = store::resolve(&config, base, env, &mut problems);
    let checkpoint = checkpoint::resolve(&config, base, env, &mut problems);
    let located = |found: Problems| -> Vec<ConfigError> {
        found
            .into_iter()
            .map(|(p, msg)| at(span_of(&root, &p), render(&p), msg))
            .collect()
    };
    if !problems.is_empty() {
        return Err(ConfigErrors(located(problems)));
    }
    let mut warnings = Problems::new();
    admin::warnings(&config, &mut warnings);
    rate_limits::warnings(&config, &mut warnings);
    Ok(Loaded {
        path: path.to_owned(),
        dev_issuer: auth::dev_issuer(&config, base),
        authorization_server,
        vault,
        config,
        session_keys,
        auth_secrets,
        limit_store_password,
        console_secret,
        admin_token,
        store,
        checkpoint,
        warnings: located(warnings),
    })
}

/// The document and the configuration it deserializes to, or the first
/// error. Parser and deserializer messages may quote the value they
/// stumbled on, which may be a secret: `scrub` leaves the value out.
fn parse<'a>(
    text: &'a str,
    at: &dyn Fn(Option<std::ops::Range<usize>>, String, String) -> ConfigError,
) -> Result<(toml::Spanned<DeTable<'a>>, Config), Vec<ConfigError>> {
    let root = DeTable::parse(text).map_err(|e| vec![at(e.span(), String::new(), scrub(e.message()))])?;
    let de = toml::Deserializer::from(root.clone());
    let config = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        let key = if key == "." { String::new() } else { key };
        let first = at(inner.span(), key, scrub(inner.message()));
        // Every unknown key at once, with the nearest known one; the
        // deserializer's own error when it is about something else.
        let mut all: Vec<ConfigError> = unknown::unknown_keys(root.get_ref())
            .into_iter()
            .map(|(p, msg)| at(span_of(&root, &p), render(&p), msg))
            .collect();
        if !all.iter().any(|e| e.key.starts_with(&first.key)) {
            all.push(first);
        }
        all.sort_by_key(|e| (e.line, e.column));
        all
    })?;
    Ok((root, config))
}

/// The JSON Schema of the configuration file.
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Config)).unwrap_or_default()
}

type Problems = Vec<(Vec<Seg>, String)>;

fn key(parts: &[&str]) -> Vec<Seg> {
    parts.iter().map(|p| Seg::Key((*p).to_owned())).collect()
}

fn server_key(i: usize, field: &str) -> Vec<Seg> {
    vec![Seg::Key("servers".into()), Seg::Index(i), Seg::Key(field.into())]
}

fn validate(c: &Config, out: &mut Problems) {
    if c.listen.public == c.listen.admin && c.listen.public.port() != 0 {
        out.push((key(&["listen", "admin"]), "must differ from listen.public".into()));
    }
    let l = &c.limits;
    if l.max_body_bytes == 0 {
        out.push((key(&["limits", "max_body_bytes"]), "must be greater than 0".into()));
    }
    if l.max_header_bytes < 1024 {
        out.push((key(&["limits", "max_header_bytes"]), "must be at least 1024".into()));
    }
    if l.max_concurrent_requests == 0 {
        out.push((
            key(&["limits", "max_concurrent_requests"]),
            "must be greater than 0".into(),
        ));
    }
    for (name, d) in [
        ("connect", c.timeouts.connect),
        ("first_byte", c.timeouts.first_byte),
        ("idle", c.timeouts.idle),
    ] {
        if d.is_zero() {
            out.push((key(&["timeouts", name]), "must be greater than 0".into()));
        }
    }
    if c.runtime.worker_threads == Some(0) {
        out.push((key(&["runtime", "worker_threads"]), "must be at least 1".into()));
    }
    for (i, origin) in c.security.allowed_origins.iter().enumerate() {
        if let Err(msg) = check_origin(origin) {
            out.push((
                vec![
                    Seg::Key("security".into()),
                    Seg::Key("allowed_origins".into()),
                    Seg::Index(i),
                ],
                msg,
            ));
        }
    }
    validate_servers(c, out);
    virtual_servers::validate(c, out);
    rate_limits::validate(c, out);
    rate_limits::validate_resilience(c, out);
    validate_catalog(c, out);
    auth::validate(c, out);
    console::validate(c, out);
    authorization_server::validate(c, out);
    vault::validate(c, out);
    store::validate(c, out);
    checkpoint::validate(c, out);
}

fn validate_catalog(c: &Config, out: &mut Problems) {
    if c.catalog.lock.as_os_str().is_empty() {
        out.push((key(&["catalog", "lock"]), "must not be empty".into()));
    }
    if c.catalog.sync_timeout > c.catalog.sync_interval {
        out.push((
            key(&["catalog", "sync_timeout"]),
            "must not exceed catalog.sync_interval (a sync would still run when the next one starts)".into(),
        ));
    }
}

fn validate_servers(c: &Config, out: &mut Problems) {
    if c.servers.is_empty() {
        out.push((key(&["servers"]), "at least one [[servers]] entry is required".into()));
    }
    let mut seen = HashSet::new();
    for (i, s) in c.servers.iter().enumerate() {
        if !seen.insert(s.name.as_str()) {
            out.push((
                server_key(i, "name"),
                format!("duplicate server name {:?}", s.name.as_str()),
            ));
        }
        if !matches!(s.url.scheme(), "http" | "https") || s.url.host().is_none() {
            out.push((
                server_key(i, "url"),
                "must be an http:// or https:// URL with a host".into(),
            ));
        }
        if s.url.fragment().is_some() {
            out.push((server_key(i, "url"), "must not have a #fragment".into()));
        }
        if has_userinfo(&s.url) {
            out.push((
                server_key(i, "url"),
                "must not carry a user name or password (`user:password@`): give the upstream its credential \
                 with `credential` and a secret source"
                    .into(),
            ));
        }
    }
}

fn check_origin(origin: &str) -> Result<(), String> {
    let url = url::Url::parse(origin).map_err(|e| format!("not an origin ({e})"))?;
    let canonical = url.origin().ascii_serialization();
    if canonical != origin.trim_end_matches('/') {
        return Err(format!(
            "write the origin as {canonical:?} (scheme://host[:port], no path)"
        ));
    }
    Ok(())
}

fn resolve_keys(c: &Config, base: &Path, env: &dyn Environment, out: &mut Problems) -> Vec<Secret> {
    let current = c.sessions.key.iter().map(|s| (key(&["sessions", "key"]), s));
    let previous = c.sessions.previous_keys.iter().enumerate().map(|(i, s)| {
        (
            vec![
                Seg::Key("sessions".into()),
                Seg::Key("previous_keys".into()),
                Seg::Index(i),
            ],
            s,
        )
    });
    let mut keys = Vec::new();
    for (path, source) in current.chain(previous) {
        match read_secret(source, base, env).and_then(|raw| decode_key(&raw)) {
            Ok(k) => keys.push(k),
            Err(msg) => out.push((path, msg)),
        }
    }
    keys
}

fn store_password(c: &Config, base: &Path, env: &dyn Environment, out: &mut Problems) -> Option<Secret> {
    let source = c.limits.redis.as_ref()?.password.as_ref()?;
    read_secret(source, base, env)
        .map_err(|msg| out.push((key(&["limits", "redis", "password"]), msg)))
        .ok()
}

/// Read a secret from its source.
pub(crate) fn read_secret(source: &SecretSource, base: &Path, env: &dyn Environment) -> Result<Secret, String> {
    match (&source.env, &source.file) {
        (Some(var), None) => env
            .var(var)
            .map(|v| Secret::new(v.trim_end().as_bytes().to_vec()))
            .ok_or_else(|| format!("environment variable {var} is not set")),
        (None, Some(file)) => {
            let full = base.join(file);
            env.read_file(&full)
                .map(|mut v| {
                    while v.last().is_some_and(u8::is_ascii_whitespace) {
                        v.pop();
                    }
                    Secret::new(v)
                })
                .map_err(|e| format!("cannot read {}: {e}", full.display()))
        }
        _ => Err("set exactly one of `env` or `file`".into()),
    }
}

fn decode_key(raw: &Secret) -> Result<Secret, String> {
    let bytes = STANDARD
        .decode(raw.expose())
        .map_err(|_| "the session key must be base64 (e.g. `openssl rand -base64 32`)".to_owned())?;
    if bytes.len() != 32 {
        return Err(format!("the session key must decode to 32 bytes, not {}", bytes.len()));
    }
    Ok(Secret::new(bytes))
}

#[cfg(test)]
pub(crate) mod tests;
