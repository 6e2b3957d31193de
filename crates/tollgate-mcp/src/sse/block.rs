//! Line splitting and event assembly, shared by [`super::Events`] (one
//! buffer) and [`super::Decoder`] (chunk by chunk).

use std::borrow::Cow;
use std::ops::Range;

use super::Event;

/// Finds line ends across calls: a CR that ended one line swallows an LF
/// that starts the next input, so CRLF split between chunks is one end.
#[derive(Debug, Default)]
pub(super) struct Lines {
    after_cr: bool,
}

impl Lines {
    /// The next complete line of `input[*pos..]`, without its end; `pos`
    /// moves past the line end. `None` when no line end follows yet.
    pub(super) fn next(&mut self, input: &[u8], pos: &mut usize) -> Option<Range<usize>> {
        if self.after_cr {
            if *input.get(*pos)? == b'\n' {
                *pos += 1;
            }
            self.after_cr = false;
        }
        let start = *pos;
        let len = input.get(start..)?.iter().position(|b| matches!(b, b'\n' | b'\r'))?;
        let end = start + len;
        self.after_cr = input.get(end) == Some(&b'\r');
        *pos = end + 1;
        Some(start..end)
    }
}

/// The event being assembled from the lines since the last blank line.
#[derive(Debug, Default)]
pub(super) struct Block {
    event: Event,
    /// Whether a line recorded something the event represents.
    filled: bool,
    /// Stream bytes of the lines since the last blank line (line ends
    /// excluded).
    size: usize,
    invalid_utf8: bool,
}

impl Block {
    /// Stream bytes of the open lines.
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// Whether lines were read that no blank line has closed yet.
    pub(super) fn is_open(&self) -> bool {
        self.size > 0
    }

    pub(super) fn saw_invalid_utf8(&self) -> bool {
        self.invalid_utf8
    }

    /// Read one line (without its end); a blank line returns the event, if
    /// the block recorded anything.
    pub(super) fn line(&mut self, raw: &[u8]) -> Option<Event> {
        if raw.is_empty() {
            self.size = 0;
            let event = std::mem::take(&mut self.event);
            return std::mem::take(&mut self.filled).then_some(event);
        }
        self.size += raw.len();
        let line = String::from_utf8_lossy(raw);
        if matches!(line, Cow::Owned(_)) {
            self.invalid_utf8 = true;
        }
        self.filled |= self.record(&line);
        None
    }

    /// Apply one non-blank line; `false` when it is ignored.
    fn record(&mut self, line: &str) -> bool {
        let e = &mut self.event;
        if let Some(comment) = line.strip_prefix(':') {
            e.comments.push(comment.to_owned());
            return true;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if e.has_data {
                    e.data.push('\n');
                }
                e.data.push_str(value);
                e.has_data = true;
            }
            "event" => e.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => e.id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => match value.parse() {
                Ok(ms) => e.retry = Some(ms),
                Err(_) => return false,
            },
            _ => return false,
        }
        true
    }
}
