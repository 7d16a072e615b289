//! `/settings`: the caller's own settings (fields: `musiclib_core::settings`).

use axum::extract::State;
use musiclib_core::settings::{SettingsPatch, StoredSettings, StreamingQuality};
use musiclib_core::Library;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new().routes(routes!(get_settings, patch_settings))
}

/// A user's settings.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsOut {
    /// What `GET /stream/{id}` sends when the request names no `quality`.
    #[schema(value_type = String, example = "original")]
    pub streaming_quality: StreamingQuality,
    /// Whether plays are forwarded to the scrobbling services set up in
    /// `/settings/scrobbling`.
    pub scrobbling: bool,
    /// When they last changed.
    pub updated_at: String,
}

impl From<StoredSettings> for SettingsOut {
    fn from(stored: StoredSettings) -> SettingsOut {
        SettingsOut {
            streaming_quality: stored.settings.streaming_quality,
            scrobbling: stored.settings.scrobbling,
            updated_at: stored.updated_at.to_rfc3339(),
        }
    }
}

/// A change: the fields given are set, the rest kept. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsPatchIn {
    /// `original`, `high`, `medium` or `low`.
    #[schema(value_type = Option<String>, example = "low")]
    pub streaming_quality: Option<StreamingQuality>,
    /// Scrobbling on or off.
    pub scrobbling: Option<bool>,
}

/// The caller's settings (made with the defaults on first access).
#[utoipa::path(get, path = "/settings", tag = "settings", security(("bearer" = [])),
    responses((status = 200, body = SettingsOut), (status = 401, body = ErrorBody)))]
async fn get_settings(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<SettingsOut>, ApiError> {
    Ok(axum::Json(library.settings().get(&caller).await?.into()))
}

/// Changes some of the caller's settings.
#[utoipa::path(patch, path = "/settings", tag = "settings", request_body = SettingsPatchIn, security(("bearer" = [])),
    responses((status = 200, body = SettingsOut), (status = 401, body = ErrorBody),
        (status = 422, description = "An unknown field or a wrong value, named in the body", body = ErrorBody)))]
async fn patch_settings(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(patch): Json<SettingsPatchIn>,
) -> Result<axum::Json<SettingsOut>, ApiError> {
    let patch = SettingsPatch {
        streaming_quality: patch.streaming_quality,
        scrobbling: patch.scrobbling,
    };
    Ok(axum::Json(
        library.settings().update(&caller, &patch).await?.into(),
    ))
}
