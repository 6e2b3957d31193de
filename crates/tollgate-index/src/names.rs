//! The `names` dictionary, mirrored in memory both ways.

use std::collections::HashMap;

use rusqlite::Connection;

/// Ids of the strings seen so far, and the strings by id.
#[derive(Debug, Default)]
pub(crate) struct Names {
    ids: HashMap<String, i64>,
    texts: HashMap<i64, String>,
}

impl Names {
    pub(crate) fn load(conn: &Connection) -> rusqlite::Result<Names> {
        let mut names = Names::default();
        let mut stmt = conn.prepare("SELECT id, text FROM names")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (id, text) = row?;
            names.ids.insert(text.clone(), id);
            names.texts.insert(id, text);
        }
        Ok(names)
    }

    /// The id of `text`, if it was ever indexed.
    pub(crate) fn id(&self, text: &str) -> Option<i64> {
        self.ids.get(text).copied()
    }

    /// The text of `id`.
    pub(crate) fn text(&self, id: Option<i64>) -> Option<&str> {
        id.and_then(|id| self.texts.get(&id)).map(String::as_str)
    }

    /// The id of `text`, adding it (in `conn`'s open transaction) when new.
    pub(crate) fn intern(&mut self, conn: &Connection, text: &str) -> rusqlite::Result<i64> {
        if let Some(id) = self.ids.get(text) {
            return Ok(*id);
        }
        conn.prepare_cached("INSERT INTO names (text) VALUES (?1)")?
            .execute([text])?;
        let id = conn.last_insert_rowid();
        self.ids.insert(text.to_owned(), id);
        self.texts.insert(id, text.to_owned());
        Ok(id)
    }

    /// Forget names added by a transaction that was rolled back.
    pub(crate) fn reload(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        *self = Names::load(conn)?;
        Ok(())
    }
}
