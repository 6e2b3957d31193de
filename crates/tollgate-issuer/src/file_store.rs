//! A [`Store`] in one file, for a single replica without Redis: the
//! vault's grants survive a restart. Every entry is kept in memory and the
//! whole file is rewritten (a temporary file renamed over it, owner-only
//! permissions) after each change; reads never touch the disk. Values are
//! whatever the caller stores (the vault stores sealed grants).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError};
use crate::time::unix_now;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Entry {
    value: String,
    expires: u64,
}

/// The file-backed store.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    entries: Mutex<BTreeMap<String, Entry>>,
}

fn key(ns: &str, key: &str) -> String {
    format!("{ns}\u{1f}{key}")
}

fn io(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError(format!("{}: {e}", path.display()))
}

impl FileStore {
    /// The store kept in `path` (created on first write).
    ///
    /// # Errors
    ///
    /// The file exists and cannot be read or parsed.
    pub fn open(path: &Path) -> Result<FileStore, StoreError> {
        let entries = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| io(path, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(io(path, e)),
        };
        Ok(FileStore {
            path: path.to_owned(),
            entries: Mutex::new(entries),
        })
    }

    /// Apply `change` to the live entries and write them out.
    fn change<T>(&self, change: impl FnOnce(&mut BTreeMap<String, Entry>) -> T) -> Result<T, StoreError> {
        let mut entries = self
            .entries
            .lock()
            .map_err(|_| StoreError("file store lock poisoned".into()))?;
        let now = unix_now();
        entries.retain(|_, e| e.expires > now);
        let out = change(&mut entries);
        let bytes = serde_json::to_vec(&*entries).map_err(|e| io(&self.path, e))?;
        write_private(&self.path, &bytes).map_err(|e| io(&self.path, e))?;
        Ok(out)
    }

    fn read<T>(&self, f: impl FnOnce(&BTreeMap<String, Entry>) -> T) -> Result<T, StoreError> {
        let entries = self
            .entries
            .lock()
            .map_err(|_| StoreError("file store lock poisoned".into()))?;
        Ok(f(&entries))
    }
}

/// Write `bytes` to `path` through a temporary file, owner-only.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn live(e: &Entry) -> Option<Vec<u8>> {
    (e.expires > unix_now())
        .then(|| STANDARD.decode(&e.value).ok())
        .flatten()
}

fn entry(value: &[u8], ttl: Duration) -> Entry {
    Entry {
        value: STANDARD.encode(value),
        expires: unix_now().saturating_add(ttl.as_secs().max(1)),
    }
}

#[async_trait]
impl Store for FileStore {
    async fn put(&self, ns: &str, k: &str, value: Vec<u8>, ttl: Duration) -> Result<(), StoreError> {
        self.change(|m| {
            m.insert(key(ns, k), entry(&value, ttl));
        })
    }

    async fn put_new(&self, ns: &str, k: &str, value: Vec<u8>, ttl: Duration) -> Result<bool, StoreError> {
        if self.read(|m| m.get(&key(ns, k)).and_then(live).is_some())? {
            return Ok(false);
        }
        self.change(|m| {
            m.insert(key(ns, k), entry(&value, ttl));
            true
        })
    }

    async fn get(&self, ns: &str, k: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.read(|m| m.get(&key(ns, k)).and_then(live))
    }

    async fn take(&self, ns: &str, k: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.change(|m| m.remove(&key(ns, k)).as_ref().and_then(live))
    }

    async fn delete(&self, ns: &str, k: &str) -> Result<(), StoreError> {
        self.change(|m| {
            m.remove(&key(ns, k));
        })
    }

    async fn list(&self, ns: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let prefix = format!("{ns}\u{1f}");
        self.read(|m| {
            m.iter()
                .filter(|(k, _)| k.starts_with(&prefix))
                .filter_map(|(_, e)| live(e))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[tokio::test]
    async fn entries_survive_a_reopen_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vault.json");
        let s = FileStore::open(&path).unwrap();
        let ttl = Duration::from_secs(60);
        s.put("vault", "alice", b"sealed".to_vec(), ttl).await.unwrap();
        assert!(s.put_new("lock", "a", b"1".to_vec(), ttl).await.unwrap());
        assert!(!s.put_new("lock", "a", b"1".to_vec(), ttl).await.unwrap());
        let again = FileStore::open(&path).unwrap();
        assert_eq!(again.get("vault", "alice").await.unwrap(), Some(b"sealed".to_vec()));
        assert_eq!(again.list("vault").await.unwrap().len(), 1);
        assert_eq!(again.take("vault", "alice").await.unwrap(), Some(b"sealed".to_vec()));
        assert_eq!(again.take("vault", "alice").await.unwrap(), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
