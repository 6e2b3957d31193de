//! The catalog part of the configuration model: `[catalog]` (the default
//! gate mode, where `catalog.lock` is, how often upstream catalogs are
//! synced) and each server's `catalog` key (its own gate mode); and the
//! reading and atomic writing of the lock file itself.
//!
//! `tollgate-catalog` parses the lock text and judges calls against it (the
//! catalog gate sits on the request path between `identify` and
//! `authorize`); this crate only says where the file is and moves its
//! bytes, as it does for every file the gateway reads.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use crate::ConfigError;

/// `[catalog]`: catalog governance. Off unless `mode` (or a server's
/// `catalog`) says otherwise, so configurations without it keep working.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Catalog {
    /// The gate on routes that do not set their own `catalog`.
    pub mode: CatalogMode,
    /// The lock file of approved definitions, relative to the configuration
    /// file.
    pub lock: PathBuf,
    /// How often every upstream's catalog is listed again (at least 1s).
    #[serde(deserialize_with = "sync_interval")]
    #[schemars(with = "String")]
    pub sync_interval: Duration,
    /// How long one sync of one upstream may take.
    #[serde(deserialize_with = "nonzero_duration")]
    #[schemars(with = "String")]
    pub sync_timeout: Duration,
    /// Reload the lock file when it changes (SIGHUP reloads it too).
    pub watch: bool,
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            mode: CatalogMode::Off,
            lock: PathBuf::from("catalog.lock"),
            sync_interval: Duration::from_secs(300),
            sync_timeout: Duration::from_secs(10),
            watch: true,
        }
    }
}

impl Catalog {
    /// The lock file resolved against the directory of the configuration
    /// file at `config_path`.
    pub fn resolved_lock(&self, config_path: &Path) -> PathBuf {
        let base = config_path.parent().unwrap_or(Path::new("."));
        base.join(&self.lock)
    }
}

/// How a route's catalog gate applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CatalogMode {
    /// No gate: catalogs are neither synced nor checked on this route.
    #[default]
    Off,
    /// Catalogs are synced and every call and list entry judged against the
    /// lock, and the verdict recorded (log, metrics, audit), but nothing is
    /// refused: for rolling out a lock.
    Observe,
    /// New (quarantined) and changed (blocked) definitions are neither
    /// listed nor callable until approved.
    Enforce,
}

impl CatalogMode {
    /// A stable lowercase name for logs, metrics and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            CatalogMode::Off => "off",
            CatalogMode::Observe => "observe",
            CatalogMode::Enforce => "enforce",
        }
    }
}

/// Read the lock file at `path`; `None` when it does not exist (nothing
/// approved yet).
///
/// # Errors
///
/// The file exists but cannot be read, or is not UTF-8.
pub fn read_lock_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(file_error(path, format!("cannot read the lock file: {e}"))),
    }
}

/// Replace the lock file at `path` with `text` atomically: the text is
/// written to a temporary file in the same directory, synced, and renamed
/// over the old file, so a reader (or a crash) sees the old lock or the new
/// one, never a part. A new file gets the usual permissions (0644 on Unix);
/// a replaced one keeps its own.
///
/// # Errors
///
/// The directory or the file cannot be written.
pub fn write_lock_text(path: &Path, text: &str) -> Result<(), ConfigError> {
    let fail = |what: &str, e: std::io::Error| file_error(path, format!("cannot {what} the lock file: {e}"));
    let dir = lock_dir(path);
    let permissions = match std::fs::metadata(path) {
        Ok(meta) => Some(meta.permissions()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail("read", e)),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".catalog.lock.")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| fail("write a temporary file beside", e))?;
    if let Some(permissions) = permissions.or_else(new_file_permissions) {
        std::fs::set_permissions(temp.path(), permissions).map_err(|e| fail("set the permissions of", e))?;
    }
    temp.write_all(text.as_bytes())
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| fail("write", e))?;
    temp.persist(path).map_err(|e| fail("replace", e.error))?;
    sync_dir(dir);
    Ok(())
}

/// Whether the lock file at `path` cannot be replaced because its
/// directory takes no new files: a read-only mount (a Kubernetes
/// ConfigMap) or a directory the gateway may not write. Found by making,
/// and at once removing, a temporary file beside it, as
/// [`write_lock_text`] would; other failures (no such directory) are left
/// for the write to report.
pub fn lock_is_read_only(path: &Path) -> bool {
    let probe = tempfile::Builder::new()
        .prefix(".catalog.lock.")
        .suffix(".probe")
        .tempfile_in(lock_dir(path));
    match probe {
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
        ),
    }
}

/// The directory the lock file at `path` is replaced in.
fn lock_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A new lock file is read by people and tools (git, CI) as any source
/// file is; the temporary file it starts as is owner-only.
#[cfg(unix)]
fn new_file_permissions() -> Option<std::fs::Permissions> {
    Some(std::os::unix::fs::PermissionsExt::from_mode(0o644))
}

/// Elsewhere the temporary file's defaults are the usual ones.
#[cfg(not(unix))]
fn new_file_permissions() -> Option<std::fs::Permissions> {
    None
}

/// Make the rename durable. Best effort: not every platform can sync a
/// directory, and the rename itself has already happened.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

fn file_error(path: &Path, message: String) -> ConfigError {
    ConfigError {
        file: path.to_owned(),
        line: None,
        column: None,
        key: String::new(),
        message,
    }
}

fn nonzero_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let value: Duration = humantime_serde::deserialize(d)?;
    if value.is_zero() {
        return Err(serde::de::Error::custom("must be greater than 0"));
    }
    Ok(value)
}

fn sync_interval<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let value: Duration = humantime_serde::deserialize(d)?;
    if value < Duration::from_secs(1) {
        return Err(serde::de::Error::custom("must be at least 1s"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests;
