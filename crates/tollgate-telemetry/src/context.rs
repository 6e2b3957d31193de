//! W3C Trace Context (`traceparent`): reading the caller's, writing ours.
//!
//! Parsing is done here rather than by the OpenTelemetry propagator so that
//! it costs nothing when tracing is off (no allocation: the audit record
//! still learns the caller's trace id) and behaves the same when it is on.

use std::fmt;

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceState};

/// Length of a version-00 `traceparent`: `00-{32 hex}-{16 hex}-{2 hex}`.
const LEN: usize = 55;

/// A W3C trace id, shown as 32 lowercase hex digits (the form the audit
/// record and every tracing backend use).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId([u8; 16]);

impl TraceId {
    /// The 16 bytes of the id.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    pub(crate) fn from_otel(id: opentelemetry::trace::TraceId) -> Option<TraceId> {
        (id != opentelemetry::trace::TraceId::INVALID).then(|| TraceId(id.to_bytes()))
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceId({self})")
    }
}

/// A caller's context, read from a `traceparent` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RemoteParent {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) sampled: bool,
}

impl RemoteParent {
    /// Parse a `traceparent` value; `None` when it is not a valid one
    /// (the request then starts a new trace, as W3C Trace Context says).
    pub(crate) fn parse(value: &str) -> Option<RemoteParent> {
        let b = value.trim_matches([' ', '\t']).as_bytes();
        if b.len() < LEN || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = hex::<1>(&b[0..2])?[0];
        // Version ff is invalid; 00 has exactly four fields; a later version
        // may append fields after a dash.
        let length_ok = match version {
            0xff => false,
            0x00 => b.len() == LEN,
            _ => b.len() == LEN || b[LEN] == b'-',
        };
        let trace_id = hex::<16>(&b[3..35])?;
        let span_id = hex::<8>(&b[36..52])?;
        let flags = hex::<1>(&b[53..55])?[0];
        let valid = length_ok && trace_id != [0; 16] && span_id != [0; 8];
        valid.then_some(RemoteParent {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }

    pub(crate) fn trace_id(&self) -> TraceId {
        TraceId(self.trace_id)
    }

    /// The context as the OpenTelemetry SDK takes it: remote, no state.
    pub(crate) fn span_context(&self) -> SpanContext {
        let flags = if self.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        SpanContext::new(
            opentelemetry::trace::TraceId::from_bytes(self.trace_id),
            SpanId::from_bytes(self.span_id),
            flags,
            true,
            TraceState::default(),
        )
    }
}

/// Lowercase hex digits into `N` bytes; `None` on anything else.
fn hex<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    if digits.len() != 2 * N {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// A `traceparent` header value to send upstream (version 00), held
/// without allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Traceparent([u8; LEN]);

impl Traceparent {
    pub(crate) fn from_span_context(cx: &SpanContext) -> Option<Traceparent> {
        if !cx.is_valid() {
            return None;
        }
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
        write_hex(&mut out[3..35], &cx.trace_id().to_bytes());
        write_hex(&mut out[36..52], &cx.span_id().to_bytes());
        write_hex(&mut out[53..55], &[u8::from(cx.is_sampled())]);
        Some(Traceparent(out))
    }

    /// The header value, e.g.
    /// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits and dashes are ever written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The value as an HTTP header value, for `traceparent`.
    pub fn header_value(&self) -> http::HeaderValue {
        http::HeaderValue::from_bytes(&self.0).unwrap_or_else(|_| http::HeaderValue::from_static(""))
    }

    /// The trace this context belongs to.
    pub fn trace_id(&self) -> TraceId {
        let mut id = [0; 16];
        if let Some(parsed) = hex::<16>(&self.0[3..35]) {
            id = parsed;
        }
        TraceId(id)
    }
}

fn write_hex(out: &mut [u8], bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0x0f)];
    }
}

impl fmt::Display for Traceparent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Traceparent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Traceparent({})", self.as_str())
    }
}

#[cfg(test)]
mod tests;
