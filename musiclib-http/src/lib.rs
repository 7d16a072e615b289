//! musiclib-http: the `/api/v1` JSON API of musiclib as an axum router over
//! [`musiclib_core::Library`].
//!
//! [`router`] builds the whole application (root `/health`, `/api/v1`, request ids, logging,
//! panic safety); [`api_v1`] is the bare `/api/v1` router for mounting inside another app.
//!
//! # Layout
//! - `v1`: one module per resource (`auth`, `tracks`, `albums`, `search`, `sources`) and `dto`.
//! - `extract`: bearer and `?token=` authentication, JSON/query parsing with 422s naming fields.
//! - `error`: [`ApiError`], the one JSON error shape.
//! - `health`: the health endpoint.
//! - [`metrics`]: `/metrics` (Prometheus), the request counters, the recorder the binary installs.
//! - `security`: security headers, CORS (`CORS_ALLOWED_ORIGINS`), secrets redacted from
//!   logged request targets.

mod error;
mod extract;
#[doc(hidden)]
pub mod fuzzing;
mod health;
pub mod metrics;
mod security;
pub mod v1;

use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use musiclib_core::Library;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestUuid, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

pub use error::{ApiError, ErrorBody, ErrorDetail};

/// The OpenAPI document of `/api/v1`, generated from the handlers.
pub fn openapi() -> utoipa::openapi::OpenApi {
    v1::document::complete(v1::routes().split_for_parts().1)
}

/// The `/api/v1` routes (paths without the prefix), with their state applied; nest it under
/// `/api/v1` in another axum app. Errors are JSON; request ids and logging are the host's.
pub fn api_v1(library: Library) -> Router {
    let (router, openapi) = v1::routes().split_for_parts();
    let openapi = v1::document::complete(openapi);
    let max_upload = library.config().max_upload_bytes;
    // Serialized once: the route's closure is cloned with each request routed near it, so it
    // must hold something cheap to clone, not the document.
    let openapi =
        bytes::Bytes::from(serde_json::to_vec(&openapi).expect("the OpenAPI document serializes"));
    router
        .route(
            "/openapi.json",
            axum::routing::get(move || async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    openapi.clone(),
                )
            }),
        )
        // Uploads are streamed and counted by core (413 over MAX_UPLOAD_BYTES); leave room for
        // the multipart framing so core, not this limit, decides.
        .layer(DefaultBodyLimit::max(
            usize::try_from(max_upload.saturating_add(1024 * 1024)).unwrap_or(usize::MAX),
        ))
        .fallback(not_found)
        .with_state(library)
}

/// The whole application: root `/health` and `/metrics`, `/api/v1`, request ids
/// (`x-request-id`), request logs and metrics, and panics turned into JSON 500s.
pub fn router(library: Library) -> Router {
    router_with(library, Router::new())
}

/// [`router`] with more routes (the binary adds the Subsonic interface at `/rest`) behind
/// the same request ids, logs, panic safety, security headers and CORS.
pub fn router_with(library: Library, more: Router) -> Router {
    let cors = library.config().cors_allowed_origins.clone();
    let app = Router::new()
        .route("/health", axum::routing::get(health::health).with_state(library.clone()))
        .route("/metrics", axum::routing::get(metrics::metrics).with_state(library.clone()))
        .nest("/api/v1", api_v1(library))
        .merge(more)
        .fallback(not_found)
        .layer(CatchPanicLayer::custom(|_panic| {
            ApiError::from(musiclib_core::Error::internal("a handler panicked")).into_response()
        }))
        .layer(axum::middleware::from_fn(finish_errors))
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request<Body>| {
            let request_id = request
                .extensions()
                .get::<RequestId>()
                .and_then(|id| id.header_value().to_str().ok())
                .unwrap_or("-")
                .to_string();
            // The query too, its tokens and passwords redacted.
            let uri = security::loggable_target(request.uri());
            tracing::info_span!("request", method = %request.method(), uri = %uri, request_id = %request_id)
        }).on_response(|response: &Response, latency: Duration, _span: &tracing::Span| {
            tracing::info!(status = response.status().as_u16(), latency_ms = latency.as_millis() as u64, "response");
        }))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(axum::middleware::from_fn(metrics::track));
    security::protect(app, &cors)
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}

/// Logs 5xx errors with their full chain, and writes the request id into their body so a user
/// can quote it.
async fn finish_errors(request: Request, next: Next) -> Response {
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .and_then(|id| id.header_value().to_str().ok())
        .map(str::to_string);
    let response = next.run(request).await;
    let Some(error::InternalError(detail)) =
        response.extensions().get::<error::InternalError>().cloned()
    else {
        return response;
    };
    tracing::error!(request_id = request_id.as_deref().unwrap_or("-"), error = %detail, "request failed");
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let mut value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if let (Some(id), Some(error)) = (
        &request_id,
        value
            .get_mut("error")
            .and_then(|error| error.as_object_mut()),
    ) {
        error.insert("request_id".into(), serde_json::Value::String(id.clone()));
    }
    let body = serde_json::to_vec(&value).unwrap_or_else(|_| bytes.to_vec());
    parts.headers.insert(
        axum::http::header::CONTENT_LENGTH,
        HeaderValue::from(body.len()),
    );
    Response::from_parts(parts, Body::from(body))
}
