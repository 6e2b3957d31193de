//! The hash chain: how a line is framed and what links it to the previous one.
//!
//! Every line of an audit file is one JSON object that starts with the
//! envelope `{"v":1,"seq":N,"prev":"<hex>","kind":"…",` followed by the body
//! of its kind. `prev` is the SHA-256 of the exact bytes of the previous
//! line (without its `\n`), so the bytes as stored are the canonical form:
//! no re-serialization is needed to check them. `seq` counts every line of
//! the trail, across files. Each file starts with a `genesis` line whose
//! `prev` is the hash of the last line of the file before it (all zeros for
//! a new trail); a file closed by rotation or shutdown ends with a `seal`.

use std::fmt;
use std::io::Write as _;
use std::str::FromStr;
use std::time::SystemTime;

use aws_lc_rs::digest;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::record::SCHEMA_VERSION;
use crate::serde_util::timestamp;

/// A SHA-256 digest, written as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    /// The `prev` of the first line of a new trail.
    pub const ZERO: Hash = Hash([0; 32]);

    /// The hash of one line's bytes (without the newline).
    pub fn of_line(line: &[u8]) -> Hash {
        let d = digest::digest(&digest::SHA256, line);
        let mut out = [0u8; 32];
        out.copy_from_slice(d.as_ref());
        Hash(out)
    }

    fn write_hex(&self, out: &mut Vec<u8>) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for b in self.0 {
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 15)]);
        }
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hex = Vec::with_capacity(64);
        self.write_hex(&mut hex);
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({self})")
    }
}

impl FromStr for Hash {
    type Err = String;
    fn from_str(s: &str) -> Result<Hash, String> {
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return Err(format!("a hash has 64 hex digits, not {}", bytes.len()));
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(format!("not a lowercase hex digit: {:?}", char::from(c))),
        };
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
        }
        Ok(Hash(out))
    }
}

impl Serialize for Hash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Hash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Hash, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// First line of a file.
    Genesis,
    /// One JSON-RPC request ([`crate::CallRecord`]).
    Call,
    /// Records lost before reaching the file (queue full, write failure).
    Gap,
    /// Last line of a file closed by rotation or shutdown.
    Seal,
    /// A kind this version does not know (a newer writer).
    #[serde(other)]
    Unknown,
}

impl LineKind {
    fn as_str(self) -> &'static str {
        match self {
            LineKind::Genesis => "genesis",
            LineKind::Call => "call",
            LineKind::Gap => "gap",
            LineKind::Seal => "seal",
            LineKind::Unknown => "unknown",
        }
    }
}

/// The envelope of any line, plus the fields verification reads from
/// genesis and gap lines. Other fields are skipped.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Envelope {
    pub(crate) v: u32,
    pub(crate) seq: u64,
    pub(crate) prev: Hash,
    pub(crate) kind: LineKind,
    #[serde(default)]
    pub(crate) previous_file: Option<String>,
    #[serde(default)]
    pub(crate) torn_tail: u64,
    #[serde(default)]
    pub(crate) dropped: u64,
}

/// Body of a `genesis` line.
#[derive(Debug, Serialize)]
pub(crate) struct Genesis<'a> {
    #[serde(with = "timestamp")]
    pub(crate) time: SystemTime,
    /// This file's name.
    pub(crate) file: &'a str,
    /// The file the chain continues from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) previous_file: Option<&'a str>,
    /// Bytes after the last complete line of the previous file (a record
    /// torn by a crash or a failed write), not covered by the chain.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) torn_tail: u64,
    /// The writer's version.
    pub(crate) writer: &'a str,
}

/// Body of a `seal` line.
#[derive(Debug, Serialize)]
pub(crate) struct Seal {
    #[serde(with = "timestamp")]
    pub(crate) time: SystemTime,
    /// `rotate` or `shutdown`.
    pub(crate) reason: &'static str,
    /// Call records in this file.
    pub(crate) records: u64,
}

/// Body of a `gap` line.
#[derive(Debug, Serialize)]
pub(crate) struct Gap {
    #[serde(with = "timestamp")]
    pub(crate) time: SystemTime,
    /// Records that never reached the file since the last line.
    pub(crate) dropped: u64,
    /// `queue_full`, `write_failed` or both, comma-separated.
    pub(crate) reason: &'static str,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Append one framed line (with its `\n`) to `buf`; returns the line's hash.
///
/// # Errors
///
/// The body could not be serialized; `buf` is left as it was.
pub(crate) fn append_line<T: Serialize>(
    buf: &mut Vec<u8>,
    seq: u64,
    prev: &Hash,
    kind: LineKind,
    body: &T,
) -> Result<Hash, serde_json::Error> {
    let start = buf.len();
    // Writing into a Vec cannot fail.
    let _ = write!(buf, "{{\"v\":{SCHEMA_VERSION},\"seq\":{seq},\"prev\":\"");
    prev.write_hex(buf);
    buf.extend_from_slice(b"\",\"kind\":\"");
    buf.extend_from_slice(kind.as_str().as_bytes());
    buf.push(b'"');
    let body_start = buf.len();
    if let Err(e) = serde_json::to_writer(&mut *buf, body) {
        buf.truncate(start);
        return Err(e);
    }
    // The body is an object `{…}`: drop its `{` and splice it after the
    // envelope (`,…}`), or close the envelope when the body is `{}`.
    if buf.len() - body_start <= 2 {
        buf.truncate(body_start);
        buf.push(b'}');
    } else {
        buf[body_start] = b',';
    }
    let hash = Hash::of_line(&buf[start..]);
    buf.push(b'\n');
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_one_json_object_with_the_envelope_first() {
        let mut buf = Vec::new();
        let seal = Seal {
            time: SystemTime::UNIX_EPOCH,
            reason: "rotate",
            records: 3,
        };
        let h = append_line(&mut buf, 7, &Hash::ZERO, LineKind::Seal, &seal).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.starts_with(&format!(
            "{{\"v\":1,\"seq\":7,\"prev\":\"{}\",\"kind\":\"seal\",",
            "0".repeat(64)
        )));
        assert!(text.ends_with("\"records\":3}\n"), "{text}");
        assert_eq!(h, Hash::of_line(&buf[..buf.len() - 1]));
        let env: Envelope = serde_json::from_slice(&buf).unwrap();
        assert_eq!((env.seq, env.kind), (7, LineKind::Seal));
    }

    #[test]
    fn an_empty_body_closes_the_envelope() {
        let mut buf = Vec::new();
        append_line(&mut buf, 0, &Hash::ZERO, LineKind::Unknown, &serde_json::json!({})).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["kind"], "unknown");
    }

    #[test]
    fn hashes_round_trip_as_hex() {
        let h = Hash::of_line(b"abc");
        assert_eq!(
            h.to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(h.to_string().parse::<Hash>().unwrap(), h);
        assert!("xyz".parse::<Hash>().is_err());
        assert!("A".repeat(64).parse::<Hash>().is_err());
    }
}
