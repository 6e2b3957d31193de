//! Hot reload: a new policy set replaces the old one atomically, an invalid
//! one is refused and the old one keeps serving, and the outcome is counted
//! for metrics.
//!
//! Called by the file watcher ([`crate::PolicyWatcher`]), by the server on
//! SIGHUP ([`PolicyEngine::reload_configured`]) and by tests. Decisions in
//! flight keep the set they loaded; the next decision sees the new one.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::SystemTime;

use crate::compile::{self, Compiled};
use crate::engine::{Current, PolicyEngine};
use crate::error::LoadErrors;
use crate::validate;

/// The outcome of a successful reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// The files are unchanged; the set in force stays.
    Unchanged {
        /// Its generation.
        generation: u64,
    },
    /// A new set is in force.
    Reloaded {
        /// Its generation.
        generation: u64,
        /// Its number of policies.
        policies: usize,
    },
}

/// The state of the policy set, for metrics and `/readyz`-style reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyStatus {
    /// The directory the engine reloads from.
    pub dir: PathBuf,
    /// The generation in force (1 = the set loaded at start).
    pub generation: u64,
    /// Policies in force.
    pub policies: usize,
    /// Successful reloads that changed the set.
    pub reloads: u64,
    /// Refused reloads (invalid sets, unreadable files).
    pub reload_failures: u64,
    /// When the set in force was loaded.
    pub loaded_at: SystemTime,
    /// Why the last reload was refused, when the last attempt failed.
    pub last_error: Option<String>,
}

/// What the status keeps between reloads.
#[derive(Debug, Clone)]
pub(crate) struct ReloadInfo {
    policies: usize,
    loaded_at: SystemTime,
    last_error: Option<String>,
}

impl ReloadInfo {
    pub(crate) fn loaded(c: &Compiled) -> ReloadInfo {
        ReloadInfo {
            policies: c.index.len(),
            loaded_at: SystemTime::now(),
            last_error: None,
        }
    }
}

impl PolicyEngine {
    /// Reload the policies from `dir`: validate and compile them, then swap
    /// them in atomically. Unchanged files are not recompiled.
    ///
    /// # Errors
    ///
    /// Every problem of the new set; the set in force is kept.
    pub fn reload(&self, dir: &Path) -> Result<ReloadOutcome, LoadErrors> {
        let _serial = self.reload_lock.lock().unwrap_or_else(PoisonError::into_inner);
        let result = self.compile_from(dir);
        match result {
            Ok(Some(compiled)) => {
                let info = ReloadInfo::loaded(&compiled);
                let generation = self.current.load().generation + 1;
                let policies = compiled.index.len();
                self.current.store(Arc::new(Current { generation, compiled }));
                self.reloads.fetch_add(1, Ordering::Relaxed);
                self.info.store(Arc::new(info));
                tracing::info!(generation, policies, dir = %dir.display(), "policy set reloaded");
                Ok(ReloadOutcome::Reloaded { generation, policies })
            }
            Ok(None) => {
                self.info.rcu(|i| ReloadInfo {
                    last_error: None,
                    ..ReloadInfo::clone(i)
                });
                Ok(ReloadOutcome::Unchanged {
                    generation: self.current.load().generation,
                })
            }
            Err(errors) => {
                self.reload_failures.fetch_add(1, Ordering::Relaxed);
                let text = errors.to_string();
                tracing::warn!(dir = %dir.display(), errors = %text, "policy reload refused; the previous set stays in force");
                self.info.rcu(|i| ReloadInfo {
                    last_error: Some(text.clone()),
                    ..ReloadInfo::clone(i)
                });
                Err(errors)
            }
        }
    }

    /// Reload from the configured directory (what SIGHUP and the watcher do).
    ///
    /// # Errors
    ///
    /// As [`PolicyEngine::reload`].
    pub fn reload_configured(&self) -> Result<ReloadOutcome, LoadErrors> {
        self.reload(&self.settings.dir)
    }

    /// `Ok(None)` when the files are those in force.
    fn compile_from(&self, dir: &Path) -> Result<Option<Compiled>, LoadErrors> {
        let files = validate::read(dir)?;
        if compile::fingerprint(&files) == self.current.load().compiled.fingerprint {
            return Ok(None);
        }
        compile::compile(&files, &self.types).map(Some)
    }

    /// The state of the policy set and of reloads.
    pub fn status(&self) -> PolicyStatus {
        let info = self.info.load();
        PolicyStatus {
            dir: self.settings.dir.clone(),
            generation: self.current.load().generation,
            policies: info.policies,
            reloads: self.reloads.load(Ordering::Relaxed),
            reload_failures: self.reload_failures.load(Ordering::Relaxed),
            loaded_at: info.loaded_at,
            last_error: info.last_error.clone(),
        }
    }
}
