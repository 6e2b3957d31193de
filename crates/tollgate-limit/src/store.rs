//! The shared store: rule counters in Redis, so that a limit holds across
//! every replica of the gateway.
//!
//! One decision is one round trip: a server-side script receives a key
//! and the GCRA parameters of each rule the call matched, reads Redis's
//! own clock (so replicas' clocks do not matter), and counts the call
//! against each rule in order until one has no room — the same rule as the
//! local counters. Each thread has its own multiplexed connection, made
//! on first use and driven by that thread's runtime (a decision never
//! waits for another thread to be woken); it pipelines concurrent
//! decisions and reconnects by itself. A decision that takes longer than
//! `[limits.redis] timeout`, or finds no connection, is a store error, and
//! the rules' `on_store_error` applies. The store's state is kept for
//! `/readyz` and the metrics.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::ThreadId;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use dashmap::DashMap;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, IntoConnectionInfo, Script};

/// GCRA over every key, in order; stops at the first without room.
/// `ARGV`: the emission interval and the burst tolerance of each key, in
/// microseconds. Returns `{0, 0}` when every key had room, else the
/// 1-based index of the key without room and the microseconds until it
/// has room.
const SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local tolerance = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  if tat - now > tolerance then
    return {i, tat - now - tolerance}
  end
  local next = tat + interval
  redis.call('SET', key, string.format('%d', next), 'PX', math.ceil((next - now) / 1000) + 1000)
end
return {0, 0}
";

/// Where the store is and how long a decision may wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// `redis://…` or `rediss://…`.
    pub url: String,
    /// Overrides a password in `url`.
    pub password: Option<String>,
    /// The longest a decision waits.
    pub timeout: Duration,
    /// Prefix of every key.
    pub key_prefix: String,
    /// For `rediss://`: a private CA and a client certificate.
    pub tls: Option<StoreTls>,
}

/// The TLS material of a `rediss://` store, PEM.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StoreTls {
    /// CA certificates trusted instead of the system's roots.
    pub ca: Option<Vec<u8>>,
    /// A client certificate chain and its key.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for StoreTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreTls")
            .field("ca", &self.ca.is_some())
            .field("client", &self.client.is_some())
            .finish()
    }
}

/// One counter to check: its key and GCRA parameters.
#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) key: String,
    pub(crate) interval: Duration,
    pub(crate) tolerance: Duration,
}

/// What the store said about a call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every cell had room (and counted the call).
    Room,
    /// Cell `.0` (0-based) had none for `.1`.
    Full(usize, Duration),
}

/// Why the store could not decide.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No connection yet (or any more).
    #[error("not connected to the limit store")]
    NotConnected,
    /// The decision took longer than the timeout.
    #[error("the limit store did not answer within {0:?}")]
    Timeout(Duration),
    /// Redis answered with an error, or the connection failed.
    #[error("limit store: {0}")]
    Redis(#[from] redis::RedisError),
}

/// The store's state, for `/readyz` and the metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreHealth {
    /// Whether the latest decision (or connection attempt) succeeded.
    pub up: bool,
    /// Decisions the store could not make since start.
    pub errors: u64,
    /// The latest error, if the store is down.
    pub last_error: Option<String>,
}

/// One connection, filled in once it is made.
type Slot = Arc<ArcSwapOption<ConnectionManager>>;

/// The Redis store of one configuration.
pub(crate) struct Store {
    /// The connection made by the runtime that built the store; the
    /// fallback of a thread whose own is not ready.
    conn: Slot,
    /// Each thread's own connection, driven by that thread's runtime: a
    /// worker's decisions then never wait for another thread to be woken
    /// (the gateway's workers are single-threaded runtimes).
    local: DashMap<ThreadId, Slot>,
    dialer: Dialer,
    script: Script,
    settings: StoreSettings,
    state: Arc<State>,
}

/// Whether the store is reachable, shared by the store's calls and the
/// dialer that makes its first connection.
#[derive(Debug)]
struct State {
    up: AtomicBool,
    errors: AtomicU64,
    last_error: ArcSwapOption<String>,
}

impl State {
    /// The store answered. The common case writes nothing shared: the
    /// error is cleared once, when the store comes back.
    fn answered(&self) {
        if !self.up.load(Ordering::Relaxed) {
            self.up.store(true, Ordering::Relaxed);
            self.last_error.store(None);
        }
    }

    /// The store failed with `error`; `counted` when a call failed (not a
    /// connection attempt).
    fn failed(&self, error: &dyn std::fmt::Display, counted: bool) {
        self.up.store(false, Ordering::Relaxed);
        if counted {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.last_error.store(Some(Arc::new(error.to_string())));
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("prefix", &self.settings.key_prefix)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// A store for `settings`, connecting in the background (a store that
    /// is down at start is a store error until it comes up).
    ///
    /// # Errors
    ///
    /// A URL the Redis client cannot use.
    pub(crate) fn connect(settings: &StoreSettings) -> Result<Store, StoreError> {
        let mut info = settings.url.as_str().into_connection_info()?;
        if let Some(password) = &settings.password {
            let redis = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(redis);
        }
        let client = match &settings.tls {
            None => Client::open(info)?,
            Some(tls) => Client::build_with_tls(
                info,
                redis::TlsCertificates {
                    client_tls: tls
                        .client
                        .clone()
                        .map(|(client_cert, client_key)| redis::ClientTlsConfig {
                            client_cert,
                            client_key,
                        }),
                    root_cert: tls.ca.clone(),
                },
            )?,
        };
        let state = Arc::new(State {
            up: AtomicBool::new(false),
            errors: AtomicU64::new(0),
            last_error: ArcSwapOption::from_pointee("connecting".to_owned()),
        });
        let dialer = Dialer {
            client,
            config: ConnectionManagerConfig::new()
                .set_connection_timeout(Some(settings.timeout.max(Duration::from_millis(500))))
                .set_response_timeout(Some(settings.timeout))
                .set_max_delay(Duration::from_secs(2)),
            state: state.clone(),
        };
        let store = Store {
            conn: Arc::new(ArcSwapOption::empty()),
            local: DashMap::new(),
            dialer,
            script: Script::new(SCRIPT),
            settings: settings.clone(),
            state,
        };
        tokio::spawn(store.dialer.clone().dial(Arc::downgrade(&store.conn)));
        Ok(store)
    }

    /// The settings it was connected with.
    pub(crate) fn settings(&self) -> &StoreSettings {
        &self.settings
    }

    /// The key of `rule`'s counter for `key`.
    pub(crate) fn key(&self, rule: &str, key: &str) -> String {
        format!("{}:rl:{rule}:{key}", self.settings.key_prefix)
    }

    /// Count a call against `cells` in one round trip.
    pub(crate) async fn check(&self, cells: &[Cell]) -> Result<Verdict, StoreError> {
        let mut call = self.script.prepare_invoke();
        for c in cells {
            call.key(&c.key).arg(micros(c.interval)).arg(micros(c.tolerance));
        }
        let (index, wait): (i64, i64) = self
            .run(|mut conn| async move { call.invoke_async(&mut conn).await })
            .await?;
        Ok(match usize::try_from(index) {
            Ok(0) | Err(_) => Verdict::Room,
            Ok(i) => Verdict::Full(i - 1, Duration::from_micros(u64::try_from(wait).unwrap_or(0))),
        })
    }

    /// The values of `keys` (0 where unset), in one round trip.
    pub(crate) async fn get_all(&self, keys: &[String]) -> Result<Vec<u64>, StoreError> {
        let mut cmd = redis::cmd("MGET");
        cmd.arg(keys);
        let values: Vec<Option<u64>> = self
            .run(|mut conn| async move { cmd.query_async(&mut conn).await })
            .await?;
        Ok(values.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Add `n` to `key`, which expires at `expire_at` (Unix seconds).
    pub(crate) async fn add(&self, key: &str, n: u64, expire_at: i64) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("INCRBY").arg(key).arg(n).ignore();
        pipe.cmd("EXPIREAT").arg(key).arg(expire_at).ignore();
        self.run(|mut conn| async move { pipe.query_async::<()>(&mut conn).await })
            .await
    }

    /// Run one exchange on the connection within the timeout, and record
    /// how it went for `/readyz` and the metrics.
    async fn run<T, F, Fut>(&self, exchange: F) -> Result<T, StoreError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let result = match self.connection() {
            None => Err(StoreError::NotConnected),
            Some(conn) => {
                match tokio::time::timeout(self.settings.timeout, exchange(ConnectionManager::clone(&conn))).await {
                    Err(_) => Err(StoreError::Timeout(self.settings.timeout)),
                    Ok(answer) => answer.map_err(StoreError::from),
                }
            }
        };
        self.record(&result);
        result
    }

    /// This thread's connection; the shared one while this thread's own is
    /// being made (its making starts on first use, on this thread's
    /// runtime).
    fn connection(&self) -> Option<Arc<ConnectionManager>> {
        let id = std::thread::current().id();
        let own = match self.local.get(&id) {
            Some(slot) => slot.load_full(),
            None => {
                let slot: Slot = Arc::default();
                if tokio::runtime::Handle::try_current().is_ok() {
                    tokio::spawn(self.dialer.clone().dial(Arc::downgrade(&slot)));
                }
                self.local.insert(id, slot);
                None
            }
        };
        own.or_else(|| self.conn.load_full())
    }

    /// The key of a budget's count.
    pub(crate) fn budget_key(&self, count: &str) -> String {
        format!("{}:budget:{count}", self.settings.key_prefix)
    }

    fn record<T>(&self, result: &Result<T, StoreError>) {
        match result {
            Ok(_) => self.state.answered(),
            Err(e) => self.state.failed(e, true),
        }
    }

    /// The store's state.
    pub(crate) fn health(&self) -> StoreHealth {
        let up = self.state.up.load(Ordering::Relaxed);
        StoreHealth {
            up,
            errors: self.state.errors.load(Ordering::Relaxed),
            last_error: if up {
                None
            } else {
                self.state.last_error.load_full().map(|e| e.to_string())
            },
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// What makes a connection, and where it reports.
#[derive(Clone)]
struct Dialer {
    client: Client,
    config: ConnectionManagerConfig,
    state: Arc<State>,
}

impl Dialer {
    /// Connect into `slot`, retrying until the first connection succeeds
    /// (or the store is dropped); the connection manager reconnects by
    /// itself after that. The connection is driven by the runtime this
    /// runs on.
    async fn dial(self, slot: std::sync::Weak<ArcSwapOption<ConnectionManager>>) {
        let mut delay = Duration::from_millis(100);
        while slot.strong_count() > 0 {
            match ConnectionManager::new_with_config(self.client.clone(), self.config.clone()).await {
                Ok(conn) => {
                    if let Some(slot) = slot.upgrade() {
                        slot.store(Some(Arc::new(conn)));
                    }
                    self.state.answered();
                    tracing::debug!("connected to the limit store");
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "limit store unreachable; retrying");
                    self.state.failed(&e, false);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }
}
