//! CSV for spreadsheets. Every CSV Tollgate writes — the console's audit
//! and spend downloads, `tollgate usage --format csv` and its budgets — is
//! written through [`Writer`], so that no cell is read as a formula when
//! the file is opened: a cell that begins with `=`, `+`, `-`, `@`, a tab or
//! a carriage return (what spreadsheets start a formula or a DDE call
//! with) is prefixed with `'`, which they show as text. A plain number such
//! as `-32602` (a JSON-RPC error code) is left as it is. Quoting is RFC
//! 4180, by the `csv` crate.

use std::borrow::Cow;

/// Why a CSV document could not be written (rows of unequal length).
pub type CsvError = ::csv::Error;

/// A CSV document written into memory, one row at a time.
#[derive(Debug)]
pub struct Writer {
    inner: ::csv::Writer<Vec<u8>>,
}

impl Default for Writer {
    fn default() -> Writer {
        Writer::new()
    }
}

impl Writer {
    /// An empty document.
    pub fn new() -> Writer {
        Writer {
            inner: ::csv::Writer::from_writer(Vec::new()),
        }
    }

    /// Append a row, each cell neutralised ([`neutralise`]).
    ///
    /// # Errors
    ///
    /// The row has another number of cells than the first one.
    pub fn row<I>(&mut self, cells: I) -> Result<(), CsvError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        for cell in cells {
            self.inner.write_field(neutralise(cell.as_ref()).as_bytes())?;
        }
        self.inner.write_record(None::<&[u8]>)
    }

    /// The document.
    ///
    /// # Errors
    ///
    /// None in practice: the buffer is memory.
    pub fn finish(self) -> Result<String, CsvError> {
        let bytes = self.inner.into_inner().map_err(|e| CsvError::from(e.into_error()))?;
        // Every cell was a `&str`: the document is UTF-8.
        String::from_utf8(bytes).map_err(|e| CsvError::from(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
    }
}

/// `cell` as a spreadsheet reads it as text: with `'` in front when it
/// begins with `=`, `+`, `-`, `@`, a tab or a carriage return and is not a
/// plain decimal number.
pub fn neutralise(cell: &str) -> Cow<'_, str> {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) && !is_plain_number(cell) {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

/// `-12` or `-1.5`: digits, an optional leading minus and one optional
/// decimal point between digits; nothing a formula could hide in.
fn is_plain_number(cell: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = cell.strip_prefix('-').unwrap_or(cell);
    match unsigned.split_once('.') {
        Some((int, frac)) => digits(int) && digits(frac),
        None => digits(unsigned),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn formula_cells_are_neutralised_and_numbers_kept() {
        for (cell, shown) in [
            ("=HYPERLINK(\"http://evil\")", "'=HYPERLINK(\"http://evil\")"),
            ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "'\r=1"),
            ("-", "'-"),
            ("-1e5", "'-1e5"),
            ("-32602", "-32602"),
            ("-1.5", "-1.5"),
            ("alice", "alice"),
            ("a=b", "a=b"),
            ("", ""),
        ] {
            assert_eq!(neutralise(cell), shown, "{cell:?}");
        }
    }

    #[test]
    fn rows_are_quoted_as_rfc_4180_after_neutralising() {
        let mut w = Writer::new();
        w.row(["name", "code"]).unwrap();
        w.row(["=1+1, \"x\"", "-32602"]).unwrap();
        assert_eq!(w.finish().unwrap(), "name,code\n\"'=1+1, \"\"x\"\"\",-32602\n");
        let mut uneven = Writer::new();
        uneven.row(["a", "b"]).unwrap();
        assert!(uneven.row(["a"]).is_err());
    }
}
