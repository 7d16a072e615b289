//! `GET /health` (root and `/api/v1`): no auth, 503 when the database is unreachable.

use axum::extract::State;
use axum::http::StatusCode;
use musiclib_core::Library;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

pub(crate) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new().routes(routes!(health))
}

/// Health of the server and its dependencies.
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthOut {
    /// `ok` or `unavailable`.
    pub status: &'static str,
    /// Whether the database answered.
    pub database: &'static str,
    /// sqlite or postgres.
    pub database_backend: &'static str,
    /// local or s3.
    pub storage_backend: &'static str,
    /// `available` when ffmpeg runs (Opus renditions), else `unavailable` (originals still stream).
    pub transcoder: &'static str,
    /// Server version.
    pub version: &'static str,
    /// The database schema this server makes and expects (its newest migration).
    pub schema: i64,
}

/// Reports health; also served at the root `/health` for probes.
#[utoipa::path(get, path = "/health", tag = "health",
    responses((status = 200, body = HealthOut), (status = 503, description = "The database is unreachable", body = HealthOut)))]
pub(crate) async fn health(State(library): State<Library>) -> (StatusCode, axum::Json<HealthOut>) {
    let health = library.health().await;
    let status = if health.database_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = HealthOut {
        status: if health.database_ok {
            "ok"
        } else {
            "unavailable"
        },
        database: if health.database_ok {
            "ok"
        } else {
            "unreachable"
        },
        database_backend: health.database_backend.as_str(),
        storage_backend: health.storage_backend.as_str(),
        transcoder: if health.transcoder_available {
            "available"
        } else {
            "unavailable"
        },
        version: env!("CARGO_PKG_VERSION"),
        schema: musiclib_core::schema_version(),
    };
    (status, axum::Json(body))
}
