//! `tollgate audit index`, and which source answers `tollgate audit query`
//! and `tollgate usage`: the audit index (`tollgate-index`) when there is
//! one, brought up to date first, else the trail's files. Both show a
//! progress bar on a terminal while they index (`progress_bar`).

use std::path::{Path, PathBuf};

use tollgate_index::{Index, IndexError};

use crate::progress_bar::TrailBar;

/// Arguments of `tollgate audit index`.
#[derive(clap::Args)]
pub(crate) struct IndexArgs {
    /// Audit files, or directories of `*.jsonl` files.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The index file [default: `index.sqlite` in PATH, a directory].
    #[arg(long, value_name = "FILE")]
    index: Option<PathBuf>,
    /// Drop everything indexed and index the whole trail again.
    #[arg(long)]
    rebuild: bool,
}

/// How `audit query` and `usage` choose their source.
#[derive(clap::Args)]
pub(crate) struct IndexChoice {
    /// Answer from this audit index: PATH is brought up to date in it
    /// first, and the answer covers every file it holds [default:
    /// `index.sqlite` in PATH, a directory, when it exists].
    #[arg(long, value_name = "FILE", conflicts_with = "no_index")]
    index: Option<PathBuf>,
    /// Read the files even when an index exists.
    #[arg(long)]
    no_index: bool,
}

/// The default index of `paths`: `index.sqlite` in the first, when it is
/// a directory.
fn default_path(paths: &[PathBuf]) -> Option<PathBuf> {
    paths.first().filter(|p| p.is_dir()).map(|p| Index::path_for(p))
}

/// Run `tollgate audit index`: print what was indexed.
pub(crate) fn index(args: &IndexArgs) -> anyhow::Result<String> {
    let path = args
        .index
        .clone()
        .or_else(|| default_path(&args.paths))
        .ok_or_else(|| anyhow::anyhow!("PATH is not a directory: name the index file with --index"))?;
    let mut index = Index::open(&path)?;
    let mut bar = TrailBar::new("indexing");
    let progress = if args.rebuild {
        index.rebuild_with_progress(&args.paths, &mut bar.hook())?
    } else {
        index.update_with_progress(&args.paths, &mut bar.hook())?
    };
    drop(bar);
    let secs = progress.elapsed.as_secs_f64();
    Ok(format!(
        "{}: {} records added from {} files ({:.1} MiB) in {:.2} s ({:.0} records/s); {} removed files dropped\n",
        path.display(),
        progress.records,
        progress.files,
        progress.bytes as f64 / f64::from(1u32 << 20),
        secs,
        progress.records as f64 / secs.max(1e-9),
        progress.removed,
    ))
}

impl IndexChoice {
    /// The index to answer from, up to date with `paths`. A named index
    /// must work; a default one that cannot be brought up to date (no
    /// write access, another version's) is passed over with a warning.
    pub(crate) fn open(&self, paths: &[PathBuf]) -> anyhow::Result<Option<Index>> {
        if self.no_index {
            return Ok(None);
        }
        if let Some(path) = &self.index {
            return Ok(Some(updated(path, paths)?));
        }
        let Some(path) = default_path(paths).filter(|p| p.is_file()) else {
            return Ok(None);
        };
        match updated(&path, paths) {
            Ok(index) => Ok(Some(index)),
            Err(e) => {
                eprintln!("tollgate: not using the audit index ({e}); reading the files");
                Ok(None)
            }
        }
    }
}

/// `path`'s index, brought up to date with `paths` (showing progress on
/// a terminal: the first catch-up of a large trail takes a while).
fn updated(path: &Path, paths: &[PathBuf]) -> Result<Index, IndexError> {
    let mut index = Index::open(path)?;
    index.update_with_progress(paths, &mut TrailBar::new("indexing").hook())?;
    Ok(index)
}
