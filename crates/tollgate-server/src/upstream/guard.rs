//! Upstream resilience around the `forward` phase: a concurrency cap
//! (bulkhead) and a circuit breaker per upstream (`[[servers]]
//! resilience`).
//!
//! A call is admitted before it is sent: refused at once when the cap's
//! permits are all taken (calls awaiting the upstream's answer head), or
//! while the breaker is open. The outcome is recorded when the answer's
//! head arrives or the send fails: a failure is no connection, a broken
//! one, a timeout or a 5xx answer. The breaker opens after
//! `consecutive_failures` in a row, or when `error_rate` of at least
//! `min_calls` calls in `window` failed; after `open_for` it lets
//! `half_open_probes` calls through, whose success closes it and whose
//! failure opens it again. Nothing here sends anything.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a call was not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GuardRejection {
    /// Every permit of the concurrency cap is taken.
    Full,
    /// The breaker is open for this much longer.
    Open(Duration),
}

/// A call let through: holds its permit until its outcome is recorded.
#[derive(Debug)]
pub(crate) struct Admitted {
    _permit: Option<OwnedSemaphorePermit>,
    probe: bool,
}

/// The breaker's position, for `/readyz` and the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Position {
    Closed,
    Open,
    HalfOpen,
}

impl Position {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Position::Closed => "closed",
            Position::Open => "open",
            Position::HalfOpen => "half_open",
        }
    }
}

/// One upstream's cap and breaker.
#[derive(Debug)]
pub(crate) struct Guard {
    cap: Option<Arc<Semaphore>>,
    max: usize,
    breaker: Option<Mutex<State>>,
    config: tollgate_config::Breaker,
    shed: AtomicU64,
    opened: AtomicU64,
}

#[derive(Debug)]
struct State {
    position: Position,
    consecutive: u32,
    window_start: Instant,
    calls: u32,
    failures: u32,
    /// When it opened, or when the latest probe went through.
    since: Instant,
    probes: u32,
}

impl State {
    /// Closed, with nothing counted.
    fn closed(now: Instant) -> State {
        State {
            position: Position::Closed,
            consecutive: 0,
            window_start: now,
            calls: 0,
            failures: 0,
            since: now,
            probes: 0,
        }
    }
}

impl Guard {
    pub(crate) fn new(config: &tollgate_config::Resilience) -> Guard {
        let now = Instant::now();
        Guard {
            cap: (config.max_concurrent > 0).then(|| Arc::new(Semaphore::new(config.max_concurrent))),
            max: config.max_concurrent,
            breaker: config.breaker.enabled.then(|| Mutex::new(State::closed(now))),
            config: config.breaker.clone(),
            shed: AtomicU64::new(0),
            opened: AtomicU64::new(0),
        }
    }

    /// Let a call through, or say why not.
    pub(crate) fn admit(&self) -> Result<Admitted, GuardRejection> {
        let probe = match &self.breaker {
            Some(b) => {
                let mut state = b.lock().map_err(|_| GuardRejection::Full)?;
                self.pass(&mut state)?
            }
            None => false,
        };
        let permit = match &self.cap {
            Some(cap) => Some(Arc::clone(cap).try_acquire_owned().map_err(|_| {
                self.shed.fetch_add(1, Ordering::Relaxed);
                GuardRejection::Full
            })?),
            None => None,
        };
        Ok(Admitted { _permit: permit, probe })
    }

    /// Whether the breaker lets a call through; `Ok(true)` for a probe.
    fn pass(&self, s: &mut State) -> Result<bool, GuardRejection> {
        let now = Instant::now();
        let waited = now.duration_since(s.since);
        match s.position {
            Position::Closed => Ok(false),
            Position::Open if waited < self.config.open_for => Err(GuardRejection::Open(self.config.open_for - waited)),
            // A probe that never reported (its caller went away) frees its
            // place after `open_for`.
            Position::HalfOpen if s.probes >= self.config.half_open_probes && waited < self.config.open_for => {
                Err(GuardRejection::Open(self.config.open_for - waited))
            }
            Position::Open | Position::HalfOpen => {
                if s.position == Position::Open || waited >= self.config.open_for {
                    s.probes = 0;
                }
                s.position = Position::HalfOpen;
                s.probes += 1;
                s.since = now;
                Ok(true)
            }
        }
    }

    /// Record how the call `admitted` went; its permit is given back.
    pub(crate) fn record(&self, admitted: Admitted, ok: bool) {
        let Some(b) = &self.breaker else {
            return;
        };
        let Ok(mut s) = b.lock() else {
            return;
        };
        let now = Instant::now();
        if admitted.probe || s.position == Position::HalfOpen {
            if ok {
                *s = State::closed(now);
            } else {
                self.open(&mut s, now);
            }
            return;
        }
        if now.duration_since(s.window_start) >= self.config.window {
            s.window_start = now;
            s.calls = 0;
            s.failures = 0;
        }
        s.calls += 1;
        if ok {
            s.consecutive = 0;
            return;
        }
        s.failures += 1;
        s.consecutive += 1;
        let rate = f64::from(s.failures) / f64::from(s.calls);
        if s.consecutive >= self.config.consecutive_failures
            || (s.calls >= self.config.min_calls && rate >= self.config.error_rate)
        {
            self.open(&mut s, now);
        }
    }

    fn open(&self, s: &mut State, now: Instant) {
        if s.position != Position::Open {
            self.opened.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("upstream circuit breaker opened");
        }
        s.position = Position::Open;
        s.since = now;
        s.probes = 0;
        s.consecutive = 0;
    }

    /// The breaker's position (`None` when it is off).
    pub(crate) fn position(&self) -> Option<Position> {
        let b = self.breaker.as_ref()?;
        let s = b.lock().ok()?;
        Some(match s.position {
            Position::Open if s.since.elapsed() >= self.config.open_for => Position::HalfOpen,
            p => p,
        })
    }

    /// Calls awaiting the upstream now, and the cap (0: none).
    pub(crate) fn in_flight(&self) -> (usize, usize) {
        match &self.cap {
            Some(cap) => (self.max - cap.available_permits(), self.max),
            None => (0, 0),
        }
    }

    /// Calls refused by the cap, and times the breaker opened, since start.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.shed.load(Ordering::Relaxed), self.opened.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn guard(max: usize) -> Guard {
        let mut r = tollgate_config::Resilience {
            max_concurrent: max,
            ..tollgate_config::Resilience::default()
        };
        r.breaker.consecutive_failures = 3;
        r.breaker.open_for = Duration::from_millis(50);
        Guard::new(&r)
    }

    #[test]
    fn the_cap_refuses_past_its_permits_and_frees_them_on_record() {
        let g = guard(2);
        let a = g.admit().unwrap();
        let b = g.admit().unwrap();
        assert_eq!(g.admit().unwrap_err(), GuardRejection::Full);
        assert_eq!(g.in_flight(), (2, 2));
        g.record(a, true);
        let c = g.admit().unwrap();
        g.record(b, true);
        g.record(c, true);
        assert_eq!(g.counts().0, 1);
    }

    #[test]
    fn the_breaker_opens_on_failures_probes_then_closes() {
        let g = guard(0);
        for _ in 0..3 {
            let a = g.admit().unwrap();
            g.record(a, false);
        }
        assert!(matches!(g.admit(), Err(GuardRejection::Open(_))));
        assert_eq!(g.position(), Some(Position::Open));
        std::thread::sleep(Duration::from_millis(60));
        let probe = g.admit().unwrap();
        assert!(matches!(g.admit(), Err(GuardRejection::Open(_))), "one probe at a time");
        g.record(probe, false);
        assert!(
            matches!(g.admit(), Err(GuardRejection::Open(_))),
            "a failed probe opens it again"
        );
        std::thread::sleep(Duration::from_millis(60));
        let probe = g.admit().unwrap();
        g.record(probe, true);
        assert_eq!(g.position(), Some(Position::Closed));
        let a = g.admit().unwrap();
        g.record(a, true);
        assert_eq!(g.counts().1, 2, "opened, then opened again by the failed probe");
    }
}
