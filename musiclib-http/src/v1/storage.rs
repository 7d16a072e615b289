//! `/storage`: what the library holds and what needs care. Reading is for any signed-in
//! user; cleanup is an admin's.

use axum::extract::State;
use axum::http::StatusCode;
use musiclib_core::maintenance::{self, MetadataField};
use musiclib_core::Library;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{JobQueued, Page, PageParams, TrackOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{AdminAuth, Auth, LimitedBytes, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(statistics))
        .routes(routes!(missing_metadata))
        .routes(routes!(duplicates))
        .routes(routes!(broken))
        .routes(routes!(check_files))
        .routes(routes!(cleanup))
}

/// Library statistics.
#[derive(Debug, Serialize, ToSchema)]
pub struct StorageOut {
    /// Tracks, placeholders included.
    pub track_count: i64,
    /// Artists.
    pub artist_count: i64,
    /// Albums.
    pub album_count: i64,
    /// Bytes stored, by kind.
    pub footprint: FootprintOut,
    /// Total duration of all tracks, in seconds.
    pub total_playtime_seconds: i64,
    /// Tracks and original bytes per audio format (`unknown`: no audio yet), most first.
    pub by_format: Vec<BreakdownOut>,
    /// Per source (`upload`, `local_folder`, `remote`), most first.
    pub by_source: Vec<BreakdownOut>,
    /// Per metadata status (`pending`, `enriched`, `failed`, `manual`), most first.
    pub by_metadata_status: Vec<BreakdownOut>,
    /// The 10 most common genres, most tracks first.
    pub top_genres: Vec<GenreOut>,
    /// The volume holding local storage; absent on an object store (S3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskOut>,
}

/// Bytes stored, by kind.
#[derive(Debug, Serialize, ToSchema)]
pub struct FootprintOut {
    /// Original audio.
    pub originals_bytes: i64,
    /// Opus and HLS renditions (a cache).
    pub renditions_bytes: i64,
    /// Album and playlist covers.
    pub covers_bytes: i64,
    /// All three.
    pub total_bytes: i64,
}

/// One group of a breakdown.
#[derive(Debug, Serialize, ToSchema)]
pub struct BreakdownOut {
    /// The group (`flac`, `upload`, `enriched`, …).
    pub key: String,
    /// Tracks in it.
    pub track_count: i64,
    /// Their original bytes.
    pub bytes: i64,
}

/// A genre and its track count.
#[derive(Debug, Serialize, ToSchema)]
pub struct GenreOut {
    /// The genre as tagged.
    pub genre: String,
    /// Tracks with it.
    pub track_count: i64,
}

/// Capacity of the volume holding local storage.
#[derive(Debug, Serialize, ToSchema)]
pub struct DiskOut {
    /// Size of the volume.
    pub capacity_bytes: u64,
    /// In use (by anything on the volume).
    pub used_bytes: u64,
    /// Still writable by the server.
    pub free_bytes: u64,
}

fn breakdown(rows: Vec<maintenance::Breakdown>) -> Vec<BreakdownOut> {
    rows.into_iter()
        .map(|row| BreakdownOut {
            key: row.key,
            track_count: row.tracks,
            bytes: row.bytes,
        })
        .collect()
}

/// Library statistics and the storage volume's capacity.
#[utoipa::path(get, path = "/storage", tag = "storage", security(("bearer" = [])),
    responses((status = 200, body = StorageOut), (status = 401, body = ErrorBody)))]
async fn statistics(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<StorageOut>, ApiError> {
    let stats = library.maintenance().statistics(&caller).await?;
    Ok(axum::Json(StorageOut {
        track_count: stats.tracks,
        artist_count: stats.artists,
        album_count: stats.albums,
        footprint: FootprintOut {
            originals_bytes: stats.footprint.originals_bytes,
            renditions_bytes: stats.footprint.renditions_bytes,
            covers_bytes: stats.footprint.covers_bytes,
            total_bytes: stats.footprint.total_bytes,
        },
        total_playtime_seconds: stats.playtime_seconds,
        by_format: breakdown(stats.by_format),
        by_source: breakdown(stats.by_source),
        by_metadata_status: breakdown(stats.by_metadata_status),
        top_genres: stats
            .top_genres
            .into_iter()
            .map(|genre| GenreOut {
                genre: genre.genre,
                track_count: genre.tracks,
            })
            .collect(),
        disk: stats.disk.map(|disk| DiskOut {
            capacity_bytes: disk.capacity_bytes,
            used_bytes: disk.used_bytes,
            free_bytes: disk.free_bytes,
        }),
    }))
}

/// Which tracks to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MissingQuery {
    /// Comma-separated fields: tracks lacking any of them (default: all of title, artist,
    /// album, year, genre, cover).
    #[param(
        pattern = r"^\s*(title|artist|album|year|genre|cover)?\s*(,\s*(title|artist|album|year|genre|cover)?\s*)*$"
    )]
    fields: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
    /// Offset (default 0).
    #[param(minimum = 0)]
    offset: Option<i64>,
}

/// A track and the metadata it lacks.
#[derive(Debug, Serialize, ToSchema)]
pub struct MissingOut {
    /// The track.
    pub track: TrackOut,
    /// Every field it lacks: title, artist, album, year, genre, cover.
    pub missing: Vec<String>,
}

/// Tracks lacking metadata, oldest first, each with the fields it lacks.
#[utoipa::path(get, path = "/storage/missing-metadata", tag = "storage", params(MissingQuery), security(("bearer" = [])),
    responses((status = 200, body = Page<MissingOut>), (status = 401, body = ErrorBody),
        (status = 422, description = "An unknown field, or a bad page", body = ErrorBody)))]
async fn missing_metadata(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(query): Query<MissingQuery>,
) -> Result<axum::Json<Page<MissingOut>>, ApiError> {
    let fields = query
        .fields
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| MetadataField::parse(name, "fields"))
        .collect::<Result<Vec<_>, _>>()?;
    let page = musiclib_core::domain::Page::new(query.limit, query.offset)?;
    let tracks = library
        .maintenance()
        .missing_metadata(&caller, &fields, page)
        .await?;
    Ok(axum::Json(Page::from_core(tracks, |item| MissingOut {
        track: item.track.into(),
        missing: item
            .missing
            .into_iter()
            .map(|field| field.as_str().to_string())
            .collect(),
    })))
}

/// Tracks that are one recording.
#[derive(Debug, Serialize, ToSchema)]
pub struct DuplicateGroupOut {
    /// Why they are grouped: `identical_bytes`, `same_recording` (MusicBrainz), `same_audio`
    /// (fingerprint).
    pub reasons: Vec<String>,
    /// The suggested copy to keep: lossless over lossy, then the higher bitrate, then the more
    /// complete tags, then the oldest.
    pub keeper_id: String,
    /// The tracks, keeper first.
    pub tracks: Vec<TrackOut>,
}

/// Groups of tracks that are the same recording, largest first.
#[utoipa::path(get, path = "/storage/duplicates", tag = "storage", params(PageParams), security(("bearer" = [])),
    responses((status = 200, body = Page<DuplicateGroupOut>), (status = 401, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn duplicates(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(paging): Query<PageParams>,
) -> Result<axum::Json<Page<DuplicateGroupOut>>, ApiError> {
    let groups = library
        .maintenance()
        .duplicates(&caller, paging.page()?)
        .await?;
    Ok(axum::Json(Page::from_core(groups, |group| {
        DuplicateGroupOut {
            reasons: group
                .reasons
                .iter()
                .map(|reason| reason.as_str().to_string())
                .collect(),
            keeper_id: group.keeper.to_string(),
            tracks: group.tracks.into_iter().map(TrackOut::from).collect(),
        }
    })))
}

/// A track whose stored file is broken.
#[derive(Debug, Serialize, ToSchema)]
pub struct BrokenOut {
    /// The track.
    pub track: TrackOut,
    /// `missing`, `size_mismatch`, `hash_mismatch` or `decode_failed`.
    pub problem: String,
    /// Why, readably.
    pub reason: String,
    /// When the file was checked.
    pub checked_at: String,
}

/// Tracks whose stored file the last check (`POST /storage/broken/check`) found missing, of
/// another size or hash than recorded, or not decoding to the end; most recent first.
#[utoipa::path(get, path = "/storage/broken", tag = "storage", params(PageParams), security(("bearer" = [])),
    responses((status = 200, body = Page<BrokenOut>), (status = 401, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn broken(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(paging): Query<PageParams>,
) -> Result<axum::Json<Page<BrokenOut>>, ApiError> {
    let tracks = library
        .maintenance()
        .broken(&caller, paging.page()?)
        .await?;
    Ok(axum::Json(Page::from_core(tracks, |broken| BrokenOut {
        track: broken.track.into(),
        problem: broken.problem.as_str().to_string(),
        reason: broken.reason,
        checked_at: broken.checked_at.to_rfc3339(),
    })))
}

/// Admin only: checks every stored file in the background (job `check_files`: presence,
/// size, SHA-256, and a full decode with ffmpeg when it is installed), with progress on
/// `GET /jobs/{id}`. A check already queued or running is returned.
#[utoipa::path(post, path = "/storage/broken/check", tag = "storage", security(("bearer" = [])),
    responses((status = 202, body = JobQueued), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 503, description = "The job queue is unavailable", body = ErrorBody)))]
async fn check_files(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<(StatusCode, axum::Json<JobQueued>), ApiError> {
    let job_id = library.maintenance().start_file_check(&caller).await?;
    JobQueued::accepted(&library, &caller, job_id).await
}

/// A cleanup request.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CleanupIn {
    /// Report what would be done, change nothing (default false).
    #[serde(default)]
    pub dry_run: bool,
}

/// Admin only: reconciles storage with the library (job `cleanup_storage`): deletes blobs no
/// row references, marks tracks whose original is gone `missing` (never deletes a track), and
/// refuses to delete anything when storage looks unavailable (a listing fails, or most
/// referenced files are not there). The job's result on `GET /jobs/{id}` says what it found
/// and did; a refusal is the job's error. The body is optional.
#[utoipa::path(post, path = "/storage/cleanup", tag = "storage", request_body(content = Option<CleanupIn>), security(("bearer" = [])),
    responses((status = 202, body = JobQueued), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 422, description = "An unknown field or a wrong type", body = ErrorBody),
        (status = 503, description = "The job queue is unavailable", body = ErrorBody)))]
async fn cleanup(
    State(library): State<Library>,
    AdminAuth(caller): AdminAuth,
    LimitedBytes(body): LimitedBytes<4096>,
) -> Result<(StatusCode, axum::Json<JobQueued>), ApiError> {
    let request: CleanupIn = if body.iter().all(u8::is_ascii_whitespace) {
        CleanupIn::default()
    } else {
        crate::extract::parse_json::<Option<CleanupIn>>(&body)?.unwrap_or_default()
    };
    let job_id = library
        .maintenance()
        .start_cleanup(&caller, request.dry_run)
        .await?;
    JobQueued::accepted(&library, &caller, job_id).await
}
