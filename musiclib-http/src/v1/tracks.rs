//! Tracks: list with filters and sort, upload, read, edit, delete, manual metadata, enrichment.

use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use futures::TryStreamExt;
use musiclib_core::catalog::{parse_sort, TrackFilter, TrackMetadata, TrackPatch, TrackSortKey};
use musiclib_core::domain::{Availability, MetadataStatus, Source};
use musiclib_core::{AlbumId, ArtistId, Library, TrackId};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{CandidateOut, JobQueued, Page, Paging, TrackOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_tracks))
        .routes(routes!(upload_track))
        .routes(routes!(get_track, patch_track, delete_track))
        .routes(routes!(put_metadata))
        .routes(routes!(enrich))
        .routes(routes!(candidates))
        .routes(routes!(optimize))
}

/// Filters, sort and paging of `GET /tracks`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TrackQuery {
    /// upload, local_folder, remote or subsonic; lists newest first unless `sort` is given.
    #[param(pattern = "^(upload|local_folder|remote|subsonic)$")]
    source: Option<String>,
    /// Tracks by this artist.
    artist_id: Option<String>,
    /// Tracks of this album.
    album_id: Option<String>,
    /// Genre (case-insensitive).
    genre: Option<String>,
    /// Release year.
    year: Option<i64>,
    /// pending, enriched, failed or manual.
    #[param(pattern = "^(pending|enriched|failed|manual)$")]
    metadata_status: Option<String>,
    /// available, placeholder or missing.
    #[param(pattern = "^(available|placeholder|missing)$")]
    availability: Option<String>,
    /// Substring of title, artist or album (case- and accent-insensitive).
    q: Option<String>,
    /// title, artist, album, year, track_number, duration, created_at or updated_at; `-` prefix for descending.
    #[param(pattern = "^-?(title|artist|album|year|track_number|duration|created_at|updated_at)$")]
    sort: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
    /// Offset (default 0); with `cursor`, the rows skipped after the cursor's place.
    #[param(minimum = 0)]
    offset: Option<i64>,
    /// Cursor paging, for deep reads: empty for the first page, then the `next_cursor` of the
    /// page before. Offered for the sorts title, created_at and updated_at.
    #[param(max_length = 2048)]
    cursor: Option<String>,
    /// Comma-separated track ids, at most 200: those tracks in this order (repeats kept, ids
    /// of tracks not in the library left out), one page. Not combined with the other
    /// parameters.
    #[param(max_length = 7400)]
    ids: Option<String>,
}

/// The most ids one `GET /tracks?ids=` reads.
const MAX_IDS: usize = 200;

impl TrackQuery {
    /// Whether anything but `ids` is asked.
    fn filters_or_pages(&self) -> bool {
        let TrackQuery {
            source,
            artist_id,
            album_id,
            genre,
            year,
            metadata_status,
            availability,
            q,
            sort,
            limit,
            offset,
            cursor,
            ids: _,
        } = self;
        source.is_some()
            || artist_id.is_some()
            || album_id.is_some()
            || genre.is_some()
            || year.is_some()
            || metadata_status.is_some()
            || availability.is_some()
            || q.is_some()
            || sort.is_some()
            || limit.is_some()
            || offset.is_some()
            || cursor.is_some()
    }
}

/// The tracks of `GET /tracks?ids=`.
async fn tracks_by_ids(
    library: &Library,
    query: &TrackQuery,
    ids: &str,
) -> Result<Page<TrackOut>, ApiError> {
    if query.filters_or_pages() {
        return Err(ApiError::invalid(
            "ids",
            "ids is not combined with filters, sorts or paging",
        ));
    }
    let ids = ids
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| TrackId::parse_field(id, "ids"))
        .collect::<Result<Vec<_>, _>>()?;
    if ids.is_empty() || ids.len() > MAX_IDS {
        return Err(ApiError::invalid(
            "ids",
            format!("between 1 and {MAX_IDS} track ids, separated by commas"),
        ));
    }
    let tracks = library.catalog().tracks_by_ids(&ids).await?;
    let found = tracks.len() as i64;
    Ok(Page::from_core(
        musiclib_core::domain::Paged {
            items: tracks,
            total: found,
            page: musiclib_core::domain::Page::new(Some(MAX_IDS as i64), Some(0))?,
        },
        TrackOut::from,
    ))
}

/// Lists tracks; or reads several by id (`ids`).
#[utoipa::path(get, path = "/tracks", tag = "tracks", params(TrackQuery), security(("bearer" = [])),
    responses((status = 200, body = Page<TrackOut>), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn list_tracks(
    State(library): State<Library>,
    _auth: Auth,
    Query(query): Query<TrackQuery>,
) -> Result<axum::Json<Page<TrackOut>>, ApiError> {
    if let Some(ids) = &query.ids {
        return Ok(axum::Json(tracks_by_ids(&library, &query, ids).await?));
    }
    let filter = TrackFilter {
        source: query
            .source
            .as_deref()
            .map(|text| Source::parse(text, "source"))
            .transpose()?,
        artist_id: query
            .artist_id
            .as_deref()
            .map(|id| ArtistId::parse_field(id, "artist_id"))
            .transpose()?,
        album_id: query
            .album_id
            .as_deref()
            .map(|id| AlbumId::parse_field(id, "album_id"))
            .transpose()?,
        genre: query.genre,
        year: query.year,
        metadata_status: query
            .metadata_status
            .as_deref()
            .map(|text| MetadataStatus::parse(text, "metadata_status"))
            .transpose()?,
        availability: query
            .availability
            .as_deref()
            .map(|text| Availability::parse(text, "availability"))
            .transpose()?,
        q: query.q,
        with_audio: false,
    };
    let sort = query
        .sort
        .as_deref()
        .map(|text| parse_sort(text, "sort", TrackSortKey::parse))
        .transpose()?;
    let catalog = library.catalog();
    Ok(axum::Json(
        match Paging::new(query.limit, query.offset, query.cursor)? {
            Paging::Offset(page) => Page::from_core(
                catalog.list_tracks(&filter, sort, page).await?,
                TrackOut::from,
            ),
            Paging::Cursor {
                limit,
                cursor,
                skip,
            } => Page::from_chunk(
                super::dto::chunk_after_skip(limit, cursor, skip, |limit, cursor| {
                    let filter = &filter;
                    async move {
                        catalog
                            .list_tracks_after(filter, sort, limit, &cursor)
                            .await
                    }
                })
                .await?,
                TrackOut::from,
            ),
        },
    ))
}

/// Multipart form of an upload.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The audio file.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

/// Uploads an audio file (multipart field `file`). The same bytes uploaded again answer the
/// existing track with 200.
#[utoipa::path(post, path = "/tracks/upload", tag = "tracks", security(("bearer" = [])),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Created; enrichment is queued", body = TrackOut),
        (status = 200, description = "These bytes were uploaded before", body = TrackOut),
        (status = 413, description = "Larger than MAX_UPLOAD_BYTES", body = ErrorBody),
        (status = 422, description = "No `file` field, or not audio", body = ErrorBody),
        (status = 503, description = "The database or the storage backend is unavailable (`database_unavailable`, `storage_unavailable`); nothing was stored", body = ErrorBody),
        (status = 507, description = "The server's disk is full (`insufficient_storage`); nothing was stored", body = ErrorBody),
    ))]
async fn upload_track(
    State(library): State<Library>,
    Auth(caller): Auth,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<(StatusCode, axum::Json<TrackOut>), ApiError> {
    // Not multipart, or no boundary: the form as a whole is wrong.
    let mut multipart =
        multipart.map_err(|rejection| ApiError::invalid("body", rejection.body_text()))?;
    loop {
        let field = multipart
            .next_field()
            .await
            .map_err(|error| multipart_error(&library, error))?;
        let Some(field) = field else {
            return Err(ApiError::invalid(
                "file",
                "the multipart form has no `file` field",
            ));
        };
        if field.name() != Some("file") {
            continue;
        }
        let file_name = field.file_name().map(str::to_string);
        let limit = library.config().max_upload_bytes;
        let stream = field.map_err(move |error| {
            let status = error.status();
            std::io::Error::other(if status == StatusCode::PAYLOAD_TOO_LARGE {
                format!("larger than the limit of {limit} bytes")
            } else {
                error.body_text()
            })
        });
        let reader = tokio_util::io::StreamReader::new(stream);
        let outcome = library
            .ingest()
            .upload_track(&caller, file_name.as_deref(), reader)
            .await?;
        let status = if outcome.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        return Ok((status, axum::Json(outcome.track.into())));
    }
}

fn multipart_error(library: &Library, error: axum::extract::multipart::MultipartError) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        musiclib_core::Error::TooLarge {
            limit: library.config().max_upload_bytes,
        }
        .into()
    } else {
        ApiError::invalid("file", error.body_text())
    }
}

fn track_id(id: &str) -> Result<TrackId, ApiError> {
    Ok(TrackId::parse(id)?)
}

/// Reads a track.
#[utoipa::path(get, path = "/tracks/{id}", tag = "tracks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Track id")),
    responses((status = 200, body = TrackOut), (status = 404, body = ErrorBody)))]
async fn get_track(
    State(library): State<Library>,
    _auth: Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<TrackOut>, ApiError> {
    Ok(axum::Json(
        library.catalog().get_track(&track_id(&id)?).await?.into(),
    ))
}

/// Fields of `PATCH /tracks/{id}`; absent fields stay as they are. The enrichment state is
/// unchanged (use `PUT /tracks/{id}/metadata` for a manual edit of identity fields).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrackPatchIn {
    /// Title, 1–150 characters, no control characters (surrounding spaces are trimmed).
    #[schema(
        min_length = 1,
        max_length = 150,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    title: Option<String>,
    /// Genre (at most 150 characters, no control characters; empty clears it).
    #[schema(max_length = 150, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    genre: Option<String>,
    /// Year, 0–9999.
    #[schema(minimum = 0, maximum = 9999)]
    year: Option<i64>,
    /// Track number, 0–100000.
    #[schema(minimum = 0, maximum = 100000)]
    track_number: Option<i64>,
    /// Disc number, 0–100000.
    #[schema(minimum = 0, maximum = 100000)]
    disc_number: Option<i64>,
}

/// Updates descriptive fields of a track (admin or the uploader).
#[utoipa::path(patch, path = "/tracks/{id}", tag = "tracks", security(("bearer" = [])), request_body = TrackPatchIn,
    params(("id" = String, Path, description = "Track id")),
    responses((status = 200, body = TrackOut), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn patch_track(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(patch): Json<TrackPatchIn>,
) -> Result<axum::Json<TrackOut>, ApiError> {
    let patch = TrackPatch {
        title: patch.title,
        genre: patch.genre,
        year: patch.year,
        track_number: patch.track_number,
        disc_number: patch.disc_number,
    };
    Ok(axum::Json(
        library
            .catalog()
            .patch_track(&caller, &track_id(&id)?, &patch)
            .await?
            .into(),
    ))
}

/// Deletes a track, its audio and its cached renditions (admin or the uploader).
#[utoipa::path(delete, path = "/tracks/{id}", tag = "tracks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Track id")),
    responses((status = 204, description = "Deleted"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_track(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    library.delete_track(&caller, &track_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A manual metadata edit: the whole set; absent optional fields are cleared.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrackMetadataIn {
    /// Title (required), 1–150 characters, no control characters (surrounding spaces are
    /// trimmed).
    #[schema(
        min_length = 1,
        max_length = 150,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    title: String,
    /// Track artist (at most 150 characters, no control characters).
    #[schema(max_length = 150, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    artist: Option<String>,
    /// Album title (at most 150 characters, no control characters).
    #[schema(max_length = 150, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    album: Option<String>,
    /// Album artist (defaults to the track artist; at most 150 characters, no control characters).
    #[schema(max_length = 150, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    album_artist: Option<String>,
    /// Genre (at most 150 characters, no control characters).
    #[schema(max_length = 150, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    genre: Option<String>,
    /// Year, 0–9999.
    #[schema(minimum = 0, maximum = 9999)]
    year: Option<i64>,
    /// Track number, 0–100000.
    #[schema(minimum = 0, maximum = 100000)]
    track_number: Option<i64>,
    /// Disc number, 0–100000.
    #[schema(minimum = 0, maximum = 100000)]
    disc_number: Option<i64>,
    /// MusicBrainz recording id.
    musicbrainz_recording_id: Option<String>,
}

/// Sets a track's metadata by hand; the track becomes `manual` and enrichment leaves it alone.
#[utoipa::path(put, path = "/tracks/{id}/metadata", tag = "tracks", security(("bearer" = [])), request_body = TrackMetadataIn,
    params(("id" = String, Path, description = "Track id")),
    responses((status = 200, body = TrackOut), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn put_metadata(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(input): Json<TrackMetadataIn>,
) -> Result<axum::Json<TrackOut>, ApiError> {
    let metadata = TrackMetadata {
        title: input.title,
        artist: input.artist,
        album: input.album,
        album_artist: input.album_artist,
        genre: input.genre,
        year: input.year,
        track_number: input.track_number,
        disc_number: input.disc_number,
        musicbrainz_recording_id: input.musicbrainz_recording_id,
    };
    Ok(axum::Json(
        library
            .catalog()
            .set_track_metadata(&caller, &track_id(&id)?, &metadata)
            .await?
            .into(),
    ))
}

/// Queues enrichment of one track. A `manual` track stays manual (the answer says so).
#[utoipa::path(post, path = "/tracks/{id}/metadata/enrich", tag = "tracks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Track id")),
    responses((status = 202, body = JobQueued), (status = 404, body = ErrorBody), (status = 503, description = "The job queue is unavailable", body = ErrorBody)))]
async fn enrich(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<(StatusCode, axum::Json<JobQueued>), ApiError> {
    let id = track_id(&id)?;
    let track = library.catalog().get_track(&id).await?;
    let job_id = library
        .enrichment()
        .request_enrichment(&caller, &id)
        .await?;
    let note = (track.metadata_status == MetadataStatus::Manual)
        .then(|| "the track is manual: enrichment will leave its metadata as it is".to_string());
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(JobQueued {
            job_id: job_id.to_string(),
            state: "queued".into(),
            note,
        }),
    ))
}

/// Ranked fingerprint matches for a track, applied to nothing: pick one and send its fields
/// (and `musicbrainz_recording_id`) with `PUT /tracks/{id}/metadata`.
#[utoipa::path(get, path = "/tracks/{id}/metadata/candidates", tag = "tracks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Track id")),
    responses((status = 200, body = Vec<CandidateOut>), (status = 404, body = ErrorBody),
        (status = 422, description = "The audio cannot be fingerprinted", body = ErrorBody),
        (status = 503, description = "Fingerprint lookups are off (no ACOUSTID_API_KEY; code `unavailable`), or AcoustID cannot be reached", body = ErrorBody)))]
async fn candidates(
    State(library): State<Library>,
    _auth: Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<Vec<CandidateOut>>, ApiError> {
    let id = track_id(&id)?;
    let found = library.enrichment().metadata_candidates(&id).await?;
    Ok(axum::Json(
        found.into_iter().map(CandidateOut::from).collect(),
    ))
}

/// Queues a build of the track's Opus renditions (low, medium, high) that do not exist yet.
#[utoipa::path(post, path = "/tracks/{id}/optimize", tag = "tracks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Track id")),
    responses((status = 202, body = JobQueued), (status = 404, body = ErrorBody),
        (status = 503, description = "No transcoder (ffmpeg), or the job queue is unavailable", body = ErrorBody)))]
async fn optimize(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<(StatusCode, axum::Json<JobQueued>), ApiError> {
    let id = track_id(&id)?;
    let job_id = library
        .media()
        .request_optimize(&id, &caller.user.id)
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(JobQueued {
            job_id: job_id.to_string(),
            state: "queued".into(),
            note: None,
        }),
    ))
}
