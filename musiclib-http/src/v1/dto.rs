//! Wire types of `/api/v1`. Core types carry no serde derive; these do, with `From` impls.
//! Times are RFC 3339 strings in UTC; durations are milliseconds.

use musiclib_core::catalog::Chunk;
use musiclib_core::domain::{Album, Artist, Paged, ReplayGain, Track};
use musiclib_core::jobs::Job;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A page of a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    /// The page.
    pub items: Vec<T>,
    /// Total matching count.
    pub total: i64,
    /// Page size (default 50, maximum 200).
    pub limit: i64,
    /// Offset of the first item; null for a page read by `cursor`.
    pub offset: Option<i64>,
    /// Lists that offer cursor paging (`/tracks`, `/albums`, `/artists`), read with `cursor`:
    /// the `cursor` of the next page; absent after the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    pub(crate) fn from_core<U>(paged: Paged<U>, map: impl FnMut(U) -> T) -> Page<T> {
        let (limit, offset) = (paged.page.limit(), paged.page.offset());
        Page {
            items: paged.items.into_iter().map(map).collect(),
            total: paged.total,
            limit,
            offset: Some(offset),
            next_cursor: None,
        }
    }

    pub(crate) fn from_chunk<U>(chunk: Chunk<U>, map: impl FnMut(U) -> T) -> Page<T> {
        Page {
            items: chunk.items.into_iter().map(map).collect(),
            total: chunk.total,
            limit: chunk.limit,
            offset: None,
            next_cursor: chunk.next_cursor,
        }
    }
}

/// How a list that offers cursor paging is read: by `offset`, or by `cursor` (then an
/// `offset` counts rows skipped after the cursor's place).
pub(crate) enum Paging {
    Offset(musiclib_core::domain::Page),
    Cursor {
        limit: i64,
        cursor: String,
        skip: i64,
    },
}

impl Paging {
    pub(crate) fn new(
        limit: Option<i64>,
        offset: Option<i64>,
        cursor: Option<String>,
    ) -> Result<Paging, musiclib_core::Error> {
        match (cursor, offset) {
            (Some(cursor), skip) => {
                // The bounds of an offset page hold here too.
                let page = musiclib_core::domain::Page::new(limit, skip)?;
                Ok(Paging::Cursor {
                    limit: page.limit(),
                    cursor,
                    skip: page.offset(),
                })
            }
            (None, offset) => Ok(Paging::Offset(musiclib_core::domain::Page::new(
                limit, offset,
            )?)),
        }
    }
}

/// A page read by cursor after skipping `skip` rows from the cursor's place: `read(limit,
/// cursor)` reads one chunk (at most 200 rows); the skip walks chunks until it is done or the
/// list ends.
pub(crate) async fn chunk_after_skip<T, F, Fut>(
    limit: i64,
    cursor: String,
    skip: i64,
    read: F,
) -> Result<Chunk<T>, musiclib_core::Error>
where
    F: Fn(i64, String) -> Fut,
    Fut: std::future::Future<Output = Result<Chunk<T>, musiclib_core::Error>>,
{
    let (mut cursor, mut left) = (cursor, skip);
    while left > 0 {
        let skipped = read(left.min(200), cursor).await?;
        left -= skipped.items.len() as i64;
        match skipped.next_cursor {
            Some(next) if !skipped.items.is_empty() => cursor = next,
            // The list ends before the skip does: an empty page.
            _ => {
                return Ok(Chunk {
                    items: Vec::new(),
                    total: skipped.total,
                    limit,
                    next_cursor: None,
                })
            }
        }
    }
    read(limit, cursor).await
}

/// Paging parameters.
#[derive(Debug, Default, Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Offset (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

impl PageParams {
    pub(crate) fn page(&self) -> Result<musiclib_core::domain::Page, musiclib_core::Error> {
        musiclib_core::domain::Page::new(self.limit, self.offset)
    }
}

/// A Subsonic app password, with the user name to use it with.
#[derive(Debug, Serialize, ToSchema)]
pub struct LegacyPasswordOut {
    /// User name (`u`).
    pub username: String,
    /// App password (`p`, or the key of the `t`/`s` token; also the OpenSubsonic `apiKey`).
    pub password: String,
}

/// A user account.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserOut {
    /// Id.
    pub id: String,
    /// User name.
    pub username: String,
    /// Superuser flag.
    pub is_admin: bool,
    /// Superuser flag (the same as `is_admin`, under the name `POST /admin/users` takes).
    pub is_superuser: bool,
    /// Whether the account is disabled (it cannot sign in).
    pub disabled: bool,
    /// Since when it is disabled.
    pub disabled_at: Option<String>,
    /// Creation time.
    pub created_at: String,
}

impl From<musiclib_core::auth::User> for UserOut {
    fn from(user: musiclib_core::auth::User) -> UserOut {
        UserOut {
            id: user.id.to_string(),
            username: user.username,
            is_admin: user.is_admin,
            is_superuser: user.is_admin,
            disabled: user.disabled_at.is_some(),
            disabled_at: user.disabled_at.map(|at| at.to_rfc3339()),
            created_at: user.created_at.to_rfc3339(),
        }
    }
}

/// A change of the caller's login password.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChangeIn {
    /// The password in use now.
    pub current_password: String,
    /// The new one (8–1024 characters).
    #[schema(min_length = 8, max_length = 1024)]
    pub new_password: String,
}

/// Credentials for registration and login (JSON, or form-encoded for OAuth2 password flow).
#[derive(Debug, Deserialize, ToSchema)]
pub struct Credentials {
    /// User name (1–64 characters, no control characters, surrounding spaces trimmed;
    /// case-insensitive when logging in).
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub username: String,
    /// Password (8–1024 characters).
    #[schema(min_length = 8, max_length = 1024)]
    pub password: String,
}

/// The answer of login and registration.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenOut {
    /// Bearer token for `Authorization: Bearer …` (or `?token=` on media endpoints).
    pub access_token: String,
    /// Always `bearer`.
    pub token_type: &'static str,
    /// Seconds until the token expires.
    pub expires_in: u64,
    /// The user.
    pub user: UserOut,
}

impl From<musiclib_core::auth::AccessToken> for TokenOut {
    fn from(token: musiclib_core::auth::AccessToken) -> TokenOut {
        TokenOut {
            access_token: token.token,
            token_type: "bearer",
            expires_in: token.expires_in,
            user: token.user.into(),
        }
    }
}

/// A track.
#[derive(Debug, Serialize, ToSchema)]
pub struct TrackOut {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Track artist id.
    pub artist_id: Option<String>,
    /// Track artist name.
    pub artist: Option<String>,
    /// Album id.
    pub album_id: Option<String>,
    /// Album title.
    pub album: Option<String>,
    /// Album artist name.
    pub album_artist: Option<String>,
    /// Genre.
    pub genre: Option<String>,
    /// Release year.
    pub year: Option<i64>,
    /// Track number.
    pub track_number: Option<i64>,
    /// Disc number.
    pub disc_number: Option<i64>,
    /// Duration in milliseconds.
    pub duration_ms: Option<i64>,
    /// Audio format: mp3, flac, ogg, opus, m4a, wav, aiff, …
    pub format: Option<String>,
    /// MIME type of the original.
    pub mime_type: Option<String>,
    /// Average bitrate in kbit/s.
    pub bitrate_kbps: Option<i64>,
    /// Sample rate in Hz.
    pub sample_rate: Option<i64>,
    /// Channels.
    pub channels: Option<i64>,
    /// Size of the original in bytes.
    pub size_bytes: Option<i64>,
    /// Location of the audio in storage; empty for a placeholder.
    pub storage_uri: String,
    /// upload, local_folder or remote.
    pub source: String,
    /// Id inside the source (sha256 for uploads, relative path for local_folder).
    pub source_id: String,
    /// pending, enriched, failed or manual.
    pub metadata_status: String,
    /// Why enrichment failed.
    pub metadata_error: Option<String>,
    /// When an enrichment outcome was last recorded.
    pub enriched_at: Option<String>,
    /// available, placeholder or missing.
    pub availability: String,
    /// Whether `GET /tracks/{id}/cover` serves an image.
    pub has_cover: bool,
    /// MusicBrainz recording id.
    pub musicbrainz_recording_id: Option<String>,
    /// AcoustID track id.
    pub acoustid_id: Option<String>,
    /// Its ReplayGain, from its tags or measured; every field null until known.
    pub replay_gain: ReplayGainOut,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// A track's ReplayGain (ReplayGain 2.0): gains in dB towards -18 LUFS, peaks linear (1.0
/// is full scale). Read from the file's tags (`REPLAYGAIN_*`, ID3 `TXXX`, MP4 freeform
/// atoms, Opus `R128_*_GAIN`), else measured in the background (EBU R128); a player scales
/// by `10^(gain / 20)`, at most `1 / peak`. Null fields: not known (yet); the album ones
/// also for a track without an album, or whose album mixes tagged and untagged files.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayGainOut {
    /// Track gain in dB.
    #[schema(minimum = -64.0, maximum = 64.0)]
    pub track_gain: Option<f64>,
    /// Track peak, linear.
    #[schema(minimum = 0.0, maximum = 16.0)]
    pub track_peak: Option<f64>,
    /// Album gain in dB.
    #[schema(minimum = -64.0, maximum = 64.0)]
    pub album_gain: Option<f64>,
    /// Album peak, linear.
    #[schema(minimum = 0.0, maximum = 16.0)]
    pub album_peak: Option<f64>,
}

impl From<ReplayGain> for ReplayGainOut {
    fn from(gain: ReplayGain) -> ReplayGainOut {
        ReplayGainOut {
            track_gain: gain.track_gain,
            track_peak: gain.track_peak,
            album_gain: gain.album_gain,
            album_peak: gain.album_peak,
        }
    }
}

impl From<Track> for TrackOut {
    fn from(track: Track) -> TrackOut {
        TrackOut {
            id: track.id.to_string(),
            title: track.title,
            artist_id: track.artist_id.map(|id| id.to_string()),
            artist: track.artist_name,
            album_id: track.album_id.map(|id| id.to_string()),
            album: track.album_title,
            album_artist: track.album_artist_name,
            genre: track.genre,
            year: track.year,
            track_number: track.track_number,
            disc_number: track.disc_number,
            duration_ms: track.duration_ms,
            format: track.format,
            mime_type: track.mime_type,
            bitrate_kbps: track.bitrate_kbps,
            sample_rate: track.sample_rate,
            channels: track.channels,
            size_bytes: track.size_bytes,
            storage_uri: track.storage_uri,
            source: track.source.to_string(),
            source_id: track.source_id,
            metadata_status: track.metadata_status.to_string(),
            metadata_error: track.metadata_error,
            enriched_at: track.enriched_at.map(|time| time.to_rfc3339()),
            availability: track.availability.to_string(),
            has_cover: track.has_cover,
            musicbrainz_recording_id: track.musicbrainz_recording_id,
            acoustid_id: track.acoustid_id,
            replay_gain: track.replay_gain.into(),
            created_at: track.created_at.to_rfc3339(),
            updated_at: track.updated_at.to_rfc3339(),
        }
    }
}

/// An album.
#[derive(Debug, Serialize, ToSchema)]
pub struct AlbumOut {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Album artist id.
    pub artist_id: Option<String>,
    /// Album artist name.
    pub artist: Option<String>,
    /// Release year.
    pub year: Option<i64>,
    /// Genre.
    pub genre: Option<String>,
    /// A various-artists compilation.
    pub is_compilation: bool,
    /// Number of tracks.
    pub track_count: i64,
    /// Total duration in milliseconds.
    pub duration_ms: i64,
    /// Whether `GET /albums/{id}/cover` serves an image.
    pub has_cover: bool,
    /// MusicBrainz release id.
    pub musicbrainz_album_id: Option<String>,
    /// MusicBrainz release-group id.
    pub musicbrainz_releasegroup_id: Option<String>,
    /// Remote identity: source.
    pub source: Option<String>,
    /// Remote identity: id inside the source.
    pub source_id: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl From<Album> for AlbumOut {
    fn from(album: Album) -> AlbumOut {
        AlbumOut {
            has_cover: album.has_cover(),
            id: album.id.to_string(),
            title: album.title,
            artist_id: album.artist_id.map(|id| id.to_string()),
            artist: album.artist_name,
            year: album.year,
            genre: album.genre,
            is_compilation: album.is_compilation,
            track_count: album.track_count,
            duration_ms: album.duration_ms,
            musicbrainz_album_id: album.musicbrainz_album_id,
            musicbrainz_releasegroup_id: album.musicbrainz_releasegroup_id,
            source: album.remote_source,
            source_id: album.remote_source_id,
            created_at: album.created_at.to_rfc3339(),
            updated_at: album.updated_at.to_rfc3339(),
        }
    }
}

/// An artist.
#[derive(Debug, Serialize, ToSchema)]
pub struct ArtistOut {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Sort name.
    pub sort_name: Option<String>,
    /// MusicBrainz artist id.
    pub musicbrainz_id: Option<String>,
    /// Albums whose album artist this is.
    pub album_count: i64,
    /// Tracks by this artist.
    pub track_count: i64,
    /// Remote identity: source.
    pub source: Option<String>,
    /// Remote identity: id inside the source.
    pub source_id: Option<String>,
    /// Creation time.
    pub created_at: String,
}

impl From<Artist> for ArtistOut {
    fn from(artist: Artist) -> ArtistOut {
        ArtistOut {
            id: artist.id.to_string(),
            name: artist.name,
            sort_name: artist.sort_name,
            musicbrainz_id: artist.musicbrainz_id,
            album_count: artist.album_count,
            track_count: artist.track_count,
            source: artist.remote_source,
            source_id: artist.remote_source_id,
            created_at: artist.created_at.to_rfc3339(),
        }
    }
}

/// A background job.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobOut {
    /// Id.
    pub id: String,
    /// enrich_task, scan_local_folder, transcode_track, …
    pub kind: String,
    /// queued, running, succeeded or failed.
    pub state: String,
    /// Attempts started.
    pub attempts: i64,
    /// Attempts allowed.
    pub max_attempts: i64,
    /// Progress reported while running (a scan reports seen, imported, skipped, failed).
    #[schema(value_type = Option<Object>)]
    pub progress: Option<serde_json::Value>,
    /// Output when finished.
    #[schema(value_type = Option<Object>)]
    pub result: Option<serde_json::Value>,
    /// Last error.
    pub error: Option<String>,
    /// Earliest time of the next attempt.
    pub run_at: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// When it finished.
    pub finished_at: Option<String>,
}

impl From<Job> for JobOut {
    fn from(job: Job) -> JobOut {
        JobOut {
            id: job.id.to_string(),
            kind: job.kind,
            state: job.state.as_str().to_string(),
            attempts: job.attempts,
            max_attempts: job.max_attempts,
            progress: job.progress,
            result: job.result,
            error: job.error,
            run_at: job.run_at.to_rfc3339(),
            created_at: job.created_at.to_rfc3339(),
            updated_at: job.updated_at.to_rfc3339(),
            finished_at: job.finished_at.map(|time| time.to_rfc3339()),
        }
    }
}

/// A job was queued.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobQueued {
    /// The job's id; follow it at `GET /api/v1/jobs/{id}`.
    pub job_id: String,
    /// Always `queued` (or `running` when the same work was already in flight).
    pub state: String,
    /// Extra information (for example: the track is manual and enrichment will skip it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl JobQueued {
    /// The 202 answer for a job just queued (or the live one it joined): its id and state.
    pub(crate) async fn accepted(
        library: &musiclib_core::Library,
        caller: &musiclib_core::auth::Caller,
        job_id: musiclib_core::JobId,
    ) -> Result<(axum::http::StatusCode, axum::Json<JobQueued>), crate::error::ApiError> {
        let job = library.jobs().get(caller, &job_id).await?;
        Ok((
            axum::http::StatusCode::ACCEPTED,
            axum::Json(JobQueued {
                job_id: job_id.to_string(),
                state: job.state.as_str().into(),
                note: None,
            }),
        ))
    }
}

/// One fingerprint match offered for a track.
#[derive(Debug, Serialize, ToSchema)]
pub struct CandidateOut {
    /// Lookup score, 0–1 (best first).
    pub score: f64,
    /// AcoustID track id.
    pub acoustid_id: String,
    /// MusicBrainz recording id: send it as `musicbrainz_recording_id` in `PUT /metadata`.
    pub recording_id: String,
    /// Recording title.
    pub title: Option<String>,
    /// Artist credit.
    pub artist: Option<String>,
    /// Album (release-group) title.
    pub album: Option<String>,
    /// Album artist.
    pub album_artist: Option<String>,
    /// MusicBrainz release-group id.
    pub releasegroup_id: Option<String>,
    /// Year, when known.
    pub year: Option<i64>,
}

impl From<musiclib_core::enrichment::Candidate> for CandidateOut {
    fn from(candidate: musiclib_core::enrichment::Candidate) -> CandidateOut {
        CandidateOut {
            score: candidate.score,
            acoustid_id: candidate.acoustid_id,
            recording_id: candidate.recording_id,
            title: candidate.title,
            artist: candidate.artist,
            album: candidate.album,
            album_artist: candidate.album_artist,
            releasegroup_id: candidate.releasegroup_id,
            year: candidate.year,
        }
    }
}
