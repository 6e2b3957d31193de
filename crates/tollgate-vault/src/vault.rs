//! The vault: each user's grant at each `user_oauth` upstream, sealed
//! ([`crate::seal`]) in the store under (principal issuer, subject,
//! server). A call asks [`Vault::access`]: the access token (refreshed
//! before it expires, one refresh per grant across replicas), or — when
//! the user has no grant, or the upstream said it is no longer good — a
//! connect URL to send the user to.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use tollgate_issuer::{Records, Store};

use crate::VaultError;
use crate::records::{
    Access, CONNECT_TTL, Connect, EARLY, Events, GrantInfo, KEEP, Secrets, Stored, grant_key, jwt_subject, ns, unix_now,
};
use crate::seal::Keyring;
use crate::upstream::{self, AsMetadata, TokenError, TokenSet, UpstreamSpec};

/// The vault's settings.
#[derive(Debug, Clone)]
pub struct VaultSettings {
    /// The gateway's public base URL.
    pub public_base_url: String,
    /// Issuers whose subjects name users as the sign-in does: a token of
    /// one of them may connect as the user who signs in with that subject.
    pub identity_issuers: Vec<String>,
}

pub(crate) struct Upstream {
    pub(crate) spec: UpstreamSpec,
    meta: tokio::sync::OnceCell<AsMetadata>,
    client: tokio::sync::OnceCell<(String, Option<String>)>,
}

/// The vault. Shared in an `Arc`.
pub struct Vault {
    pub(crate) settings: VaultSettings,
    pub(crate) keyring: Keyring,
    pub(crate) store: Records,
    pub(crate) upstreams: ArcSwap<HashMap<String, Arc<Upstream>>>,
    pub(crate) http: reqwest::Client,
    pub(crate) issuer: Arc<tollgate_issuer::Issuer>,
    pub(crate) events: Events,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault")
            .field("keys", &self.keyring)
            .finish_non_exhaustive()
    }
}

impl Vault {
    /// A vault sealing with `keyring`, keeping grants in `store`, whose
    /// connect page signs users in through `issuer`.
    ///
    /// # Errors
    ///
    /// The HTTP client cannot be built.
    pub fn new(
        settings: VaultSettings,
        keyring: Keyring,
        store: Arc<dyn Store>,
        issuer: Arc<tollgate_issuer::Issuer>,
    ) -> Result<Vault, VaultError> {
        let http = tollgate_auth::identity_client().map_err(|e| VaultError::Setup(e.to_string()))?;
        Ok(Vault {
            settings,
            keyring,
            store: Records(store),
            upstreams: ArcSwap::from_pointee(HashMap::new()),
            http,
            issuer,
            events: Events::default(),
        })
    }

    /// The `user_oauth` servers from now on (a reload's); a server whose
    /// settings did not change keeps its discovered metadata and client.
    pub fn configure(&self, specs: Vec<UpstreamSpec>) {
        let old = self.upstreams.load();
        let next = specs
            .into_iter()
            .map(|spec| {
                let kept = old.get(&spec.server).filter(|u| u.spec == spec).cloned();
                let up = kept.unwrap_or_else(|| {
                    Arc::new(Upstream {
                        spec: spec.clone(),
                        meta: tokio::sync::OnceCell::new(),
                        client: tokio::sync::OnceCell::new(),
                    })
                });
                (spec.server, up)
            })
            .collect();
        self.upstreams.store(Arc::new(next));
    }

    /// Whether `server` is a `user_oauth` server the vault holds grants for.
    pub fn serves(&self, server: &str) -> bool {
        self.upstreams.load().contains_key(server)
    }

    pub(crate) fn upstream(&self, server: &str) -> Result<Arc<Upstream>, VaultError> {
        self.upstreams
            .load()
            .get(server)
            .cloned()
            .ok_or_else(|| VaultError::Upstream(format!("{server} is not a user_oauth server")))
    }

    pub(crate) async fn meta<'u>(&self, up: &'u Upstream) -> Result<&'u AsMetadata, VaultError> {
        up.meta
            .get_or_try_init(|| upstream::metadata(&self.http, &up.spec))
            .await
    }

    pub(crate) async fn client<'u>(&self, up: &'u Upstream) -> Result<&'u (String, Option<String>), VaultError> {
        up.client
            .get_or_try_init(|| async {
                if let Some(id) = &up.spec.client_id {
                    let secret = up
                        .spec
                        .client_secret
                        .as_ref()
                        .map(|s| String::from_utf8_lossy(s).into_owned());
                    return Ok((id.clone(), secret));
                }
                let meta = self.meta(up).await?;
                if meta.client_id_metadata_document_supported {
                    // A public client named by its metadata document's URL.
                    return Ok((self.client_document_url(), None));
                }
                upstream::register(&self.http, &up.spec, meta, &self.callback_url()).await
            })
            .await
    }

    /// Tollgate's Client ID Metadata Document as an upstream client.
    pub(crate) fn client_document_url(&self) -> String {
        format!("{}/oauth/upstream/client.json", self.settings.public_base_url)
    }

    /// Where the upstream's authorization server sends the user back.
    pub(crate) fn callback_url(&self) -> String {
        format!("{}/oauth/upstream/callback", self.settings.public_base_url)
    }

    /// The caller's access token for `server`, or where to connect.
    ///
    /// # Errors
    ///
    /// The store is unreachable, a grant does not open, or the upstream's
    /// authorization server failed a refresh for another reason than the
    /// grant being no longer good.
    pub async fn access(&self, principal_issuer: &str, subject: &str, server: &str) -> Result<Access, VaultError> {
        let key = grant_key(principal_issuer, subject, server);
        for _ in 0..20 {
            let Some(stored) = self.store.get::<Stored>(ns::GRANT, &key).await? else {
                return self.obtain(principal_issuer, subject, server).await;
            };
            let (plain, stale_key) = self.keyring.open(&stored.sealed, &key)?;
            let secrets: Secrets = serde_json::from_slice(&plain).map_err(|e| VaultError::Sealed(e.to_string()))?;
            let early = stored.info.lifetime.map_or(EARLY, |l| (l / 4).min(EARLY));
            let fresh = stored.info.expires_at.is_none_or(|exp| exp > unix_now() + early);
            if fresh {
                if stale_key {
                    self.seal_and_put(&key, &stored.info, &secrets).await?;
                }
                return Ok(Access::Token {
                    bearer: secrets.access_token,
                    grant: Box::new(stored.info),
                });
            }
            // One refresh per grant across replicas; the others wait for it.
            if self
                .store
                .put_new(ns::LOCK, &key, &true, Duration::from_secs(15))
                .await?
            {
                let refreshed = self.refresh(&key, stored.info, secrets).await;
                let _ = self.store.delete(ns::LOCK, &key).await;
                return match refreshed? {
                    Some(access) => Ok(access),
                    None => self.obtain(principal_issuer, subject, server).await,
                };
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        Err(VaultError::Upstream(format!(
            "{server}: a refresh of the grant did not finish"
        )))
    }

    /// What is known of the caller's grant for `server` (for policies),
    /// without opening, refreshing or asking for one.
    ///
    /// # Errors
    ///
    /// The store is unreachable.
    pub async fn peek(
        &self,
        principal_issuer: &str,
        subject: &str,
        server: &str,
    ) -> Result<Option<GrantInfo>, VaultError> {
        let key = grant_key(principal_issuer, subject, server);
        Ok(self.store.get::<Stored>(ns::GRANT, &key).await?.map(|s| s.info))
    }

    /// Refresh a grant; `None` when it is no longer good (then forgotten).
    async fn refresh(&self, key: &str, mut info: GrantInfo, secrets: Secrets) -> Result<Option<Access>, VaultError> {
        let Some(refresh_token) = secrets.refresh_token.clone() else {
            self.store.delete(ns::GRANT, key).await?;
            return Ok(None);
        };
        let up = self.upstream(&info.server)?;
        let (meta, client) = (self.meta(&up).await?, self.client(&up).await?);
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.as_str()),
            ("resource", up.spec.resource.as_str()),
        ];
        match upstream::token(&self.http, &up.spec, meta, client, &form).await {
            Ok(set) => {
                let secrets = Secrets {
                    access_token: set.access_token.clone(),
                    refresh_token: set.refresh_token.clone().or(Some(refresh_token)),
                };
                info.expires_at = set.expires_in.map(|s| unix_now() + s);
                info.lifetime = set.expires_in;
                if let Some(scope) = &set.scope {
                    info.scopes = scope.split_whitespace().map(str::to_owned).collect();
                }
                self.seal_and_put(key, &info, &secrets).await?;
                self.events.count(&info.server, "refreshed");
                tracing::info!(server = %info.server, subject = %info.subject, grant = %info.id, "upstream grant refreshed");
                Ok(Some(Access::Token {
                    bearer: secrets.access_token,
                    grant: Box::new(info),
                }))
            }
            Err(TokenError::InvalidGrant) => {
                self.events.count(&info.server, "forgotten");
                tracing::warn!(server = %info.server, subject = %info.subject, grant = %info.id, "upstream grant no longer good: forgotten");
                self.store.delete(ns::GRANT, key).await?;
                Ok(None)
            }
            Err(TokenError::Other(e)) => {
                self.events.count(&info.server, "refresh_failed");
                Err(e)
            }
        }
    }

    async fn seal_and_put(&self, key: &str, info: &GrantInfo, secrets: &Secrets) -> Result<(), VaultError> {
        let plain = serde_json::to_vec(secrets).map_err(|e| VaultError::Sealed(e.to_string()))?;
        let sealed = self.keyring.seal(&plain, key)?;
        let mut info = info.clone();
        info.key_id = sealed.split('.').next().unwrap_or_default().to_owned();
        let stored = Stored { sealed, info };
        Ok(self.store.put(ns::GRANT, key, &stored, KEEP).await?)
    }

    /// A new grant for the caller: by identity assertion on an `id_jag`
    /// server when the user's sign-in allows one, else the connect URL.
    async fn obtain(&self, principal_issuer: &str, subject: &str, server: &str) -> Result<Access, VaultError> {
        let request = Connect {
            principal_issuer: principal_issuer.to_owned(),
            subject: subject.to_owned(),
            server: server.to_owned(),
        };
        if self.upstream(server)?.spec.assertion
            && let Some((bearer, grant)) = self.assert_grant(&request).await?
        {
            return Ok(Access::Token {
                bearer,
                grant: Box::new(grant),
            });
        }
        self.connect(principal_issuer, subject, server).await
    }

    /// A connect request for the caller and `server`: its URL.
    async fn connect(&self, principal_issuer: &str, subject: &str, server: &str) -> Result<Access, VaultError> {
        let id = crate::random(18)?;
        let request = Connect {
            principal_issuer: principal_issuer.to_owned(),
            subject: subject.to_owned(),
            server: server.to_owned(),
        };
        self.store.put(ns::CONNECT, &id, &request, CONNECT_TTL).await?;
        self.events.count(server, "asked");
        Ok(Access::Connect {
            url: format!("{}/oauth/connect?request={id}", self.settings.public_base_url),
            id,
        })
    }

    /// Keep a new grant made at the upstream for the connect request.
    pub(crate) async fn keep(&self, request: &Connect, up: &Upstream, set: TokenSet) -> Result<GrantInfo, VaultError> {
        let key = grant_key(&request.principal_issuer, &request.subject, &request.server);
        let meta = self.meta(up).await?;
        let info = GrantInfo {
            id: crate::random(12)?,
            server: request.server.clone(),
            principal_issuer: request.principal_issuer.clone(),
            subject: request.subject.clone(),
            upstream_issuer: meta.issuer.clone(),
            upstream_subject: jwt_subject(&set.access_token),
            scopes: set.scope.as_deref().map_or_else(
                || up.spec.scopes.clone(),
                |s| s.split_whitespace().map(str::to_owned).collect(),
            ),
            created: unix_now(),
            expires_at: set.expires_in.map(|s| unix_now() + s),
            lifetime: set.expires_in,
            key_id: String::new(),
        };
        let secrets = Secrets {
            access_token: set.access_token,
            refresh_token: set.refresh_token,
        };
        self.seal_and_put(&key, &info, &secrets).await?;
        self.events.count(&info.server, "connected");
        Ok(info)
    }

    /// Every grant (only `subject`'s when given), newest first.
    ///
    /// # Errors
    ///
    /// The store is unreachable.
    pub async fn grants(&self, subject: Option<&str>) -> Result<Vec<GrantInfo>, VaultError> {
        let all: Vec<Stored> = self.store.list(ns::GRANT).await?;
        let mut infos: Vec<GrantInfo> = all
            .into_iter()
            .map(|s| s.info)
            .filter(|i| subject.is_none_or(|s| i.subject == s))
            .collect();
        infos.sort_by_key(|i| std::cmp::Reverse(i.created));
        Ok(infos)
    }

    /// Forget the grant `id` (only when it is `subject`'s, if given);
    /// whether one was forgotten. The next call asks the user again.
    ///
    /// # Errors
    ///
    /// The store is unreachable.
    pub async fn revoke(&self, id: &str, subject: Option<&str>) -> Result<bool, VaultError> {
        let Some(info) = self.grants(subject).await?.into_iter().find(|g| g.id == id) else {
            return Ok(false);
        };
        let key = grant_key(&info.principal_issuer, &info.subject, &info.server);
        self.store.delete(ns::GRANT, &key).await?;
        self.events.count(&info.server, "revoked");
        tracing::warn!(server = %info.server, subject = %info.subject, grant = %info.id, "upstream grant revoked");
        Ok(true)
    }

    /// Counts of what happened to grants since start: (server, event,
    /// count); events are `asked`, `connected`, `refused`, `refreshed`,
    /// `refresh_failed`, `forgotten`, `revoked`.
    pub fn events(&self) -> Vec<(String, &'static str, u64)> {
        self.events.all()
    }

    /// The vault's key ids, the current first.
    pub fn key_ids(&self) -> Vec<String> {
        self.keyring.ids()
    }
}
