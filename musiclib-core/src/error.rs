//! The crate-wide error type. Adapters match on [`ErrorKind`], never on variants, so a new
//! variant touches this file only.

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
    /// Missing or invalid credentials.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The job queue refused an enqueue.
    #[error("job queue unavailable: {0}")]
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
    Database(#[from] sqlx::Error),
    /// A migration failed.
    #[error("database migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A blob storage error.
    #[error("blob storage error at {key}")]
    Blob {
        /// The blob key involved.
        key: String,
        /// The underlying error.
        #[source]
        source: object_store::Error,
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
    /// Anything else unexpected, with context.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The kind of this error, for adapters.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Conflict(_) => ErrorKind::Conflict,
            Error::InvalidInput { .. } => ErrorKind::InvalidInput,
            Error::TooLarge { .. } => ErrorKind::TooLarge,
            Error::Unauthenticated(_) => ErrorKind::Unauthenticated,
            Error::Forbidden(_) => ErrorKind::Forbidden,
            Error::QueueUnavailable(_) | Error::Unavailable(_) | Error::TranscoderUnavailable => {
                ErrorKind::Unavailable
            }
            Error::NotSupported(_) => ErrorKind::NotSupported,
            Error::Database(e) if is_connection_error(e) => ErrorKind::Unavailable,
            Error::Database(_) | Error::Migrate(_) | Error::Blob { .. } | Error::Io { .. } => {
                ErrorKind::Internal
            }
            Error::Internal(_) => ErrorKind::Internal,
        }
    }

    /// A short machine-readable code for this error, stable across releases.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => "not_found",
            Error::Conflict(_) => "conflict",
            Error::InvalidInput { .. } => "validation_error",
            Error::TooLarge { .. } => "payload_too_large",
            Error::Unauthenticated(_) => "unauthenticated",
            Error::Forbidden(_) => "forbidden",
            Error::QueueUnavailable(_) => "queue_unavailable",
            Error::Unavailable(_) => "unavailable",
            Error::TranscoderUnavailable => "transcoder_unavailable",
            Error::NotSupported(_) => "not_supported",
            Error::Database(e) if is_connection_error(e) => "database_unavailable",
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
}

fn is_connection_error(error: &sqlx::Error) -> bool {
    matches!(
        error,
        sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
    )
}
