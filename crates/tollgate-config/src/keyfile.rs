//! Key files the gateway creates itself: the development issuer's private
//! key, made on first use and kept next to the configuration.
//!
//! Not part of loading (so `tollgate validate` never writes anything); the
//! binary calls it when it starts the development issuer or mints a token.

use std::io::Write as _;
use std::path::Path;

use crate::Secret;

/// Read the secret file at `path`, or create it with the bytes `make`
/// returns when it does not exist yet (owner-only permissions on Unix), creating
/// missing parent directories.
/// When two processes race to create it, both read the winner's file.
///
/// # Errors
///
/// The I/O error or `make`'s error, as text naming the file.
pub fn read_or_create_file(path: &Path, make: impl FnOnce() -> Result<Vec<u8>, String>) -> Result<Secret, String> {
    match std::fs::read(path) {
        Ok(bytes) => return Ok(Secret::new(bytes)),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot read {}: {e}", path.display()));
        }
        Err(_) => {}
    }
    let bytes = make()?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            file.write_all(&bytes)
                .and_then(|()| file.sync_all())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(Secret::new(bytes))
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::read(path)
            .map(Secret::new)
            .map_err(|e| format!("cannot read {}: {e}", path.display())),
        Err(e) => Err(format!("cannot create {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_once_then_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pem");
        let first = read_or_create_file(&path, || Ok(b"one".to_vec())).unwrap();
        let second = read_or_create_file(&path, || Ok(b"two".to_vec())).unwrap();
        assert_eq!(first.expose(), b"one");
        assert_eq!(second.expose(), b"one");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Missing directories are created; a path under a file cannot be.
        let nested = read_or_create_file(&dir.path().join("new/dir/k"), || Ok(b"n".to_vec())).unwrap();
        assert_eq!(nested.expose(), b"n");
        let err = read_or_create_file(&path.join("k"), || Ok(vec![])).unwrap_err();
        assert!(err.contains("cannot"), "{err}");
    }
}
