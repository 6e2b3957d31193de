//! Audit file names, listing a trail, and reading the end of a file.
//!
//! A file is named `{prefix}-{seq}-{time}.jsonl`: `seq` (16 digits) is the
//! sequence number of its genesis line and `time` (`20260901T120000Z`) when
//! it was opened, so name order is chain order.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::chain::{Envelope, Hash};

/// The name of a new audit file.
pub(crate) fn file_name(prefix: &str, seq: u64, time: SystemTime) -> String {
    let stamp: String = humantime::format_rfc3339_seconds(time)
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("{prefix}-{seq:016}-{stamp}.jsonl")
}

/// When the audit file at `path` was opened, from its name (`None` for a
/// name not made by the writer).
pub fn opened_at(path: &Path) -> Option<SystemTime> {
    let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let stamp = name.rsplit('-').next()?;
    let b = stamp.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let s = |r: std::ops::Range<usize>| stamp.get(r).unwrap_or("");
    let text = format!(
        "{}-{}-{}T{}:{}:{}Z",
        s(0..4),
        s(4..6),
        s(6..8),
        s(9..11),
        s(11..13),
        s(13..15)
    );
    humantime::parse_rfc3339(&text).ok()
}

/// The audit files named by `paths`: files as given, directories expanded
/// to their `*.jsonl` files; all sorted by file name (chain order).
///
/// # Errors
///
/// A path that cannot be read, with the path.
pub fn trail_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, (PathBuf, io::Error)> {
    let mut out = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| (path.clone(), e))?;
        if meta.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| (path.clone(), e))?;
            for entry in entries {
                let p = entry.map_err(|e| (path.clone(), e))?.path();
                if p.extension().is_some_and(|e| e == "jsonl") && p.is_file() {
                    out.push(p);
                }
            }
        } else {
            out.push(path.clone());
        }
    }
    out.sort_by(|a, b| a.file_name().cmp(&b.file_name()).then_with(|| a.cmp(b)));
    out.dedup();
    Ok(out)
}

/// The files of one writer (`{prefix}-…jsonl`) in `dir`, in chain order.
pub(crate) fn writer_files(dir: &Path, prefix: &str) -> io::Result<Vec<PathBuf>> {
    let lead = format!("{prefix}-");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.ends_with(".jsonl")
                    && n.strip_prefix(&lead)
                        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            })
        })
        .collect();
    out.sort();
    Ok(out)
}

/// The end of an audit file: its last complete line and any partial one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tail {
    /// Sequence number (when it parses) and hash of the last complete line.
    pub(crate) last: Option<(Option<u64>, Hash)>,
    /// Bytes after the last newline.
    pub(crate) torn: u64,
}

/// Read the end of `path` without reading the whole file.
pub(crate) fn read_tail(path: &Path) -> io::Result<Tail> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut window = len.min(64 * 1024);
    loop {
        let start = len - window;
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(usize::try_from(window).unwrap_or(0));
        (&mut file).take(window).read_to_end(&mut buf)?;
        if let Some(tail) = tail_of(&buf, start == 0) {
            return Ok(tail);
        }
        window = (window * 2).min(len);
    }
}

/// The tail within `buf` (the last bytes of a file), or `None` when the
/// window must grow to see the whole last line.
fn tail_of(buf: &[u8], whole_file: bool) -> Option<Tail> {
    let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
        return whole_file.then_some(Tail {
            last: None,
            torn: buf.len() as u64,
        });
    };
    let torn = (buf.len() - end - 1) as u64;
    let begin = match buf[..end].iter().rposition(|&b| b == b'\n') {
        Some(p) => p + 1,
        None if whole_file => 0,
        None => return None,
    };
    let line = &buf[begin..end];
    let seq = serde_json::from_slice::<Envelope>(line).ok().map(|e| e.seq);
    Some(Tail {
        last: Some((seq, Hash::of_line(line))),
        torn,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_in_chain_order_and_carry_their_time() {
        let t = humantime::parse_rfc3339("2026-09-01T12:34:56Z").unwrap();
        let a = file_name("audit", 9, t);
        let b = file_name("audit", 10, t);
        assert_eq!(a, "audit-0000000000000009-20260901T123456Z.jsonl");
        assert!(a < b);
        assert_eq!(opened_at(Path::new(&a)), Some(t));
        assert_eq!(opened_at(Path::new("x.jsonl")), None);
    }

    #[test]
    fn the_tail_is_the_last_complete_line_and_the_torn_rest() {
        let line = br#"{"v":1,"seq":4,"prev":"00","kind":"call"}"#;
        let mut file = b"{\"a\":1}\n".to_vec();
        file.extend_from_slice(line);
        file.extend_from_slice(b"\n{\"v\":1,\"se");
        let tail = tail_of(&file, true).unwrap();
        assert_eq!(tail.torn, 10);
        assert_eq!(tail.last.unwrap().1, Hash::of_line(line));
        assert_eq!(tail_of(&file[8..file.len() - 10], false), None);
        assert_eq!(tail_of(b"partial", true).unwrap().torn, 7);
        assert_eq!(tail_of(b"partial", false), None);
    }
}
