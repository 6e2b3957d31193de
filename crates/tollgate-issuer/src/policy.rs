//! The client registration policy: which redirect URIs a client may
//! register, by its kind — loopback URIs (any port) and private-use
//! schemes for native clients, listed `https` origins for web clients.

use tollgate_auth::is_loopback;
use url::Url;

/// `[authorization_server.registration]`, as the policy reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrationPolicy {
    /// Accept RFC 7591 registrations.
    pub dynamic: bool,
    /// Accept metadata-document client ids.
    pub metadata_documents: bool,
    /// Allow loopback redirect URIs.
    pub loopback_redirects: bool,
    /// Private-use schemes allowed.
    pub redirect_schemes: Vec<String>,
    /// `https` origins allowed.
    pub web_origins: Vec<String>,
    /// Most registrations per minute (this replica).
    pub max_per_minute: u32,
}

/// What kind of redirect URI a string is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirectKind {
    Loopback,
    PrivateScheme,
    Web,
}

impl RegistrationPolicy {
    /// Check one redirect URI: its kind, or why it is refused.
    pub(crate) fn redirect(&self, uri: &str) -> Result<RedirectKind, String> {
        let url = Url::parse(uri).map_err(|e| format!("{uri}: not an absolute URI ({e})"))?;
        if url.fragment().is_some() {
            return Err(format!("{uri}: a redirect URI has no fragment"));
        }
        match url.scheme() {
            "http" if is_loopback(&url) => {
                if self.loopback_redirects {
                    Ok(RedirectKind::Loopback)
                } else {
                    Err(format!("{uri}: loopback redirect URIs are not accepted here"))
                }
            }
            "http" => Err(format!("{uri}: http is only for loopback redirect URIs")),
            "https" => {
                let origin = url.origin().ascii_serialization();
                if self.web_origins.iter().any(|o| o.eq_ignore_ascii_case(&origin)) {
                    Ok(RedirectKind::Web)
                } else {
                    Err(format!(
                        "{uri}: the origin {origin} is not among the web origins allowed \
                         (authorization_server.registration.web_origins)"
                    ))
                }
            }
            scheme if self.redirect_schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme)) => {
                Ok(RedirectKind::PrivateScheme)
            }
            scheme => Err(format!(
                "{uri}: the scheme {scheme} is not allowed (authorization_server.registration.redirect_schemes)"
            )),
        }
    }

    /// Check every redirect URI and the declared `application_type`;
    /// the application type to record.
    pub(crate) fn check_client(
        &self,
        redirect_uris: &[String],
        application_type: Option<&str>,
    ) -> Result<String, String> {
        if redirect_uris.is_empty() {
            return Err("redirect_uris: at least one is required".into());
        }
        let kinds = redirect_uris
            .iter()
            .map(|u| self.redirect(u))
            .collect::<Result<Vec<_>, _>>()?;
        let native = kinds.iter().all(|k| *k != RedirectKind::Web);
        let web = kinds.iter().all(|k| *k == RedirectKind::Web);
        match application_type {
            None if native => Ok("native".into()),
            None if web => Ok("web".into()),
            Some("native") if native => Ok("native".into()),
            Some("web") if web => Ok("web".into()),
            Some(other) if other != "native" && other != "web" => {
                Err(format!("application_type {other:?}: must be native or web"))
            }
            _ => Err(
                "redirect_uris: a native client redirects to loopback or a private-use scheme, \
                      a web client to an https origin; not both"
                    .into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_and_web_redirects_follow_the_policy() {
        let p = RegistrationPolicy {
            dynamic: true,
            metadata_documents: true,
            loopback_redirects: true,
            redirect_schemes: vec!["cursor".into()],
            web_origins: vec!["https://claude.ai".into()],
            max_per_minute: 60,
        };
        let ok = |u: &str| p.redirect(u).is_ok();
        assert!(ok("http://127.0.0.1:33418/callback"));
        assert!(ok("http://localhost:6274/oauth/callback"));
        assert!(ok("http://[::1]:1/x"));
        assert!(ok("cursor://anysphere.cursor-retrieval/oauth/callback"));
        assert!(ok("https://claude.ai/api/mcp/auth_callback"));
        assert!(!ok("https://evil.example/cb"));
        assert!(!ok("http://10.0.0.1/cb"));
        assert!(!ok("javascript:alert(1)"));
        assert!(!ok("http://127.0.0.1/cb#frag"));
        assert_eq!(
            p.check_client(&["http://127.0.0.1:1/cb".into()], None).as_deref(),
            Ok("native")
        );
        assert!(p.check_client(&["http://127.0.0.1:1/cb".into()], Some("web")).is_err());
        assert!(
            p.check_client(&["http://127.0.0.1:1/cb".into(), "https://claude.ai/cb".into()], None)
                .is_err()
        );
        assert!(p.check_client(&[], None).is_err());
    }
}
