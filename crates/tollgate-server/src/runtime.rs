//! Worker threads for the public listener: one single-threaded tokio
//! runtime per worker, each accepting connections on its own handle of the
//! listening socket and serving them to the end on that thread.
//!
//! A request never changes thread: its connection, the upstream connection
//! it borrows (per-worker pools, `upstream::client`) and every task it
//! wakes run on the worker that accepted it, so the hot path pays no
//! cross-thread wake-ups or work-stealing bookkeeping (the shape of
//! nginx's workers and pingora's no-steal runtime). Control work — the
//! admin listener, key refresh, reload watchers — runs on the runtime that
//! called [`Gateway::run`](crate::Gateway::run).

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

thread_local! {
    static WORKER: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The index of the worker thread running this code; `usize::MAX` on any
/// other thread.
pub(crate) fn worker_index() -> usize {
    WORKER.with(Cell::get)
}

/// The running workers.
pub(crate) struct Workers {
    done: Vec<oneshot::Receiver<()>>,
}

impl Workers {
    /// Start `n` workers, each serving `listener` with the future `serve`
    /// makes for it (given its own listener handle and the stop signal).
    ///
    /// # Errors
    ///
    /// When the listener cannot be duplicated or a thread cannot start.
    pub(crate) fn start<F, Fut>(
        n: usize,
        listener: TcpListener,
        stop: &watch::Receiver<bool>,
        serve: F,
    ) -> io::Result<Workers>
    where
        F: Fn(TcpListener, watch::Receiver<bool>) -> Fut + Send + Clone + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let listener = listener.into_std()?;
        let mut done = Vec::with_capacity(n);
        for index in 0..n.max(1) {
            let handle = listener.try_clone()?;
            let (tx, rx) = oneshot::channel();
            let (serve, stop) = (serve.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("tollgate-worker-{index}"))
                .spawn(move || run_worker(index, handle, stop, serve, tx))?;
            done.push(rx);
        }
        Ok(Workers { done })
    }

    /// Wait until every worker has drained and stopped.
    pub(crate) async fn join(self) {
        for rx in self.done {
            let _ = rx.await;
        }
    }
}

/// How often a worker's timer wheel is ticked while idle.
const TICK: Duration = Duration::from_millis(250);

/// Keep a deadline at most [`TICK`] away on the worker's timer wheel.
///
/// Every request arms timers (the header-read deadline, the first-byte
/// and idle deadlines), each removed again within microseconds. When the
/// wheel is otherwise empty, arming one that is earlier than the driver's
/// next wake-up makes tokio wake its own driver through an eventfd write —
/// a system call and an extra epoll round per request. With a deadline
/// always pending nearer than any request timer, arming them costs no
/// system call. The price is four wake-ups a second of an idle worker.
async fn keep_timers_armed() {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
    }
}

fn run_worker<F, Fut>(
    index: usize,
    listener: std::net::TcpListener,
    stop: watch::Receiver<bool>,
    serve: F,
    done: oneshot::Sender<()>,
) where
    F: Fn(TcpListener, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()>,
{
    WORKER.with(|w| w.set(index));
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(worker = index, error = %e, "worker runtime did not start");
            return;
        }
    };
    runtime.block_on(async move {
        let _armed = tokio::spawn(keep_timers_armed());
        match TcpListener::from_std(listener) {
            Ok(listener) => serve(listener, stop).await,
            Err(e) => tracing::error!(worker = index, error = %e, "worker could not register the listener"),
        }
    });
    // Streams still open after the drain end with the runtime.
    drop(runtime);
    let _ = done.send(());
}
