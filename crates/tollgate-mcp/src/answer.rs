//! The JSON-RPC messages of an upstream's answer to a POST.
//!
//! The answer streams to the client unchanged; the server keeps a copy of
//! its start (possibly cut short) and reads it here once the body ends:
//! the error codes for metering and audit, and the messages the catalog
//! and the version learning read. A JSON answer is one message (or a batch
//! array); an SSE answer carries one message per event, read with the
//! project's one SSE reader ([`crate::sse`]). An event the copy cut off
//! before its blank line is not read, as a client would not read it.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::sse;

/// The JSON text of each message of an answer: the whole body of a JSON
/// answer, the data of each SSE event that has any.
///
/// ```
/// use tollgate_mcp::answer_messages;
///
/// let sse = b": ping\n\nevent: message\ndata: {\"id\":1,\r\ndata: \"result\":{}}\n\ndata: {\"id\":2";
/// let msgs: Vec<_> = answer_messages(sse, true).collect();
/// assert_eq!(msgs, [&b"{\"id\":1,\n\"result\":{}}"[..]]);
/// assert_eq!(answer_messages(b"{}", false).count(), 1);
/// ```
pub fn answer_messages(body: &[u8], sse: bool) -> impl Iterator<Item = Cow<'_, [u8]>> {
    let json = (!sse).then_some(Cow::Borrowed(body));
    let events = sse.then(|| sse::events(body)).into_iter().flatten();
    let data = events
        .filter(|e| !e.data.is_empty())
        .map(|e| Cow::Owned(e.data.into_bytes()));
    json.into_iter().chain(data)
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

/// The `(id as JSON text, error.code)` of every JSON-RPC error in an
/// answer, in order; a message may be a batch array. Messages that are not
/// JSON-RPC (or were cut off) are passed over.
///
/// The messages are read into small borrowed structs: everything but `id`
/// and `error.code` is skipped, no document tree is built.
///
/// ```
/// use tollgate_mcp::answer_errors;
///
/// let body = br#"{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"Unknown tool"}}"#;
/// assert_eq!(answer_errors(body, false), [(Some("\"a\"".to_owned()), -32602)]);
/// ```
pub fn answer_errors(body: &[u8], sse: bool) -> Vec<(Option<String>, i64)> {
    let mut out = Vec::new();
    let mut take = |r: Reply<'_>| {
        if let Some(e) = r.error {
            out.push((r.id.map(|id| id.get().to_owned()), e.code));
        }
    };
    for msg in answer_messages(body, sse) {
        if let Ok(many) = serde_json::from_slice::<Vec<Reply<'_>>>(&msg) {
            many.into_iter().for_each(&mut take);
        } else if let Ok(one) = serde_json::from_slice::<Reply<'_>>(&msg) {
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
        assert_eq!(answer_errors(one, false), vec![(Some("7".into()), -32602)]);
        let batch =
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":"b","error":{"code":-1,"message":""}}]"#;
        assert_eq!(answer_errors(batch, false), vec![(Some("\"b\"".into()), -1)]);
        let sse =
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32001,\"message\":\"\"}}\n\n";
        assert_eq!(answer_errors(sse, true), vec![(Some("2".into()), -32001)]);
        assert!(answer_errors(b"{\"result\":{}}", false).is_empty());
        // An error without id, and a null id.
        let anon = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#;
        assert_eq!(answer_errors(anon, false), vec![(None, -32700)]);
    }

    #[test]
    fn sse_answers_are_read_event_by_event() {
        // A progress notification, then the error split over two data
        // lines with CRLF ends, a keep-alive and a priming event between.
        let sse = b"id: p\ndata:\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n\
                    : keep-alive\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\r\ndata: \"error\":{\"code\":-32603}}\r\n\r\n";
        assert_eq!(answer_messages(sse, true).count(), 2);
        assert_eq!(answer_errors(sse, true), vec![(Some("3".into()), -32603)]);
        // A JSON body is never split into lines, and an SSE body never read whole.
        let json = b"{\"id\":1,\n\"error\":{\"code\":-5}}";
        assert_eq!(answer_errors(json, false), vec![(Some("1".into()), -5)]);
        assert!(answer_errors(json, true).is_empty());
        // A copy cut off inside the last event reads the complete ones only.
        let cut = b"data: {\"id\":1,\"error\":{\"code\":-1}}\n\ndata: {\"id\":2,\"error\":{\"code\":-2}}\n";
        assert_eq!(answer_errors(cut, true), vec![(Some("1".into()), -1)]);
        let cut = br#"{"id":1,"error":{"code":-1}"#;
        assert!(answer_errors(cut, false).is_empty());
    }
}
