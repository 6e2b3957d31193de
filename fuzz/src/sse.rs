//! The SSE reader that follows an upstream's event stream.

use tollgate_mcp::sse::{Decoder, Event, events};

/// The first byte picks a chunk size; the rest is the stream. Fed in
/// chunks of that size, the incremental decoder yields exactly the events
/// the one-shot reader finds in the whole body, and agrees with it on
/// whether the body ends inside an event.
pub(crate) fn sse(data: &[u8]) {
    let (selector, body) = crate::split_first(data);
    let chunk = usize::from(selector % 64) + 1;
    let mut whole = events(body);
    let expected: Vec<Event> = whole.by_ref().collect();
    let mut decoder = Decoder::new(usize::MAX);
    let mut got = Vec::new();
    for piece in body.chunks(chunk) {
        decoder.feed(piece);
        while let Ok(Some(event)) = decoder.next_event() {
            got.push(event);
        }
    }
    assert_eq!(got, expected, "chunked decoding differs from whole-body reading");
    if !body.is_empty() {
        assert_eq!(decoder.is_mid_event(), whole.is_mid_event());
    }
    let mut bounded = Decoder::new(64);
    bounded.feed(body);
    while let Ok(Some(event)) = bounded.next_event() {
        assert!(event.data.len() <= 64 * 3, "an event passed the size limit");
    }
}
