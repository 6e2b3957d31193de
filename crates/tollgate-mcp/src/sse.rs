//! The one Server-Sent Events reader of the project.
//!
//! An upstream answers a POST with `application/json` or
//! `text/event-stream`; everything that reads an SSE answer on its way back
//! to the client (list filtering, metering, catalog learning, stream
//! rewriting) reads it here: [`events`] over a complete buffer, or a
//! [`Decoder`] fed chunk by chunk as the body streams.
//!
//! Parsing follows the WHATWG EventSource rules: a line ends in CRLF, LF or
//! CR (also when the CR and LF arrive in different chunks); a line starting
//! with `:` is a comment; `field:value` drops one leading space of the
//! value, and a line without a colon is a field with an empty value; `data`
//! lines are joined with `"\n"`; an `id` containing NUL is ignored; a
//! `retry` that is not all ASCII digits (or does not fit a `u64`) is
//! ignored; unknown fields are ignored; a blank line ends an event; a UTF-8
//! BOM at the very start of the stream is skipped. An event still open when
//! the input ends is not dispatched ([`Events::is_mid_event`],
//! [`Decoder::is_mid_event`] tell).
//!
//! Unlike a browser, the reader yields every block a blank line ends that
//! carries anything it represents, not only blocks with data: comment-only
//! keep-alives and `retry`/`id`-only blocks come out as [`Event`]s with
//! `has_data == false`, so a rewriter can pass them on. [`Event::has_data`]
//! is the spec's "dispatch" condition.
//!
//! Bytes that are not UTF-8 are replaced by U+FFFD line by line, as the spec
//! decodes a stream; [`Events::saw_invalid_utf8`] reports it, and a
//! [`Decoder::reject_invalid_utf8`] stops with [`SseError::InvalidUtf8`]
//! instead, for a reader (list filtering) that must refuse a stream it
//! cannot read exactly.

use std::iter::FusedIterator;

use tollgate_core::{Classify, ErrorKind};

mod block;

use self::block::{Block, Lines};

/// Whether `headers` say the body is an SSE stream (`Content-Type:
/// text/event-stream`, with or without parameters).
///
/// ```
/// use http::{HeaderMap, HeaderValue, header::CONTENT_TYPE};
/// use tollgate_mcp::sse::is_event_stream;
///
/// let mut h = HeaderMap::new();
/// assert!(!is_event_stream(&h));
/// h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
/// assert!(is_event_stream(&h));
/// ```
pub fn is_event_stream(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// The largest event a [`Decoder::default`] buffers (1 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One event (or comment/field-only block) of an SSE stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The last `event` field, if any (`Some("")` for an empty one).
    pub event: Option<String>,
    /// The last `id` field without NUL, if any.
    pub id: Option<String>,
    /// The last valid `retry` field, in milliseconds.
    pub retry: Option<u64>,
    /// The text after `:` of each comment line, in order.
    pub comments: Vec<String>,
    /// The `data` lines joined with `"\n"`.
    pub data: String,
    /// Whether the block had a `data` field (possibly empty): the spec
    /// dispatches only such blocks to an `EventSource`.
    pub has_data: bool,
}

impl Event {
    /// An event with one JSON-RPC message (or any text) as its data.
    pub fn message(data: impl Into<String>) -> Event {
        Event {
            data: data.into(),
            has_data: true,
            ..Event::default()
        }
    }

    /// Serialize the event: comments as `:` lines, then `event`, `id` and
    /// `retry`, then one `data:` line per line of `data`, each line ended by
    /// LF, then a blank line. A field with an empty value is written as its
    /// bare name (`data`), which reads back the same.
    ///
    /// No value can start a new line or field: a CR, LF or CRLF in a comment
    /// or in `data` starts another comment or `data` line, and CR and LF are
    /// dropped from `event` and `id`. Reading the output back yields this
    /// event whenever it came from the reader.
    ///
    /// ```
    /// use tollgate_mcp::sse::{Event, events};
    ///
    /// let mut e = events(b": keep\nevent: message\ndata: {}\n\n").next().unwrap();
    /// e.data = "{\"jsonrpc\":\"2.0\"}".into();
    /// let mut out = Vec::new();
    /// e.write_to(&mut out);
    /// assert_eq!(out, b": keep\nevent: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n");
    /// ```
    pub fn write_to(&self, out: &mut Vec<u8>) {
        for line in self.comments.iter().flat_map(|c| lines(c)) {
            out.push(b':');
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        if let Some(event) = &self.event {
            write_field(out, b"event", event);
        }
        if let Some(id) = &self.id {
            write_field(out, b"id", id);
        }
        if let Some(retry) = self.retry {
            write_field(out, b"retry", &retry.to_string());
        }
        if self.has_data || !self.data.is_empty() {
            for line in lines(&self.data) {
                write_field(out, b"data", line);
            }
        }
        out.push(b'\n');
    }
}

/// `name: value` with CR and LF dropped from the value; `name:` for an
/// empty value. The colon is optional by the standard, but some clients'
/// parsers (rmcp's among them) refuse a line without one.
fn write_field(out: &mut Vec<u8>, name: &[u8], value: &str) {
    out.extend_from_slice(name);
    out.push(b':');
    if !value.is_empty() {
        out.push(b' ');
    }
    out.extend(value.bytes().filter(|b| !matches!(b, b'\r' | b'\n')));
    out.push(b'\n');
}

/// The lines of `text`, split at CRLF, CR or LF (one empty line for "").
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let text = rest?;
        let Some(end) = text.find(['\r', '\n']) else {
            rest = None;
            return Some(text);
        };
        let skip = if text[end..].starts_with("\r\n") { 2 } else { 1 };
        rest = Some(&text[end + skip..]);
        Some(&text[..end])
    })
}

/// The events of a complete SSE body, in order.
///
/// ```
/// use tollgate_mcp::sse::events;
///
/// let body = b"event: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata: unfinished";
/// let mut it = events(body);
/// assert_eq!(it.next().unwrap().data, "{\"a\":\n1}");
/// assert!(it.next().is_none());
/// assert!(it.is_mid_event());
/// ```
pub fn events(body: &[u8]) -> Events<'_> {
    Events {
        input: body.strip_prefix(BOM).unwrap_or(body),
        pos: 0,
        lines: Lines::default(),
        block: Block::default(),
    }
}

/// The iterator of [`events`].
#[derive(Debug)]
pub struct Events<'a> {
    input: &'a [u8],
    pos: usize,
    lines: Lines,
    block: Block,
}

impl Events<'_> {
    /// Whether the input ended inside an event (an unterminated line, or
    /// lines not yet closed by a blank line). Meaningful once the iterator
    /// has returned `None`.
    pub fn is_mid_event(&self) -> bool {
        self.block.is_open() || self.pos < self.input.len()
    }

    /// Whether a line read so far held bytes that are not UTF-8 (they were
    /// replaced by U+FFFD).
    pub fn saw_invalid_utf8(&self) -> bool {
        self.block.saw_invalid_utf8()
    }
}

impl Iterator for Events<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        while let Some(line) = self.lines.next(self.input, &mut self.pos) {
            if let Some(event) = self.block.line(&self.input[line]) {
                return Some(event);
            }
        }
        None
    }
}

impl FusedIterator for Events<'_> {}

/// Why a [`Decoder`] stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// An event (or a line) grew past the decoder's limit.
    #[error("SSE event larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes of the stream.
        limit: usize,
    },
    /// A line held bytes that are not UTF-8 (strict decoders only).
    #[error("SSE stream is not UTF-8")]
    InvalidUtf8,
}

/// An upstream whose stream cannot be read answered garbage.
impl Classify for SseError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::UpstreamUnavailable
    }
}

/// An incremental SSE reader: [`feed`](Decoder::feed) each chunk of the
/// body, then call [`next_event`](Decoder::next_event) until it returns
/// `Ok(None)`.
///
/// The events are the same wherever the chunks split the stream. The
/// decoder holds at most the unread part of the last chunk plus one event
/// of up to its limit (counted in stream bytes, line ends excluded); a
/// longer event or line is [`SseError::TooLarge`]. An error is final.
///
/// ```
/// use tollgate_mcp::sse::Decoder;
///
/// let mut d = Decoder::new(64 * 1024);
/// let mut data = Vec::new();
/// for chunk in [&b"data: a\r"[..], b"\ndata: b\n", b"\n: ping\n\n"] {
///     d.feed(chunk);
///     while let Some(event) = d.next_event()? {
///         data.push(event.data);
///     }
/// }
/// assert_eq!(data, ["a\nb", ""]);
/// assert!(!d.is_mid_event());
/// # Ok::<(), tollgate_mcp::sse::SseError>(())
/// ```
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    pos: usize,
    lines: Lines,
    block: Block,
    /// Still deciding whether the stream starts with a BOM.
    at_start: bool,
    max_event_bytes: usize,
    strict_utf8: bool,
    error: Option<SseError>,
}

impl Default for Decoder {
    /// A lossy decoder with the [`DEFAULT_MAX_EVENT_BYTES`] limit.
    fn default() -> Decoder {
        Decoder::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl Decoder {
    /// A decoder refusing events larger than `max_event_bytes`, replacing
    /// bytes that are not UTF-8.
    pub fn new(max_event_bytes: usize) -> Decoder {
        Decoder {
            buf: Vec::new(),
            pos: 0,
            lines: Lines::default(),
            block: Block::default(),
            at_start: true,
            max_event_bytes,
            strict_utf8: false,
            error: None,
        }
    }

    /// Stop with [`SseError::InvalidUtf8`] at the first line that is not
    /// UTF-8, instead of replacing its bytes.
    #[must_use]
    pub fn reject_invalid_utf8(mut self) -> Decoder {
        self.strict_utf8 = true;
        self
    }

    /// Append the next chunk of the stream (ignored after an error).
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event, or `None` until more input is fed.
    ///
    /// # Errors
    ///
    /// [`SseError::TooLarge`] when the open event or line exceeds the limit,
    /// [`SseError::InvalidUtf8`] for a strict decoder; every later call
    /// returns the same error.
    pub fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if !self.skip_bom() {
            return Ok(None);
        }
        while let Some(line) = self.lines.next(&self.buf, &mut self.pos) {
            if self.block.size() + line.len() > self.max_event_bytes {
                return self.fail(SseError::TooLarge {
                    limit: self.max_event_bytes,
                });
            }
            let event = self.block.line(&self.buf[line]);
            if self.strict_utf8 && self.block.saw_invalid_utf8() {
                return self.fail(SseError::InvalidUtf8);
            }
            if event.is_some() {
                return Ok(event);
            }
        }
        // The unterminated last line counts against the limit already.
        if self.block.size() + (self.buf.len() - self.pos) > self.max_event_bytes {
            return self.fail(SseError::TooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(None)
    }

    /// Whether the input so far ends inside an event. Meaningful once
    /// [`next_event`](Decoder::next_event) has returned `Ok(None)`: then a
    /// `true` at the end of the body means the last event was cut off.
    pub fn is_mid_event(&self) -> bool {
        self.block.is_open() || self.pos < self.buf.len()
    }

    /// Whether a line read so far held bytes that are not UTF-8.
    pub fn saw_invalid_utf8(&self) -> bool {
        self.block.saw_invalid_utf8()
    }

    /// Skip a BOM at the very start of the stream; `false` while the first
    /// bytes could still be one.
    fn skip_bom(&mut self) -> bool {
        if !self.at_start {
            return true;
        }
        let head = &self.buf[self.pos..];
        let n = head.len().min(BOM.len());
        if head[..n] != BOM[..n] {
            self.at_start = false;
            return true;
        }
        if n < BOM.len() {
            return false;
        }
        self.pos += BOM.len();
        self.at_start = false;
        true
    }

    fn fail(&mut self, e: SseError) -> Result<Option<Event>, SseError> {
        self.error = Some(e.clone());
        self.buf = Vec::new();
        self.pos = 0;
        Err(e)
    }
}

#[cfg(test)]
mod tests;
