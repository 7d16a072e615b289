//! Remote sources: music found outside the library, searched from one place, saved as
//! placeholder tracks, and fetched into the library on demand or as downloads.
//!
//! A source is a [`RemoteSource`] (search, metadata of one item, download to a staging
//! directory with progress, health), registered by configuration:
//!
//! - `remote` ([`YTDLP`]): YouTube and YouTube Music through the yt-dlp program
//!   (`REMOTE_ENABLED`, `YTDLP_PATH`, `REMOTE_COOKIES_FILE`), in `ytdlp.rs`;
//! - `subsonic` ([`SUBSONIC`]): any Subsonic or OpenSubsonic server (`SUBSONIC_SOURCE_URL`),
//!   in `subsonic.rs`.
//!
//! The rest is shared by every source:
//!
//! - search ([`Remote::search`], here): every enabled source at once, each within
//!   `REMOTE_SEARCH_TIMEOUT_SECONDS`; a failing or slow source is reported beside the others'
//!   hits. Each hit says whether the library has it (`in_library`, `track_id`, `availability`).
//! - placeholders (`placeholders.rs`): a hit saved as a track without audio, its artist and
//!   album carrying the remote identity; one track per (source, source id).
//! - fetching (`fetch.rs`): the `materialize_track` and `download_task` jobs download into a
//!   staging directory, probe the file, store the blob and fill the same track in place (same
//!   id: playlists, likes and history keep pointing at it), then queue enrichment.
//! - downloads (`downloads.rs`): `/downloads`, what a user asked to fetch and how it goes.
//! - `pacer.rs`: how a source slows down when the service rate-limits it.
//! - `metered.rs`: every source's calls counted by outcome, for the operators' metrics.

mod downloads;
mod fetch;
mod metered;
mod pacer;
mod placeholders;
pub(crate) mod subsonic;
pub(crate) mod ytdlp;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

pub use downloads::{Download, DownloadState};
pub use fetch::{Asker, DownloadTask, Fetch, ForDownload, ForPlayback, MaterializeTrack};
pub use placeholders::SavedTrack;

use crate::auth::Caller;
use crate::cache::KeyedLocks;
use crate::catalog::Catalog;
use crate::config::RemoteConfig;
use crate::db::Db;
use crate::domain::{Availability, Source, Track};
use crate::jobs::{Jobs, Registry};
use crate::media::Media;
use crate::storage::Storage;
use crate::{Error, JobId, Result, TrackId};

/// The name of the Subsonic source, and the `source` of its tracks.
pub const SUBSONIC: &str = "subsonic";
/// The name of the yt-dlp source: the spec's `source` value for remote tracks.
pub const YTDLP: &str = "remote";
/// Every remote source this server can have, in registry order.
pub const NAMES: [&str; 2] = [YTDLP, SUBSONIC];
/// How long a source may take to answer a health check.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a source may take to describe one item (saving a placeholder).
const METADATA_TIMEOUT: Duration = Duration::from_secs(30);
/// Hits per source when the request names no limit.
pub const DEFAULT_HITS: usize = 20;
/// The most hits per source.
pub const MAX_HITS: usize = 50;
/// Longest query.
pub const MAX_QUERY_CHARS: usize = 200;
/// Longest source id.
pub const MAX_SOURCE_ID_CHARS: usize = 128;

/// Something a source has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RemoteHit {
    /// The source's name.
    pub source: String,
    /// Its id at the source.
    pub source_id: String,
    /// Title.
    pub title: String,
    /// Artist.
    pub artist: Option<String>,
    /// The artist's id at the source (a channel, an artist id).
    pub artist_source_id: Option<String>,
    /// Album.
    pub album: Option<String>,
    /// The album's id at the source.
    pub album_source_id: Option<String>,
    /// Album artist, when the source says.
    pub album_artist: Option<String>,
    /// Genre.
    pub genre: Option<String>,
    /// Position on its album.
    pub track_number: Option<i64>,
    /// Length in ms.
    pub duration_ms: Option<i64>,
    /// Release year.
    pub year: Option<i64>,
    /// A picture of it, when the source offers one without credentials.
    pub thumbnail: Option<String>,
    /// Size of the audio a download would fetch, when the source says.
    pub size_bytes: Option<i64>,
}

/// How a source failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// It has no such thing, or it is gone for good (removed, private, blocked).
    NotFound(String),
    /// It could not be reached, or failed on its side: later may work.
    Unavailable(String),
    /// It asks us to slow down: later will work.
    RateLimited(String),
    /// It refused us: bad credentials, a sign-in or bot check, expired cookies. Retrying
    /// does not help until the operator fixes the configuration.
    Refused(String),
    /// The audio is larger than `MAX_UPLOAD_BYTES`.
    TooLarge(String),
    /// Anything else it said.
    Failed(String),
}

impl SourceError {
    /// Readably.
    pub fn message(&self) -> &str {
        match self {
            SourceError::NotFound(message)
            | SourceError::Unavailable(message)
            | SourceError::RateLimited(message)
            | SourceError::Refused(message)
            | SourceError::TooLarge(message)
            | SourceError::Failed(message) => message,
        }
    }

    /// Whether another attempt later may succeed.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            SourceError::Unavailable(_) | SourceError::RateLimited(_) | SourceError::Failed(_)
        )
    }

    /// As an error of a request about `source_id` of `source`.
    fn into_error(self, source: &str, source_id: &str) -> Error {
        match self {
            SourceError::NotFound(message) => Error::NotFound {
                what: "remote item",
                id: format!("{source}:{source_id} ({message})"),
            },
            SourceError::TooLarge(message) => Error::TooLargeItem(message),
            SourceError::Refused(message) => {
                Error::Unavailable(format!("the {source} source refused: {message}"))
            }
            other => Error::Unavailable(format!("the {source} source failed: {}", other.message())),
        }
    }
}

/// How far a download is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes received.
    pub bytes: u64,
    /// Bytes expected, when known.
    pub total: Option<u64>,
}

/// What a download is asked to do.
pub struct DownloadRequest<'a> {
    /// An empty directory the download writes into (removed afterwards, whatever happens).
    pub dir: &'a Path,
    /// The largest file accepted (`MAX_UPLOAD_BYTES`).
    pub max_bytes: u64,
    /// Told how far it is, as often as the source likes.
    pub progress: &'a (dyn Fn(Progress) + Send + Sync),
}

/// A remote source.
#[async_trait]
pub trait RemoteSource: Send + Sync + std::fmt::Debug {
    /// Its name (`remote`, `subsonic`).
    fn name(&self) -> &'static str;
    /// Whether `source_id` can name an item of this source (checked before anything else:
    /// ids travel into URLs and program arguments).
    fn check_id(&self, source_id: &str) -> std::result::Result<(), String> {
        check_id_chars(source_id)
    }
    /// What matches `query`, at most `limit`.
    async fn search(
        &self,
        query: &str,
        limit: usize,
    ) -> std::result::Result<Vec<RemoteHit>, SourceError>;
    /// One item.
    async fn metadata(&self, source_id: &str) -> std::result::Result<RemoteHit, SourceError>;
    /// Downloads one item's audio into `request.dir`; answers the file's path.
    async fn download(
        &self,
        source_id: &str,
        request: DownloadRequest<'_>,
    ) -> std::result::Result<PathBuf, SourceError>;
    /// Whether it answers now.
    async fn health(&self) -> std::result::Result<(), SourceError>;
}

/// The rule every source id follows: 1–128 of `A-Z a-z 0-9 _ - . :`, never `..`. Nothing a
/// shell, a path or a URL would read as structure.
pub fn check_id_chars(source_id: &str) -> std::result::Result<(), String> {
    if source_id.is_empty() || source_id.chars().count() > MAX_SOURCE_ID_CHARS {
        return Err(format!("must be 1 to {MAX_SOURCE_ID_CHARS} characters"));
    }
    if !source_id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        || source_id.contains("..")
        || source_id.starts_with(['-', '.'])
    {
        return Err(
            "may hold only letters, digits, '_', '-', '.' and ':' (not leading, no '..')".into(),
        );
    }
    Ok(())
}

/// A search hit as a user sees it: what the source has, and whether the library has it.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// What the source has.
    pub hit: RemoteHit,
    /// Whether the library has a track (full or placeholder) for it.
    pub in_library: bool,
    /// That track.
    pub track_id: Option<TrackId>,
    /// Whether that track has audio.
    pub availability: Option<Availability>,
}

/// How one source answered a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceOutcome {
    /// The source.
    pub source: String,
    /// Whether it answered.
    pub ok: bool,
    /// Why not.
    pub error: Option<String>,
    /// Hits it gave.
    pub count: usize,
    /// How long it took, in ms.
    pub took_ms: u64,
}

/// A search of every enabled source.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchAll {
    /// Every source's hits, source by source in registry order.
    pub hits: Vec<SearchHit>,
    /// How each enabled source answered.
    pub sources: Vec<SourceOutcome>,
}

/// A remote source as the registry lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSourceInfo {
    /// Its name.
    pub name: &'static str,
    /// Whether it is configured on.
    pub enabled: bool,
    /// Whether it answers now (`None` when disabled).
    pub available: Option<bool>,
    /// Why it is disabled or unavailable; what it is when it works.
    pub detail: Option<String>,
    /// Tracks saved or downloaded from it.
    pub track_count: i64,
}

/// What `POST /tracks/{id}/materialize` did.
#[derive(Debug, Clone)]
pub enum Materialize {
    /// The track has its audio already.
    Ready(Box<Track>),
    /// A fetch is queued or running (a job already in flight is answered, not doubled).
    Queued {
        /// The job (it may have been queued by someone else).
        job_id: JobId,
        /// Its state now: queued or running.
        state: crate::jobs::JobState,
    },
}

/// The remote sources service.
#[derive(Clone, Debug)]
pub struct Remote {
    db: Db,
    catalog: Catalog,
    storage: Storage,
    jobs: Jobs,
    media: Media,
    /// Enabled sources, in registry order.
    sources: Vec<Arc<dyn RemoteSource>>,
    config: RemoteConfig,
    max_bytes: u64,
    /// One save at a time per (source, source id) in this process.
    saving: Arc<KeyedLocks<(String, String)>>,
}

impl Remote {
    /// Registers the job kinds that fetch a remote track's audio.
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &crate::Config) {
        registry.kind::<MaterializeTrack>(self.clone(), config);
        registry.kind::<DownloadTask>(self.clone(), config);
    }
}

impl Remote {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        db: Db,
        catalog: Catalog,
        storage: Storage,
        jobs: Jobs,
        media: Media,
        config: RemoteConfig,
        ffmpeg: PathBuf,
        max_bytes: u64,
        http: reqwest::Client,
    ) -> Remote {
        let mut sources: Vec<Arc<dyn RemoteSource>> = Vec::new();
        if let Some(ytdlp) = &config.ytdlp {
            sources.push(metered::Metered::source(
                crate::metrics::Service::YtDlp,
                ytdlp::YtDlpSource::new(ytdlp.clone(), ffmpeg),
            ));
        }
        if let Some(subsonic) = &config.subsonic {
            sources.push(metered::Metered::source(
                crate::metrics::Service::SubsonicSource,
                subsonic::SubsonicSource::new(http, subsonic, config.subsonic_api_key.clone()),
            ));
        }
        Remote {
            db,
            catalog,
            storage,
            jobs,
            media,
            sources,
            config,
            max_bytes,
            saving: Arc::default(),
        }
    }

    /// Every remote source the server knows, enabled or not, with whether it answers now
    /// (the enabled ones are asked at once, each within a few seconds).
    pub async fn sources(&self) -> Result<Vec<RemoteSourceInfo>> {
        let checks = NAMES.iter().map(|name| async move {
            let Some(source) = self.source(name) else {
                return RemoteSourceInfo {
                    name,
                    enabled: false,
                    available: None,
                    detail: Some(disabled_reason(name).into()),
                    track_count: 0,
                };
            };
            let health = tokio::time::timeout(HEALTH_TIMEOUT, source.health()).await;
            let (available, detail) = match health {
                Ok(Ok(())) => (true, self.describe(name)),
                Ok(Err(error)) => (false, error.message().to_string()),
                Err(_) => (
                    false,
                    format!("no answer within {} s", HEALTH_TIMEOUT.as_secs()),
                ),
            };
            RemoteSourceInfo {
                name,
                enabled: true,
                available: Some(available),
                detail: Some(detail),
                track_count: 0,
            }
        });
        let mut infos = futures::future::join_all(checks).await;
        let counts = self.catalog.count_by_source().await?;
        for info in &mut infos {
            info.track_count = counts
                .iter()
                .find(|(name, _)| name == info.name)
                .map(|(_, count)| *count)
                .unwrap_or(0);
        }
        Ok(infos)
    }

    /// What an enabled source is, for the registry (never a secret).
    fn describe(&self, name: &str) -> String {
        match name {
            YTDLP => self
                .config
                .ytdlp
                .as_ref()
                .map(|ytdlp| {
                    format!(
                        "yt-dlp ({}), {} search{}",
                        ytdlp.program.display(),
                        ytdlp.search.as_str(),
                        if ytdlp.cookies_file.is_some() {
                            ", with cookies"
                        } else {
                            ""
                        }
                    )
                })
                .unwrap_or_default(),
            _ => self
                .config
                .subsonic
                .as_ref()
                .map(|subsonic| match &self.config.subsonic_api_key {
                    Some(_) => format!(
                        "{} with an API key",
                        crate::config::redact_url(&subsonic.url)
                    ),
                    None => format!(
                        "{} as {}",
                        crate::config::redact_url(&subsonic.url),
                        subsonic.username
                    ),
                })
                .unwrap_or_default(),
        }
    }

    /// The enabled source named `name`.
    fn source(&self, name: &str) -> Option<&Arc<dyn RemoteSource>> {
        self.sources.iter().find(|source| source.name() == name)
    }

    /// The enabled source named `name` for a request naming it in `field`: an unknown name is
    /// invalid, a known one that is off (or not remote) is a conflict naming the setting.
    fn enabled_source(&self, name: &str, field: &str) -> Result<&Arc<dyn RemoteSource>> {
        if let Some(source) = self.source(name) {
            return Ok(source);
        }
        Err(match name {
            YTDLP | SUBSONIC => Error::Conflict(format!(
                "the {name} source is disabled: {}",
                disabled_reason(name)
            )),
            "upload" | "local_folder" => {
                Error::invalid(field, format!("{name} is not a remote source"))
            }
            _ => Error::invalid(
                field,
                format!("unknown source {name:?}: one of {}", NAMES.join(", ")),
            ),
        })
    }

    /// Searches every enabled source at once (`GET /search`). Any signed-in user.
    pub async fn search(
        &self,
        _caller: &Caller,
        query: &str,
        limit: Option<usize>,
    ) -> Result<SearchAll> {
        let (query, limit) = check_search(query, limit)?;
        let timeout = self.config.search_timeout;
        let searches = self
            .sources
            .iter()
            .map(|source| timed_search(source.as_ref(), &query, limit, timeout));
        let answers = futures::future::join_all(searches).await;
        let mut hits = Vec::new();
        let mut sources = Vec::new();
        for (source, (answer, took)) in self.sources.iter().zip(answers) {
            let took_ms = took.as_millis() as u64;
            let (ok, error, count) = match answer {
                Ok(found) => {
                    let count = found.len();
                    hits.extend(found);
                    (true, None, count)
                }
                Err(error) => (false, Some(error.message().to_string()), 0),
            };
            sources.push(SourceOutcome {
                source: source.name().into(),
                ok,
                error,
                count,
                took_ms,
            });
        }
        Ok(SearchAll {
            hits: self.annotate(hits).await?,
            sources,
        })
    }

    /// Searches one source (`GET /sources/{source}/search`): an unknown name is not found, a
    /// known one that is off or cannot search is a conflict naming why, a source that fails
    /// is unavailable.
    pub async fn search_source(
        &self,
        _caller: &Caller,
        name: &str,
        query: &str,
        limit: Option<usize>,
    ) -> Result<Vec<SearchHit>> {
        let (query, limit) = check_search(query, limit)?;
        let source = match self.enabled_source(name, "source") {
            Ok(source) => source,
            Err(error) if error.kind() == crate::ErrorKind::InvalidInput => {
                return Err(match name {
                    "upload" | "local_folder" => {
                        Error::Conflict(format!("the {name} source cannot be searched"))
                    }
                    _ => Error::not_found("source", name),
                })
            }
            Err(error) => return Err(error),
        };
        match timed_search(source.as_ref(), &query, limit, self.config.search_timeout)
            .await
            .0
        {
            Ok(hits) => self.annotate(hits).await,
            Err(error) => Err(Error::Unavailable(format!(
                "the {} source failed: {}",
                source.name(),
                error.message()
            ))),
        }
    }

    /// Marks the hits the library already has.
    async fn annotate(&self, hits: Vec<RemoteHit>) -> Result<Vec<SearchHit>> {
        let mut known = std::collections::HashMap::new();
        let mut by_source: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for hit in &hits {
            by_source
                .entry(&hit.source)
                .or_default()
                .push(&hit.source_id);
        }
        for (source, ids) in by_source {
            for chunk in ids.chunks(crate::db::CHUNK) {
                let mut select = self
                    .db
                    .sql("SELECT source_id, id, availability FROM tracks WHERE source = $1 AND source_id IN (")
                    .bind(source);
                select.push_list(chunk.iter().copied()).push(")");
                let rows: Vec<(String, String, String)> = select.fetch_all(self.db.pool()).await?;
                for (source_id, id, availability) in rows {
                    known.insert((source.to_string(), source_id), (id, availability));
                }
            }
        }
        Ok(hits
            .into_iter()
            .map(|hit| {
                let found = known.get(&(hit.source.clone(), hit.source_id.clone()));
                SearchHit {
                    in_library: found.is_some(),
                    track_id: found.map(|(id, _)| TrackId::from_db(id.clone())),
                    availability: found.and_then(|(_, availability)| {
                        Availability::parse(availability, "availability").ok()
                    }),
                    hit,
                }
            })
            .collect())
    }

    /// Queues the fetch of a placeholder's audio (`POST /tracks/{id}/materialize`); a track
    /// with audio is answered as it is. Any signed-in user: the library is shared.
    ///
    /// A live `download_task` of the track is joined, and becomes a `materialize_track`: that
    /// kind is how the job remembers a materialization wants it, so cancelling the downloads
    /// that share it does not stop it.
    pub async fn materialize(&self, caller: &Caller, id: &TrackId) -> Result<Materialize> {
        let track = self.catalog.get_track(id).await?;
        if has_audio(&track) {
            return Ok(Materialize::Ready(Box::new(track)));
        }
        self.enabled_source(track.source.as_str(), "source")?;
        let payload = fetch::FetchPayload {
            track_id: id.clone(),
            download_id: None,
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let job = self
                .jobs
                .enqueue::<MaterializeTrack>(&payload, Some(&caller.user.id))
                .await?;
            self.jobs
                .rekind::<DownloadTask, MaterializeTrack>(&job)
                .await?;
            let state = self.jobs.queue().get(&job).await?.state;
            if state == crate::jobs::JobState::Failed && attempt < 3 {
                // The download job answered was cancelled in between: queue a fresh one.
                continue;
            }
            return Ok(Materialize::Queued { job_id: job, state });
        }
    }
}

impl Remote {
    /// Materializes a placeholder and waits for its audio, at most `wait` (the Subsonic
    /// `stream` of a placeholder). A track with audio answers at once; a fetch that fails,
    /// whose attempt failed and waits for a retry (the source is down: waiting longer would
    /// not help this request), or that takes longer is unavailable, saying why.
    pub async fn materialize_and_wait(
        &self,
        caller: &Caller,
        id: &TrackId,
        wait: Duration,
    ) -> Result<Track> {
        let job_id = match self.materialize(caller, id).await? {
            Materialize::Ready(track) => return Ok(*track),
            Materialize::Queued { job_id, .. } => job_id,
        };
        let deadline = Instant::now() + wait;
        loop {
            let job = self.jobs.queue().get(&job_id).await?;
            match job.state {
                crate::jobs::JobState::Succeeded => return self.catalog.get_track(id).await,
                crate::jobs::JobState::Failed => {
                    return Err(Error::Unavailable(format!(
                        "track {id} could not be fetched from its source: {}",
                        job.error.unwrap_or_default()
                    )))
                }
                crate::jobs::JobState::Queued if job.attempts > 0 => {
                    return Err(Error::Unavailable(format!(
                        "track {id} could not be fetched from its source for now ({}); another attempt follows at {}",
                        job.error.unwrap_or_default(),
                        job.run_at
                    )))
                }
                _ if Instant::now() >= deadline => {
                    return Err(Error::Unavailable(format!(
                        "track {id} is still being fetched from its source: try again shortly"
                    )))
                }
                _ => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }
}

/// Whether a track has audio to play.
pub fn has_audio(track: &Track) -> bool {
    track.availability != Availability::Placeholder && !track.storage_uri.is_empty()
}

/// The track `source` of a remote source's name.
pub(crate) fn track_source(name: &str) -> Source {
    match name {
        SUBSONIC => Source::Subsonic,
        _ => Source::Remote,
    }
}

/// Why a known source is off.
fn disabled_reason(name: &str) -> &'static str {
    match name {
        YTDLP => "REMOTE_ENABLED is not true",
        _ => "SUBSONIC_SOURCE_URL is not set",
    }
}

async fn timed_search(
    source: &dyn RemoteSource,
    query: &str,
    limit: usize,
    timeout: Duration,
) -> (std::result::Result<Vec<RemoteHit>, SourceError>, Duration) {
    let started = Instant::now();
    let answer = match tokio::time::timeout(timeout, source.search(query, limit)).await {
        Ok(answer) => answer.map(|mut hits| {
            hits.truncate(limit);
            hits
        }),
        Err(_) => Err(SourceError::Unavailable(format!(
            "no answer within {} s",
            timeout.as_secs()
        ))),
    };
    (answer, started.elapsed())
}

fn check_search(raw: &str, limit: Option<usize>) -> Result<(String, usize)> {
    let query = raw.trim();
    if query.is_empty() {
        return Err(Error::invalid("q", "must not be empty"));
    }
    // Counted as sent, before trimming, so the documented maxLength is exact.
    if raw.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::invalid(
            "q",
            format!("must be at most {MAX_QUERY_CHARS} characters"),
        ));
    }
    if query.chars().any(char::is_control) {
        return Err(Error::invalid("q", "must not hold control characters"));
    }
    let limit = limit.unwrap_or(DEFAULT_HITS);
    if !(1..=MAX_HITS).contains(&limit) {
        return Err(Error::invalid(
            "limit",
            format!("must be between 1 and {MAX_HITS}"),
        ));
    }
    Ok((query.to_string(), limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_labelled_by_their_names_in_metrics() {
        assert_eq!(crate::metrics::Service::YtDlp.as_str(), YTDLP);
        assert_eq!(crate::metrics::Service::SubsonicSource.as_str(), SUBSONIC);
    }

    #[test]
    fn source_ids_never_carry_structure() {
        for good in [
            "dQw4w9WgXcQ",
            "tr-123",
            "al:12",
            "0193a1b2-7c3d-7e8f-9a0b-1c2d3e4f5a6b",
            "song_ok.m4a",
        ] {
            assert!(check_id_chars(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "../etc/passwd",
            "a/b",
            "a;rm -rf /",
            "$(id)",
            "a b",
            "-x",
            "--exec=id",
            ".hidden",
            "a..b",
            "ü",
            "a\nb",
            &"x".repeat(129),
        ] {
            assert!(check_id_chars(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn searches_are_checked() {
        assert!(check_search("  ", None).is_err());
        assert!(check_search("a\u{0}b", None).is_err());
        assert!(check_search("x", Some(0)).is_err());
        assert!(check_search("x", Some(MAX_HITS + 1)).is_err());
        assert_eq!(
            check_search(" daft punk ", None).unwrap(),
            ("daft punk".into(), DEFAULT_HITS)
        );
    }
}
