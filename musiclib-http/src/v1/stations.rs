//! Internet radio stations (`/radio-stations`): listed for everyone signed in, managed by
//! admins, and relayed (`/radio-stations/{id}/stream`) so the web player, whose CSP allows
//! media from its own origin only, can play them. Not `/radio`: that is the library's own
//! radio (recommendations).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::ids::StationId;
use musiclib_core::stations::{Station, StationChanges, StationFields};
use musiclib_core::Library;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, MediaAuth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_stations, create_station))
        .routes(routes!(get_station, update_station, delete_station))
        .routes(routes!(relay_station))
}

/// An internet radio station.
#[derive(Debug, Serialize, ToSchema)]
pub struct StationOut {
    #[schema(value_type = uuid::Uuid)]
    id: String,
    name: String,
    /// The station's own stream (what apps that may play any origin play).
    stream_url: String,
    homepage_url: Option<String>,
    created_at: String,
    updated_at: String,
}

impl From<Station> for StationOut {
    fn from(station: Station) -> StationOut {
        StationOut {
            id: station.id.to_string(),
            name: station.name,
            stream_url: station.stream_url,
            homepage_url: station.homepage_url,
            created_at: station.created_at.to_rfc3339(),
            updated_at: station.updated_at.to_rfc3339(),
        }
    }
}

/// Every station, by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct StationList {
    /// At most 1,000.
    items: Vec<StationOut>,
}

/// `POST /radio-stations`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StationCreate {
    /// 1–200 characters, no control characters.
    #[schema(min_length = 1, max_length = 200)]
    name: String,
    /// An http or https URL with a host, at most 2,048 bytes.
    #[schema(min_length = 1, max_length = 2048)]
    stream_url: String,
    /// An http or https URL, at most 2,048 bytes; absent, null or empty: none.
    #[schema(max_length = 2048)]
    homepage_url: Option<String>,
}

/// `PATCH /radio-stations/{id}`: the fields to change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StationUpdate {
    #[schema(min_length = 1, max_length = 200)]
    name: Option<String>,
    #[schema(min_length = 1, max_length = 2048)]
    stream_url: Option<String>,
    /// `null` or empty removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2048)]
    homepage_url: Option<Option<String>>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// Lists every internet radio station, by name.
#[utoipa::path(get, path = "/radio-stations", tag = "radio-stations", security(("bearer" = [])),
    responses((status = 200, body = StationList), (status = 401, body = ErrorBody)))]
async fn list_stations(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<StationList>, ApiError> {
    let stations = library.stations().list(&caller).await?;
    Ok(axum::Json(StationList {
        items: stations.into_iter().map(StationOut::from).collect(),
    }))
}

/// Adds a station (admins). At most 1,000 stations (409).
#[utoipa::path(post, path = "/radio-stations", tag = "radio-stations", request_body = StationCreate, security(("bearer" = [])),
    responses((status = 201, body = StationOut), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, description = "The server holds 1,000 stations", body = ErrorBody),
        (status = 422, description = "A bad name or URL; `field` names it", body = ErrorBody)))]
async fn create_station(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<StationCreate>,
) -> Result<(StatusCode, axum::Json<StationOut>), ApiError> {
    let station = library
        .stations()
        .create(
            &caller,
            StationFields {
                name: body.name,
                stream_url: body.stream_url,
                homepage_url: body.homepage_url,
            },
        )
        .await?;
    Ok((StatusCode::CREATED, axum::Json(station.into())))
}

/// One station.
#[utoipa::path(get, path = "/radio-stations/{id}", tag = "radio-stations", params(("id" = String, Path)), security(("bearer" = [])),
    responses((status = 200, body = StationOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_station(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<StationOut>, ApiError> {
    let station = library
        .stations()
        .get(&caller, &StationId::parse(&id)?)
        .await?;
    Ok(axum::Json(station.into()))
}

/// Changes a station (admins).
#[utoipa::path(patch, path = "/radio-stations/{id}", tag = "radio-stations", params(("id" = String, Path)),
    request_body = StationUpdate, security(("bearer" = [])),
    responses((status = 200, body = StationOut), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, description = "A bad name or URL; `field` names it", body = ErrorBody)))]
async fn update_station(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(body): Json<StationUpdate>,
) -> Result<axum::Json<StationOut>, ApiError> {
    let station = library
        .stations()
        .update(
            &caller,
            &StationId::parse(&id)?,
            StationChanges {
                name: body.name,
                stream_url: body.stream_url,
                homepage_url: body.homepage_url,
            },
        )
        .await?;
    Ok(axum::Json(station.into()))
}

/// Deletes a station (admins).
#[utoipa::path(delete, path = "/radio-stations/{id}", tag = "radio-stations", params(("id" = String, Path)), security(("bearer" = [])),
    responses((status = 204, description = "Deleted"), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
async fn delete_station(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    library
        .stations()
        .delete(&caller, &StationId::parse(&id)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Options of a relay request.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RelayQuery {
    /// Access token, for players that cannot send an Authorization header.
    #[allow(dead_code)]
    token: Option<String>,
}

/// The station's stream, relayed by the server as it arrives (for players that may only
/// play this origin's media).
///
/// The station must answer with audio (`audio/*` or `application/ogg`) from a public address
/// (a private one only with `ALLOW_PRIVATE_URLS`); otherwise 502. The relay ends after six
/// hours, or when the station sends nothing for 30 seconds; at most 64 run at once (503
/// `busy`, with `Retry-After`).
#[utoipa::path(get, path = "/radio-stations/{id}/stream", tag = "radio-stations", security(("bearer" = []), ("token" = [])),
    params(("id" = String, Path), RelayQuery),
    responses(
        (status = 200, description = "The station's audio, as it comes", content_type = "audio/*"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 502, description = "The station's URL is refused, it does not answer, or it sends no audio", body = ErrorBody),
        (status = 503, description = "Too many relays at once (code busy, with `Retry-After`)", body = ErrorBody)))]
async fn relay_station(
    State(library): State<Library>,
    MediaAuth(caller): MediaAuth,
    Path(id): Path<String>,
    Query(_query): Query<RelayQuery>,
) -> Result<Response, ApiError> {
    let stream = match library
        .stations()
        .relay(&caller, &StationId::parse(&id)?)
        .await
    {
        Ok(stream) => stream,
        // Core's plain "unavailable" is the station failing, not this server: a bad gateway.
        Err(error) if error.code() == "unavailable" => {
            return Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "bad_gateway",
                error.to_string(),
            ))
        }
        Err(error) => return Err(error.into()),
    };
    let content_type = HeaderValue::from_str(&stream.content_type)
        .unwrap_or(HeaderValue::from_static("audio/mpeg"));
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            // A live stream: nothing to keep, and never the same twice.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        Body::from_stream(stream.body),
    )
        .into_response())
}
