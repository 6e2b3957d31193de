//! Single-flight with a freshness window: concurrent callers share one
//! fetch, and a fetch that started less than `fresh` ago is reused instead
//! of starting another (the rate limit on key-set refreshes triggered by
//! unknown key ids, and the short back-off after a failed token request).
//!
//! No lock is held across an await: the current flight is swapped
//! atomically and awaited through a `OnceCell`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use tokio::sync::OnceCell;
use tokio::time::Instant;

struct Flight<T> {
    started: Instant,
    result: OnceCell<T>,
}

/// See the module documentation.
pub(crate) struct SingleFlight<T> {
    current: ArcSwapOption<Flight<T>>,
}

impl<T: Clone> SingleFlight<T> {
    pub(crate) fn new() -> SingleFlight<T> {
        SingleFlight {
            current: ArcSwapOption::empty(),
        }
    }

    /// Join the flight started less than `fresh` ago (waiting for it, or
    /// taking its result), or start a new one running `f`.
    pub(crate) async fn run<F, Fut>(&self, fresh: Duration, f: F) -> T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let flight = self.join_or_start(fresh);
        flight.result.get_or_init(f).await.clone()
    }

    fn join_or_start(&self, fresh: Duration) -> Arc<Flight<T>> {
        let current = self.current.load_full();
        if let Some(f) = &current
            && f.started.elapsed() < fresh
        {
            return f.clone();
        }
        let new = Arc::new(Flight {
            started: Instant::now(),
            result: OnceCell::new(),
        });
        let previous = self.current.compare_and_swap(&current, Some(new.clone()));
        let won = match (&*previous, &current) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if won {
            new
        } else {
            // Another caller started a flight first: share it.
            (*previous).clone().unwrap_or(new)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_one_run_and_fresh_results_are_reused() {
        let flight = Arc::new(SingleFlight::<usize>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let call = |fresh: Duration| {
            let (flight, runs) = (flight.clone(), runs.clone());
            async move {
                flight
                    .run(fresh, || async move {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        runs.fetch_add(1, Ordering::SeqCst) + 1
                    })
                    .await
            }
        };
        let fresh = Duration::from_secs(10);
        let (a, b) = tokio::join!(call(fresh), call(fresh));
        assert_eq!((a, b), (1, 1));
        assert_eq!(call(fresh).await, 1, "within the window: reused");
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(call(fresh).await, 2, "after the window: a new run");
        assert_eq!(call(Duration::ZERO).await, 3, "zero window: always runs");
    }
}
