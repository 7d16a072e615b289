//! [`Sql`]: the one way statements are built and run. Text and bound values travel together,
//! so a placeholder never drifts from its value:
//!
//! ```text
//! db.sql("UPDATE tracks SET title = $2, updated_at = {now} WHERE id = $1")
//!     .bind(&id).bind(title).execute(&mut *tx).await?;
//!
//! let mut select = db.sql("SELECT id FROM tracks WHERE genre = ");
//! select.push_bind(genre).push(" AND id IN (").push_list(ids).push(")");
//! ```
//!
//! `{now}` anywhere in the text is the database clock ([`super::DatabaseKind::now`]).

use sqlx::any::{AnyArguments, AnyRow};
use sqlx::Arguments as _;

use super::DatabaseKind;
use crate::domain::{Page, Paged};
use crate::{Error, Result};

/// Most values one statement binds in an `IN` list (reads of many ids go in chunks of it).
pub(crate) const CHUNK: usize = 500;

/// A value bound to a placeholder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Text(Option<String>),
    Int(Option<i64>),
    Float(Option<f64>),
}

impl From<&str> for Arg {
    fn from(value: &str) -> Arg {
        Arg::Text(Some(value.to_string()))
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Arg {
        Arg::Text(Some(value))
    }
}

impl From<&String> for Arg {
    fn from(value: &String) -> Arg {
        Arg::Text(Some(value.clone()))
    }
}

impl From<Option<&str>> for Arg {
    fn from(value: Option<&str>) -> Arg {
        Arg::Text(value.map(str::to_string))
    }
}

impl From<Option<String>> for Arg {
    fn from(value: Option<String>) -> Arg {
        Arg::Text(value)
    }
}

impl From<&Option<String>> for Arg {
    fn from(value: &Option<String>) -> Arg {
        Arg::Text(value.clone())
    }
}

impl From<i64> for Arg {
    fn from(value: i64) -> Arg {
        Arg::Int(Some(value))
    }
}

impl From<Option<i64>> for Arg {
    fn from(value: Option<i64>) -> Arg {
        Arg::Int(value)
    }
}

impl From<f64> for Arg {
    fn from(value: f64) -> Arg {
        Arg::Float(Some(value))
    }
}

impl From<Option<f64>> for Arg {
    fn from(value: Option<f64>) -> Arg {
        Arg::Float(value)
    }
}

/// Flags are stored as 0/1.
impl From<bool> for Arg {
    fn from(value: bool) -> Arg {
        Arg::Int(Some(i64::from(value)))
    }
}

/// Ids bind as their text.
macro_rules! id_args {
    ($($id:ty),+) => {$(
        impl From<&$id> for Arg {
            fn from(value: &$id) -> Arg {
                Arg::Text(Some(value.as_str().to_string()))
            }
        }
        impl From<Option<&$id>> for Arg {
            fn from(value: Option<&$id>) -> Arg {
                Arg::Text(value.map(|id| id.as_str().to_string()))
            }
        }
    )+};
}
id_args!(
    crate::TrackId,
    crate::AlbumId,
    crate::ArtistId,
    crate::UserId,
    crate::JobId,
    crate::DownloadId,
    crate::PlaylistId,
    crate::PodcastId,
    crate::EpisodeId
);

/// A statement and its bound values.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    kind: DatabaseKind,
    text: String,
    args: Vec<Arg>,
    /// Conditions written by [`Sql::push_condition`] so far.
    conditions: usize,
}

/// The values of one row of a multi-row `VALUES` ([`Sql::push_values`]).
#[derive(Debug)]
pub(crate) struct Row<'a> {
    sql: &'a mut Sql,
    first: bool,
}

impl Row<'_> {
    /// Binds the next value of the row.
    pub(crate) fn bind(&mut self, value: impl Into<Arg>) -> &mut Self {
        self.separate();
        self.sql.push_bind(value);
        self
    }

    /// Writes SQL text (a literal, a function call) as the next value of the row.
    pub(crate) fn raw(&mut self, text: &str) -> &mut Self {
        self.separate();
        self.sql.push(text);
        self
    }

    fn separate(&mut self) {
        if !self.first {
            self.sql.text.push_str(", ");
        }
        self.first = false;
    }
}

impl Sql {
    /// `text` (with `{now}` replaced) and no values yet.
    pub(crate) fn new(kind: DatabaseKind, text: &str) -> Sql {
        let mut sql = Sql {
            kind,
            text: String::with_capacity(text.len() + 64),
            args: Vec::new(),
            conditions: 0,
        };
        sql.push(text);
        sql
    }

    /// Appends text (with `{now}` replaced).
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        if text.contains("{now}") {
            self.text.push_str(&text.replace("{now}", self.kind.now()));
        } else {
            self.text.push_str(text);
        }
        self
    }

    /// Starts the next condition of a `WHERE` clause: ` WHERE ` the first time, ` AND `
    /// after.
    pub(crate) fn push_condition(&mut self) -> &mut Self {
        self.text.push_str(if self.conditions == 0 {
            " WHERE "
        } else {
            " AND "
        });
        self.conditions += 1;
        self
    }

    /// A statement made of `head` (text without placeholders) followed by this one: one
    /// filter shared by a count and a page, say.
    pub(crate) fn prefixed(&self, head: &str) -> Sql {
        let mut sql = Sql::new(self.kind, head);
        sql.text.push_str(&self.text);
        sql.args = self.args.clone();
        sql
    }

    /// Binds the value of the next placeholder written in the text (`$1`, then `$2`, …).
    pub(crate) fn bind(mut self, value: impl Into<Arg>) -> Sql {
        self.args.push(value.into());
        self
    }

    /// Adds a value and returns its placeholder, for text that names it (once or more).
    pub(crate) fn arg(&mut self, value: impl Into<Arg>) -> String {
        self.args.push(value.into());
        format!("${}", self.args.len())
    }

    /// Appends a placeholder bound to `value`.
    pub(crate) fn push_bind(&mut self, value: impl Into<Arg>) -> &mut Self {
        let placeholder = self.arg(value);
        self.text.push_str(&placeholder);
        self
    }

    /// Appends `$a, $b, …` bound to `values` (the inside of an `IN (…)`; at least one value
    /// is the caller's to ensure).
    pub(crate) fn push_list<V: Into<Arg>>(
        &mut self,
        values: impl IntoIterator<Item = V>,
    ) -> &mut Self {
        for (index, value) in values.into_iter().enumerate() {
            if index > 0 {
                self.text.push_str(", ");
            }
            self.push_bind(value);
        }
        self
    }

    /// Appends ` IN (…)` over `values` bound as one value ([`DatabaseKind::in_one_value`]).
    /// For a long list of ids: one placeholder is bound, and planned, in place of one each
    /// (sqlx finds each of 500 SQLite placeholders by name, and PostgreSQL plans 500
    /// parameters, for every page of 500).
    pub(crate) fn push_in<'a>(&mut self, values: impl IntoIterator<Item = &'a str>) -> &mut Self {
        let values: Vec<&str> = values.into_iter().collect();
        let placeholder = format!("${}", self.args.len() + 1);
        let (text, value) = self.kind.in_one_value(&placeholder, &values);
        self.args.push(value.into());
        self.text.push_str(&text);
        self
    }

    /// Appends `(…), (…)`: one parenthesised row per item, its values written by `row`.
    pub(crate) fn push_values<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut row: impl FnMut(&mut Row<'_>, T),
    ) -> &mut Self {
        for (index, item) in items.into_iter().enumerate() {
            if index > 0 {
                self.text.push_str(", ");
            }
            self.text.push('(');
            row(
                &mut Row {
                    sql: self,
                    first: true,
                },
                item,
            );
            self.text.push(')');
        }
        self
    }

    /// The statement's text, for tests and logs.
    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The statement's text and values, ready for sqlx. The text is assembled only from
    /// fixed fragments; every value travels as a bound argument, which is what makes
    /// asserting it safe.
    fn into_query(self) -> Result<(sqlx::AssertSqlSafe<String>, AnyArguments)> {
        let mut arguments = AnyArguments::default();
        for arg in &self.args {
            match arg {
                Arg::Text(value) => arguments.add(value.as_deref()),
                Arg::Int(value) => arguments.add(*value),
                Arg::Float(value) => arguments.add(*value),
            }
            .map_err(|error| Error::internal_with("cannot bind a statement's value", error))?;
        }
        Ok((sqlx::AssertSqlSafe(self.text), arguments))
    }

    /// Runs the statement; returns the number of rows it changed.
    pub(crate) async fn execute<'c, E>(self, executor: E) -> Result<u64>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let (text, arguments) = self.into_query()?;
        let done = sqlx::query_with(text, arguments).execute(executor).await?;
        Ok(done.rows_affected())
    }

    /// Every row, as `O`.
    pub(crate) async fn fetch_all<'c, O, E>(self, executor: E) -> Result<Vec<O>>
    where
        O: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let (text, arguments) = self.into_query()?;
        Ok(sqlx::query_as_with(text, arguments)
            .fetch_all(executor)
            .await?)
    }

    /// Every row, as `O`, one at a time (for reads too large to hold at once).
    pub(crate) fn fetch<'e, O>(
        self,
        pool: &'e sqlx::AnyPool,
    ) -> futures::stream::BoxStream<'e, Result<O>>
    where
        O: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin + 'e,
    {
        use futures::{StreamExt, TryStreamExt};
        match self.into_query() {
            Ok((text, arguments)) => sqlx::query_as_with(text, arguments)
                .fetch(pool)
                .map_err(crate::Error::from)
                .boxed(),
            Err(error) => futures::stream::once(async { Err(error) }).boxed(),
        }
    }

    /// The first row, if any.
    pub(crate) async fn fetch_optional<'c, O, E>(self, executor: E) -> Result<Option<O>>
    where
        O: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let (text, arguments) = self.into_query()?;
        Ok(sqlx::query_as_with(text, arguments)
            .fetch_optional(executor)
            .await?)
    }

    /// The first column of the first row (which must exist).
    pub(crate) async fn fetch_scalar<'c, T, E>(self, executor: E) -> Result<T>
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any> + Send + Unpin,
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let (text, arguments) = self.into_query()?;
        Ok(sqlx::query_scalar_with(text, arguments)
            .fetch_one(executor)
            .await?)
    }

    /// The first column of the first row, if there is a row.
    pub(crate) async fn fetch_scalar_optional<'c, T, E>(self, executor: E) -> Result<Option<T>>
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any> + Send + Unpin,
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let (text, arguments) = self.into_query()?;
        Ok(sqlx::query_scalar_with(text, arguments)
            .fetch_optional(executor)
            .await?)
    }

    /// One page of rows and the count of them all: this statement is the filter (`WHERE …`
    /// or nothing), `count` and `select` the heads it follows, `order` the `ORDER BY` list.
    pub(crate) async fn fetch_page<O, T>(
        &self,
        pool: &sqlx::AnyPool,
        count: &str,
        select: &str,
        order: &str,
        page: Page,
    ) -> Result<Paged<T>>
    where
        O: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin + Into<T>,
    {
        let total: i64 = self.prefixed(count).fetch_scalar(pool).await?;
        let mut rows = self.prefixed(select);
        rows.push(&format!(
            " ORDER BY {order} LIMIT {} OFFSET {}",
            page.limit(),
            page.offset()
        ));
        let rows: Vec<O> = rows.fetch_all(pool).await?;
        Ok(Paged {
            items: rows.into_iter().map(Into::into).collect(),
            total,
            page,
        })
    }

    /// As [`Sql::fetch_page`], with the offset skipped over keys only: `keys` heads the
    /// statement that selects the key (`SELECT t.id FROM tracks t`, with the joins the filter
    /// and `order` need), and only the page's rows are read in full (`select` ends where
    /// `WHERE {key} IN (…)` may follow). A deep page then walks the sort's index without
    /// reading, or computing the columns of, the rows it skips.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn fetch_page_by_key<O, T>(
        &self,
        pool: &sqlx::AnyPool,
        count: &str,
        keys: &str,
        select: &str,
        key: &str,
        order: &str,
        page: Page,
    ) -> Result<Paged<T>>
    where
        O: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin + Into<T>,
    {
        let total = self.prefixed(count).fetch_scalar::<i64, _>(pool);
        let rows = self.fetch_rows_by_key::<O>(pool, keys, select, key, order, page);
        let (total, rows) = futures::try_join!(total, rows)?;
        Ok(Paged {
            items: rows.into_iter().map(Into::into).collect(),
            total,
            page,
        })
    }

    /// The rows of [`Sql::fetch_page_by_key`], without the count.
    pub(crate) async fn fetch_rows_by_key<O>(
        &self,
        pool: &sqlx::AnyPool,
        keys: &str,
        select: &str,
        key: &str,
        order: &str,
        page: Page,
    ) -> Result<Vec<O>>
    where
        O: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
    {
        let mut rows = self.prefixed(&format!("{select} WHERE {key} IN ({keys}"));
        rows.push(&format!(
            " ORDER BY {order} LIMIT {} OFFSET {}) ORDER BY {order}",
            page.limit(),
            page.offset()
        ));
        rows.fetch_all::<O, _>(pool).await
    }

    /// The statement's text and values, as a key for a cache of its results.
    pub(crate) fn cache_key(&self) -> String {
        format!("{:?} {:?}", self.text, self.args)
    }

    /// The first column of every row.
    pub(crate) async fn fetch_scalars<'c, T, E>(self, executor: E) -> Result<Vec<T>>
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any> + Send + Unpin,
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let (text, arguments) = self.into_query()?;
        Ok(sqlx::query_scalar_with(text, arguments)
            .fetch_all(executor)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_one_bound_value() {
        let mut sqlite = Sql::new(DatabaseKind::Sqlite, "SELECT id FROM t WHERE id");
        sqlite.push_in(["a", "b\"c"]);
        assert_eq!(
            sqlite.text(),
            "SELECT id FROM t WHERE id IN (SELECT value FROM json_each($1))"
        );
        assert_eq!(sqlite.args, [Arg::from(r#"["a","b\"c"]"#)]);
        let mut postgres = Sql::new(DatabaseKind::Postgres, "SELECT id FROM t WHERE id");
        postgres.push_in(["a", r#"say "hi" \ o"#, "{x,y}"]);
        assert_eq!(
            postgres.text(),
            "SELECT id FROM t WHERE id = ANY(CAST($1 AS TEXT[]))"
        );
        assert_eq!(
            postgres.args,
            [Arg::from(r#"{"a","say \"hi\" \\ o","{x,y}"}"#)]
        );
    }

    #[test]
    fn placeholders_follow_the_values() {
        let mut sql = Sql::new(DatabaseKind::Sqlite, "SELECT id FROM tracks WHERE genre = ");
        sql.push_bind("rock")
            .push(" AND id IN (")
            .push_list(["a", "b"])
            .push(")");
        assert_eq!(
            sql.text(),
            "SELECT id FROM tracks WHERE genre = $1 AND id IN ($2, $3)"
        );
        let mut insert = Sql::new(DatabaseKind::Postgres, "INSERT INTO t (a, b, c) VALUES ");
        insert.push_values([(1_i64, "x"), (2, "y")], |row, (a, b)| {
            row.bind(a).bind(b).raw("0");
        });
        assert_eq!(
            insert.text(),
            "INSERT INTO t (a, b, c) VALUES ($1, $2, 0), ($3, $4, 0)"
        );
        assert_eq!(insert.args.len(), 4);

        let mut filter = Sql::new(DatabaseKind::Sqlite, "");
        filter.push_condition().push("a = ").push_bind(1_i64);
        filter.push_condition().push("b = ").push_bind(2_i64);
        let count = filter.prefixed("SELECT COUNT(*) FROM t");
        assert_eq!(
            count.text(),
            "SELECT COUNT(*) FROM t WHERE a = $1 AND b = $2"
        );
        assert_eq!(count.args, filter.args);
    }

    #[test]
    fn now_is_the_database_clock() {
        let sql = Sql::new(DatabaseKind::Sqlite, "UPDATE x SET at = {now}");
        assert_eq!(
            sql.text(),
            format!("UPDATE x SET at = {}", DatabaseKind::Sqlite.now())
        );
    }
}
