//! Lyrics (spec: Lyrics record, Lyrics cache): one cached record per track, `found` or
//! `not_found`, filled on first request from the first source that has text:
//!
//! 1. the tags embedded in the stored file (`embedded`: ID3v2 `SYLT` then `USLT`, Vorbis
//!    `LYRICS`/`UNSYNCEDLYRICS`, MP4 `©lyr`);
//! 2. a sidecar next to a local-folder track (same name, `.lrc` then `.txt`);
//! 3. LRCLIB by title, artist, album and duration (`lrclib`), which needs no key.
//!
//! Text with LRC time stamps is synced wherever it comes from, parsed by the one parser
//! (`lrc`); text without any is kept as written (verse breaks too). A file whose tags hold
//! lyrics in several languages (two `USLT` frames, `eng` and `spa`) gives one record with
//! the first language's lyrics and the others as [`LyricsRecord::alternates`].
//!
//! The cache (`lyrics` table): a `found` record stays until a refetch; a `not_found`
//! is fetched again after [`NOT_FOUND_TTL`] (7 days), or after [`PROVIDER_ERROR_TTL`] (1 hour)
//! when it stands for an LRCLIB failure rather than a real miss. Concurrent requests for one
//! uncached track in a process make one fetch (a lock per track; the second reads what the
//! first stored).

pub mod lrc;

mod embedded;
mod lrclib;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::Caller;
use crate::cache::KeyedLocks;
use crate::catalog::Catalog;
use crate::db::Db;
use crate::domain::{Source, Track};
use crate::storage::Storage;
use crate::{Result, Timestamp, TrackId};

pub use lrc::Line;

/// How long a `not_found` record is kept before the sources are asked again (spec: Limits).
pub const NOT_FOUND_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long a `not_found` that stands for a provider error is kept.
pub const PROVIDER_ERROR_TTL: Duration = Duration::from_secs(3600);
/// Largest lyrics text read from a sidecar (bigger files are not lyrics).
pub const MAX_LYRICS_BYTES: usize = 512 * 1024;

/// Whether lyrics were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LyricsStatus {
    /// A source had lyrics (or said the track is instrumental).
    Found,
    /// No source had any.
    NotFound,
}

impl LyricsStatus {
    /// The wire and stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            LyricsStatus::Found => "found",
            LyricsStatus::NotFound => "not_found",
        }
    }
}

/// Where found lyrics came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LyricsSource {
    /// The file's own tags.
    Embedded,
    /// A `.lrc` or `.txt` file next to a local-folder track.
    Sidecar,
    /// LRCLIB.
    Lrclib,
}

impl LyricsSource {
    /// The wire and stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            LyricsSource::Embedded => "embedded",
            LyricsSource::Sidecar => "sidecar",
            LyricsSource::Lrclib => "lrclib",
        }
    }

    fn parse(text: &str) -> Option<LyricsSource> {
        match text {
            "embedded" => Some(LyricsSource::Embedded),
            "sidecar" => Some(LyricsSource::Sidecar),
            "lrclib" => Some(LyricsSource::Lrclib),
            _ => None,
        }
    }
}

/// A track's lyrics record.
#[derive(Debug, Clone, PartialEq)]
pub struct LyricsRecord {
    /// The track.
    pub track_id: TrackId,
    /// Found or not.
    pub status: LyricsStatus,
    /// Where they came from (found only).
    pub source: Option<LyricsSource>,
    /// Timed lines (empty when not synced).
    pub lines: Vec<Line>,
    /// The text without time stamps (`None` when not found or instrumental).
    pub plain: Option<String>,
    /// An instrumental track: found, without lyrics.
    pub instrumental: bool,
    /// ISO 639 code, when known.
    pub language: Option<String>,
    /// LRC `[offset:]` in ms, to add to each line's start (positive: lyrics come sooner).
    pub offset_ms: i64,
    /// When the sources were asked.
    pub fetched_at: Timestamp,
    /// Why the provider could not answer (a `not_found` kept for a shorter time).
    pub error: Option<String>,
    /// The same source's lyrics in other languages (one per language, best first; empty
    /// for most tracks).
    pub alternates: Vec<AlternateLyrics>,
}

/// A found record's lyrics in one more language, from the same source.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AlternateLyrics {
    /// ISO 639 code, when known.
    pub language: Option<String>,
    /// Timed lines (empty when not synced).
    #[serde(
        rename = "synced",
        serialize_with = "lines_as_lrc",
        deserialize_with = "lines_from_lrc"
    )]
    pub lines: Vec<Line>,
    /// The text without time stamps.
    pub plain: String,
    /// LRC `[offset:]` in ms.
    pub offset_ms: i64,
}

impl AlternateLyrics {
    /// Whether the lines carry times.
    pub fn synced(&self) -> bool {
        !self.lines.is_empty()
    }
}

impl From<embedded::FileLyrics> for AlternateLyrics {
    fn from(lyrics: embedded::FileLyrics) -> AlternateLyrics {
        AlternateLyrics {
            language: lyrics.language,
            lines: lyrics.lines,
            plain: lyrics.plain,
            offset_ms: lyrics.offset_ms,
        }
    }
}

/// Timed lines are stored as LRC, as the `synced` column holds them; none as null.
fn lines_as_lrc<S: serde::Serializer>(
    lines: &[Line],
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    let text = (!lines.is_empty()).then(|| lrc::write(lines, 0));
    serde::Serialize::serialize(&text, serializer)
}

fn lines_from_lrc<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Vec<Line>, D::Error> {
    let text: Option<String> = serde::Deserialize::deserialize(deserializer)?;
    Ok(text.map(|text| lrc::parse(&text).lines).unwrap_or_default())
}

impl LyricsRecord {
    /// Whether the lines carry times.
    pub fn synced(&self) -> bool {
        !self.lines.is_empty()
    }

    /// When a `not_found` record is fetched again (`None` for a found one).
    pub fn refetch_after(&self) -> Option<Timestamp> {
        let ttl = match (self.status, &self.error) {
            (LyricsStatus::Found, _) => return None,
            (LyricsStatus::NotFound, Some(_)) => PROVIDER_ERROR_TTL,
            (LyricsStatus::NotFound, None) => NOT_FOUND_TTL,
        };
        Some(Timestamp::from_micros(
            self.fetched_at.as_micros() + ttl.as_micros() as i64,
        ))
    }

    fn is_fresh(&self, now: Timestamp) -> bool {
        self.refetch_after().is_none_or(|after| now < after)
    }
}

/// What a layer of a track's lyrics is (OpenSubsonic `songLyrics` v2 `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// The words as sung.
    Main,
    /// The words in another language.
    Translation,
    /// How the words sound, in another script (a romanization).
    Pronunciation,
}

impl LayerKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LayerKind::Main => "main",
            LayerKind::Translation => "translation",
            LayerKind::Pronunciation => "pronunciation",
        }
    }
}

/// One layer of a found record's lyrics: its own lines, or one more language's.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer<'a> {
    /// What it is.
    pub kind: LayerKind,
    /// Its language, when known.
    pub language: Option<&'a str>,
    /// Timed lines (empty when not synced), by start.
    pub lines: Vec<&'a Line>,
    /// The text when not synced.
    pub plain: &'a str,
    /// LRC `[offset:]` in ms.
    pub offset_ms: i64,
}

impl LyricsRecord {
    /// The record's lyrics as layers, main first (`songLyrics` v2):
    ///
    /// - its own lyrics are `main`, except that a synced line repeating the time stamp of
    ///   the line before it goes to one `translation` layer: the way bilingual LRC files
    ///   are written (each line, then its translation at the same stamp);
    /// - the same source's lyrics in another language are a `translation`, or a
    ///   `pronunciation` when the language tag names the Latin script (`ja-Latn`: a
    ///   romanization).
    ///
    /// Empty layers are left out; a record without lyrics has none.
    pub fn layers(&self) -> Vec<Layer<'_>> {
        let mut layers = self.languages();
        let Some(main) = layers
            .first_mut()
            .filter(|layer| layer.kind == LayerKind::Main)
        else {
            return layers;
        };
        let mut translation = Layer {
            kind: LayerKind::Translation,
            language: None,
            lines: Vec::new(),
            plain: "",
            offset_ms: main.offset_ms,
        };
        let mut previous: Option<u64> = None;
        main.lines.retain(|line| {
            let repeated = previous == Some(line.start_ms);
            previous = Some(line.start_ms);
            if repeated {
                translation.lines.push(line);
            }
            !repeated
        });
        if !translation.lines.is_empty() {
            layers.insert(1, translation);
        }
        layers
    }

    /// The record's lyrics one layer per language, as the source has them (its own lines
    /// whole, `main`; the others kinded as in [`LyricsRecord::layers`]): `songLyrics` v1.
    pub fn languages(&self) -> Vec<Layer<'_>> {
        let own = Layer {
            kind: LayerKind::Main,
            language: self.language.as_deref(),
            lines: self.lines.iter().collect(),
            plain: self.plain.as_deref().unwrap_or_default(),
            offset_ms: self.offset_ms,
        };
        let others = self.alternates.iter().map(|alternate| Layer {
            kind: if names_latin_script(alternate.language.as_deref()) {
                LayerKind::Pronunciation
            } else {
                LayerKind::Translation
            },
            language: alternate.language.as_deref(),
            lines: alternate.lines.iter().collect(),
            plain: &alternate.plain,
            offset_ms: alternate.offset_ms,
        });
        std::iter::once(own)
            .chain(others)
            .filter(|layer| !layer.lines.is_empty() || !layer.plain.trim().is_empty())
            .collect()
    }
}

/// Whether a language tag names the Latin script (`ja-Latn`, `zh-Latn-pinyin`).
fn names_latin_script(language: Option<&str>) -> bool {
    language.is_some_and(|tag| {
        tag.split(['-', '_'])
            .skip(1)
            .any(|part| part.eq_ignore_ascii_case("latn"))
    })
}

#[derive(sqlx::FromRow)]
struct Row {
    status: String,
    synced: Option<String>,
    plain: Option<String>,
    instrumental: i64,
    provider: Option<String>,
    language: Option<String>,
    offset_ms: i64,
    error: Option<String>,
    fetched_at: i64,
    alternates: Option<String>,
}

/// The lyrics service.
#[derive(Clone, Debug)]
pub struct Lyrics {
    db: Db,
    catalog: Catalog,
    storage: Storage,
    lrclib: lrclib::Lrclib,
    import_path: Option<PathBuf>,
    /// One lock per track being fetched in this process.
    fetching: Arc<KeyedLocks<TrackId>>,
}

impl Lyrics {
    pub(crate) fn new(
        db: Db,
        catalog: Catalog,
        storage: Storage,
        http: reqwest::Client,
        lrclib_base_url: &str,
        import_path: Option<PathBuf>,
    ) -> Lyrics {
        Lyrics {
            db,
            catalog,
            storage,
            lrclib: lrclib::Lrclib::new(http, lrclib_base_url),
            import_path,
            fetching: Arc::default(),
        }
    }

    /// A track's lyrics, fetched when there is no record or its `not_found` has expired
    /// (`GET /tracks/{id}/lyrics`). Any signed-in user; an unknown track is not found.
    pub async fn get(&self, _caller: &Caller, id: &TrackId) -> Result<LyricsRecord> {
        self.for_track(id).await
    }

    /// A track's lyrics, for whoever may read the track (a share's visitor, `shares.rs`).
    pub(crate) async fn for_track(&self, id: &TrackId) -> Result<LyricsRecord> {
        let track = self.catalog.get_track(id).await?;
        if let Some(record) = self.cached(id).await? {
            if record.is_fresh(Timestamp::now()) {
                crate::metrics::cache_lookup("lyrics", true);
                return Ok(record);
            }
        }
        crate::metrics::cache_lookup("lyrics", false);
        self.fetch_once(&track, None).await
    }

    /// Asks the sources again, whatever is cached (`POST /tracks/{id}/lyrics/refetch`).
    pub async fn refetch(&self, _caller: &Caller, id: &TrackId) -> Result<LyricsRecord> {
        let track = self.catalog.get_track(id).await?;
        self.fetch_once(&track, Some(Timestamp::now())).await
    }

    /// The library's track with this title (and artist, when given), compared without case
    /// or accents, and its lyrics (the legacy interface's `getLyrics`). `None` when the
    /// library has no such track.
    pub async fn by_title_and_artist(
        &self,
        caller: &Caller,
        title: &str,
        artist: Option<&str>,
    ) -> Result<Option<(Track, LyricsRecord)>> {
        let key = crate::text::name_key;
        let title_key = key(title);
        if title_key.is_empty() {
            return Ok(None);
        }
        let artist_key = artist.map(key).filter(|artist| !artist.is_empty());
        let candidates = self
            .catalog
            .search_library(title, crate::domain::Page::MAX_LIMIT)
            .await?
            .tracks;
        let track = candidates.into_iter().find(|track| {
            key(&track.title) == title_key
                && artist_key.as_ref().is_none_or(|wanted| {
                    [&track.artist_name, &track.album_artist_name]
                        .into_iter()
                        .flatten()
                        .any(|name| &key(name) == wanted)
                })
        });
        let Some(track) = track else {
            return Ok(None);
        };
        let record = self.get(caller, &track.id).await?;
        Ok(Some((track, record)))
    }

    /// The cached record, if any.
    pub async fn cached(&self, id: &TrackId) -> Result<Option<LyricsRecord>> {
        let row: Option<Row> = self
            .db
            .sql(
                "SELECT status, synced, plain, instrumental, provider, language, offset_ms, error, fetched_at, alternates
                 FROM lyrics WHERE track_id = $1",
            )
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        Ok(row.map(|row| record_of(id.clone(), row)))
    }

    /// Fetches under the track's lock. Whoever waited on the lock reads what the holder
    /// stored instead of fetching again: a fresh record, or for a refetch one fetched after
    /// `asked_at`.
    async fn fetch_once(&self, track: &Track, asked_at: Option<Timestamp>) -> Result<LyricsRecord> {
        self.fetching
            .run(&track.id, async {
                if let Some(record) = self.cached(&track.id).await? {
                    let done_meanwhile = match asked_at {
                        Some(asked_at) => record.fetched_at >= asked_at,
                        None => record.is_fresh(Timestamp::now()),
                    };
                    if done_meanwhile {
                        return Ok(record);
                    }
                }
                let record = self.fetch(track).await?;
                self.store(&record).await?;
                Ok(record)
            })
            .await
    }

    /// Asks the sources in order; the first with text wins.
    async fn fetch(&self, track: &Track) -> Result<LyricsRecord> {
        let now = Timestamp::now();
        let found =
            |source, lyrics: embedded::FileLyrics, alternates: Vec<embedded::FileLyrics>| {
                found_record(&track.id, source, lyrics, alternates, now)
            };
        let mut in_file = self.embedded_in_file(track).await.into_iter();
        if let Some(lyrics) = in_file.next() {
            return Ok(found(LyricsSource::Embedded, lyrics, in_file.collect()));
        }
        if let Some((root, relative)) = self.sidecar_audio_path(track) {
            let lyrics = tokio::task::spawn_blocking(move || embedded::sidecar(&root, &relative))
                .await
                .ok()
                .flatten();
            if let Some(lyrics) = lyrics {
                return Ok(found(LyricsSource::Sidecar, lyrics, Vec::new()));
            }
        }
        let mut record = LyricsRecord {
            track_id: track.id.clone(),
            status: LyricsStatus::NotFound,
            source: None,
            lines: Vec::new(),
            plain: None,
            instrumental: false,
            language: None,
            offset_ms: 0,
            fetched_at: now,
            error: None,
            alternates: Vec::new(),
        };
        let Some(query) = query_of(track) else {
            return Ok(record);
        };
        match self.lrclib.find(&query).await {
            Ok(Some(hit)) if hit.instrumental => {
                record.status = LyricsStatus::Found;
                record.source = Some(LyricsSource::Lrclib);
                record.instrumental = true;
            }
            Ok(Some(hit)) => {
                let synced = hit
                    .synced_lyrics
                    .as_deref()
                    .and_then(|text| embedded::FileLyrics::from_text(text, None))
                    .filter(embedded::FileLyrics::synced);
                let plain = hit
                    .plain_lyrics
                    .as_deref()
                    .and_then(|text| embedded::FileLyrics::from_text(text, None));
                match (synced, plain) {
                    (Some(mut synced), plain) => {
                        // LRCLIB's plain text keeps the verse breaks the timed lines lack.
                        if let Some(plain) = plain.filter(|plain| !plain.synced()) {
                            synced.plain = plain.plain;
                        }
                        record = found(LyricsSource::Lrclib, synced, Vec::new());
                    }
                    (None, Some(plain)) => record = found(LyricsSource::Lrclib, plain, Vec::new()),
                    (None, None) => {}
                }
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(track = %track.id, error, "LRCLIB failed");
                record.error = Some(error);
            }
        }
        Ok(record)
    }

    /// Lyrics in the stored file's tags, one entry per language (none for a placeholder or
    /// an unreadable file).
    async fn embedded_in_file(&self, track: &Track) -> Vec<embedded::FileLyrics> {
        if track.storage_uri.is_empty() {
            return Vec::new();
        }
        let file = match self.storage.local_file(&track.storage_uri).await {
            Ok(file) => file,
            Err(error) => {
                tracing::warn!(track = %track.id, error = %crate::error_chain(&error), "cannot read the file for its lyrics");
                return Vec::new();
            }
        };
        let path = file.path.clone();
        let lyrics = tokio::task::spawn_blocking(move || embedded::read(&path))
            .await
            .unwrap_or_default();
        drop(file);
        lyrics
    }

    /// Where a local-folder track's file is, for its sidecar: the import folder (canonical)
    /// and the file's path in it.
    fn sidecar_audio_path(&self, track: &Track) -> Option<(PathBuf, PathBuf)> {
        if track.source != Source::LocalFolder {
            return None;
        }
        let relative = std::path::Path::new(&track.source_id);
        // The import folder's own relative paths only.
        if relative.is_absolute()
            || relative
                .components()
                .any(|part| !matches!(part, std::path::Component::Normal(_)))
        {
            return None;
        }
        let root = self.import_path.as_ref()?.canonicalize().ok()?;
        Some((root, relative.to_path_buf()))
    }

    /// Stores `text` (LRC or plain) as a track's embedded lyrics, for tests of what the
    /// adapters answer.
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) async fn store_text(&self, id: &TrackId, text: &str) -> Result<()> {
        let lyrics = embedded::FileLyrics::from_text(text, Some("spa".into()))
            .ok_or_else(|| crate::Error::invalid("text", "holds no lyrics"))?;
        let record = found_record(
            id,
            LyricsSource::Embedded,
            lyrics,
            Vec::new(),
            Timestamp::now(),
        );
        self.store(&record).await
    }

    async fn store(&self, record: &LyricsRecord) -> Result<()> {
        let synced = record.synced().then(|| lrc::write(&record.lines, 0));
        let alternates = if record.alternates.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&record.alternates).map_err(|error| {
                crate::Error::internal_with("writing lyrics in other languages", error)
            })?)
        };
        self.db
            .sql(&format!(
                "INSERT INTO lyrics (track_id, status, synced, plain, instrumental, provider, language, offset_ms, error, fetched_at, alternates)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) {}",
                self.db.kind().upsert(
                    "track_id",
                    &["status", "synced", "plain", "instrumental", "provider", "language", "offset_ms", "error", "fetched_at", "alternates"]
                )
            ))
            .bind(&record.track_id)
            .bind(record.status.as_str())
            .bind(synced)
            .bind(record.plain.as_deref())
            .bind(record.instrumental)
            .bind(record.source.map(LyricsSource::as_str))
            .bind(record.language.as_deref())
            .bind(record.offset_ms)
            .bind(record.error.as_deref())
            .bind(record.fetched_at.as_micros())
            .bind(alternates)
            .execute(self.db.pool())
            .await?;
        Ok(())
    }
}

/// A found record of `source`'s lyrics, with those in other languages.
fn found_record(
    track_id: &TrackId,
    source: LyricsSource,
    lyrics: embedded::FileLyrics,
    alternates: Vec<embedded::FileLyrics>,
    fetched_at: Timestamp,
) -> LyricsRecord {
    LyricsRecord {
        track_id: track_id.clone(),
        status: LyricsStatus::Found,
        source: Some(source),
        plain: Some(lyrics.plain),
        lines: lyrics.lines,
        instrumental: false,
        language: lyrics.language,
        offset_ms: lyrics.offset_ms,
        fetched_at,
        error: None,
        alternates: alternates.into_iter().map(AlternateLyrics::from).collect(),
    }
}

fn record_of(track_id: TrackId, row: Row) -> LyricsRecord {
    let lines = row
        .synced
        .as_deref()
        .map(|text| lrc::parse(text).lines)
        .unwrap_or_default();
    // Unreadable (never written so): the record's own lyrics still stand.
    let alternates = row
        .alternates
        .as_deref()
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default();
    LyricsRecord {
        track_id,
        status: if row.status == "found" {
            LyricsStatus::Found
        } else {
            LyricsStatus::NotFound
        },
        source: row.provider.as_deref().and_then(LyricsSource::parse),
        lines,
        plain: row.plain,
        instrumental: row.instrumental != 0,
        language: row.language,
        offset_ms: row.offset_ms,
        fetched_at: Timestamp::from_micros(row.fetched_at),
        error: row.error,
        alternates,
    }
}

/// What LRCLIB is asked for a track: its title is needed; without an artist LRCLIB is
/// searched by the title alone.
fn query_of(track: &Track) -> Option<lrclib::Query> {
    let artist = track
        .artist_name
        .clone()
        .or_else(|| track.album_artist_name.clone())
        .filter(|name| !name.trim().is_empty());
    if track.title.trim().is_empty() {
        return None;
    }
    Some(lrclib::Query {
        title: track.title.clone(),
        artist,
        album: track
            .album_title
            .clone()
            .filter(|album| !album.trim().is_empty()),
        duration: track.duration_ms.map(|ms| ms as f64 / 1000.0),
    })
}
