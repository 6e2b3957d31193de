//! Reading a batch of complete lines from an audit file, from a byte
//! offset; a partial last line (a write in progress, or a crash's torn
//! tail) is left unread.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

use super::row::Columns;

/// Lines read from a file.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// The lines, as rows.
    pub(crate) columns: Columns,
    /// Bytes read (complete lines with their newlines).
    pub(crate) bytes: u64,
    /// The time of the last line (for the next line without one).
    pub(crate) last_time: Option<SystemTime>,
}

/// Up to `max` complete lines of `path` from byte `offset`, numbered from
/// `first_line`; `fallback` is the time of a line without one.
pub(crate) fn read_batch(
    path: &Path,
    offset: u64,
    first_line: u64,
    max: usize,
    mut fallback: SystemTime,
) -> std::io::Result<Batch> {
    let mut reader = BufReader::with_capacity(256 * 1024, File::open(path)?);
    reader.seek(SeekFrom::Start(offset))?;
    let mut batch = Batch::default();
    let mut buf = Vec::with_capacity(4096);
    while batch.columns.len() < max {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        let text = String::from_utf8_lossy(&buf[..n - 1]);
        let line_no = first_line + batch.columns.len() as u64 + 1;
        fallback = batch.columns.push(line_no, &text, fallback);
        batch.last_time = Some(fallback);
        batch.bytes += n as u64;
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_stop_at_the_limit_and_before_a_partial_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(&path, "{\"seq\":0}\n{\"seq\":1}\n{\"seq\":2}\n{\"se").unwrap();
        let first = read_batch(&path, 0, 0, 2, SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!((first.columns.len(), first.bytes), (2, 20));
        assert_eq!(first.columns.line_no, [1, 2]);
        let rest = read_batch(&path, first.bytes, 2, 10, SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!((rest.columns.len(), rest.bytes), (1, 10));
        assert_eq!(rest.columns.line_no, [3]);
        let none = read_batch(&path, 30, 3, 10, SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!((none.columns.len(), none.bytes), (0, 0));
    }
}
