//! `GET`/`HEAD /stream/{id}`: the original audio with single byte ranges (RFC 9110 §14),
//! validators and conditional requests. Bearer or `?token=` (audio elements cannot send
//! headers). The body is streamed from the blob store: chunked reads on disk, a proxied
//! ranged GET on S3.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::media::{Delivery, Encoding, Want};
use musiclib_core::{Library, TrackId};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::error::{ApiError, ErrorBody};
use crate::extract::{MediaAuth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(stream))
        .routes(routes!(hls_playlist))
        .routes(routes!(hls_segment))
}

/// Options of an HLS request.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HlsQuery {
    /// Access token, for players that cannot send an Authorization header. It is carried
    /// onto every segment URI of the playlist.
    token: Option<String>,
}

/// The track as an HLS VOD playlist of AAC-in-MPEG-TS segments (6 s each).
///
/// A cold track's playlist is answered at once, from its duration, while the segments are
/// encoded ahead of the player; a segment request waits for its segment, never receiving a
/// partial one. Once encoded, the rendition is stored and served from the cache. 503
/// `transcoder_unavailable` when ffmpeg is missing.
#[utoipa::path(get, path = "/stream/{id}/hls/playlist.m3u8", tag = "streaming", security(("bearer" = []), ("token" = [])),
    params(("id" = String, Path, description = "Track id"), HlsQuery),
    responses(
        (status = 200, description = "The playlist", content_type = "application/vnd.apple.mpegurl"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "A placeholder track without audio, or no known duration", body = ErrorBody),
        (status = 503, description = "No transcoder (ffmpeg): code transcoder_unavailable; or too many live encodes (`MAX_LIVE_ENCODES`, `MAX_LIVE_ENCODES_PER_USER`): code busy, with `Retry-After`", body = ErrorBody)))]
async fn hls_playlist(
    State(library): State<Library>,
    MediaAuth(caller): MediaAuth,
    Path(id): Path<String>,
    Query(query): Query<HlsQuery>,
) -> Result<Response, ApiError> {
    let id = TrackId::parse(&id)?;
    let playlist = library
        .media()
        .hls_playlist(&caller, &id, query.token.as_deref())
        .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/vnd.apple.mpegurl"),
            (header::CACHE_CONTROL, "private, no-cache"),
        ],
        playlist,
    )
        .into_response())
}

/// One segment of the HLS rendition: `seg-NNNNN.ts` (any other name is a 422 naming
/// `segment`).
#[utoipa::path(get, path = "/stream/{id}/hls/{segment}", tag = "streaming", security(("bearer" = []), ("token" = [])),
    params(("id" = String, Path, description = "Track id"),
        ("segment" = String, Path, description = "Segment name, e.g. seg-00000.ts"), HlsQuery),
    responses(
        (status = 200, description = "The segment", content_type = "video/mp2t"),
        (status = 422, description = "Not a segment name", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 503, description = "No transcoder (ffmpeg), the segment is not encoded in time, or too many live encodes (code busy, with `Retry-After`)", body = ErrorBody)))]
async fn hls_segment(
    State(library): State<Library>,
    MediaAuth(caller): MediaAuth,
    Path((id, segment)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id = TrackId::parse(&id)?;
    let bytes = library.media().hls_segment(&caller, &id, &segment).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "video/mp2t"),
            (header::CACHE_CONTROL, "private, max-age=86400"),
        ],
        bytes,
    )
        .into_response())
}

/// Options of a stream request.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// `original`, `low` (Opus 64 kbit/s), `medium` (128) or `high` (192); absent: the
    /// caller's `streaming_quality` setting (default `original`). A rendition is served from
    /// the cache when built; otherwise the original is served and the rendition is built in
    /// the background. The `x-rendition` response header says which was sent.
    #[param(pattern = "^(original|low|medium|high)$")]
    quality: Option<String>,
    /// Access token, for players that cannot send an Authorization header.
    #[allow(dead_code)]
    token: Option<String>,
}

/// Streams a track's original audio.
///
/// `HEAD` answers the same headers without a body. One byte range per request (206 with
/// Content-Range; 416 with `Content-Range: bytes */size` when it starts past the end); several
/// ranges or an invalid Range header get the whole file (200). If-Range, If-None-Match (304)
/// and If-Modified-Since are honoured.
#[utoipa::path(get, path = "/stream/{id}", tag = "streaming", security(("bearer" = []), ("token" = [])),
    params(("id" = String, Path, description = "Track id"), StreamQuery,
        ("Range" = Option<String>, Header, description = "One byte range, e.g. bytes=0-1023, bytes=1024- or bytes=-4096")),
    responses(
        (status = 200, description = "The whole file", content_type = "audio/*"),
        (status = 206, description = "The requested range", content_type = "audio/*"),
        (status = 304, description = "Not modified"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "A placeholder track without audio", body = ErrorBody),
        (status = 416, description = "The range starts past the end", body = ErrorBody),
        (status = 422, description = "An unknown quality", body = ErrorBody)))]
async fn stream(
    State(library): State<Library>,
    MediaAuth(caller): MediaAuth,
    method: Method,
    Path(id): Path<String>,
    Query(query): Query<StreamQuery>,
    request: HeaderMap,
) -> Result<Response, ApiError> {
    let id = TrackId::parse(&id)?;
    let quality = library
        .settings()
        .stream_quality(&caller, query.quality.as_deref())
        .await?;
    let want = Want {
        encoding: quality.map_or(Encoding::Original, Encoding::Opus),
        ..Want::original()
    };
    let (audio, served) = match library.open_audio(&caller, &id, &want).await? {
        Delivery::Stored { audio, rendition } => (audio, rendition),
        // Not asked for (`live` is false).
        Delivery::Live { .. } => {
            return Err(
                musiclib_core::Error::internal("a live encode /stream did not ask for").into(),
            )
        }
    };
    let served = match served {
        Some(quality) => format!("opus-{}", quality.as_str()),
        None => "original".to_string(),
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        axum::http::HeaderName::from_static("x-rendition"),
        HeaderValue::from_str(&served).expect("ascii"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=86400"),
    );
    send_stored(&library, &method, &request, &audio, headers).await
}

/// Sends stored audio (a track's, a share's track, a podcast episode) as every media
/// response is sent (musiclib-media-http): validators, 304, one byte range (206), 416 with the
/// JSON error, HEAD; `headers` are added to the answer.
pub(super) async fn send_stored(
    library: &Library,
    method: &Method,
    request: &HeaderMap,
    audio: &musiclib_core::media::TrackAudio,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    musiclib_media_http::respond(
        method,
        request,
        &audio.into(),
        headers,
        |size| unsatisfiable(size).into_response(),
        |range| async {
            let body = library.media().read_audio(audio, range).await?;
            Ok::<_, ApiError>(Body::from_stream(body))
        },
    )
    .await
}

/// The JSON error of a range that starts past the end (416).
pub(super) fn unsatisfiable(size: u64) -> ApiError {
    ApiError::new(
        StatusCode::RANGE_NOT_SATISFIABLE,
        "range_not_satisfiable",
        format!("the range starts past the end of the {size} bytes of audio"),
    )
}
