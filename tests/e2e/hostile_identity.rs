//! Identity is (issuer, subject), and a limit holds whatever way a call
//! comes in: two trusted issuers whose tokens carry the same `sub`, real
//! signed JWTs — the development issuer's, and a second issuer's verified
//! against its real JWKS endpoint — through the real gateway.
//!
//! - `handles`: neither `alice` continues the other's session or sees the
//!   other's task.
//! - `limits`: the two `alice`s get separate rate-limit and budget counts,
//!   and a per-route rule on a member route refuses calls through a
//!   virtual server once the member's limit is used up.
//! - `policy`: a Cedar policy on `principal.issuer` permits one issuer's
//!   alice and not the other's, whose entity id is the same.
//! - `validate`: `tollgate validate` warns when two issuers are trusted and
//!   no policy reads the issuer, and not once one does.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "hostile_identity/handles.rs"]
mod handles;
#[path = "hostile_identity/limits.rs"]
mod limits;
#[path = "hostile_identity/policy.rs"]
mod policy;
#[path = "hostile_identity/validate.rs"]
mod validate;

use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tollgate_auth::DevIssuer;
use tollgate_e2e::{TEST_BASE_URL, TEST_ISSUER, TestIssuer};

/// The subject both issuers give out.
const SUB: &str = "alice";

/// The development issuer and a second issuer with a JWKS endpoint on
/// loopback, both trusted by [`Issuers::config`].
struct Issuers {
    dev: TestIssuer,
    partner: DevIssuer,
    partner_url: String,
    jwks: JoinHandle<()>,
}

impl Issuers {
    async fn start() -> Issuers {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let partner_url = format!("http://{}", listener.local_addr().unwrap());
        let partner = DevIssuer::from_pem(&partner_url, &DevIssuer::generate_pem().unwrap()).unwrap();
        let jwks = tokio::spawn(serve(listener, partner.jwks().to_string()));
        Issuers {
            dev: TestIssuer::new(),
            partner,
            partner_url,
            jwks,
        }
    }

    /// `[auth]`, `[dev_issuer]` and the second issuer's `[[auth.issuers]]`.
    fn config(&self) -> String {
        format!(
            "{}\n[[auth.issuers]]\nissuer = \"{url}\"\njwks_uri = \"{url}/jwks\"\nallow_insecure_http = true\n",
            self.dev.config(),
            url = self.partner_url
        )
    }

    /// The development issuer's token for `sub` on `routes`.
    fn dev_token(&self, sub: &str, routes: &[&str]) -> String {
        self.dev.token(sub, &["mcp:tools"], routes)
    }

    /// The second issuer's token for `sub` on `routes` (team `payments`, as
    /// the development issuer's).
    fn partner_token(&self, sub: &str, routes: &[&str]) -> String {
        let aud: Vec<String> = routes.iter().map(|r| format!("{TEST_BASE_URL}/mcp/{r}")).collect();
        let scopes = ["mcp:tools".to_owned()];
        self.partner
            .mint(sub, Some("payments"), &scopes, Duration::from_secs(600), &aud)
            .unwrap()
    }

    /// The key `[limits]` counts `SUB` of the development issuer under.
    fn dev_key() -> String {
        format!("{TEST_ISSUER}#{SUB}")
    }
}

impl Drop for Issuers {
    fn drop(&mut self) {
        self.jwks.abort();
    }
}

/// Answer every request on `listener` with the key set `body`.
async fn serve(listener: TcpListener, body: String) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(tollgate_e2e::answer_json(stream, body.clone()));
    }
}
