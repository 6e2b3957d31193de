//! The files of one writer: the chain head, the open file, framing lines
//! into a write buffer, writing, syncing, rotating and recovering.
//!
//! Owned by the writer thread; nothing here is shared. Lines are framed
//! into `buf` against the head of what is buffered, written with `write`
//! (page cache), and made durable with `fdatasync`. When a write fails the
//! file is abandoned: the next file's genesis names it, the hash of its last
//! complete line and the length of any partial line after it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::chain::{Genesis, Hash, LineKind, Seal, append_line};
use crate::checkpoint::ChainHead;
use crate::error::AuditError;
use crate::files::{file_name, read_tail, writer_files};

/// Where and when files are made.
#[derive(Debug, Clone)]
pub(crate) struct TrailConfig {
    pub(crate) dir: PathBuf,
    pub(crate) prefix: String,
    pub(crate) rotate_bytes: u64,
    pub(crate) rotate_interval: Duration,
}

#[derive(Debug, Clone, Copy)]
struct Head {
    seq: u64,
    hash: Hash,
}

struct Current {
    file: File,
    path: PathBuf,
    name: String,
    len: u64,
    opened: Instant,
    records: u64,
    /// Lines written to the file.
    lines: u64,
}

struct Pending {
    end: usize,
    head: Head,
    call: bool,
}

/// A failed write: how many buffered call records reached the file.
pub(crate) struct WriteFailure {
    pub(crate) error: AuditError,
    pub(crate) written_calls: u64,
    pub(crate) lost_calls: u64,
}

pub(crate) struct Trail {
    cfg: TrailConfig,
    current: Option<Current>,
    /// Last line written to a file.
    head: Option<Head>,
    /// Last line framed into `buf`.
    buffered: Option<Head>,
    /// The file the next genesis continues, and its partial tail length.
    predecessor: Option<(String, u64)>,
    buf: Vec<u8>,
    pending: Vec<Pending>,
}

impl Trail {
    /// Create the directory, continue the chain of its newest file, and
    /// open a new file.
    pub(crate) fn open(cfg: TrailConfig) -> Result<Trail, AuditError> {
        let setup = |path: &Path, e: io::Error| AuditError::Setup {
            path: path.to_owned(),
            source: Arc::new(e),
        };
        std::fs::create_dir_all(&cfg.dir).map_err(|e| setup(&cfg.dir, e))?;
        let mut trail = Trail {
            current: None,
            head: None,
            buffered: None,
            predecessor: None,
            buf: Vec::with_capacity(256 * 1024),
            pending: Vec::new(),
            cfg,
        };
        let files = writer_files(&trail.cfg.dir, &trail.cfg.prefix).map_err(|e| setup(&trail.cfg.dir, e))?;
        for last in files.iter().rev() {
            let tail = read_tail(last).map_err(|e| setup(last, e))?;
            if tail.last.is_none() && tail.torn < 4096 {
                // A crash between creating a file and writing its genesis:
                // it holds no record. Remove it and continue the one before.
                std::fs::remove_file(last).map_err(|e| setup(last, e))?;
                continue;
            }
            let name = last.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            if let Some((seq, hash)) = tail.last {
                // An unreadable last line restarts numbering; verify reports it.
                trail.head = Some(Head {
                    seq: seq.unwrap_or(0),
                    hash,
                });
            }
            trail.predecessor = Some((name, tail.torn));
            break;
        }
        trail.buffered = trail.head;
        trail.ensure_open().map_err(|e| match e {
            AuditError::Write { path, source } => AuditError::Setup { path, source },
            other => other,
        })?;
        Ok(trail)
    }

    /// Frame one line into the buffer, opening a file first if none is open.
    /// Returns the line's sequence number, hash and text.
    pub(crate) fn push<T: Serialize>(&mut self, kind: LineKind, body: &T) -> Result<(u64, Hash, &[u8]), AuditError> {
        if self.current.is_none() {
            self.ensure_open()?;
        }
        let (seq, prev) = match self.buffered {
            Some(h) => (h.seq + 1, h.hash),
            None => (0, Hash::ZERO),
        };
        let start = self.buf.len();
        let hash = append_line(&mut self.buf, seq, &prev, kind, body).map_err(|e| AuditError::Encode(e.to_string()))?;
        let head = Head { seq, hash };
        self.buffered = Some(head);
        self.pending.push(Pending {
            end: self.buf.len(),
            head,
            call: kind == LineKind::Call,
        });
        Ok((seq, hash, &self.buf[start..self.buf.len() - 1]))
    }

    /// Write the buffer to the file (page cache). Returns the call records
    /// written.
    pub(crate) fn write(&mut self) -> Result<u64, WriteFailure> {
        let calls = self.pending.iter().filter(|p| p.call).count() as u64;
        if self.buf.is_empty() {
            return Ok(0);
        }
        let Some(cur) = self.current.as_mut() else {
            self.discard_buffer();
            return Err(WriteFailure {
                error: closed_error(&self.cfg.dir),
                written_calls: 0,
                lost_calls: calls,
            });
        };
        let mut done = 0;
        let result = loop {
            if done == self.buf.len() {
                break Ok(());
            }
            match cur.file.write(&self.buf[done..]) {
                Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        cur.len += done as u64;
        match result {
            Ok(()) => {
                cur.records += calls;
                cur.lines += self.pending.len() as u64;
                self.head = self.buffered;
                self.buf.clear();
                self.pending.clear();
                Ok(calls)
            }
            Err(e) => Err(self.abandon_after_partial_write(done, e)),
        }
    }

    fn abandon_after_partial_write(&mut self, done: usize, e: io::Error) -> WriteFailure {
        let complete: Vec<&Pending> = self.pending.iter().take_while(|p| p.end <= done).collect();
        let written_calls = complete.iter().filter(|p| p.call).count() as u64;
        let total_calls = self.pending.iter().filter(|p| p.call).count() as u64;
        let last_end = complete.last().map_or(0, |p| p.end);
        if let Some(last) = complete.last() {
            self.head = Some(last.head);
        }
        let path = self.current.as_ref().map(|c| c.path.clone()).unwrap_or_default();
        self.abandon((done - last_end) as u64);
        WriteFailure {
            error: AuditError::Write {
                path,
                source: Arc::new(e),
            },
            written_calls,
            lost_calls: total_calls - written_calls,
        }
    }

    /// `fdatasync` the open file.
    pub(crate) fn sync(&mut self) -> Result<(), AuditError> {
        let Some(cur) = self.current.as_mut() else {
            return Err(closed_error(&self.cfg.dir));
        };
        if let Err(e) = cur.file.sync_data() {
            let path = cur.path.clone();
            // After a failed fsync the page cache may no longer match the
            // disk: continue in a new file rather than trust this one.
            self.abandon(0);
            return Err(AuditError::Write {
                path,
                source: Arc::new(e),
            });
        }
        Ok(())
    }

    /// Whether the open file is due for rotation.
    pub(crate) fn rotation_due(&self) -> bool {
        self.current.as_ref().is_some_and(|c| {
            c.len + self.buf.len() as u64 >= self.cfg.rotate_bytes || c.opened.elapsed() >= self.cfg.rotate_interval
        })
    }

    /// Time until the open file is due for rotation.
    pub(crate) fn until_rotation(&self) -> Option<Duration> {
        let c = self.current.as_ref()?;
        Some(self.cfg.rotate_interval.saturating_sub(c.opened.elapsed()))
    }

    /// Frame the seal of the open file (call [`Trail::write`] and
    /// [`Trail::sync`] next, then [`Trail::finish_file`]).
    pub(crate) fn push_seal(&mut self, reason: &'static str) -> Result<(), AuditError> {
        let records = self.current.as_ref().map_or(0, |c| c.records);
        let seal = Seal {
            time: SystemTime::now(),
            reason,
            records,
        };
        self.push(LineKind::Seal, &seal).map(|_| ())
    }

    /// Close the open file after its seal was synced.
    pub(crate) fn finish_file(&mut self) {
        self.abandon(0);
    }

    /// The last line written to the open file: call after a successful
    /// [`Trail::sync`], when it is durable.
    pub(crate) fn head(&self) -> Option<ChainHead> {
        let (cur, head) = (self.current.as_ref()?, self.head?);
        Some(ChainHead {
            file: cur.name.clone(),
            line: cur.lines,
            seq: head.seq,
            hash: head.hash,
        })
    }

    /// Whether a file is open.
    pub(crate) fn is_open(&self) -> bool {
        self.current.is_some()
    }

    fn abandon(&mut self, torn: u64) {
        if let Some(cur) = self.current.take() {
            self.predecessor = Some((cur.name, torn));
        }
        self.discard_buffer();
    }

    fn discard_buffer(&mut self) {
        self.buf.clear();
        self.pending.clear();
        self.buffered = self.head;
    }

    /// Open a new file and make its genesis line durable (file and
    /// directory entry).
    pub(crate) fn ensure_open(&mut self) -> Result<(), AuditError> {
        if self.current.is_some() {
            return Ok(());
        }
        self.discard_buffer();
        let saved = (self.predecessor.clone(), self.head);
        let seq = self.head.map_or(0, |h| h.seq + 1);
        let now = SystemTime::now();
        let name = file_name(&self.cfg.prefix, seq, now);
        let path = self.cfg.dir.join(&name);
        let err = |e: io::Error| AuditError::Write {
            path: path.clone(),
            source: Arc::new(e),
        };
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(err)?;
        self.current = Some(Current {
            file,
            path: path.clone(),
            name: name.clone(),
            len: 0,
            opened: Instant::now(),
            records: 0,
            lines: 0,
        });
        let written = self
            .write_genesis(&name, now)
            .and_then(|()| sync_dir(&self.cfg.dir).map_err(err));
        if let Err(e) = written {
            // The file holds no complete record: remove it so it cannot
            // break the chain, and retry with the next write.
            self.current = None;
            self.predecessor = saved.0;
            self.head = saved.1;
            self.discard_buffer();
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(())
    }
}

impl Trail {
    /// Write and sync the open file's genesis line.
    fn write_genesis(&mut self, name: &str, now: SystemTime) -> Result<(), AuditError> {
        let (previous_file, torn_tail) = match &self.predecessor {
            Some((n, t)) => (Some(n.clone()), *t),
            None => (None, 0),
        };
        let genesis = Genesis {
            time: now,
            file: name,
            previous_file: previous_file.as_deref(),
            torn_tail,
            writer: concat!("tollgate ", env!("CARGO_PKG_VERSION")),
        };
        self.push(LineKind::Genesis, &genesis)?;
        self.write().map_err(|f| f.error)?;
        self.sync()
    }
}

fn closed_error(dir: &Path) -> AuditError {
    AuditError::Write {
        path: dir.to_owned(),
        source: Arc::new(io::Error::other("no audit file is open")),
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
