//! Aligned plain-text tables for the CLI's human formats (`usage`,
//! `catalog show`), on comfy-table: no borders, two spaces between
//! columns, text left and numbers right, nothing cut. `audit query`'s table
//! streams a trail of any length line by line, so it keeps fixed widths
//! instead (`render`).

use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table, presets};

/// `rows` under `header`, the columns in `right` aligned right.
pub(crate) fn aligned(header: &[String], rows: &[Vec<String>], right: &[usize]) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header)
        .add_rows(rows);
    for (i, column) in table.column_iter_mut().enumerate() {
        column.set_padding((0, 2));
        column.set_constraint(ColumnConstraint::ContentWidth);
        if right.contains(&i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_text_left_numbers_right() {
        let header = ["team".to_owned(), "calls".to_owned()];
        let rows = vec![
            vec!["payments".to_owned(), "7".to_owned()],
            vec!["search".to_owned(), "1250".to_owned()],
        ];
        assert_eq!(
            aligned(&header, &rows, &[1]),
            "team      calls\npayments      7\nsearch     1250\n"
        );
    }
}
