//! The policy engine: the compiled policy set behind an `ArcSwap`, and the
//! decision for one call (request path step 8).
//!
//! Default deny, `forbid` wins, and any evaluation error denies (fail
//! closed). A deny determined only by `@scope` forbids the caller fails, and
//! that the same request would pass without them, is reported as
//! [`Reason::DenyMissingScope`]. Reload, the watcher and list filtering are
//! in sibling modules.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use cedar_policy::EntityUid;
use cedar_policy_core::ast::Entity;
use tollgate_config::{PolicyFiles, PolicyMode};
use tollgate_core::Principal;

use crate::authorize::{self, Outcome};
use crate::cache::{Asker, DecisionCache, Lookup};
use crate::clock::{self, Local};
use crate::compile::{self, Compiled};
use crate::decision::{Decision, Reason};
use crate::error::{LoadErrors, SourceError};
use crate::ids::Types;
use crate::model::{Action, CallRequest};
use crate::needs::Attr;
use crate::principal::{PrincipalCache, PrincipalFacts};
use crate::reload::ReloadInfo;
use crate::request::{self, Facts, Statics, Within};
use crate::validate;

/// How the engine is set up: where the policies are and how decisions are
/// applied per route (the server maps it from `[policy]`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The policy directory (see `tollgate_config::read_policy_dir`).
    pub dir: PathBuf,
    /// The mode of routes not in `route_modes`.
    pub default_mode: PolicyMode,
    /// Per-route modes at start ([`PolicyEngine::set_route_modes`] replaces
    /// them on a reload).
    pub route_modes: HashMap<String, PolicyMode>,
    /// Seconds east of UTC for `context.hour`, `minute`, `weekday`.
    pub utc_offset_seconds: i32,
    /// Most principals whose entities are kept.
    pub principal_cache_entries: usize,
    /// Most decisions kept for reuse; 0 disables the decision cache.
    pub decision_cache_entries: usize,
}

impl Settings {
    /// Enforce everywhere, UTC, policies in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Settings {
        Settings {
            dir: dir.into(),
            default_mode: PolicyMode::Enforce,
            route_modes: HashMap::new(),
            utc_offset_seconds: 0,
            principal_cache_entries: 10_000,
            decision_cache_entries: 100_000,
        }
    }
}

/// A compiled policy set and its generation.
#[derive(Debug)]
pub(crate) struct Current {
    pub(crate) generation: u64,
    pub(crate) compiled: Compiled,
}

/// One loaded policy, for the console and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySummary {
    /// Its `@id`.
    pub id: Arc<str>,
    /// `permit` or `forbid`.
    pub effect: &'static str,
    /// The file it is in, and its line there.
    pub file: PathBuf,
    /// The line of the file where it starts.
    pub line: Option<usize>,
    /// Its text, as Cedar prints it.
    pub source: Arc<str>,
}

impl PolicySummary {
    fn of(m: &crate::compile::PolicyMeta) -> PolicySummary {
        PolicySummary {
            id: m.id.clone(),
            effect: m.effect,
            file: m.file.clone(),
            line: m.line,
            source: m.source.clone(),
        }
    }
}

/// Cedar authorization for the gateway; share it behind an `Arc`.
#[derive(Debug)]
pub struct PolicyEngine {
    pub(crate) settings: Settings,
    pub(crate) types: Types,
    pub(crate) statics: Statics,
    pub(crate) principals: PrincipalCache,
    pub(crate) decisions: DecisionCache,
    pub(crate) current: ArcSwap<Current>,
    /// Serializes reloads (no `.await` is held across it).
    pub(crate) reload_lock: Mutex<()>,
    pub(crate) reloads: AtomicU64,
    pub(crate) reload_failures: AtomicU64,
    pub(crate) info: ArcSwap<ReloadInfo>,
    /// The per-route modes in force: `settings.route_modes` at start, then
    /// those of each reloaded configuration.
    pub(crate) modes: ArcSwap<HashMap<String, PolicyMode>>,
}

impl PolicyEngine {
    /// Read, validate and compile the policies of `settings.dir`.
    ///
    /// # Errors
    ///
    /// Every problem of the policy directory, located.
    pub fn load(settings: Settings) -> Result<PolicyEngine, LoadErrors> {
        let files = validate::read(&settings.dir)?;
        PolicyEngine::from_files(settings, &files)
    }

    /// Validate and compile policy files already read.
    ///
    /// # Errors
    ///
    /// Every problem of the files, located.
    pub fn from_files(mut settings: Settings, files: &PolicyFiles) -> Result<PolicyEngine, LoadErrors> {
        let types = Types::new().map_err(|e| SourceError::new(&files.dir, e.to_string()))?;
        let compiled = compile::compile(files, &types)?;
        // The modes move to `modes`, which reloads replace: no stale copy
        // stays in `settings`.
        let modes = std::mem::take(&mut settings.route_modes);
        Ok(PolicyEngine {
            statics: Statics::new(&types),
            principals: PrincipalCache::new(settings.principal_cache_entries),
            decisions: DecisionCache::new(settings.decision_cache_entries),
            info: ArcSwap::from_pointee(ReloadInfo::loaded(&compiled)),
            modes: ArcSwap::from_pointee(modes),
            current: ArcSwap::from_pointee(Current {
                generation: 1,
                compiled,
            }),
            settings,
            types,
            reload_lock: Mutex::new(()),
            reloads: AtomicU64::new(0),
            reload_failures: AtomicU64::new(0),
        })
    }

    /// The mode of a call or list on `route`, made through the virtual
    /// server `via`: the virtual server's own mode when it sets one, else
    /// the route's, else the default.
    pub fn mode(&self, route: &str, via: Option<&str>) -> PolicyMode {
        let modes = self.modes.load();
        via.and_then(|v| modes.get(v))
            .or_else(|| modes.get(route))
            .copied()
            .unwrap_or(self.settings.default_mode)
    }

    /// Put the per-route modes of a reloaded configuration in force
    /// (`[policy] mode` itself needs a restart).
    pub fn set_route_modes(&self, modes: HashMap<String, PolicyMode>) {
        self.modes.store(Arc::new(modes));
    }

    /// Whether some policy in force reads `context.upstream_grant`: only
    /// then does the server look the caller's grant up before deciding.
    pub fn reads_upstream_grant(&self) -> bool {
        self.current.load().compiled.needs.has(Attr::UpstreamGrant)
    }

    /// The policies in force, in file order.
    pub fn policies(&self) -> Vec<PolicySummary> {
        self.current
            .load()
            .compiled
            .meta
            .iter()
            .map(PolicySummary::of)
            .collect()
    }

    /// The policy in force with `@id` `id`.
    pub fn policy(&self, id: &str) -> Option<PolicySummary> {
        let current = self.current.load();
        current
            .compiled
            .meta
            .iter()
            .find(|m| &*m.id == id)
            .map(PolicySummary::of)
    }

    /// The settings the engine was built with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Decide whether `principal` may make the call `req`.
    ///
    /// Never fails: a problem building or evaluating the request is a
    /// denial with [`Reason::Error`].
    pub fn decide(&self, principal: &Arc<Principal>, req: &CallRequest<'_>) -> Decision {
        let current = self.current.load();
        let (allowed, reason, ids) = match self.evaluate(&current, principal, req) {
            Ok(outcome) => outcome,
            Err(message) => (
                false,
                Reason::Error {
                    messages: vec![message],
                },
                Vec::new(),
            ),
        };
        Decision {
            allowed,
            enforced: self.mode(req.route, req.virtual_server) == PolicyMode::Enforce,
            reason,
            determining_policy_ids: ids,
            generation: current.generation,
        }
    }

    fn evaluate(
        &self,
        current: &Current,
        principal: &Arc<Principal>,
        req: &CallRequest<'_>,
    ) -> Result<Outcome, String> {
        let c = &current.compiled;
        let facts = self.principals.get(&self.types, principal);
        let action = req.action();
        let f = self.facts(req);
        let local = clock::local(f.now, f.utc_offset);
        let asker = Asker {
            principal: facts.serial,
            generation: current.generation,
        };
        let key =
            Lookup::new(c.needs, asker, action, req.name, &f, local, req.args).filter(|_| self.decisions.enabled());
        if let Some(hit) = key.as_ref().and_then(|k| self.decisions.get(k)) {
            return Ok(Outcome::clone(&hit));
        }
        let outcome = self.compute(current, &facts, principal, req, &f, local)?;
        if let Some(k) = &key {
            self.decisions.insert(k, Arc::new(outcome.clone()));
        }
        Ok(outcome)
    }

    /// A decision without the cache.
    fn compute(
        &self,
        current: &Current,
        facts: &PrincipalFacts,
        principal: &Principal,
        req: &CallRequest<'_>,
        f: &Facts<'_>,
        local: Local,
    ) -> Result<Outcome, String> {
        let c = &current.compiled;
        let action = req.action();
        let bits = facts.bits(current.generation, || {
            c.index.principal_bits(&facts.uid, &facts.ancestors)
        });
        let (uid, entity, within) = self.resource(req, action)?;
        let selected = c.index.select(&bits.1, action, &uid, within.uids());
        let context = request::context(c.needs, &self.statics, facts, f, local)?;
        let args = c
            .needs
            .has(Attr::Args)
            .then(|| request::args_entity(&self.statics, req.args));
        let action_entity = c.actions.get(action.index()).ok_or("unknown action")?;
        let (request, entities) = request::assemble(
            facts,
            (self.types.action(action), action_entity),
            (&uid, &entity),
            args,
            context,
        )?;
        Ok(authorize::evaluate(c, &selected, request, &entities).outcome(c, principal))
    }

    /// The resource of a call: the named object, or the server itself;
    /// with what it is in.
    fn resource(&self, req: &CallRequest<'_>, action: Action) -> Result<(EntityUid, Arc<Entity>, Within), String> {
        let (route, via) = (req.route, req.virtual_server);
        match action.target() {
            Some(kind) => {
                let name = req.name.ok_or_else(|| format!("{} without a name", req.method))?;
                let within = Within::target(&self.types, route, via);
                let (uid, entity) = request::target_entity(&self.types, kind, route, name, &within);
                Ok((uid, entity, within))
            }
            None => {
                let within = Within::server(&self.types, via);
                let (uid, entity) = request::server_entity(&self.types, route, &within);
                Ok((uid, entity, within))
            }
        }
    }

    pub(crate) fn facts<'a>(&self, req: &CallRequest<'a>) -> Facts<'a> {
        Facts {
            route: req.route,
            method: req.method,
            era: req.era,
            client_ip: req.client_ip,
            annotations: req.annotations,
            now: clock::unix_seconds(req.time.unwrap_or_else(SystemTime::now)),
            utc_offset: self.settings.utc_offset_seconds,
            virtual_server: req.virtual_server,
            upstream_grant: req.upstream_grant,
        }
    }
}
