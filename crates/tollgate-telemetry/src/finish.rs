//! The span observer of a request: when the call summary is ready, the
//! request's server span (and its upstream call's client span) record the
//! answer and end. The summary is read, never changed.

use tollgate_core::{CallSummary, ErrorKind};

use crate::span::{ClientSpan, ServerSpan};

/// The spans of one request: the server span, and the client span of the
/// upstream call once one was made.
#[derive(Debug)]
pub struct RequestSpans {
    /// The request's `SERVER` span.
    pub server: ServerSpan,
    /// The upstream call's `CLIENT` span.
    pub client: Option<ClientSpan>,
}

impl RequestSpans {
    /// Record the answer of `summary` and end both spans.
    pub fn finish(self, summary: &CallSummary) {
        let answer = &summary.answer;
        if let Some(mut client) = self.client {
            match answer.error.filter(|_| answer.ttfb.is_none()) {
                Some(kind) => client.set_error(kind.as_str(), "upstream call failed"),
                None => client.set_http_status(answer.status),
            }
            client.end();
        }
        let mut server = self.server;
        server.set_http_status(answer.status);
        if let Some(code) = summary.elements.first().and_then(|e| e.rpc_error) {
            server.set_jsonrpc_error(code, answer.error.map_or("JSON-RPC error", ErrorKind::as_str));
        } else if let Some(kind) = answer.error {
            server.set_error(kind.as_str(), "request refused");
        }
        server.end();
    }
}
