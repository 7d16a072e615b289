//! Podcasts: subscriptions (`/podcasts`), their episodes (`/podcast-episodes`), downloads
//! into storage, streams and the listener's place. Who may do what is core's
//! (`Podcasts`): anyone signed in subscribes, refreshes and downloads; who subscribed, or an
//! admin, changes and removes.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::media::{Delivery, Encoding, Quality, Want};
use musiclib_core::podcasts::{Channel, Episode, EpisodeStatus, NewChannel};
use musiclib_core::{EpisodeId, Library, PodcastId, Timestamp};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{JobQueued, Page, PageParams};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, MediaAuth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_podcasts, subscribe))
        .routes(routes!(refresh_all))
        .routes(routes!(get_podcast, update_podcast, unsubscribe))
        .routes(routes!(refresh_podcast))
        .routes(routes!(podcast_episodes))
        .routes(routes!(podcast_cover))
        .routes(routes!(newest_episodes))
        .routes(routes!(get_episode, delete_episode))
        .routes(routes!(download_episode))
        .routes(routes!(set_position))
        .routes(routes!(stream_episode))
}

/// A subscribed podcast.
#[derive(Debug, Serialize, ToSchema)]
pub struct PodcastOut {
    id: String,
    /// The feed's URL.
    feed_url: String,
    title: String,
    /// As text (the feed's markup removed).
    description: Option<String>,
    author: Option<String>,
    site_url: Option<String>,
    /// The feed's image URL (the server keeps a copy: `cover_url`).
    image_url: Option<String>,
    /// The stored copy of its image, when there is one.
    cover_url: Option<String>,
    /// Null: episodes download on request; n: the newest n download as they appear and
    /// older downloads are deleted.
    keep_newest: Option<i64>,
    refreshed_at: Option<String>,
    /// Why the last refresh failed, if it did.
    refresh_error: Option<String>,
    /// Who subscribed (null once their account is gone).
    created_by: Option<String>,
    created_at: String,
    episode_count: i64,
    downloaded_count: i64,
}

impl From<Channel> for PodcastOut {
    fn from(channel: Channel) -> PodcastOut {
        PodcastOut {
            cover_url: channel
                .has_cover
                .then(|| format!("/api/v1/podcasts/{}/cover", channel.id)),
            id: channel.id.to_string(),
            feed_url: channel.feed_url,
            title: channel.title,
            description: channel.description,
            author: channel.author,
            site_url: channel.site_url,
            image_url: channel.image_url,
            keep_newest: channel.keep_newest,
            refreshed_at: channel.refreshed_at.map(Timestamp::to_rfc3339),
            refresh_error: channel.refresh_error,
            created_by: channel.created_by.map(|id| id.to_string()),
            created_at: channel.created_at.to_rfc3339(),
            episode_count: channel.episode_count,
            downloaded_count: channel.downloaded_count,
        }
    }
}

/// An episode.
#[derive(Debug, Serialize, ToSchema)]
pub struct EpisodeOut {
    id: String,
    podcast_id: String,
    title: String,
    /// As text (the feed's markup removed).
    description: Option<String>,
    published_at: Option<String>,
    duration_ms: Option<i64>,
    episode_number: Option<i64>,
    season: Option<i64>,
    /// The audio's URL in the feed.
    enclosure_url: String,
    /// The stored file's type once downloaded, else the feed's.
    mime_type: Option<String>,
    /// The stored file's size once downloaded, else the feed's.
    size_bytes: Option<i64>,
    image_url: Option<String>,
    /// `podcast:transcript`.
    transcript_url: Option<String>,
    transcript_type: Option<String>,
    /// `podcast:chapters`.
    chapters_url: Option<String>,
    /// new, downloading, downloaded, failed or deleted (its download deleted).
    #[schema(pattern = "^(new|downloading|downloaded|failed|deleted)$")]
    status: String,
    /// Why the last download attempt failed.
    error: Option<String>,
    /// Bytes received by the running download.
    downloaded_bytes: i64,
    /// The download's job, while there is one.
    job_id: Option<String>,
    downloaded_at: Option<String>,
    /// Where the caller stopped listening, in ms.
    position_ms: Option<i64>,
    /// Where it streams from once downloaded.
    stream_url: Option<String>,
}

impl From<Episode> for EpisodeOut {
    fn from(episode: Episode) -> EpisodeOut {
        EpisodeOut {
            stream_url: (episode.status == EpisodeStatus::Downloaded)
                .then(|| format!("/api/v1/podcast-episodes/{}/stream", episode.id)),
            id: episode.id.to_string(),
            podcast_id: episode.channel_id.to_string(),
            title: episode.title,
            description: episode.description,
            published_at: episode.published_at.map(Timestamp::to_rfc3339),
            duration_ms: episode.duration_ms,
            episode_number: episode.episode_number,
            season: episode.season,
            enclosure_url: episode.enclosure_url,
            mime_type: episode.mime_type,
            size_bytes: episode.size_bytes,
            image_url: episode.image_url,
            transcript_url: episode.transcript_url,
            transcript_type: episode.transcript_type,
            chapters_url: episode.chapters_url,
            status: episode.status.as_str().into(),
            error: episode.error,
            downloaded_bytes: episode.downloaded_bytes,
            job_id: episode.job_id.map(|id| id.to_string()),
            downloaded_at: episode.downloaded_at.map(Timestamp::to_rfc3339),
            position_ms: episode.position_ms,
        }
    }
}

/// `POST /podcasts`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PodcastCreate {
    /// The feed's URL: http or https, at most 2,048 characters, a public address unless the
    /// server allows private ones (`ALLOW_PRIVATE_URLS`).
    #[schema(max_length = 2048)]
    url: String,
    /// Keep the newest n episodes downloaded (1–100); absent: download on request.
    #[schema(minimum = 1, maximum = 100)]
    keep_newest: Option<i64>,
}

/// `PATCH /podcasts/{id}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PodcastUpdate {
    /// 1–100, or null: download on request.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 100)]
    keep_newest: Option<Option<i64>>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<i64>>, D::Error> {
    Option::<i64>::deserialize(deserializer).map(Some)
}

/// `PUT /podcast-episodes/{id}/position`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PositionIn {
    /// Where the caller stopped, in ms.
    #[schema(minimum = 0, maximum = 604800000)]
    position_ms: i64,
}

fn podcast_id(id: &str) -> Result<PodcastId, ApiError> {
    Ok(PodcastId::parse(id)?)
}

fn episode_id(id: &str) -> Result<EpisodeId, ApiError> {
    Ok(EpisodeId::parse(id)?)
}

/// Every podcast on the server, by title.
#[utoipa::path(get, path = "/podcasts", tag = "podcasts", security(("bearer" = [])),
    responses((status = 200, body = Vec<PodcastOut>), (status = 401, body = ErrorBody)))]
async fn list_podcasts(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<Vec<PodcastOut>>, ApiError> {
    let channels = library.podcasts().channels(&caller).await?;
    Ok(axum::Json(channels.into_iter().map(Into::into).collect()))
}

/// Subscribes to a feed (RSS 2.0 or Atom). The feed is read now: a URL that cannot be
/// fetched, is refused (not http/https, a private address) or is not a feed is a 422 naming
/// `url`. A feed already subscribed answers 200 with its podcast.
#[utoipa::path(post, path = "/podcasts", tag = "podcasts", request_body = PodcastCreate, security(("bearer" = [])),
    responses((status = 201, body = PodcastOut), (status = 200, description = "Already subscribed", body = PodcastOut),
        (status = 401, body = ErrorBody),
        (status = 409, description = "The server has 1,000 podcasts", body = ErrorBody),
        (status = 422, description = "A URL refused, unreachable or not a feed", body = ErrorBody)))]
async fn subscribe(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<PodcastCreate>,
) -> Result<(StatusCode, axum::Json<PodcastOut>), ApiError> {
    let (channel, created) = library
        .podcasts()
        .subscribe(
            &caller,
            NewChannel {
                url: body.url,
                keep_newest: body.keep_newest,
            },
        )
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(channel.into())))
}

/// Refreshes every podcast in the background.
#[utoipa::path(post, path = "/podcasts/refresh", tag = "podcasts", security(("bearer" = [])),
    responses((status = 202, body = JobQueued), (status = 401, body = ErrorBody)))]
async fn refresh_all(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<(StatusCode, axum::Json<JobQueued>), ApiError> {
    let job = library.podcasts().refresh_all(&caller).await?;
    JobQueued::accepted(&library, &caller, job).await
}

/// One podcast.
#[utoipa::path(get, path = "/podcasts/{id}", tag = "podcasts", params(("id" = uuid::Uuid, Path)), security(("bearer" = [])),
    responses((status = 200, body = PodcastOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_podcast(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<PodcastOut>, ApiError> {
    let channel = library
        .podcasts()
        .channel(&caller, &podcast_id(&id)?)
        .await?;
    Ok(axum::Json(channel.into()))
}

/// Changes a podcast's `keep_newest` (who subscribed, or an admin).
#[utoipa::path(patch, path = "/podcasts/{id}", tag = "podcasts", params(("id" = uuid::Uuid, Path)),
    request_body = PodcastUpdate, security(("bearer" = [])),
    responses((status = 200, body = PodcastOut), (status = 401, body = ErrorBody),
        (status = 403, description = "Not who subscribed, nor an admin", body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn update_podcast(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(body): Json<PodcastUpdate>,
) -> Result<axum::Json<PodcastOut>, ApiError> {
    let id = podcast_id(&id)?;
    let channel = match body.keep_newest {
        Some(keep) => {
            library
                .podcasts()
                .set_keep_newest(&caller, &id, keep)
                .await?
        }
        None => library.podcasts().channel(&caller, &id).await?,
    };
    Ok(axum::Json(channel.into()))
}

/// Unsubscribes (who subscribed, or an admin): the podcast, its episodes and their
/// downloads are deleted.
#[utoipa::path(delete, path = "/podcasts/{id}", tag = "podcasts", params(("id" = uuid::Uuid, Path)), security(("bearer" = [])),
    responses((status = 204, description = "Unsubscribed"), (status = 401, body = ErrorBody),
        (status = 403, description = "Not who subscribed, nor an admin", body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn unsubscribe(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    library
        .podcasts()
        .unsubscribe(&caller, &podcast_id(&id)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Reads a podcast's feed now. A feed that cannot be read leaves the podcast as it was,
/// with `refresh_error` saying why.
#[utoipa::path(post, path = "/podcasts/{id}/refresh", tag = "podcasts", params(("id" = uuid::Uuid, Path)), security(("bearer" = [])),
    responses((status = 200, body = PodcastOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn refresh_podcast(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<PodcastOut>, ApiError> {
    let channel = library
        .podcasts()
        .refresh(&caller, &podcast_id(&id)?)
        .await?;
    Ok(axum::Json(channel.into()))
}

/// Which episodes to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EpisodeListQuery {
    /// Only episodes in this state.
    #[param(pattern = "^(new|downloading|downloaded|failed|deleted)$")]
    status: Option<String>,
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
    #[param(minimum = 0)]
    offset: Option<i64>,
}

/// A podcast's episodes, newest first.
#[utoipa::path(get, path = "/podcasts/{id}/episodes", tag = "podcasts", params(("id" = uuid::Uuid, Path), EpisodeListQuery),
    security(("bearer" = [])),
    responses((status = 200, body = Page<EpisodeOut>), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn podcast_episodes(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Query(query): Query<EpisodeListQuery>,
) -> Result<axum::Json<Page<EpisodeOut>>, ApiError> {
    let id = podcast_id(&id)?;
    let status = match query.status.as_deref() {
        None => None,
        Some(text) => Some(EpisodeStatus::parse(text).ok_or_else(|| {
            musiclib_core::Error::invalid(
                "status",
                "must be new, downloading, downloaded, failed or deleted",
            )
        })?),
    };
    let page = PageParams {
        limit: query.limit,
        offset: query.offset,
    }
    .page()?;
    let episodes = library
        .podcasts()
        .episodes(&caller, &id, status, page)
        .await?;
    Ok(axum::Json(Page::from_core(episodes, EpisodeOut::from)))
}

/// A podcast's image (the server's copy of the feed's).
#[utoipa::path(get, path = "/podcasts/{id}/cover", tag = "podcasts", params(("id" = uuid::Uuid, Path)),
    security(("bearer" = []), ("token" = [])),
    responses((status = 200, description = "The image", content_type = "image/*"), (status = 304, description = "Not modified"),
        (status = 401, body = ErrorBody), (status = 404, description = "No such podcast, or no image", body = ErrorBody)))]
async fn podcast_cover(
    State(library): State<Library>,
    MediaAuth(_caller): MediaAuth,
    method: Method,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let cover = library.podcasts().cover(&podcast_id(&id)?).await?;
    Ok(super::covers::respond(&method, cover, &headers, "private, max-age=3600").await)
}

/// How many newest episodes.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NewestQuery {
    /// 1–200 (default 20).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
}

/// The newest episodes of every podcast (not the deleted ones).
#[utoipa::path(get, path = "/podcast-episodes", tag = "podcasts", params(NewestQuery), security(("bearer" = [])),
    responses((status = 200, body = Vec<EpisodeOut>), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn newest_episodes(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(query): Query<NewestQuery>,
) -> Result<axum::Json<Vec<EpisodeOut>>, ApiError> {
    let limit = query.limit.unwrap_or(20);
    if !(1..=200).contains(&limit) {
        return Err(musiclib_core::Error::invalid("limit", "must be between 1 and 200").into());
    }
    let episodes = library.podcasts().newest(&caller, limit).await?;
    Ok(axum::Json(episodes.into_iter().map(Into::into).collect()))
}

/// One episode, with the caller's place in it.
#[utoipa::path(get, path = "/podcast-episodes/{id}", tag = "podcasts", params(("id" = uuid::Uuid, Path)), security(("bearer" = [])),
    responses((status = 200, body = EpisodeOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_episode(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<EpisodeOut>, ApiError> {
    let episode = library
        .podcasts()
        .episode(&caller, &episode_id(&id)?)
        .await?;
    Ok(axum::Json(episode.into()))
}

/// Deletes an episode's download (who subscribed to its podcast, or an admin): it stays
/// listed as `deleted` and may be downloaded again.
#[utoipa::path(delete, path = "/podcast-episodes/{id}", tag = "podcasts", params(("id" = uuid::Uuid, Path)), security(("bearer" = [])),
    responses((status = 204, description = "Its download is deleted"), (status = 401, body = ErrorBody),
        (status = 403, description = "Not who subscribed, nor an admin", body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_episode(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    library
        .podcasts()
        .delete_episode(&caller, &episode_id(&id)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Downloads an episode into storage, in the background (202 with the job); an episode
/// already downloaded answers 200 with itself.
#[utoipa::path(post, path = "/podcast-episodes/{id}/download", tag = "podcasts", params(("id" = uuid::Uuid, Path)),
    security(("bearer" = [])),
    responses((status = 202, body = JobQueued), (status = 200, description = "Already downloaded", body = EpisodeOut),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn download_episode(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = episode_id(&id)?;
    match library.podcasts().download(&caller, &id).await? {
        Some(job) => Ok(JobQueued::accepted(&library, &caller, job)
            .await?
            .into_response()),
        None => {
            let episode = library.podcasts().episode(&caller, &id).await?;
            Ok(axum::Json(EpisodeOut::from(episode)).into_response())
        }
    }
}

/// Remembers where the caller stopped listening.
#[utoipa::path(put, path = "/podcast-episodes/{id}/position", tag = "podcasts", params(("id" = uuid::Uuid, Path)),
    request_body = PositionIn, security(("bearer" = [])),
    responses((status = 204, description = "Kept"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn set_position(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(body): Json<PositionIn>,
) -> Result<StatusCode, ApiError> {
    library
        .podcasts()
        .set_position(&caller, &episode_id(&id)?, body.position_ms)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Options of an episode's stream.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EpisodeStreamQuery {
    /// `original` (default: the stored file, with byte ranges), or `low`, `medium`, `high`:
    /// Opus encoded while it is sent (no ranges).
    #[param(pattern = "^(original|low|medium|high)$")]
    quality: Option<String>,
    /// Access token, for players that cannot send an Authorization header.
    #[allow(dead_code)]
    token: Option<String>,
}

/// Streams a downloaded episode, as `/stream/{id}` does a track (one byte range per
/// request, validators); 409 before it is downloaded.
#[utoipa::path(get, path = "/podcast-episodes/{id}/stream", tag = "podcasts", security(("bearer" = []), ("token" = [])),
    params(("id" = uuid::Uuid, Path), EpisodeStreamQuery,
        ("Range" = Option<String>, Header, description = "One byte range, e.g. bytes=0-1023")),
    responses(
        (status = 200, description = "The whole file, or an Opus encode", content_type = "audio/*"),
        (status = 206, description = "The requested range", content_type = "audio/*"),
        (status = 304, description = "Not modified"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "Not downloaded", body = ErrorBody),
        (status = 416, description = "The range starts past the end", body = ErrorBody),
        (status = 422, description = "An unknown quality", body = ErrorBody),
        (status = 503, description = "Too many encodes running, or no transcoder", body = ErrorBody)))]
async fn stream_episode(
    State(library): State<Library>,
    MediaAuth(caller): MediaAuth,
    method: Method,
    Path(id): Path<String>,
    Query(query): Query<EpisodeStreamQuery>,
    request: HeaderMap,
) -> Result<Response, ApiError> {
    let id = episode_id(&id)?;
    let encoding = match query.quality.as_deref() {
        None | Some("original") => Encoding::Original,
        Some(text) => Encoding::Opus(Quality::parse(text)?),
    };
    let want = Want {
        encoding,
        live: true,
        ..Want::original()
    };
    match library.podcasts().open(&caller, &id, &want).await? {
        Delivery::Stored { audio, .. } => {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=86400"),
            );
            super::stream::send_stored(&library, &method, &request, &audio, headers).await
        }
        Delivery::Live { body, .. } => Ok((
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("audio/ogg")),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            Body::from_stream(body),
        )
            .into_response()),
    }
}
