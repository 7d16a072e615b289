//! The dialect seam: every place SQLite and PostgreSQL differ, and nothing else. A statement
//! anywhere else in the crate is portable SQL; where it needs one of these pieces it asks
//! [`DatabaseKind`] for it.
//!
//! | piece | SQLite | PostgreSQL |
//! |---|---|---|
//! | the clock (`{now}`) | `unixepoch('subsec')` | `clock_timestamp()` |
//! | write transactions | `BEGIN IMMEDIATE` (the write lock up front) | `BEGIN` |
//! | row locks | none needed (one writer at a time) | `FOR UPDATE OF alias` |
//! | job claiming | the `UPDATE … RETURNING` alone | `FOR UPDATE SKIP LOCKED` in its subquery |
//! | track search | FTS5 trigram index (3+ characters) | `LIKE`, served by a pg_trgm index |
//! | upserts | `ON CONFLICT … DO UPDATE SET c = excluded.c` | the same |
//! | a long list as one value ([`super::Sql::push_in`]) | `IN (SELECT value FROM json_each($n))`, a JSON array | `= ANY(CAST($n AS TEXT[]))`, an array literal |
//! | an album's track count and length | two correlated subqueries | one `LATERAL` aggregate |

use crate::{Error, Result};

/// Which SQL engine the library runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseKind {
    /// SQLite in WAL mode: the embedded default.
    Sqlite,
    /// PostgreSQL: the scale-out engine.
    Postgres,
}

impl DatabaseKind {
    /// The columns `track_count` and `duration_ms` of the album `al`, and the join they need
    /// (empty for none). SQLite has no `LATERAL`: two correlated subqueries, each a walk of
    /// the album's tracks in `tracks_album`. PostgreSQL walks them once.
    pub(crate) fn album_tally(self) -> (&'static str, &'static str) {
        match self {
            DatabaseKind::Sqlite => (
                "(SELECT COUNT(*) FROM tracks t WHERE t.album_id = al.id) AS track_count,
    (SELECT CAST(COALESCE(SUM(t.duration_ms), 0) AS BIGINT) FROM tracks t WHERE t.album_id = al.id) AS duration_ms",
                "",
            ),
            DatabaseKind::Postgres => (
                "tally.track_count, tally.duration_ms",
                "
    CROSS JOIN LATERAL (SELECT COUNT(*) AS track_count,
        CAST(COALESCE(SUM(t.duration_ms), 0) AS BIGINT) AS duration_ms
        FROM tracks t WHERE t.album_id = al.id) tally",
            ),
        }
    }

    /// `IN` over a list of texts bound as one value (at `placeholder`), and that value:
    /// a JSON array read by `json_each` on SQLite, a text array on PostgreSQL.
    pub(crate) fn in_one_value(self, placeholder: &str, values: &[&str]) -> (String, String) {
        match self {
            DatabaseKind::Sqlite => (
                format!(" IN (SELECT value FROM json_each({placeholder}))"),
                serde_json::to_string(values).expect("strings serialize"),
            ),
            DatabaseKind::Postgres => {
                // An array literal: every element quoted, `"` and `\` escaped.
                let mut literal = String::from("{");
                for (index, value) in values.iter().enumerate() {
                    if index > 0 {
                        literal.push(',');
                    }
                    literal.push('"');
                    for character in value.chars() {
                        if matches!(character, '"' | '\\') {
                            literal.push('\\');
                        }
                        literal.push(character);
                    }
                    literal.push('"');
                }
                literal.push('}');
                (format!(" = ANY(CAST({placeholder} AS TEXT[]))"), literal)
            }
        }
    }

    /// The engine's name (`sqlite`, `postgres`).
    pub fn as_str(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "sqlite",
            DatabaseKind::Postgres => "postgres",
        }
    }

    /// The engine of a connection URL.
    pub fn of_url(url: &str) -> Result<DatabaseKind> {
        if url.starts_with("sqlite:") {
            Ok(DatabaseKind::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(DatabaseKind::Postgres)
        } else {
            Err(Error::invalid(
                "DATABASE_URL",
                "must start with sqlite:// or postgres://",
            ))
        }
    }

    /// SQL expression for "now" on the database clock, in microseconds since the epoch.
    pub(crate) fn now(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "CAST(unixepoch('subsec') * 1000000 AS INTEGER)",
            DatabaseKind::Postgres => {
                "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)"
            }
        }
    }

    /// The statement that begins a write transaction, when not a plain `BEGIN`. On SQLite it
    /// takes the write lock up front (`BEGIN IMMEDIATE`), so two writers queue on the busy
    /// timeout instead of one failing with "database is locked" when it upgrades from reading
    /// to writing.
    pub(crate) fn begin_write(self) -> Option<&'static str> {
        match self {
            DatabaseKind::Sqlite => Some("BEGIN IMMEDIATE"),
            DatabaseKind::Postgres => None,
        }
    }

    /// The clause that locks the rows a `SELECT` reads (of table alias `alias`) until the
    /// transaction ends. PostgreSQL runs READ COMMITTED: without it, a row read, decided on,
    /// then written back may have been changed meanwhile by another transaction, whose change
    /// the write would silently undo.
    pub(crate) fn lock_rows(self, alias: &str) -> String {
        match self {
            DatabaseKind::Sqlite => String::new(),
            DatabaseKind::Postgres => format!(" FOR UPDATE OF {alias}"),
        }
    }

    /// `tracks t`, read through `tracks_id_album` (each track's album and length by id) when
    /// the query needs only those columns. SQLite, without statistics, takes the primary
    /// key's unique index for an equality on `id` and then reads the track's row, twice the
    /// work; PostgreSQL chooses the covering index itself.
    pub(crate) fn tracks_by_id_covered(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "tracks t INDEXED BY tracks_id_album",
            DatabaseKind::Postgres => "tracks t",
        }
    }

    /// The `FROM` list of albums by album artist (`Catalog::albums_by_artist`), aliases `ar`
    /// and `al`, with `al.title_key` and `al.id`, for an `ORDER BY` of the artists' name
    /// index and then each one's albums. SQLite joins in the order written, artists first
    /// (its plan: their index, then `albums_artist` per artist). PostgreSQL would hash every
    /// album and sort them all; the lateral form gives it each artist's albums already in
    /// title order, so it walks both indexes and sorts only within an artist.
    pub(crate) fn albums_under_artists(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "artists ar CROSS JOIN albums al ON al.artist_id = ar.id",
            DatabaseKind::Postgres => {
                "artists ar CROSS JOIN LATERAL (SELECT a.id, a.title_key FROM albums a
                 WHERE a.artist_id = ar.id ORDER BY a.title_key, a.id) al"
            }
        }
    }

    /// The clause that makes concurrent claimers skip each other's rows instead of waiting
    /// (job claiming). SQLite runs one writer at a time: the `UPDATE` is atomic on its own.
    pub(crate) fn skip_locked(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "",
            DatabaseKind::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// How the library search finds tracks whose `search_text` contains `key` (a name key):
    /// the condition on alias `t` (with `JOIN`s first) and the value to bind to it.
    pub(crate) fn track_search(self, key: &str) -> (&'static str, String) {
        if self == DatabaseKind::Sqlite && key.chars().count() >= 3 {
            // The FTS5 trigram index, where a quoted phrase matches any substring of three
            // characters or more.
            (
                "JOIN track_search_ids m ON m.track_id = t.id
                 WHERE m.seq IN (SELECT rowid FROM tracks_search WHERE tracks_search MATCH $1)",
                format!("\"{}\"", key.replace('"', "\"\"")),
            )
        } else {
            // LIKE, which PostgreSQL's trigram index serves (and short patterns anywhere).
            ("WHERE t.search_text LIKE $1 ESCAPE '\\'", like_pattern(key))
        }
    }

    /// Statements that rebuild the library search index from `tracks.search_text`:
    /// SQLite's FTS5 table is refilled; PostgreSQL's trigram index is kept by every
    /// transaction and needs nothing.
    pub(crate) fn rebuild_track_search(self) -> &'static [&'static str] {
        match self {
            DatabaseKind::Sqlite => &[
                "DELETE FROM tracks_search",
                "INSERT INTO track_search_ids (track_id)
                 SELECT id FROM tracks WHERE id NOT IN (SELECT track_id FROM track_search_ids)",
                "INSERT INTO tracks_search (rowid, search_text)
                 SELECT m.seq, t.search_text FROM tracks t JOIN track_search_ids m ON m.track_id = t.id",
            ],
            DatabaseKind::Postgres => &[],
        }
    }

    /// `ON CONFLICT (conflict) DO UPDATE SET c = excluded.c` for each column of `update`
    /// (an insert that replaces those columns of the existing row).
    pub(crate) fn upsert(self, conflict: &str, update: &[&str]) -> String {
        let set: Vec<String> = update
            .iter()
            .map(|column| format!("{column} = excluded.{column}"))
            .collect();
        format!("ON CONFLICT ({conflict}) DO UPDATE SET {}", set.join(", "))
    }
}

/// A `LIKE … ESCAPE '\'` pattern matching `needle` anywhere (`%`, `_` and `\` escaped).
pub(crate) fn like_pattern(needle: &str) -> String {
    let mut pattern = String::with_capacity(needle.len() + 2);
    pattern.push('%');
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_pattern_escapes_wildcards() {
        assert_eq!(like_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }

    #[test]
    fn upserts_replace_the_named_columns() {
        assert_eq!(
            DatabaseKind::Postgres.upsert("user_id, client", &["track_id", "updated_at"]),
            "ON CONFLICT (user_id, client) DO UPDATE SET track_id = excluded.track_id, updated_at = excluded.updated_at"
        );
    }
}
