//! The console's errors and the one place they become HTTP answers: a
//! status and `{"error": {"code", "message"}}` (with `command` when the
//! answer is a command to run instead).

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::backend::ApprovalError;

/// Why a console request failed.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// No session cookie or bearer token, or it is no longer valid.
    #[error("sign in to the console first")]
    Unauthenticated,
    /// Signed in, without the role this needs.
    #[error("this needs the {0} role")]
    Forbidden(&'static str),
    /// A state change without the session's CSRF token.
    #[error("the CSRF token is missing or does not match this session")]
    Csrf,
    /// A parameter is missing or malformed.
    #[error("{0}")]
    BadRequest(String),
    /// No such record, server or definition.
    #[error("{0}")]
    NotFound(String),
    /// The identity provider refused the sign-in or could not be reached.
    #[error("sign-in failed: {0}")]
    SignIn(String),
    /// The token the sign-in redeemed is not a console token (another
    /// issuer's, or not for the console's audience).
    #[error("the access token was refused: {0}")]
    TokenRefused(String),
    /// The gateway writes no audit files: searches and spend need them.
    #[error("the gateway has no [audit] directory: search and spend read the audit trail")]
    NoAuditTrail,
    /// The audit index could not be read or updated.
    #[error("audit index: {0}")]
    Index(#[from] tollgate_index::IndexError),
    /// The audit files could not be read.
    #[error("audit trail: {0}")]
    Trail(#[from] tollgate_audit::QueryError),
    /// The fleet store could not answer (`fleet` reads).
    #[error("fleet store: {0}")]
    Store(#[from] tollgate_store::StoreError),
    /// The gateway could not carry out the action.
    #[error("{0}")]
    Gateway(String),
    /// A catalog approval was not written.
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// The action was not written to the audit trail, so it was not taken
    /// or its result not returned.
    #[error("the audit trail did not accept the record of this action: {0}")]
    NotRecorded(String),
}

impl ConsoleError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ConsoleError::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
            ConsoleError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ConsoleError::Csrf => (StatusCode::FORBIDDEN, "csrf"),
            ConsoleError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ConsoleError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ConsoleError::SignIn(_) => (StatusCode::BAD_GATEWAY, "sign_in_failed"),
            ConsoleError::TokenRefused(_) => (StatusCode::UNAUTHORIZED, "token_refused"),
            ConsoleError::NoAuditTrail => (StatusCode::CONFLICT, "no_audit_trail"),
            ConsoleError::Index(_) | ConsoleError::Trail(_) => (StatusCode::INTERNAL_SERVER_ERROR, "audit_unreadable"),
            ConsoleError::Store(tollgate_store::StoreError::Malformed { .. }) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "audit_unreadable")
            }
            ConsoleError::Store(_) => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
            ConsoleError::Gateway(_) => (StatusCode::UNPROCESSABLE_ENTITY, "refused"),
            ConsoleError::NotRecorded(_) => (StatusCode::SERVICE_UNAVAILABLE, "not_recorded"),
            ConsoleError::Approval(e) => approval_status(e),
        }
    }
}

/// A refused approval: 409 when the definition or the lock is not as the
/// approver expects (look again, or use the CLI), 422 for an unknown
/// definition, 503 while the fleet store cannot take it.
fn approval_status(e: &ApprovalError) -> (StatusCode, &'static str) {
    match e {
        ApprovalError::Unknown(_) => (StatusCode::UNPROCESSABLE_ENTITY, "refused"),
        ApprovalError::NoRevision => (StatusCode::CONFLICT, "revision_required"),
        ApprovalError::Stale { .. } => (StatusCode::CONFLICT, "stale_revision"),
        ApprovalError::LockInvalid(_) => (StatusCode::CONFLICT, "lock_invalid"),
        ApprovalError::LockChanged { .. } => (StatusCode::CONFLICT, "lock_changed"),
        ApprovalError::ReadOnly { .. } => (StatusCode::CONFLICT, "lock_read_only"),
        ApprovalError::Io(_) => (StatusCode::INTERNAL_SERVER_ERROR, "lock_io"),
        ApprovalError::Store(_) => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        if status.is_server_error() {
            tracing::warn!(error = %self, "console request failed");
        }
        let mut body = serde_json::json!({"error": {"code": code, "message": self.to_string()}});
        if let ConsoleError::Approval(ApprovalError::ReadOnly { command, .. }) = &self {
            body["error"]["command"] = command.as_str().into();
        }
        (status, Json(body)).into_response()
    }
}
