//! The database: one body of portable SQL run through `sqlx::Any` on SQLite (the embedded
//! default) or PostgreSQL (scale-out). Private to the crate: services reach it through
//! [`Db`], and nothing of sqlx appears in the crate's API.
//!
//! - [`dialect`]: everything the two engines do differently (the clock, row locks, write
//!   transactions, text search, job claiming, upserts). No other module names an engine.
//! - [`sql`]: [`Sql`], the one builder of statements: `{now}`, placeholders, bound values,
//!   `IN` lists, multi-row `VALUES`, chunked reads.
//! - `schema` (tests): both migration sets produce the same tables, columns and indexes.
//!
//! Portable column types only: TEXT, 64-bit integers (flags as 0/1) and doubles. Statements
//! use `$1`-style placeholders, which both drivers accept.

mod dialect;
#[cfg(test)]
mod schema;
mod sql;

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Connection, Executor};

pub(crate) use dialect::like_pattern;
pub use dialect::DatabaseKind;
pub(crate) use sql::{Sql, CHUNK};

use crate::{Error, Result};

/// A transaction on the library database. Services take row locks with [`Db::lock`] first and
/// stamp sync changes last (ARCHITECTURE.md, "Sync").
pub(crate) type Tx = sqlx::Transaction<'static, sqlx::Any>;

/// A pool of connections to the library database.
#[derive(Clone, Debug)]
pub(crate) struct Db {
    pool: AnyPool,
    kind: DatabaseKind,
}

/// How long a request waits for a PostgreSQL connection (see [`Db::connect`]).
const POSTGRES_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

static SQLITE_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The schema this build makes: its newest migration's number (both dialects number theirs
/// alike).
pub fn schema_version() -> i64 {
    SQLITE_MIGRATOR
        .iter()
        .map(|migration| migration.version)
        .max()
        .unwrap_or(0)
}

/// Where a database stands against this build's migrations (`musiclib migrate --check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    /// The newest migration applied to the database (0 for an empty one).
    pub applied: i64,
    /// What this build would apply, in order: number and description.
    pub pending: Vec<(i64, String)>,
    /// Migrations the database has and this build does not know (a newer release made it):
    /// this build must not open it.
    pub unknown: Vec<i64>,
}

/// Reads where the database at `url` stands, changing nothing in it (a SQLite file that does
/// not exist yet is created empty, as opening it for the server would).
pub async fn schema_status(url: &str) -> Result<SchemaStatus> {
    let db = Db::connect(url).await?;
    let migrator = match db.kind {
        DatabaseKind::Sqlite => &SQLITE_MIGRATOR,
        DatabaseKind::Postgres => &POSTGRES_MIGRATOR,
    };
    let exists_query = match db.kind {
        DatabaseKind::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
        }
        DatabaseKind::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
        }
    };
    let exists: i64 = db.sql(exists_query).fetch_scalar(db.pool()).await?;
    let applied: Vec<i64> = if exists > 0 {
        db.sql("SELECT version FROM _sqlx_migrations WHERE success = TRUE ORDER BY version")
            .fetch_all(db.pool())
            .await?
            .into_iter()
            .map(|(version,): (i64,)| version)
            .collect()
    } else {
        Vec::new()
    };
    let known: std::collections::BTreeSet<i64> = migrator
        .iter()
        .filter(|migration| !migration.migration_type.is_down_migration())
        .map(|migration| migration.version)
        .collect();
    let status = SchemaStatus {
        applied: applied.iter().copied().max().unwrap_or(0),
        pending: migrator
            .iter()
            .filter(|migration| {
                !migration.migration_type.is_down_migration()
                    && !applied.contains(&migration.version)
            })
            .map(|migration| (migration.version, migration.description.to_string()))
            .collect(),
        unknown: applied
            .iter()
            .copied()
            .filter(|version| !known.contains(version))
            .collect(),
    };
    db.pool.close().await;
    Ok(status)
}

/// Writes a consistent copy of the SQLite database at `url` to the new file `dest`
/// (`VACUUM INTO`: one read transaction, while the server keeps writing), and answers the
/// blob keys of the tracks' audio in that copy (what a backup of the media must hold).
pub async fn sqlite_snapshot(url: &str, dest: &std::path::Path) -> Result<Vec<String>> {
    if DatabaseKind::of_url(url)? != DatabaseKind::Sqlite {
        return Err(Error::invalid("DATABASE_URL", "is not a SQLite database"));
    }
    let db = Db::connect(url).await?;
    let path = dest
        .to_str()
        .ok_or_else(|| Error::invalid("dir", "must be a UTF-8 path"))?;
    db.sql("VACUUM INTO $1")
        .bind(path)
        .execute(db.pool())
        .await?;
    db.pool.close().await;
    let copy = Db::connect(&format!("sqlite://{path}")).await?;
    let keys: Vec<String> = copy
        .sql("SELECT storage_uri FROM tracks WHERE storage_uri <> ''")
        .fetch_all(copy.pool())
        .await?
        .into_iter()
        .map(|(key,): (String,)| key)
        .collect();
    copy.pool.close().await;
    Ok(keys)
}

impl Db {
    /// Connects to `url` (`sqlite://path` or `postgres://…`). A SQLite file and its parent
    /// directory are created when missing.
    pub(crate) async fn connect(url: &str) -> Result<Db> {
        sqlx::any::install_default_drivers();
        let kind = DatabaseKind::of_url(url)?;
        let url = match kind {
            DatabaseKind::Sqlite => prepare_sqlite_url(url)?,
            DatabaseKind::Postgres => url.to_string(),
        };
        let options = AnyConnectOptions::from_str(&url)
            .map_err(|error| Error::invalid("DATABASE_URL", error.to_string()))?
            .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(1))
            .log_statements(tracing::log::LevelFilter::Trace);
        let pool_options = match kind {
            // SQLite serialises writers; a handful of connections covers concurrent readers.
            DatabaseKind::Sqlite => {
                AnyPoolOptions::new()
                    .max_connections(8)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            conn.execute(
                                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                         PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 15000;",
                            )
                            .await?;
                            Ok(())
                        })
                    })
            }
            // Statements are prepared once per connection; PostgreSQL's generic plan for a
            // prepared statement ignores the values bound, and for a range over an indexed
            // random key (the recommendation samples) it picks a bitmap scan and a sort, 20
            // times slower than the custom plan. Each execution is planned with its values.
            DatabaseKind::Postgres => {
                AnyPoolOptions::new()
                    .max_connections(16)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            conn.execute("SET plan_cache_mode = force_custom_plan")
                                .await?;
                            Ok(())
                        })
                    })
            }
        };
        // How long a request waits for a connection before it answers 503. A PostgreSQL that
        // is down (restarting, unreachable) refuses every new connection: a request must say
        // so within seconds, not hang. SQLite's connections are local and only ever wait for
        // each other.
        let acquire_timeout = match kind {
            DatabaseKind::Sqlite => Duration::from_secs(10),
            DatabaseKind::Postgres => POSTGRES_ACQUIRE_TIMEOUT,
        };
        let pool = pool_options
            .acquire_timeout(acquire_timeout)
            // A connection still in a transaction when it is handed out again is broken:
            // when SQLite fails a COMMIT for want of space ("database or disk is full") it
            // rolls the transaction back itself, the driver's own ROLLBACK then fails, and
            // the driver goes on counting a transaction, so every later BEGIN on that
            // connection fails. (The pool has just pinged it, so a rollback queued by a
            // dropped transaction has run.) Such a connection is closed; another is opened.
            .before_acquire(|conn, _| {
                Box::pin(async move {
                    let usable = !conn.is_in_transaction();
                    if !usable {
                        tracing::warn!("closing a database connection left inside a transaction");
                    }
                    Ok(usable)
                })
            })
            .connect_with(options)
            .await?;
        Ok(Db { pool, kind })
    }

    /// Applies the embedded migrations of this engine's dialect. Safe with several replicas:
    /// sqlx takes a lock around them.
    pub(crate) async fn migrate(&self) -> Result<()> {
        match self.kind {
            DatabaseKind::Sqlite => SQLITE_MIGRATOR.run(&self.pool).await?,
            DatabaseKind::Postgres => POSTGRES_MIGRATOR.run(&self.pool).await?,
        }
        Ok(())
    }

    /// The connection pool, as an executor of [`Sql`] statements.
    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The SQL engine.
    pub(crate) fn kind(&self) -> DatabaseKind {
        self.kind
    }

    /// A statement: `text` with `{now}` replaced by the database clock. Bind its `$n`
    /// placeholders in order with [`Sql::bind`], or build it further with [`Sql::push`] and
    /// [`Sql::push_bind`].
    pub(crate) fn sql(&self, text: &str) -> Sql {
        Sql::new(self.kind, text)
    }

    /// Begins a transaction that will write (see [`DatabaseKind::begin_write`]).
    pub(crate) async fn begin(&self) -> Result<Tx> {
        Ok(match self.kind.begin_write() {
            Some(statement) => self.pool.begin_with(statement).await?,
            None => self.pool.begin().await?,
        })
    }

    /// ` FOR UPDATE OF {alias}` where the engine locks rows (PostgreSQL), to append to a
    /// `SELECT` inside [`Db::begin`]'s transaction: the row stays locked until it ends, so
    /// what the transaction read cannot change under it. Nothing on SQLite, whose write
    /// transaction already holds the database's write lock.
    pub(crate) fn lock(&self, alias: &str) -> String {
        self.kind.lock_rows(alias)
    }

    /// The sync clock's committed value (see ARCHITECTURE.md, Sync): every change stamped at
    /// or below it has committed, and any track insert, change or deletion moves it.
    pub(crate) async fn sync_clock(&self) -> Result<i64> {
        self.sql("SELECT last_stamp FROM sync_clock WHERE id = 1")
            .fetch_scalar(self.pool())
            .await
    }

    /// Checks the database answers.
    pub(crate) async fn ping(&self) -> Result<()> {
        self.sql("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes every connection; later calls fail as unavailable.
    #[cfg(feature = "test-support")]
    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }
}

/// The file and the parameters of a `sqlite://PATH?…` URL.
fn sqlite_parts(url: &str) -> (&str, Option<&str>) {
    let rest = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:");
    match rest.split_once('?') {
        Some((path, params)) => (path, Some(params)),
        None => (rest, None),
    }
}

/// The database file a `sqlite://` URL names (`None` for an in-memory one).
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let (path, _) = sqlite_parts(url);
    (path != ":memory:" && !path.is_empty()).then(|| std::path::PathBuf::from(path))
}

/// Adds `mode=rwc` so a missing file is created, and creates the parent directory.
fn prepare_sqlite_url(url: &str) -> Result<String> {
    let (path, params) = sqlite_parts(url);
    if path != ":memory:" && !path.is_empty() {
        if let Some(parent) = std::path::Path::new(path).parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent).map_err(|error| Error::io(parent, error))?;
            }
        }
    }
    Ok(match params {
        Some(params) if params.contains("mode=") => url.to_string(),
        Some(_) => format!("{url}&mode=rwc"),
        None => format!("{url}?mode=rwc"),
    })
}

/// Converts a 0/1 column into a bool.
pub(crate) fn flag(value: i64) -> bool {
    value != 0
}

/// Tables whose rows can be named by id in a request ([`known_ids`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Tracks,
    Albums,
    Artists,
    Playlists,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Tracks => "tracks",
            Table::Albums => "albums",
            Table::Artists => "artists",
            Table::Playlists => "playlists",
        }
    }
}

/// Which of `ids` exist in `table`, read in chunks, on a connection of the pool or of a
/// transaction (`&mut **tx`).
pub(crate) async fn known_ids(
    conn: &mut sqlx::AnyConnection,
    kind: DatabaseKind,
    table: Table,
    ids: &[&str],
) -> Result<std::collections::HashSet<String>> {
    let unique: Vec<&str> = ids
        .iter()
        .copied()
        .collect::<std::collections::HashSet<_>>()
        .into_iter()
        .collect();
    let mut known = std::collections::HashSet::new();
    for chunk in unique.chunks(sql::CHUNK) {
        let mut select = Sql::new(
            kind,
            &format!("SELECT id FROM {} WHERE id IN (", table.name()),
        );
        select.push_list(chunk.iter().copied()).push(")");
        known.extend(select.fetch_scalars::<String, _>(&mut *conn).await?);
    }
    Ok(known)
}
