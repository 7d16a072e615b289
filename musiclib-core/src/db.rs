//! The database: one body of portable SQL run through `sqlx::Any` on SQLite (the embedded
//! default) or PostgreSQL (scale-out). Dialect differences are confined to this module: the
//! database clock, write-transaction start, and job claiming (in `jobs::queue`).
//!
//! Portable column types only: TEXT, 64-bit integers (flags as 0/1) and doubles. Queries use
//! `$1`-style placeholders, which both drivers accept.

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Executor};

use crate::{Error, Result};

/// A transaction on the library database.
pub type Tx = sqlx::Transaction<'static, sqlx::Any>;

/// Which SQL engine a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite in WAL mode: the embedded default.
    Sqlite,
    /// PostgreSQL: the scale-out engine.
    Postgres,
}

/// A pool of connections to the library database.
#[derive(Clone, Debug)]
pub struct Db {
    pool: AnyPool,
    backend: Backend,
}

static SQLITE_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

impl Db {
    /// Connects to `url` (`sqlite://path` or `postgres://…`). A SQLite file and its parent
    /// directory are created when missing.
    pub async fn connect(url: &str) -> Result<Db> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            return Err(Error::invalid(
                "DATABASE_URL",
                "must start with sqlite:// or postgres://",
            ));
        };
        let url = match backend {
            Backend::Sqlite => prepare_sqlite_url(url)?,
            Backend::Postgres => url.to_string(),
        };
        let options = AnyConnectOptions::from_str(&url)
            .map_err(|error| Error::invalid("DATABASE_URL", error.to_string()))?
            .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(1))
            .log_statements(tracing::log::LevelFilter::Trace);
        let pool_options = match backend {
            // SQLite serialises writers; a handful of connections covers concurrent readers.
            Backend::Sqlite => AnyPoolOptions::new()
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
                }),
            Backend::Postgres => AnyPoolOptions::new().max_connections(16),
        };
        let pool = pool_options
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        Ok(Db { pool, backend })
    }

    /// Applies the embedded migrations of this backend's dialect.
    pub async fn migrate(&self) -> Result<()> {
        match self.backend {
            Backend::Sqlite => SQLITE_MIGRATOR.run(&self.pool).await?,
            Backend::Postgres => POSTGRES_MIGRATOR.run(&self.pool).await?,
        }
        Ok(())
    }

    /// The connection pool.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The SQL engine.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Begins a transaction that will write. On SQLite it takes the write lock up front
    /// (`BEGIN IMMEDIATE`), so two writers queue on the busy timeout instead of one failing
    /// with "database is locked" when it upgrades from reading to writing.
    pub async fn begin(&self) -> Result<Tx> {
        Ok(match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool.begin().await?,
        })
    }

    /// SQL expression for "now" on the database clock, in microseconds since the epoch.
    pub fn now(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "CAST(unixepoch('subsec') * 1000000 AS INTEGER)",
            Backend::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)",
        }
    }

    /// Substitutes `{now}` in a query with [`Db::now`].
    pub fn sql(&self, query: &str) -> String {
        query.replace("{now}", self.now())
    }

    /// The database clock's current time.
    pub async fn clock(&self) -> Result<crate::Timestamp> {
        let micros: i64 = sqlx::query_scalar(&format!("SELECT {}", self.now()))
            .fetch_one(&self.pool)
            .await?;
        Ok(crate::Timestamp::from_micros(micros))
    }

    /// Checks the database answers.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes every connection; later calls fail as unavailable.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Adds `mode=rwc` so a missing file is created, and creates the parent directory.
fn prepare_sqlite_url(url: &str) -> Result<String> {
    let rest = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:");
    let (path, params) = match rest.split_once('?') {
        Some((path, params)) => (path, Some(params)),
        None => (rest, None),
    };
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

/// True when `error` is a unique-constraint violation (either dialect).
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db_error) => {
            db_error.is_unique_violation()
                || db_error.code().as_deref() == Some("2067")
                || db_error.code().as_deref() == Some("1555")
        }
        _ => false,
    }
}

/// Converts a 0/1 column into a bool.
pub(crate) fn flag(value: i64) -> bool {
    value != 0
}

/// `$first, $first+1, …` for `count` bound values (an `IN (…)` list or a row of `VALUES`).
pub(crate) fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which of `ids` are tracks of this server (one query per 500 ids), on any connection or
/// transaction.
pub(crate) async fn known_tracks(
    conn: &mut sqlx::AnyConnection,
    ids: &[&str],
) -> crate::Result<std::collections::HashSet<String>> {
    let unique: Vec<&str> = ids
        .iter()
        .copied()
        .collect::<std::collections::HashSet<_>>()
        .into_iter()
        .collect();
    let mut known = std::collections::HashSet::new();
    for chunk in unique.chunks(500) {
        let query = format!(
            "SELECT id FROM tracks WHERE id IN ({})",
            placeholders(1, chunk.len())
        );
        let mut select = sqlx::query_scalar::<_, String>(&query);
        for id in chunk {
            select = select.bind(*id);
        }
        known.extend(select.fetch_all(&mut *conn).await?);
    }
    Ok(known)
}
