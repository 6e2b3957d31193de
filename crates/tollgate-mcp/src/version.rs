//! Protocol revisions Tollgate serves, and sets of them.
//!
//! [`ProtocolVersion`] names one revision; [`Versions`] is the set a route
//! can serve (the gateway's revisions intersected with what the route's
//! upstream announced). Classification (step 6 of the request path) checks
//! a request's `MCP-Protocol-Version` against its route's set and names the
//! set in `-32022` answers.

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

    /// This revision's bit in a [`Versions`] set (its index in `ALL`).
    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of protocol revisions, e.g. the ones a route can serve.
///
/// A bitset over [`ProtocolVersion::ALL`]; iteration is oldest first.
///
/// ```
/// use tollgate_mcp::{ProtocolVersion, Versions};
///
/// let announced = Versions::from_announced(["2025-06-18", "2025-11-25", "1999-01-01"]);
/// let route = Versions::all().intersect(announced);
/// assert!(route.legacy_allowed());
/// assert!(!route.contains(ProtocolVersion::V2026_07_28));
/// assert_eq!(route.as_strs(), ["2025-06-18", "2025-11-25"]);
/// assert_eq!(route.to_string(), "2025-06-18, 2025-11-25");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Versions(u8);

impl Versions {
    /// No revision.
    pub const fn empty() -> Versions {
        Versions(0)
    }

    /// Every revision the gateway understands.
    pub const fn all() -> Versions {
        let mut bits = 0;
        let mut i = 0;
        while i < ProtocolVersion::ALL.len() {
            bits |= ProtocolVersion::ALL[i].bit();
            i += 1;
        }
        Versions(bits)
    }

    /// The modern revisions only (a route that serves no legacy client).
    pub const fn modern_only() -> Versions {
        Versions(ProtocolVersion::V2026_07_28.bit())
    }

    /// The set holding `v` alone.
    pub const fn only(v: ProtocolVersion) -> Versions {
        Versions(v.bit())
    }

    /// The known revisions among announced strings (e.g. an upstream's
    /// `initialize` answer or `server/discover` list); unknown strings are
    /// ignored.
    pub fn from_announced<S: AsRef<str>>(announced: impl IntoIterator<Item = S>) -> Versions {
        announced
            .into_iter()
            .filter_map(|s| ProtocolVersion::parse(s.as_ref()))
            .collect()
    }

    /// Whether `v` is in the set.
    pub const fn contains(self, v: ProtocolVersion) -> bool {
        self.0 & v.bit() != 0
    }

    /// The revisions in both sets.
    #[must_use]
    pub const fn intersect(self, other: Versions) -> Versions {
        Versions(self.0 & other.0)
    }

    /// `self` with `v` added.
    #[must_use]
    pub const fn with(self, v: ProtocolVersion) -> Versions {
        Versions(self.0 | v.bit())
    }

    /// Whether the set holds no revision.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the set holds any legacy revision, i.e. a route with this set
    /// serves legacy clients.
    pub fn legacy_allowed(self) -> bool {
        self.iter().any(|v| v.era() == Era::Legacy)
    }

    /// The revisions, oldest first.
    pub fn iter(self) -> impl Iterator<Item = ProtocolVersion> {
        ProtocolVersion::ALL.into_iter().filter(move |v| self.contains(*v))
    }

    /// The revision strings, oldest first (for `-32022` error data).
    pub fn as_strs(self) -> Vec<&'static str> {
        self.iter().map(ProtocolVersion::as_str).collect()
    }
}

impl FromIterator<ProtocolVersion> for Versions {
    fn from_iter<I: IntoIterator<Item = ProtocolVersion>>(iter: I) -> Versions {
        iter.into_iter().fold(Versions::empty(), Versions::with)
    }
}

/// The revision strings separated by `", "`, oldest first.
impl fmt::Display for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(v.as_str())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(ProtocolVersion::as_str)).finish()
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

    #[test]
    fn version_sets() {
        let all = Versions::all();
        assert_eq!(all.iter().collect::<Vec<_>>(), ProtocolVersion::ALL);
        assert!(all.legacy_allowed() && !all.is_empty());
        let modern = Versions::modern_only();
        assert_eq!(modern.as_strs(), ["2026-07-28"]);
        assert!(!modern.legacy_allowed());
        assert!(Versions::empty().is_empty() && !Versions::empty().legacy_allowed());
        assert_eq!(Versions::empty().to_string(), "");
        // Announced strings in any order and with unknown ones.
        let strs: &[&str] = &["2025-11-25", "draft", "2025-06-18", "2025-11-25"];
        let announced = Versions::from_announced(strs);
        assert_eq!(announced.as_strs(), ["2025-06-18", "2025-11-25"]);
        assert!(announced.legacy_allowed());
        assert_eq!(format!("{announced:?}"), r#"{"2025-06-18", "2025-11-25"}"#);
        assert_eq!(modern.intersect(announced), Versions::empty());
        assert_eq!(all.intersect(announced), announced);
        assert!(announced.contains(ProtocolVersion::V2025_06_18));
        assert!(!announced.contains(ProtocolVersion::V2026_07_28));
        assert_eq!(Versions::only(ProtocolVersion::V2024_11_05).to_string(), "2024-11-05");
        assert_eq!(
            modern.with(ProtocolVersion::V2025_03_26).to_string(),
            "2025-03-26, 2026-07-28"
        );
    }
}
