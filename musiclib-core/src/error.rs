//! The crate-wide error type. Adapters match on [`ErrorKind`], never on variants, so a new
//! variant touches this file only. Every variant that wraps a failure keeps it as its
//! `source`, so logs and job records show the whole chain ([`crate::error_chain`]).

use std::path::PathBuf;

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
    /// A dependency (database, job queue, storage, transcoder) is unavailable.
    Unavailable,
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
    NotMaterialized(crate::TrackId),
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
    /// Whether the database could not be reached (as opposed to refusing a statement).
    fn is_connection(&self) -> bool {
        matches!(
            &self.0,
            DatabaseFailure::Query(
                sqlx::Error::PoolTimedOut
                    | sqlx::Error::PoolClosed
                    | sqlx::Error::Io(_)
                    | sqlx::Error::Tls(_)
            )
        )
    }

    /// The driver's error, for the database module's own checks (unique violations).
    pub(crate) fn as_sqlx(&self) -> Option<&sqlx::Error> {
        match &self.0 {
            DatabaseFailure::Query(error) => Some(error),
            DatabaseFailure::Migration(_) => None,
        }
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
            Error::QueueUnavailable(_) | Error::Unavailable(_) | Error::TranscoderUnavailable => {
                ErrorKind::Unavailable
            }
            Error::NotSupported(_) => ErrorKind::NotSupported,
            Error::Database(error) if error.is_connection() => ErrorKind::Unavailable,
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
            Error::QueueUnavailable(_) => "queue_unavailable",
            Error::Unavailable(_) => "unavailable",
            Error::TranscoderUnavailable => "transcoder_unavailable",
            Error::NotSupported(_) => "not_supported",
            Error::Database(error) if error.is_connection() => "database_unavailable",
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
            Error::Database(error) => error.as_sqlx().is_some_and(crate::db::is_unique_violation),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
