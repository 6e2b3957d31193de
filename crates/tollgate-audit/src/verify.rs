//! `tollgate audit verify`: prove that nobody edited, deleted, reordered or
//! inserted records, and find the first record that breaks the chain.
//!
//! Files are read in name order (chain order). Within a file every line's
//! `prev` must be the SHA-256 of the line before it and its `seq` one more;
//! each file starts with a genesis that continues the previous file (its
//! last line's hash and sequence number, and the length of a partial line
//! a crash left there). When the chain breaks, the sequence numbers tell
//! an edit from a deletion or a move. Limits (see `docs/audit.md`): the
//! newest record of an open trail is covered once the next record or the
//! seal is written, and cutting whole records off the end of the last file
//! is only detected when the trail must be sealed (`require_sealed`) or
//! against an external anchor (the hashes exported over OTLP).

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::chain::{Envelope, Hash, LineKind};
use crate::error::{Problem, Tampering, VerifyError};
use crate::files::trail_files;
use crate::progress::{ProgressReporter, TrailProgress, no_progress};
use crate::record::SCHEMA_VERSION;

/// How strict to be about the end of the trail.
#[derive(Debug, Clone, Copy, Default)]
pub struct VerifyOptions {
    /// The trail is closed: its last file must end with a seal.
    pub require_sealed: bool,
}

/// What a successful verification covered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Each file, in chain order.
    pub files: Vec<FileReport>,
    /// Call records verified.
    pub records: u64,
    /// Lines verified (records, genesis, seal and gap lines).
    pub lines: u64,
    /// Records the writer announced as lost (queue full, failed writes).
    pub dropped: u64,
    /// The first file continues this one, which was not given (older files
    /// removed by retention); `None` when the trail starts at its beginning.
    pub continues_from: Option<String>,
    /// The last file ends with a seal (closed by rotation or shutdown).
    pub sealed: bool,
    /// Hash of the last line: compare it with an external anchor.
    pub last_hash: Hash,
}

/// One verified file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// Its lines.
    pub lines: u64,
    /// Its call records.
    pub records: u64,
    /// It ends with a seal.
    pub sealed: bool,
    /// Bytes of a partial last line, accounted for by the next genesis.
    pub torn_tail: u64,
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "verified {} records ({} lines) in {} file(s); last hash {}",
            self.records,
            self.lines,
            self.files.len(),
            self.last_hash
        )?;
        if let Some(prev) = &self.continues_from {
            write!(f, "\nthe trail continues from {prev}, which was not given")?;
        }
        if self.dropped > 0 {
            write!(
                f,
                "\nthe writer announced {} lost record(s) (see `gap` lines)",
                self.dropped
            )?;
        }
        if !self.sealed {
            write!(
                f,
                "\nthe last file is not sealed: still being written, or the gateway stopped abruptly"
            )?;
        }
        Ok(())
    }
}

/// Verify the trail in `paths` (files, or directories of `*.jsonl`).
///
/// # Errors
///
/// [`VerifyError::Tampered`] naming the file and line of the first record
/// that cannot be trusted; I/O errors; [`VerifyError::NoFiles`].
pub fn verify(paths: &[PathBuf]) -> Result<VerifyReport, VerifyError> {
    verify_with(paths, VerifyOptions::default())
}

/// [`verify`] with options.
///
/// # Errors
///
/// As for [`verify`]; with `require_sealed`, an unsealed last file.
pub fn verify_with(paths: &[PathBuf], options: VerifyOptions) -> Result<VerifyReport, VerifyError> {
    verify_with_progress(paths, options, &mut no_progress)
}

/// [`verify_with`], reporting the bytes read of the trail's size to
/// `progress` as it goes (for a progress bar).
///
/// # Errors
///
/// As for [`verify_with`].
pub fn verify_with_progress(
    paths: &[PathBuf],
    options: VerifyOptions,
    progress: &mut dyn FnMut(TrailProgress),
) -> Result<VerifyReport, VerifyError> {
    let files = trail_files(paths).map_err(|(path, source)| VerifyError::Io { path, source })?;
    if files.is_empty() {
        return Err(VerifyError::NoFiles);
    }
    let total = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let mut progress = ProgressReporter::new(total, progress);
    let mut chain = Chain::default();
    let mut report = VerifyReport {
        files: Vec::new(),
        records: 0,
        lines: 0,
        dropped: 0,
        continues_from: None,
        sealed: false,
        last_hash: Hash::ZERO,
    };
    for path in &files {
        let file = chain.verify_file(path, &mut report, &mut progress)?;
        report.files.push(file);
    }
    progress.report();
    let end = chain.end.as_ref().ok_or(VerifyError::NoFiles)?;
    if end.torn > 0 {
        return Err(tampered(
            &end.path,
            end.lines + 1,
            Problem::Truncated { bytes: end.torn },
        ));
    }
    report.sealed = chain.last.is_some_and(|l| l.kind == LineKind::Seal);
    if options.require_sealed && !report.sealed {
        return Err(tampered(&end.path, end.lines, Problem::NotSealed));
    }
    report.last_hash = chain.last.map_or(Hash::ZERO, |l| l.hash);
    Ok(report)
}

fn tampered(file: &Path, line: u64, problem: Problem) -> VerifyError {
    VerifyError::Tampered(Box::new(Tampering {
        file: file.to_owned(),
        line,
        problem,
    }))
}

#[derive(Debug, Clone, Copy)]
struct Last {
    seq: u64,
    hash: Hash,
    kind: LineKind,
}

/// The end of the previous file.
#[derive(Debug)]
struct FileEnd {
    path: PathBuf,
    lines: u64,
    torn: u64,
}

#[derive(Debug, Default)]
struct Chain {
    last: Option<Last>,
    end: Option<FileEnd>,
}

impl Chain {
    fn verify_file(
        &mut self,
        path: &Path,
        report: &mut VerifyReport,
        progress: &mut ProgressReporter<'_>,
    ) -> Result<FileReport, VerifyError> {
        let io = |source| VerifyError::Io {
            path: path.to_owned(),
            source,
        };
        let mut reader = BufReader::new(File::open(path).map_err(io)?);
        let mut out = FileReport {
            path: path.to_owned(),
            lines: 0,
            records: 0,
            sealed: false,
            torn_tail: 0,
        };
        let mut buf = Vec::with_capacity(4096);
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            progress.advance(n as u64);
            if buf.last() != Some(&b'\n') {
                out.torn_tail = buf.len() as u64;
                break;
            }
            out.lines += 1;
            let line = &buf[..buf.len() - 1];
            let env = self.check_line(path, out.lines, line, report)?;
            match env.kind {
                LineKind::Call => out.records += 1,
                LineKind::Gap => report.dropped += env.dropped,
                _ => {}
            }
        }
        if out.lines == 0 {
            return Err(tampered(path, 1, Problem::NoGenesis));
        }
        out.sealed = self.last.is_some_and(|l| l.kind == LineKind::Seal);
        report.records += out.records;
        report.lines += out.lines;
        self.end = Some(FileEnd {
            path: path.to_owned(),
            lines: out.lines,
            torn: out.torn_tail,
        });
        Ok(out)
    }

    fn check_line(
        &mut self,
        path: &Path,
        n: u64,
        line: &[u8],
        report: &mut VerifyReport,
    ) -> Result<Envelope, VerifyError> {
        let env: Envelope =
            serde_json::from_slice(line).map_err(|e| tampered(path, n, Problem::Malformed(e.to_string())))?;
        if env.v != SCHEMA_VERSION {
            return Err(tampered(path, n, Problem::UnknownVersion(env.v)));
        }
        if n == 1 {
            self.check_genesis(path, &env, report)?;
        } else {
            self.check_link(path, n, &env)?;
        }
        self.last = Some(Last {
            seq: env.seq,
            hash: Hash::of_line(line),
            kind: env.kind,
        });
        Ok(env)
    }

    fn check_genesis(&self, path: &Path, env: &Envelope, report: &mut VerifyReport) -> Result<(), VerifyError> {
        if env.kind != LineKind::Genesis {
            return Err(tampered(path, 1, Problem::NoGenesis));
        }
        let (Some(last), Some(end)) = (self.last, &self.end) else {
            report.continues_from = env.previous_file.clone();
            return Ok(());
        };
        if env.prev == last.hash && env.seq == last.seq + 1 {
            if end.torn != env.torn_tail {
                return Err(tampered(
                    &end.path,
                    end.lines + 1,
                    Problem::Truncated { bytes: end.torn },
                ));
            }
            return Ok(());
        }
        let problem = if env.seq == last.seq + 1 {
            return Err(tampered(&end.path, end.lines, Problem::Edited));
        } else if env.seq > last.seq {
            Problem::Discontinuity {
                expected_previous: env.previous_file.clone(),
            }
        } else {
            Problem::OutOfOrder
        };
        Err(tampered(path, 1, problem))
    }

    fn check_link(&self, path: &Path, n: u64, env: &Envelope) -> Result<(), VerifyError> {
        let Some(last) = self.last else {
            return Err(tampered(path, n, Problem::NoGenesis));
        };
        let linked = env.prev == last.hash;
        if linked && env.seq == last.seq + 1 && env.kind != LineKind::Genesis && last.kind != LineKind::Seal {
            return Ok(());
        }
        let (line, problem) = if linked && env.seq == last.seq + 1 {
            // Chained correctly, but a genesis inside a file or a line after
            // the seal: appended or moved.
            (n, Problem::OutOfOrder)
        } else if linked {
            (n, Problem::Edited)
        } else if env.seq == last.seq + 1 {
            (n - 1, Problem::Edited)
        } else if env.seq > last.seq {
            (
                n,
                Problem::Deleted {
                    missing: env.seq - last.seq - 1,
                },
            )
        } else if env.seq == last.seq {
            (n - 1, Problem::OutOfOrder)
        } else {
            (n, Problem::OutOfOrder)
        };
        Err(tampered(path, line, problem))
    }
}
