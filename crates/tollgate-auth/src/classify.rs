//! How identity errors are classified for the server's rescue layer: 401
//! (`Unauthenticated`), 403 (`InsufficientScope`), 503 (`AuthUnavailable`),
//! 400 for a malformed request, 502 when an upstream credential cannot be
//! obtained.

use tollgate_core::{Classify, ErrorKind};

use crate::{AuthError, CredentialError, SetupError};

impl Classify for AuthError {
    fn kind(&self) -> ErrorKind {
        match self {
            AuthError::Missing | AuthError::InvalidToken(_) => ErrorKind::Unauthenticated,
            AuthError::InvalidRequest(_) => ErrorKind::InvalidRequest,
            AuthError::InsufficientScope { .. } => ErrorKind::InsufficientScope,
            AuthError::Unavailable { .. } => ErrorKind::AuthUnavailable,
        }
    }
}

impl Classify for CredentialError {
    fn kind(&self) -> ErrorKind {
        match self {
            CredentialError::TokenEndpoint { .. } => ErrorKind::UpstreamUnavailable,
            CredentialError::NoSubjectToken { .. } => ErrorKind::Internal,
        }
    }
}

impl Classify for SetupError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Internal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TokenRejection;

    #[test]
    fn auth_errors_map_to_their_kinds() {
        assert_eq!(AuthError::Missing.kind(), ErrorKind::Unauthenticated);
        assert_eq!(
            AuthError::InvalidToken(TokenRejection::Expired).kind(),
            ErrorKind::Unauthenticated
        );
        assert_eq!(
            AuthError::InsufficientScope { required: vec![] }.kind(),
            ErrorKind::InsufficientScope
        );
        assert_eq!(AuthError::InvalidRequest("x").kind(), ErrorKind::InvalidRequest);
        assert_eq!(
            AuthError::Unavailable { issuer: "i".into() }.kind(),
            ErrorKind::AuthUnavailable
        );
    }
}
