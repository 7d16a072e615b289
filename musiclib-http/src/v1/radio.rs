//! Recommendations: the stateless radio (`POST /radio`, `POST /radio/next`), similar tracks
//! (`GET /tracks/{id}/similar`) and similar artists (`GET /artists/{id}/similar`). Any
//! signed-in user.

use axum::extract::{Path, State};
use musiclib_core::recommend::{
    ArtistReason, RadioItem, RadioRequest, Reason, SimilarArtist, RADIO_MAX_COUNT,
    RADIO_MAX_EXCLUDE, SIMILAR_MAX,
};
use musiclib_core::{ArtistId, Library, TrackId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{ArtistOut, TrackOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(radio))
        .routes(routes!(radio_next))
        .routes(routes!(similar_tracks))
        .routes(routes!(similar_artists))
}

/// A radio request. The server keeps no session: the client sends what it has already seen
/// in `exclude_ids`, and any replica answers the next batch.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RadioIn {
    /// The track the feed starts from; without one, the caller's liked tracks are the seeds
    /// (and with no likes the feed is exploration and random playable tracks).
    #[serde(default)]
    #[schema(format = Uuid)]
    pub seed_track_id: Option<String>,
    /// Track ids never to answer (what the client has seen), at most 5,000.
    #[serde(default)]
    #[schema(max_items = 5000)]
    pub exclude_ids: Vec<String>,
    /// Batch size, 1–100 (default 20).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100)]
    pub count: Option<usize>,
}

/// Why a track is recommended.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasonOut {
    /// By the seed's artist.
    SameArtist,
    /// By an artist similar to the seed's (shared genres, co-listening, co-liking, playlists).
    SimilarArtist,
    /// Of the seed's genre (normalised: "Hip-Hop" and "hip hop" are one).
    SameGenre,
    /// From within five years of the seed (with `same_genre`).
    SameEra,
    /// Played by the same people within half an hour of the seed.
    ListenedTogether,
    /// Liked by the caller.
    Liked,
    /// Near the seed by its analysed sound (tempo, loudness, timbre, chroma).
    SoundsLike,
    /// Suggested by the external recommender.
    External,
    /// Random, outside the seed's artists and genres: a fifth of each batch.
    Exploration,
    /// Random playable track, when the other signals ran out.
    Filler,
}

impl From<Reason> for ReasonOut {
    fn from(reason: Reason) -> ReasonOut {
        match reason {
            Reason::SameArtist => ReasonOut::SameArtist,
            Reason::SimilarArtist => ReasonOut::SimilarArtist,
            Reason::SameGenre => ReasonOut::SameGenre,
            Reason::SameEra => ReasonOut::SameEra,
            Reason::ListenedTogether => ReasonOut::ListenedTogether,
            Reason::Liked => ReasonOut::Liked,
            Reason::SoundsLike => ReasonOut::SoundsLike,
            Reason::External => ReasonOut::External,
            Reason::Exploration => ReasonOut::Exploration,
            Reason::Filler => ReasonOut::Filler,
        }
    }
}

/// One recommended track.
#[derive(Debug, Serialize, ToSchema)]
pub struct RadioItemOut {
    /// The track (always playable).
    pub track: TrackOut,
    /// Why, at least one.
    pub reasons: Vec<ReasonOut>,
    /// How strongly the signals recommend it (0 for exploration and filler); comparable
    /// within one answer.
    pub score: f64,
}

impl From<RadioItem> for RadioItemOut {
    fn from(item: RadioItem) -> RadioItemOut {
        RadioItemOut {
            track: item.track.into(),
            reasons: item.reasons.into_iter().map(ReasonOut::from).collect(),
            score: item.score,
        }
    }
}

/// A batch of recommended tracks.
#[derive(Debug, Serialize, ToSchema)]
pub struct RadioOut {
    /// The batch: at most `count` items, fewer only when fewer playable tracks remain.
    pub items: Vec<RadioItemOut>,
}

async fn answer(
    library: &Library,
    caller: &musiclib_core::auth::Caller,
    body: RadioIn,
) -> Result<axum::Json<RadioOut>, ApiError> {
    let request = RadioRequest {
        seed_track_id: body.seed_track_id,
        exclude_ids: body.exclude_ids,
        count: body.count,
    };
    let items = library.recommend().radio(caller, &request).await?;
    Ok(axum::Json(RadioOut {
        items: items.into_iter().map(RadioItemOut::from).collect(),
    }))
}

/// Starts a radio: a batch of tracks like the seed (or like the caller's likes), a fifth of
/// it exploration, never an excluded id or the seed, never a track twice, no artist more
/// than twice in 20 while the library allows.
#[utoipa::path(post, path = "/radio", tag = "recommendations", request_body = RadioIn,
    security(("bearer" = [])),
    responses((status = 200, body = RadioOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such seed track", body = ErrorBody),
        (status = 422, description = "A bad count, too many exclude_ids, or a malformed body", body = ErrorBody)))]
async fn radio(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<RadioIn>,
) -> Result<axum::Json<RadioOut>, ApiError> {
    answer(&library, &caller, body).await
}

/// The next batch of a radio: the same request with what has been seen added to
/// `exclude_ids`. Stateless: any replica answers it.
#[utoipa::path(post, path = "/radio/next", tag = "recommendations", request_body = RadioIn,
    security(("bearer" = [])),
    responses((status = 200, body = RadioOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such seed track", body = ErrorBody),
        (status = 422, description = "A bad count, too many exclude_ids, or a malformed body", body = ErrorBody)))]
async fn radio_next(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<RadioIn>,
) -> Result<axum::Json<RadioOut>, ApiError> {
    answer(&library, &caller, body).await
}

/// How many similar items to answer.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SimilarQuery {
    /// 1–100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

fn limit_of(query: &SimilarQuery) -> Result<usize, ApiError> {
    let limit = query.limit.unwrap_or(20);
    if !(1..=SIMILAR_MAX).contains(&limit) {
        return Err(musiclib_core::Error::invalid(
            "limit",
            format!("must be between 1 and {SIMILAR_MAX}"),
        )
        .into());
    }
    Ok(limit)
}

/// Ranked similar tracks.
#[derive(Debug, Serialize, ToSchema)]
pub struct SimilarTracksOut {
    /// Best first.
    pub items: Vec<RadioItemOut>,
}

/// Tracks like this one, best first, with their reasons and score (the radio's signals,
/// without exploration or filler; the track itself never).
#[utoipa::path(get, path = "/tracks/{id}/similar", tag = "recommendations",
    params(("id" = String, Path, description = "Track id"), SimilarQuery), security(("bearer" = [])),
    responses((status = 200, body = SimilarTracksOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such track", body = ErrorBody),
        (status = 422, description = "A bad limit", body = ErrorBody)))]
async fn similar_tracks(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Query(query): Query<SimilarQuery>,
) -> Result<axum::Json<SimilarTracksOut>, ApiError> {
    let id = TrackId::parse(&id)?;
    let limit = limit_of(&query)?;
    let items = library
        .recommend()
        .similar_tracks_of(&caller, &id, limit)
        .await?;
    Ok(axum::Json(SimilarTracksOut {
        items: items.into_iter().map(RadioItemOut::from).collect(),
    }))
}

/// Why an artist is similar.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArtistReasonOut {
    /// Their genres overlap.
    SharedGenre,
    /// People played them within half an hour of each other.
    ListenedTogether,
    /// People like tracks of both.
    LikedTogether,
    /// They share playlists.
    SamePlaylist,
}

impl From<ArtistReason> for ArtistReasonOut {
    fn from(reason: ArtistReason) -> ArtistReasonOut {
        match reason {
            ArtistReason::SharedGenre => ArtistReasonOut::SharedGenre,
            ArtistReason::ListenedTogether => ArtistReasonOut::ListenedTogether,
            ArtistReason::LikedTogether => ArtistReasonOut::LikedTogether,
            ArtistReason::SamePlaylist => ArtistReasonOut::SamePlaylist,
        }
    }
}

/// One similar artist.
#[derive(Debug, Serialize, ToSchema)]
pub struct SimilarArtistOut {
    /// The artist.
    pub artist: ArtistOut,
    /// What links them, the strongest first.
    pub reasons: Vec<ArtistReasonOut>,
    /// How similar, 0 to 1.
    pub score: f64,
}

impl From<SimilarArtist> for SimilarArtistOut {
    fn from(similar: SimilarArtist) -> SimilarArtistOut {
        SimilarArtistOut {
            artist: similar.artist.into(),
            reasons: similar
                .reasons
                .into_iter()
                .map(ArtistReasonOut::from)
                .collect(),
            score: similar.score,
        }
    }
}

/// Ranked similar artists.
#[derive(Debug, Serialize, ToSchema)]
pub struct SimilarArtistsOut {
    /// Best first.
    pub items: Vec<SimilarArtistOut>,
}

/// Artists like this one, best first: computed from the library (shared genres,
/// co-listening, co-liking, shared playlists) by a background job that reruns when plays,
/// likes, playlists or tracks change; empty until it has run once.
#[utoipa::path(get, path = "/artists/{id}/similar", tag = "recommendations",
    params(("id" = String, Path, description = "Artist id"), SimilarQuery), security(("bearer" = [])),
    responses((status = 200, body = SimilarArtistsOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such artist", body = ErrorBody),
        (status = 422, description = "A bad limit", body = ErrorBody)))]
async fn similar_artists(
    State(library): State<Library>,
    Auth(_caller): Auth,
    Path(id): Path<String>,
    Query(query): Query<SimilarQuery>,
) -> Result<axum::Json<SimilarArtistsOut>, ApiError> {
    let id = ArtistId::parse(&id)?;
    let limit = limit_of(&query)?;
    let items = library.recommend().similar_artists(&id, limit).await?;
    Ok(axum::Json(SimilarArtistsOut {
        items: items.into_iter().map(SimilarArtistOut::from).collect(),
    }))
}

const _: () = assert!(RADIO_MAX_COUNT == 100 && RADIO_MAX_EXCLUDE == 5000);
