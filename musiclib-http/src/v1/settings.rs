//! `/settings`: the caller's own settings (fields: `musiclib_core::settings`), and
//! `/settings/scrobbling`: their scrobbling credentials, write-only.

use axum::extract::State;
use musiclib_core::settings::{ReplayGainMode, SettingsPatch, StoredSettings, StreamingQuality};
use musiclib_core::Library;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(get_settings, patch_settings))
        .routes(routes!(get_scrobbling, put_scrobbling))
}

/// What streams default to: the original file, or Opus at high, medium or low quality.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StreamingQualityName {
    /// The original file.
    Original,
    /// Opus, 192 kbit/s.
    High,
    /// Opus, 128 kbit/s.
    Medium,
    /// Opus, 64 kbit/s.
    Low,
}

impl From<StreamingQuality> for StreamingQualityName {
    fn from(quality: StreamingQuality) -> StreamingQualityName {
        match quality {
            StreamingQuality::Original => StreamingQualityName::Original,
            StreamingQuality::High => StreamingQualityName::High,
            StreamingQuality::Medium => StreamingQualityName::Medium,
            StreamingQuality::Low => StreamingQualityName::Low,
        }
    }
}

impl From<StreamingQualityName> for StreamingQuality {
    fn from(quality: StreamingQualityName) -> StreamingQuality {
        match quality {
            StreamingQualityName::Original => StreamingQuality::Original,
            StreamingQualityName::High => StreamingQuality::High,
            StreamingQualityName::Medium => StreamingQuality::Medium,
            StreamingQualityName::Low => StreamingQuality::Low,
        }
    }
}

/// How the web player applies tracks' ReplayGain (`TrackOut.replay_gain`): not at all, each
/// track's gain, or the album's (the track's where the album has none); never past the peak.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplayGainModeName {
    /// Not applied.
    Off,
    /// Each track's gain.
    Track,
    /// The album's gain.
    Album,
}

impl From<ReplayGainMode> for ReplayGainModeName {
    fn from(mode: ReplayGainMode) -> ReplayGainModeName {
        match mode {
            ReplayGainMode::Off => ReplayGainModeName::Off,
            ReplayGainMode::Track => ReplayGainModeName::Track,
            ReplayGainMode::Album => ReplayGainModeName::Album,
        }
    }
}

impl From<ReplayGainModeName> for ReplayGainMode {
    fn from(mode: ReplayGainModeName) -> ReplayGainMode {
        match mode {
            ReplayGainModeName::Off => ReplayGainMode::Off,
            ReplayGainModeName::Track => ReplayGainMode::Track,
            ReplayGainModeName::Album => ReplayGainMode::Album,
        }
    }
}

/// A user's settings.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsOut {
    /// What `GET /stream/{id}` sends when the request names no `quality`.
    pub streaming_quality: StreamingQualityName,
    /// Whether plays are forwarded to the scrobbling services set up in
    /// `/settings/scrobbling`.
    pub scrobbling: bool,
    /// How the web player applies ReplayGain.
    pub replay_gain: ReplayGainModeName,
    /// When they last changed.
    pub updated_at: String,
}

impl From<StoredSettings> for SettingsOut {
    fn from(stored: StoredSettings) -> SettingsOut {
        SettingsOut {
            streaming_quality: stored.settings.streaming_quality.into(),
            scrobbling: stored.settings.scrobbling,
            replay_gain: stored.settings.replay_gain.into(),
            updated_at: stored.updated_at.to_rfc3339(),
        }
    }
}

/// A change: the fields given are set, the rest kept. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsPatchIn {
    /// The default stream quality (`null` is refused: leave the field out to keep it).
    #[serde(default, deserialize_with = "not_null")]
    #[schema(nullable = false)]
    pub streaming_quality: Option<StreamingQualityName>,
    /// Scrobbling on or off (`null` is refused: leave the field out to keep it).
    #[serde(default, deserialize_with = "not_null")]
    #[schema(nullable = false)]
    pub scrobbling: Option<bool>,
    /// How the web player applies ReplayGain (`null` is refused: leave the field out to
    /// keep it).
    #[serde(default, deserialize_with = "not_null")]
    #[schema(nullable = false)]
    pub replay_gain: Option<ReplayGainModeName>,
}

/// A field that may be left out but, when given, must have a value: `null` is an error
/// naming the field, not "no change".
fn not_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
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
        streaming_quality: patch.streaming_quality.map(Into::into),
        scrobbling: patch.scrobbling,
        replay_gain: patch.replay_gain.map(Into::into),
    };
    Ok(axum::Json(
        library.settings().update(&caller, &patch).await?.into(),
    ))
}

/// Absent: `None`; `null`: `Some(None)`; a value: `Some(Some(value))`.
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A Last.fm credential.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LastfmIn {
    /// The session key Last.fm gave for this user (`auth.getSession`): up to 256
    /// characters of printable ASCII, no spaces.
    #[schema(min_length = 1, max_length = 256, pattern = "^[!-~]+$")]
    pub session_key: String,
}

/// A ListenBrainz credential.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ListenbrainzIn {
    /// The user token from the ListenBrainz profile page: up to 256 characters of printable ASCII,
    /// no spaces.
    #[schema(min_length = 1, max_length = 256, pattern = "^[!-~]+$")]
    pub token: String,
}

/// A change of scrobbling credentials: each part optional; `null` removes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScrobblingIn {
    /// Last.fm: set (`{"session_key": "…"}`), remove (`null`), or leave (absent).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub lastfm: Option<Option<LastfmIn>>,
    /// ListenBrainz: set (`{"token": "…"}`), remove (`null`), or leave (absent).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub listenbrainz: Option<Option<ListenbrainzIn>>,
}

/// A scrobbling service's last answer.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScrobblingStateName {
    /// Nothing sent since the credential was set.
    Unknown,
    /// The last submission was accepted.
    Ok,
    /// The last submission failed for a reason that may pass; it is retried.
    Failing,
    /// The service refused the credential: nothing is sent until a new one is set.
    Revoked,
}

impl From<musiclib_core::scrobbling::ServiceState> for ScrobblingStateName {
    fn from(state: musiclib_core::scrobbling::ServiceState) -> ScrobblingStateName {
        use musiclib_core::scrobbling::ServiceState;
        match state {
            ServiceState::Unknown => ScrobblingStateName::Unknown,
            ServiceState::Ok => ScrobblingStateName::Ok,
            ServiceState::Failing => ScrobblingStateName::Failing,
            ServiceState::Revoked => ScrobblingStateName::Revoked,
        }
    }
}

/// One scrobbling service for the caller; never the credential itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScrobblingServiceOut {
    /// Whether this server can send to the service (Last.fm needs the server's
    /// `LASTFM_API_KEY` and `LASTFM_API_SECRET`).
    pub available: bool,
    /// Whether the caller has set a credential.
    pub configured: bool,
    /// The service's last answer: `unknown` (nothing sent yet), `ok`, `failing` (retried),
    /// `revoked` (refused: set a new credential); null when not configured.
    pub state: Option<ScrobblingStateName>,
    /// What it said.
    pub detail: Option<String>,
    /// When.
    pub checked_at: Option<String>,
}

/// The caller's scrobbling set-up.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScrobblingOut {
    /// Last.fm.
    pub lastfm: ScrobblingServiceOut,
    /// ListenBrainz.
    pub listenbrainz: ScrobblingServiceOut,
}

impl From<musiclib_core::scrobbling::ScrobblingStatus> for ScrobblingOut {
    fn from(status: musiclib_core::scrobbling::ScrobblingStatus) -> ScrobblingOut {
        let service = |service: musiclib_core::scrobbling::ServiceStatus| ScrobblingServiceOut {
            available: service.available,
            configured: service.configured,
            state: service.state.map(ScrobblingStateName::from),
            detail: service.detail,
            checked_at: service.checked_at.map(|at| at.to_rfc3339()),
        };
        ScrobblingOut {
            lastfm: service(status.lastfm),
            listenbrainz: service(status.listenbrainz),
        }
    }
}

/// The caller's scrobbling services: whether each is set up and how it last answered. The
/// credentials are never returned.
#[utoipa::path(get, path = "/settings/scrobbling", tag = "settings", security(("bearer" = [])),
    responses((status = 200, body = ScrobblingOut), (status = 401, body = ErrorBody)))]
async fn get_scrobbling(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<ScrobblingOut>, ApiError> {
    Ok(axum::Json(
        library.scrobbling().status(&caller).await?.into(),
    ))
}

/// Sets or removes the caller's scrobbling credentials (stored encrypted, never returned).
#[utoipa::path(put, path = "/settings/scrobbling", tag = "settings", request_body = ScrobblingIn, security(("bearer" = [])),
    responses((status = 200, body = ScrobblingOut), (status = 401, body = ErrorBody),
        (status = 422, description = "An unknown field, a wrong type, or an empty or overlong credential", body = ErrorBody)))]
async fn put_scrobbling(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(change): Json<ScrobblingIn>,
) -> Result<axum::Json<ScrobblingOut>, ApiError> {
    let change = musiclib_core::scrobbling::CredentialsChange {
        lastfm_session_key: change
            .lastfm
            .map(|lastfm| lastfm.map(|lastfm| lastfm.session_key)),
        listenbrainz_token: change
            .listenbrainz
            .map(|listenbrainz| listenbrainz.map(|listenbrainz| listenbrainz.token)),
    };
    Ok(axum::Json(
        library
            .scrobbling()
            .set_credentials(&caller, &change)
            .await?
            .into(),
    ))
}
