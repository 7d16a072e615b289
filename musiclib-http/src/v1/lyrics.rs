//! `/tracks/{id}/lyrics`: get-or-fetch, and a forced refetch. Any signed-in user.

use axum::extract::{Path, State};
use musiclib_core::lyrics::LyricsRecord;
use musiclib_core::{Library, TrackId};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::error::{ApiError, ErrorBody};
use crate::extract::Auth;

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(get_lyrics))
        .routes(routes!(refetch_lyrics))
}

/// Whether lyrics were found.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LyricsStatusName {
    /// A source had lyrics, or said the track is instrumental.
    Found,
    /// No source had any (fetched again after 7 days, or after an hour when LRCLIB failed).
    NotFound,
}

/// Where found lyrics came from, in the order they are tried.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LyricsSourceName {
    /// The file's tags (ID3v2 SYLT/USLT, Vorbis LYRICS/UNSYNCEDLYRICS, MP4 ©lyr).
    Embedded,
    /// A `.lrc` or `.txt` file next to a local-folder track.
    Sidecar,
    /// LRCLIB.
    Lrclib,
}

/// One timed line.
#[derive(Debug, Serialize, ToSchema)]
pub struct LyricsLineOut {
    /// Start, in ms from the start of the track (`offset_ms` not applied).
    pub start_ms: u64,
    /// The line (empty for a pause).
    pub text: String,
}

/// The same source's lyrics in one more language.
#[derive(Debug, Serialize, ToSchema)]
pub struct LyricsAlternateOut {
    /// ISO 639 language code, when the source says.
    pub language: Option<String>,
    /// Whether `lines` carry start times.
    pub synced: bool,
    /// The text without time stamps, lines separated by `\n`.
    pub plain_text: String,
    /// Timed lines, by start time; empty when not synced.
    pub lines: Vec<LyricsLineOut>,
    /// LRC offset in ms, to add to every start.
    pub offset_ms: i64,
}

/// A track's lyrics record.
#[derive(Debug, Serialize, ToSchema)]
pub struct LyricsOut {
    /// The track.
    pub track_id: String,
    /// `found` or `not_found`.
    pub status: LyricsStatusName,
    /// Where they came from; null when not found.
    pub source: Option<LyricsSourceName>,
    /// Whether `lines` carry start times.
    pub synced: bool,
    /// An instrumental track (found, without lyrics).
    pub instrumental: bool,
    /// The text without time stamps, lines separated by `\n`; null when not found or
    /// instrumental.
    pub plain_text: Option<String>,
    /// Timed lines, by start time; empty when not synced.
    pub lines: Vec<LyricsLineOut>,
    /// ISO 639 language code, when the source says.
    pub language: Option<String>,
    /// LRC offset in ms, to add to every start (positive: lyrics show sooner).
    pub offset_ms: i64,
    /// When the sources were asked (RFC 3339).
    pub fetched_at: String,
    /// For `not_found`: when the next request asks the sources again (RFC 3339).
    pub refetch_after: Option<String>,
    /// The same source's lyrics in other languages, one entry per language (a file with
    /// `USLT` frames in `eng` and `spa`: the fields above are the first, this the other);
    /// usually empty.
    pub alternates: Vec<LyricsAlternateOut>,
}

fn lines_out(lines: Vec<musiclib_core::lyrics::Line>) -> Vec<LyricsLineOut> {
    lines
        .into_iter()
        .map(|line| LyricsLineOut {
            start_ms: line.start_ms,
            text: line.text,
        })
        .collect()
}

impl From<LyricsRecord> for LyricsOut {
    fn from(record: LyricsRecord) -> LyricsOut {
        use musiclib_core::lyrics::{LyricsSource, LyricsStatus};
        LyricsOut {
            track_id: record.track_id.to_string(),
            status: match record.status {
                LyricsStatus::Found => LyricsStatusName::Found,
                LyricsStatus::NotFound => LyricsStatusName::NotFound,
            },
            source: record.source.map(|source| match source {
                LyricsSource::Embedded => LyricsSourceName::Embedded,
                LyricsSource::Sidecar => LyricsSourceName::Sidecar,
                LyricsSource::Lrclib => LyricsSourceName::Lrclib,
            }),
            synced: record.synced(),
            instrumental: record.instrumental,
            refetch_after: record.refetch_after().map(|at| at.to_rfc3339()),
            plain_text: record.plain,
            lines: lines_out(record.lines),
            language: record.language,
            offset_ms: record.offset_ms,
            fetched_at: record.fetched_at.to_rfc3339(),
            alternates: record
                .alternates
                .into_iter()
                .map(|alternate| LyricsAlternateOut {
                    synced: alternate.synced(),
                    language: alternate.language,
                    plain_text: alternate.plain,
                    lines: lines_out(alternate.lines),
                    offset_ms: alternate.offset_ms,
                })
                .collect(),
        }
    }
}

/// A track's lyrics: the cached record, or the sources asked now (embedded tags, a sidecar
/// file, then LRCLIB). LRCLIB failing is a `not_found` asked again after an hour.
#[utoipa::path(get, path = "/tracks/{id}/lyrics", tag = "tracks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Track id")),
    responses((status = 200, body = LyricsOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such track", body = ErrorBody)))]
async fn get_lyrics(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<LyricsOut>, ApiError> {
    let id = TrackId::parse(&id)?;
    Ok(axum::Json(library.lyrics().get(&caller, &id).await?.into()))
}

/// Asks the sources again, whatever is cached, and answers the new record.
#[utoipa::path(post, path = "/tracks/{id}/lyrics/refetch", tag = "tracks", security(("bearer" = [])),
    params(("id" = String, Path, description = "Track id")),
    responses((status = 200, body = LyricsOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such track", body = ErrorBody)))]
async fn refetch_lyrics(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<LyricsOut>, ApiError> {
    let id = TrackId::parse(&id)?;
    Ok(axum::Json(
        library.lyrics().refetch(&caller, &id).await?.into(),
    ))
}
