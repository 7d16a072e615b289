//! The crate-wide error type. Adapters match on [`ErrorKind`], never on variants, so a new
//! variant touches this file only. Every variant that wraps a failure keeps it as its
//! `source`, so logs and job records show the whole chain ([`crate::error_chain`]).

use std::path::PathBuf;
use std::time::Duration;

/// Result alias used across musiclib-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure an [`Error`] is, for adapters to map onto their wire codes.
///
/// Exhaustive on purpose: a new kind breaks every adapter's build until it is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The addressed thing does not exist (or is not visible to the caller).
    NotFound,
    /// The request clashes with existing state (a taken name, a stale version).
    Conflict,
    /// The input is malformed or breaks a rule; `field` names what is wrong.
    InvalidInput,
    /// The payload is larger than the configured limit.
    TooLarge,
    /// No valid credentials.
    Unauthenticated,
    /// Valid credentials, but not allowed.
    Forbidden,
    /// Too many attempts: refused until [`Error::retry_after_seconds`] have passed.
    RateLimited,
    /// The addressed thing existed and no longer does, for good (an expired or revoked
    /// share).
    Gone,
    /// A dependency (database, job queue, storage, transcoder) is unavailable.
    Unavailable,
    /// The server's disk (or its database) is full: nothing was stored.
    InsufficientStorage,
    /// The operation is deliberately not supported.
    NotSupported,
    /// A bug or an unexpected failure.
    Internal,
}

/// Every error musiclib-core returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A resource of kind `what` with id `id` was not found.
    #[error("{what} {id} not found")]
    NotFound {
        /// Kind of resource ("track", "album", ...).
        what: &'static str,
        /// The id that was looked up.
        id: String,
    },
    /// A uniqueness or version conflict.
    #[error("{0}")]
    Conflict(String),
    /// The track is a placeholder of a remote item: it has no audio until it is
    /// materialized.
    #[error("track {0} has no audio yet: it is a placeholder of a remote item; materialize it first (POST /api/v1/tracks/{0}/materialize)")]
    NotMaterialized(String),
    /// Invalid input; `field` names the offending field or parameter.
    #[error("{field}: {message}")]
    InvalidInput {
        /// Name of the field or parameter.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The payload exceeds `limit` bytes.
    #[error("payload exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The configured limit in bytes.
        limit: u64,
    },
    /// Something to fetch is larger than the configured limit (a remote item over
    /// `MAX_UPLOAD_BYTES`); the message says what and how large.
    #[error("{0}")]
    TooLargeItem(String),
    /// Missing or invalid credentials.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// Too many failed sign-ins from this account or address: sign-ins are refused, without
    /// checking the password, until `retry_after` has passed.
    #[error("too many failed sign-ins; retry in {} seconds", whole_seconds(*retry_after))]
    SignInThrottled {
        /// How long until a sign-in is checked again.
        retry_after: Duration,
    },
    /// The caller made too many of `what` lately (shares created in an hour): nothing was
    /// done; retry after `retry_after`.
    #[error("too many {what} lately; retry in {} seconds", whole_seconds(*retry_after))]
    TooMany {
        /// What there were too many of ("shares created in an hour").
        what: &'static str,
        /// When to retry.
        retry_after: Duration,
    },
    /// The addressed thing is gone for good (an expired or revoked share); the message says why.
    #[error("{0}")]
    Gone(String),
    /// The server is at its bound for this kind of work (password checks, live encodes):
    /// nothing was done; retry after `retry_after`.
    #[error("the server is busy with other {what}; retry in {} seconds", whole_seconds(*retry_after))]
    Busy {
        /// What there is too much of ("sign-ins", "live encodes").
        what: &'static str,
        /// When to retry.
        retry_after: Duration,
    },
    /// The job queue refused an enqueue.
    #[error("job queue unavailable")]
    QueueUnavailable(#[source] Box<Error>),
    /// A dependency is unavailable.
    #[error("{0}")]
    Unavailable(String),
    /// ffmpeg cannot be run, so renditions cannot be built (originals still stream).
    #[error("the transcoder (ffmpeg) is not available on this server")]
    TranscoderUnavailable,
    /// The operation is not supported.
    #[error("{0}")]
    NotSupported(String),
    /// A database error that has no domain meaning.
    #[error("database error")]
    Database(#[source] DatabaseError),
    /// A blob storage error.
    #[error("blob storage error at {key}")]
    Storage {
        /// The blob key involved.
        key: String,
        /// The underlying error.
        #[source]
        source: StorageError,
    },
    /// A filesystem error at `path`.
    #[error("i/o error at {path}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Work moved off the async runtime (a blocking task, a spawned task) panicked or was
    /// cancelled.
    #[error("the {what} task failed")]
    Task {
        /// What the task was doing.
        what: &'static str,
        /// How it ended.
        #[source]
        source: tokio::task::JoinError,
    },
    /// Anything else unexpected: what was being done, and the failure when there is one.
    #[error("{context}")]
    Internal {
        /// What failed, readable.
        context: String,
        /// The underlying error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

/// A database failure, opaque: the database driver is not part of this crate's API.
#[derive(Debug)]
pub struct DatabaseError(DatabaseFailure);

#[derive(Debug)]
enum DatabaseFailure {
    Query(sqlx::Error),
    Migration(sqlx::migrate::MigrateError),
}

impl std::fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            DatabaseFailure::Query(error) => error.fmt(f),
            DatabaseFailure::Migration(error) => write!(f, "migration failed: {error}"),
        }
    }
}

impl std::error::Error for DatabaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            DatabaseFailure::Query(error) => error.source(),
            DatabaseFailure::Migration(error) => error.source(),
        }
    }
}

impl DatabaseError {
    /// Whether the database could not be reached (as opposed to refusing a statement): no
    /// connection within the pool's timeout, a connection refused or dropped (a restart, a
    /// network cut), or a server saying it is shutting down or starting.
    fn is_connection(&self) -> bool {
        match &self.0 {
            DatabaseFailure::Query(
                sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                // A connection cut in the middle of a message, or the SQLite worker gone.
                | sqlx::Error::Protocol(_)
                | sqlx::Error::WorkerCrashed,
            ) => true,
            DatabaseFailure::Query(sqlx::Error::Database(error)) => {
                // PostgreSQL: connection exceptions (class 08), too many connections, and
                // shutdown or start-up in progress (a restart).
                error.code().is_some_and(|code| {
                    code.starts_with("08") || matches!(&*code, "53300" | "57P01" | "57P02" | "57P03")
                })
            }
            _ => false,
        }
    }

    /// Whether the database could not write for want of space: SQLite's `SQLITE_FULL`
    /// ("database or disk is full", primary code 13), PostgreSQL's `disk_full` (53100).
    fn is_full(&self) -> bool {
        match &self.0 {
            DatabaseFailure::Query(sqlx::Error::Database(error)) => {
                error.code().is_some_and(|code| {
                    code == "53100" || code.parse::<i64>().is_ok_and(|code| code & 0xff == 13)
                })
            }
            DatabaseFailure::Query(sqlx::Error::Io(error)) => is_storage_full(error),
            _ => false,
        }
    }

    /// The driver's error, for the database module's own checks (unique violations).
    pub(crate) fn as_sqlx(&self) -> Option<&sqlx::Error> {
        match &self.0 {
            DatabaseFailure::Query(error) => Some(error),
            DatabaseFailure::Migration(_) => None,
        }
    }
}

/// True when `error` is a unique-constraint violation (either dialect).
fn sqlx_unique_violation(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db_error) => {
            db_error.is_unique_violation()
                || db_error.code().as_deref() == Some("2067")
                || db_error.code().as_deref() == Some("1555")
        }
        _ => false,
    }
}

impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Error {
        Error::Database(DatabaseError(DatabaseFailure::Query(error)))
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(error: sqlx::migrate::MigrateError) -> Error {
        Error::Database(DatabaseError(DatabaseFailure::Migration(error)))
    }
}

/// A blob storage failure, opaque: the object store client is not part of this crate's API.
#[derive(Debug)]
pub struct StorageError(pub(crate) object_store::Error);

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl StorageError {
    /// Whether the store could not be reached: an S3 endpoint refusing or dropping
    /// connections, or timing out (after the client's retries).
    fn is_unavailable(&self) -> bool {
        chain_has(&self.0, |error| {
            if let Some(http) = error.downcast_ref::<object_store::client::HttpError>() {
                use object_store::client::HttpErrorKind;
                return matches!(
                    http.kind(),
                    HttpErrorKind::Connect
                        | HttpErrorKind::Request
                        | HttpErrorKind::Timeout
                        | HttpErrorKind::Interrupted
                );
            }
            error
                .downcast_ref::<std::io::Error>()
                .is_some_and(is_connection_failure)
        })
    }

    /// Whether a local write ran out of space.
    fn is_full(&self) -> bool {
        chain_has(&self.0, |error| {
            error
                .downcast_ref::<std::io::Error>()
                .is_some_and(is_storage_full)
        })
    }
}

/// Whether `error` or any error in its `source` chain satisfies `test`.
fn chain_has(
    error: &(dyn std::error::Error + 'static),
    test: impl Fn(&(dyn std::error::Error + 'static)) -> bool,
) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if test(error) {
            return true;
        }
        next = error.source();
    }
    false
}

/// A disk that is full (`ENOSPC`) or a quota used up (`EDQUOT`).
fn is_storage_full(error: &std::io::Error) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    error.kind() == std::io::ErrorKind::StorageFull
        || error.kind() == std::io::ErrorKind::QuotaExceeded
        || matches!(error.raw_os_error(), Some(ENOSPC | EDQUOT))
}

/// A connection refused, reset or timed out.
fn is_connection_failure(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::BrokenPipe
            | ErrorKind::TimedOut
            | ErrorKind::UnexpectedEof
    )
}

impl Error {
    /// The kind of this error, for adapters.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Conflict(_) | Error::NotMaterialized(_) => ErrorKind::Conflict,
            Error::InvalidInput { .. } => ErrorKind::InvalidInput,
            Error::TooLarge { .. } | Error::TooLargeItem(_) => ErrorKind::TooLarge,
            Error::Unauthenticated(_) => ErrorKind::Unauthenticated,
            Error::Forbidden(_) => ErrorKind::Forbidden,
            Error::SignInThrottled { .. } | Error::TooMany { .. } => ErrorKind::RateLimited,
            Error::Gone(_) => ErrorKind::Gone,
            Error::QueueUnavailable(_)
            | Error::Unavailable(_)
            | Error::TranscoderUnavailable
            | Error::Busy { .. } => ErrorKind::Unavailable,
            Error::NotSupported(_) => ErrorKind::NotSupported,
            Error::Database(error) if error.is_connection() => ErrorKind::Unavailable,
            Error::Database(error) if error.is_full() => ErrorKind::InsufficientStorage,
            Error::Storage { source, .. } if source.is_full() => ErrorKind::InsufficientStorage,
            Error::Storage { source, .. } if source.is_unavailable() => ErrorKind::Unavailable,
            Error::Io { source, .. } if is_storage_full(source) => ErrorKind::InsufficientStorage,
            Error::Database(_)
            | Error::Storage { .. }
            | Error::Io { .. }
            | Error::Task { .. }
            | Error::Internal { .. } => ErrorKind::Internal,
        }
    }

    /// A short machine-readable code for this error, stable across releases.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => "not_found",
            Error::Conflict(_) => "conflict",
            Error::NotMaterialized(_) => "not_materialized",
            Error::InvalidInput { .. } => "validation_error",
            Error::TooLarge { .. } | Error::TooLargeItem(_) => "payload_too_large",
            Error::Unauthenticated(_) => "unauthenticated",
            Error::Forbidden(_) => "forbidden",
            Error::SignInThrottled { .. } | Error::TooMany { .. } => "rate_limited",
            Error::Gone(_) => "gone",
            Error::QueueUnavailable(_) => "queue_unavailable",
            Error::Busy { .. } => "busy",
            Error::Unavailable(_) => "unavailable",
            Error::TranscoderUnavailable => "transcoder_unavailable",
            Error::NotSupported(_) => "not_supported",
            Error::Database(error) if error.is_connection() => "database_unavailable",
            Error::Storage { source, .. } if source.is_unavailable() && !source.is_full() => {
                "storage_unavailable"
            }
            _ if self.kind() == ErrorKind::InsufficientStorage => "insufficient_storage",
            _ => "internal_error",
        }
    }

    /// The offending field, for validation errors.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::InvalidInput { field, .. } => Some(field),
            _ => None,
        }
    }

    /// For a throttled sign-in ([`ErrorKind::RateLimited`]) or a busy server
    /// ([`ErrorKind::Unavailable`], code `busy`), the whole seconds to wait before trying
    /// again (rounded up, at least 1): the value of an HTTP `Retry-After` header.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        match self {
            Error::SignInThrottled { retry_after }
            | Error::Busy { retry_after, .. }
            | Error::TooMany { retry_after, .. } => Some(whole_seconds(*retry_after)),
            _ => None,
        }
    }

    /// Shorthand for [`Error::NotFound`].
    pub fn not_found(what: &'static str, id: impl ToString) -> Self {
        Error::NotFound {
            what,
            id: id.to_string(),
        }
    }

    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            message: message.into(),
        }
    }

    /// Wraps an i/o error with the path it happened at.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// An unexpected failure with no underlying error (a broken invariant).
    pub fn internal(context: impl Into<String>) -> Self {
        Error::Internal {
            context: context.into(),
            source: None,
        }
    }

    /// An unexpected failure of `source` while doing `context`; the source stays in the chain.
    pub fn internal_with(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Internal {
            context: context.into(),
            source: Some(source.into()),
        }
    }

    /// A task of `what` that panicked or was cancelled.
    pub(crate) fn task(what: &'static str) -> impl FnOnce(tokio::task::JoinError) -> Error {
        move |source| Error::Task { what, source }
    }

    /// Whether this is a unique-constraint violation (either dialect).
    pub(crate) fn is_unique_violation(&self) -> bool {
        match self {
            Error::Database(error) => error.as_sqlx().is_some_and(sqlx_unique_violation),
            _ => false,
        }
    }
}

/// `duration` in whole seconds, rounded up and at least 1 (a client told to retry in 0 s
/// would retry at once).
fn whole_seconds(duration: Duration) -> u64 {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    seconds.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttled_sign_in_says_when_to_retry() {
        let error = Error::SignInThrottled {
            retry_after: Duration::from_millis(5_200),
        };
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.code(), "rate_limited");
        assert_eq!(error.retry_after_seconds(), Some(6));
        assert_eq!(
            error.to_string(),
            "too many failed sign-ins; retry in 6 seconds"
        );
        let soon = Error::SignInThrottled {
            retry_after: Duration::ZERO,
        };
        assert_eq!(soon.retry_after_seconds(), Some(1));
        assert_eq!(Error::Forbidden("no".into()).retry_after_seconds(), None);
    }

    #[test]
    fn a_full_disk_is_insufficient_storage() {
        let full = std::io::Error::from_raw_os_error(28);
        let error = Error::io("/data/tmp/upload", full);
        assert_eq!(error.kind(), ErrorKind::InsufficientStorage);
        assert_eq!(error.code(), "insufficient_storage");
        let reserved = std::io::Error::new(std::io::ErrorKind::StorageFull, "kept free");
        assert_eq!(
            Error::io("/data", reserved).kind(),
            ErrorKind::InsufficientStorage
        );
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(Error::io("/data", denied).kind(), ErrorKind::Internal);
    }

    #[test]
    fn a_database_out_of_reach_is_unavailable() {
        for failure in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::Io(std::io::ErrorKind::ConnectionRefused.into()),
            sqlx::Error::Protocol("unexpected end of a message".into()),
            sqlx::Error::WorkerCrashed,
        ] {
            let error = Error::from(failure);
            assert_eq!(error.kind(), ErrorKind::Unavailable, "{error:?}");
            assert_eq!(error.code(), "database_unavailable");
        }
        let error = Error::from(sqlx::Error::RowNotFound);
        assert_eq!(error.kind(), ErrorKind::Internal);
    }

    #[test]
    fn chains_keep_their_sources() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let error = Error::internal_with("cannot hash the password", io);
        assert_eq!(
            crate::error_chain(&error),
            "cannot hash the password: denied"
        );
        let queued = Error::QueueUnavailable(Box::new(Error::Unavailable("down".into())));
        assert_eq!(crate::error_chain(&queued), "job queue unavailable: down");
        assert_eq!(queued.kind(), ErrorKind::Unavailable);
    }
}
