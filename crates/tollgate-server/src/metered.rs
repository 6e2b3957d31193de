//! The response body as the audit sees it: bytes counted frame by frame as
//! they stream to the client (nothing is held back), the first 16 KiB
//! copied aside to read the JSON-RPC error codes once the body ends (a
//! `tools/list` answer on a route without policies up to 1 MiB, for the
//! catalog to learn from), and the call's records written when it ends or
//! the client goes away.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use serde::Deserialize;
use serde_json::value::RawValue;
use tollgate_core::{ErrorKind, McpMethod};
use tollgate_policy::Decision;

use crate::audit::{CallAudit, rpc_code};

/// How much of an answer is kept to find its JSON-RPC error codes.
const TEE_BYTES: usize = 16 * 1024;
/// How much of an unfiltered `tools/list` answer is kept for the catalog.
const LIST_TEE_BYTES: usize = 1024 * 1024;

/// What was sent back, as far as the records need it.
#[derive(Debug, Default)]
pub(crate) struct Sent {
    pub(crate) status: u16,
    /// The gateway's own error, when it answered instead of the upstream.
    pub(crate) kind: Option<ErrorKind>,
    pub(crate) bytes: u64,
    /// `(id, code)` of every JSON-RPC error in the answer.
    errors: Vec<(Option<String>, i64)>,
    /// The start of the answer, as copied aside.
    pub(crate) tee: Option<Vec<u8>>,
}

impl Sent {
    /// The JSON-RPC error code of the message with `id`.
    pub(crate) fn rpc_error(&self, id: Option<&str>) -> Option<i64> {
        if let Some(kind) = self.kind {
            return Some(rpc_code(kind));
        }
        let by_id = self.errors.iter().find(|(eid, _)| eid.as_deref() == id);
        by_id
            .or_else(|| self.errors.first().filter(|_| id.is_none()))
            .map(|(_, c)| *c)
    }

    /// The outcome label of the message with `id` for metrics.
    pub(crate) fn outcome(&self, id: Option<&str>, decision: &Option<Decision>) -> &'static str {
        if decision.as_ref().is_some_and(|d| !d.proceeds()) {
            "denied"
        } else if self.status >= 400 || self.rpc_error(id).is_some() {
            "error"
        } else {
            "ok"
        }
    }
}

/// The metering of one response body; writes the records when dropped.
pub(crate) struct Metering {
    audit: Option<CallAudit>,
    sent: Sent,
    tee: Option<(Vec<u8>, usize)>,
    sse: bool,
}

impl Metering {
    /// Meter the answer of `audit`'s request; an answer from the upstream
    /// is copied aside as far as the call needs it.
    pub(crate) fn new(audit: CallAudit, status: u16, kind: Option<ErrorKind>, sse: bool) -> Metering {
        let floor = if learns_tools(&audit) {
            LIST_TEE_BYTES
        } else {
            TEE_BYTES
        };
        let tee = kind.is_none().then(|| audit.tee_limit().unwrap_or(0).max(floor));
        Metering {
            audit: Some(audit),
            sent: Sent {
                status,
                kind,
                ..Sent::default()
            },
            tee: tee.map(|limit| (Vec::new(), limit)),
            sse,
        }
    }

    fn observe(&mut self, data: &Bytes) {
        self.sent.bytes = self.sent.bytes.saturating_add(data.len() as u64);
        if let Some((tee, limit)) = &mut self.tee {
            let room = limit.saturating_sub(tee.len()).min(data.len());
            tee.extend_from_slice(&data[..room]);
        }
    }
}

impl Drop for Metering {
    fn drop(&mut self) {
        let Some(mut audit) = self.audit.take() else { return };
        if let Some((tee, _)) = self.tee.take() {
            self.sent.errors = rpc_errors(&tee, self.sse);
            let whole = self.sent.bytes == tee.len() as u64;
            if whole && self.sent.status < 300 && learns_tools(&audit) {
                audit.shared.catalog.learn_answer(&audit.up.name, &tee, self.sse);
            }
            self.sent.tee = Some(tee);
        }
        audit.finish(&self.sent);
    }
}

/// Whether the answer is a `tools/list` passed on unfiltered, which the
/// catalog learns from once it has been sent.
fn learns_tools(audit: &CallAudit) -> bool {
    audit.forwarded && audit.shared.policy.is_none() && audit.family() == McpMethod::ToolsList
}

pin_project! {
    /// Counts the bytes of `inner` and finishes the call's audit at its end.
    pub(crate) struct MeteredBody<B> {
        #[pin]
        inner: B,
        metering: Option<Metering>,
    }
}

impl<B> MeteredBody<B> {
    pub(crate) fn new(inner: B, metering: Metering) -> MeteredBody<B> {
        MeteredBody {
            inner,
            metering: Some(metering),
        }
    }
}

impl<B: Body<Data = Bytes>> Body for MeteredBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        match (&frame, this.metering.as_mut()) {
            (Some(Ok(f)), Some(m)) => {
                if let Some(data) = f.data_ref() {
                    m.observe(data);
                }
            }
            // End of stream or error: write the records now, not at drop.
            _ => drop(this.metering.take()),
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<Code>,
}

#[derive(Deserialize)]
struct Code {
    code: i64,
}

/// The JSON text of each message of a copied answer: the whole body of a
/// JSON answer, each `data:` line of an SSE one (a JSON body is not
/// scanned for lines).
pub(crate) fn answer_messages(body: &[u8], sse: bool) -> impl Iterator<Item = &[u8]> {
    let lines = body.split(|b| *b == b'\n').take(if sse { usize::MAX } else { 0 });
    let data = lines.filter_map(|line| line.strip_prefix(b"data:"));
    (!sse).then_some(body).into_iter().chain(data)
}

/// The `(id, code)` of each JSON-RPC error in a JSON or SSE answer (as far
/// as the copied prefix goes); a message may be a batch.
fn rpc_errors(body: &[u8], sse: bool) -> Vec<(Option<String>, i64)> {
    let mut out = Vec::new();
    let mut take = |r: Reply<'_>| {
        if let Some(e) = r.error {
            out.push((r.id.map(|id| id.get().to_owned()), e.code));
        }
    };
    for msg in answer_messages(body, sse) {
        if let Ok(many) = serde_json::from_slice::<Vec<Reply<'_>>>(msg) {
            many.into_iter().for_each(&mut take);
        } else if let Ok(one) = serde_json::from_slice::<Reply<'_>>(msg) {
            take(one);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_read_from_json_batches_and_sse() {
        let one = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"x"}}"#;
        assert_eq!(rpc_errors(one, false), vec![(Some("7".into()), -32602)]);
        let batch =
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":"b","error":{"code":-1,"message":""}}]"#;
        assert_eq!(rpc_errors(batch, false), vec![(Some("\"b\"".into()), -1)]);
        let sse =
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32001,\"message\":\"\"}}\n\n";
        assert_eq!(rpc_errors(sse, true), vec![(Some("2".into()), -32001)]);
        assert!(rpc_errors(b"{\"result\":{}}", false).is_empty());
        let sent = Sent {
            status: 200,
            kind: None,
            bytes: 0,
            errors: vec![(Some("7".into()), -32602)],
            tee: None,
        };
        assert_eq!(sent.rpc_error(Some("7")), Some(-32602));
        assert_eq!(sent.rpc_error(Some("8")), None);
        assert_eq!(sent.outcome(Some("7"), &None), "error");
        assert_eq!(sent.outcome(Some("8"), &None), "ok");
    }
}
