//! The authorization server's state in Redis, shared by every replica:
//! a sign-in begun on one replica finishes on another, a refresh token
//! rotates once across the fleet (`GETDEL` is the atomic take), and an
//! administrator's revocation reaches every replica's next check. Keys are
//! `{prefix}:as:{namespace}:{key}` with Redis expiries. The connection is
//! made on first use and re-made by the connection manager.

use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands as _, Client, IntoConnectionInfo as _};

use crate::store::{Store, StoreError};

/// Where the Redis store is.
#[derive(Clone, Default)]
pub struct RedisSettings {
    /// `redis://…` or `rediss://…`.
    pub url: String,
    /// Overrides a password in `url`.
    pub password: Option<String>,
    /// The longest one exchange waits.
    pub timeout: Duration,
    /// Prefix of every key.
    pub key_prefix: String,
    /// For `rediss://`: CA certificates (PEM) instead of the system's roots.
    pub ca: Option<Vec<u8>>,
    /// For `rediss://`: a client certificate chain and key (PEM).
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSettings")
            .field(
                "url",
                &url::Url::parse(&self.url)
                    .map(|u| tollgate_config::redact_url(&u))
                    .unwrap_or_default(),
            )
            .field("key_prefix", &self.key_prefix)
            .finish_non_exhaustive()
    }
}

/// The Redis-backed [`Store`].
pub struct RedisStore {
    client: Client,
    conn: tokio::sync::OnceCell<ConnectionManager>,
    timeout: Duration,
    prefix: String,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn failed(e: impl std::fmt::Display) -> StoreError {
    StoreError(format!("redis: {e}"))
}

impl RedisStore {
    /// A store for `settings`; nothing connects until first use.
    ///
    /// # Errors
    ///
    /// A URL or TLS material the Redis client cannot use.
    pub fn new(settings: &RedisSettings) -> Result<RedisStore, StoreError> {
        let mut info = settings.url.as_str().into_connection_info().map_err(failed)?;
        if let Some(password) = &settings.password {
            let redis = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(redis);
        }
        let client = if settings.ca.is_some() || settings.client_cert.is_some() {
            let certs = redis::TlsCertificates {
                client_tls: settings
                    .client_cert
                    .clone()
                    .map(|(client_cert, client_key)| redis::ClientTlsConfig {
                        client_cert,
                        client_key,
                    }),
                root_cert: settings.ca.clone(),
            };
            Client::build_with_tls(info, certs).map_err(failed)?
        } else {
            Client::open(info).map_err(failed)?
        };
        Ok(RedisStore {
            client,
            conn: tokio::sync::OnceCell::new(),
            timeout: settings.timeout.max(Duration::from_millis(100)),
            prefix: format!("{}:as", settings.key_prefix),
        })
    }

    fn key(&self, ns: &str, key: &str) -> String {
        format!("{}:{ns}:{key}", self.prefix)
    }

    /// Run one exchange within the timeout.
    async fn run<T, F, Fut>(&self, exchange: F) -> Result<T, StoreError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let work = async {
            let conn = self
                .conn
                .get_or_try_init(|| {
                    let config = ConnectionManagerConfig::new()
                        .set_connection_timeout(Some(self.timeout))
                        .set_response_timeout(Some(self.timeout));
                    ConnectionManager::new_with_config(self.client.clone(), config)
                })
                .await
                .map_err(failed)?;
            exchange(conn.clone()).await.map_err(failed)
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| StoreError(format!("redis: no answer within {:?}", self.timeout)))?
    }
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[async_trait]
impl Store for RedisStore {
    async fn put(&self, ns: &str, key: &str, value: Vec<u8>, ttl: Duration) -> Result<(), StoreError> {
        let k = self.key(ns, key);
        self.run(|mut c| async move { c.pset_ex::<_, _, ()>(k, value, millis(ttl)).await })
            .await
    }

    async fn put_new(&self, ns: &str, key: &str, value: Vec<u8>, ttl: Duration) -> Result<bool, StoreError> {
        let k = self.key(ns, key);
        let mut cmd = redis::cmd("SET");
        cmd.arg(k).arg(value).arg("NX").arg("PX").arg(millis(ttl));
        let set: Option<String> = self.run(|mut c| async move { cmd.query_async(&mut c).await }).await?;
        Ok(set.is_some())
    }

    async fn get(&self, ns: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let k = self.key(ns, key);
        self.run(|mut c| async move { c.get(k).await }).await
    }

    async fn take(&self, ns: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let k = self.key(ns, key);
        self.run(|mut c| async move { c.get_del(k).await }).await
    }

    async fn delete(&self, ns: &str, key: &str) -> Result<(), StoreError> {
        let k = self.key(ns, key);
        self.run(|mut c| async move { c.del::<_, ()>(k).await }).await
    }

    async fn list(&self, ns: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let pattern = format!("{}:{ns}:*", self.prefix);
        let keys: Vec<String> = self
            .run(|mut c| async move {
                let mut keys = Vec::new();
                let mut iter = c.scan_match::<_, String>(pattern).await?;
                while let Some(k) = futures_next(&mut iter).await {
                    keys.push(k);
                }
                Ok(keys)
            })
            .await?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let values: Vec<Option<Vec<u8>>> = self.run(|mut c| async move { c.mget(keys).await }).await?;
        Ok(values.into_iter().flatten().collect())
    }
}

async fn futures_next<T>(iter: &mut redis::AsyncIter<'_, T>) -> Option<T>
where
    T: redis::FromRedisValue + Unpin + Send,
{
    iter.next_item().await.and_then(Result::ok)
}
