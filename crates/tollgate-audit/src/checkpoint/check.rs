//! Files against checkpoints: each checkpoint's signature verifies under
//! a configured key, and the line it names is, byte for byte, the line
//! signed (its hash and sequence number). Run after the chain itself
//! verified (`crate::verify`): the chain proves each line follows the one
//! before, a checkpoint pins the chain to what the replica had written
//! when it signed, so re-hashing a rewritten trail no longer hides the
//! rewrite.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::time::SystemTime;

use serde::Deserialize;

use super::{Checkpoint, CheckpointKeys};
use crate::chain::Hash;
use crate::files::trail_files;

/// What the checkpoints proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Checkpoints whose line matched.
    pub checked: usize,
    /// Checkpoints on files older than the first file given (removed by
    /// retention, or not asked about).
    pub skipped: usize,
    /// The newest checkpoint checked: the trail is proven up to its line.
    pub latest: Option<Checkpoint>,
}

/// The first checkpoint the files do not match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct CheckpointFailure {
    /// The file (its path when given, else its name).
    pub file: PathBuf,
    /// The line the checkpoint names.
    pub line: u64,
    /// What does not match.
    pub message: String,
}

/// Check `checkpoints` (one replica's) against the trail files in `paths`
/// (files or directories), and their signatures against `keys`.
///
/// # Errors
///
/// The first checkpoint that fails: a bad or unknown signature, a missing
/// file or line, or a line other than the one signed. A file that cannot
/// be read fails the same way.
pub fn check(
    paths: &[PathBuf],
    checkpoints: &[Checkpoint],
    keys: &CheckpointKeys,
) -> Result<CheckpointReport, CheckpointFailure> {
    let files = trail_files(paths).map_err(|(path, e)| CheckpointFailure {
        file: path,
        line: 0,
        message: format!("cannot read: {e}"),
    })?;
    let by_name: BTreeMap<String, PathBuf> = files
        .iter()
        .filter_map(|p| Some((p.file_name()?.to_str()?.to_owned(), p.clone())))
        .collect();
    let first = by_name.keys().next().cloned().unwrap_or_default();
    let mut wanted: BTreeMap<&str, Vec<&Checkpoint>> = BTreeMap::new();
    let mut report = CheckpointReport {
        checked: 0,
        skipped: 0,
        latest: None,
    };
    for cp in checkpoints {
        let fail = |message: String| failure(cp, by_name.get(&cp.head.file), message);
        cp.verify_signature(keys)
            .map_err(|e| fail(format!("the checkpoint signed {}: {e}", when(cp.time))))?;
        if by_name.contains_key(&cp.head.file) {
            wanted.entry(&cp.head.file).or_default().push(cp);
        } else if cp.head.file < first {
            report.skipped += 1;
        } else {
            return Err(fail(format!(
                "the file is missing, but its line {} was checkpointed {}",
                cp.head.line,
                when(cp.time)
            )));
        }
    }
    for (name, mut cps) in wanted {
        cps.sort_by_key(|cp| cp.head.line);
        let path = by_name.get(name).cloned().unwrap_or_default();
        check_file(&path, &cps)?;
        report.checked += cps.len();
        for cp in cps {
            if report.latest.as_ref().is_none_or(|l| l.head.seq < cp.head.seq) {
                report.latest = Some(cp.clone());
            }
        }
    }
    Ok(report)
}

/// The envelope's sequence number.
#[derive(Deserialize)]
struct Seq {
    seq: u64,
}

/// Read `path` once, matching each of `cps` (sorted by line) to its line.
fn check_file(path: &PathBuf, cps: &[&Checkpoint]) -> Result<(), CheckpointFailure> {
    let io = |e: std::io::Error| CheckpointFailure {
        file: path.clone(),
        line: 0,
        message: format!("cannot read: {e}"),
    };
    let mut lines = BufReader::new(File::open(path).map_err(io)?).split(b'\n');
    let (mut at, mut bytes) = (0u64, Vec::new());
    for cp in cps {
        let fail = |message: String| failure(cp, Some(path), message);
        while at < cp.head.line {
            let Some(line) = lines.next().transpose().map_err(io)? else {
                return Err(fail(format!(
                    "the file ends at line {at}, but this line was checkpointed {}: records were cut",
                    when(cp.time)
                )));
            };
            (at, bytes) = (at + 1, line);
        }
        let seq = serde_json::from_slice::<Seq>(&bytes).map(|s| s.seq).ok();
        if Hash::of_line(&bytes) != cp.head.hash || seq != Some(cp.head.seq) {
            return Err(fail(format!(
                "the line is not the one checkpointed {} (key {}): the trail was rewritten after it was signed",
                when(cp.time),
                cp.key_id
            )));
        }
    }
    Ok(())
}

fn failure(cp: &Checkpoint, path: Option<&PathBuf>, message: String) -> CheckpointFailure {
    CheckpointFailure {
        file: path.cloned().unwrap_or_else(|| PathBuf::from(&cp.head.file)),
        line: cp.head.line,
        message,
    }
}

fn when(t: SystemTime) -> String {
    format!("at {}", humantime::format_rfc3339_seconds(t))
}
