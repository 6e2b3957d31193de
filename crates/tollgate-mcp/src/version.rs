//! Protocol revisions Tollgate serves, as an enumerated set.

use std::fmt;

use tollgate_core::Era;

/// A protocol revision Tollgate understands. Unknown strings are not
/// representable: callers turn them into `-32022` errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// 2024-11-05 (legacy, HTTP+SSE era; accepted on the header for
    /// clients that negotiated it with a Streamable HTTP server).
    V2024_11_05,
    /// 2025-03-26 (legacy: batches allowed).
    V2025_03_26,
    /// 2025-06-18 (legacy).
    V2025_06_18,
    /// 2025-11-25 (legacy).
    V2025_11_25,
    /// 2026-07-28 (modern: stateless, standard headers).
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every supported revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// Parse an exact revision string.
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The revision string.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// The era of this revision.
    pub fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Whether JSON-RPC batches are allowed (2025-03-26 only).
    pub fn allows_batches(self) -> bool {
        self <= ProtocolVersion::V2025_03_26
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_exact_strings_only() {
        assert_eq!(ProtocolVersion::parse("2026-07-28"), Some(ProtocolVersion::V2026_07_28));
        assert_eq!(ProtocolVersion::parse(" 2026-07-28"), None);
        assert_eq!(ProtocolVersion::parse("2026-07-29"), None);
        assert!(ProtocolVersion::V2025_03_26.allows_batches());
        assert!(!ProtocolVersion::V2025_06_18.allows_batches());
        assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Legacy);
    }
}
