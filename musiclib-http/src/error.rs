//! `ApiError`: every failure of the API as one JSON shape,
//! `{"error":{"code":"…","message":"…","field":"…"}}`, with the spec's statuses.
//! 5xx bodies say nothing internal; the full error is logged with the request id. A 429
//! carries `Retry-After` (whole seconds).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use musiclib_core::Error;
use serde::Serialize;
use utoipa::ToSchema;

/// The error body.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code (`validation_error`, `not_found`, `unauthenticated`, …).
    pub code: String,
    /// Readable explanation.
    pub message: String,
    /// The offending field or parameter, for validation errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Id of the request, for 5xx errors (also in the `x-request-id` header and the log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// An error of the `/api/v1` adapter.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: String,
    message: String,
    field: Option<String>,
    /// The full error chain of a 5xx, logged by the request middleware.
    internal: Option<String>,
    /// Seconds to wait, sent as `Retry-After` (429s).
    retry_after: Option<u64>,
}

/// Marker put in the extensions of a 5xx response, read by [`crate::finish_errors`].
#[derive(Debug, Clone)]
pub(crate) struct InternalError(pub String);

impl ApiError {
    /// A validation error naming `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> ApiError {
        let field = field.into();
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "validation_error".into(),
            message: format!("{field}: {}", message.into()),
            field: Some(field),
            internal: None,
            retry_after: None,
        }
    }

    /// A 401.
    pub fn unauthenticated(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
    }

    /// Any status and code.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
            field: None,
            internal: None,
            retry_after: None,
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> ApiError {
        let status = musiclib_media_http::status_of(error.kind());
        let chain = musiclib_core::error_chain(&error);
        let (message, internal) =
            if status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED {
                let public = match (status, error.code()) {
                    // The wrapped driver errors say too much, or too little: say what is down.
                    (_, "database_unavailable") => {
                        "the database is unavailable; try again shortly".to_string()
                    }
                    (_, "storage_unavailable") => {
                        "the storage backend is unavailable; try again shortly".to_string()
                    }
                    (StatusCode::SERVICE_UNAVAILABLE, _) => error.to_string(),
                    (StatusCode::INSUFFICIENT_STORAGE, _) => {
                        "the server is out of storage space (its disk is full); nothing was stored"
                            .to_string()
                    }
                    _ => "internal server error".to_string(),
                };
                (public, Some(chain))
            } else {
                (error.to_string(), None)
            };
        ApiError {
            status,
            code: error.code().into(),
            message,
            field: error.field().map(str::to_string),
            internal,
            retry_after: error.retry_after_seconds(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
                field: self.field,
                request_id: None,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        if self.status.is_server_error() {
            response.extensions_mut().insert(InternalError(
                self.internal.unwrap_or_else(|| "no detail".into()),
            ));
        }
        response
    }
}
