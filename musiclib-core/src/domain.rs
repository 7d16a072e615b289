//! Plain data of the catalogue: tracks, albums, artists, and the enums their states use.
//! Wire formats live in the adapters; these types carry no serde derive for the API.

use crate::{AlbumId, ArtistId, Error, Result, Timestamp, TrackId, UserId};

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and wire spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Parses the stored and wire spelling; `field` names the input for the error.
            pub fn parse(text: &str, field: &str) -> Result<Self> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err(Error::invalid(
                        field,
                        format!("must be one of: {}", [$($text),+].join(", ")),
                    )),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// Where a track came from.
    Source {
        /// Uploaded through the API; `source_id` is the content's sha256.
        Upload = "upload",
        /// Imported from `LOCAL_MEDIA_IMPORT_PATH`; `source_id` is the relative path.
        LocalFolder = "local_folder",
        /// Saved or downloaded from the yt-dlp source (YouTube, YouTube Music); `source_id`
        /// is the video id.
        Remote = "remote",
        /// Saved or downloaded from another Subsonic server (the `subsonic` source);
        /// `source_id` is the song's id there.
        Subsonic = "subsonic",
    }
);

string_enum!(
    /// Enrichment state of a track (spec: States and transitions).
    MetadataStatus {
        /// Waiting for its enrichment job.
        Pending = "pending",
        /// Identified from tags and/or the fingerprint lookup.
        Enriched = "enriched",
        /// No identity found; `metadata_error` says why.
        Failed = "failed",
        /// Edited by hand; enrichment leaves it alone.
        Manual = "manual",
    }
);

string_enum!(
    /// Whether a track's audio is present.
    Availability {
        /// The audio is in storage.
        Available = "available",
        /// A remote placeholder with no audio yet.
        Placeholder = "placeholder",
        /// The stored file is gone or unreadable (found by cleanup).
        Missing = "missing",
    }
);

/// A track of the catalogue.
#[derive(Debug, Clone)]
pub struct Track {
    /// Id.
    pub id: TrackId,
    /// Title.
    pub title: String,
    /// Track artist.
    pub artist_id: Option<ArtistId>,
    /// Name of the track artist.
    pub artist_name: Option<String>,
    /// Album.
    pub album_id: Option<AlbumId>,
    /// Album title.
    pub album_title: Option<String>,
    /// Album artist name.
    pub album_artist_name: Option<String>,
    /// Genre.
    pub genre: Option<String>,
    /// Release year.
    pub year: Option<i64>,
    /// Position on its disc.
    pub track_number: Option<i64>,
    /// Disc number.
    pub disc_number: Option<i64>,
    /// Duration in milliseconds.
    pub duration_ms: Option<i64>,
    /// Audio format (`mp3`, `flac`, `ogg`, `opus`, `m4a`, `wav`, …).
    pub format: Option<String>,
    /// MIME type of the stored audio.
    pub mime_type: Option<String>,
    /// Average bitrate in kbit/s.
    pub bitrate_kbps: Option<i64>,
    /// Sample rate in Hz.
    pub sample_rate: Option<i64>,
    /// Channel count.
    pub channels: Option<i64>,
    /// Size of the stored audio in bytes.
    pub size_bytes: Option<i64>,
    /// sha256 of the stored audio.
    pub content_sha256: Option<String>,
    /// Blob key of the audio; empty for a placeholder.
    pub storage_uri: String,
    /// Ingest source.
    pub source: Source,
    /// Id inside the source.
    pub source_id: String,
    /// The user who uploaded it (none for imports).
    pub added_by: Option<UserId>,
    /// Whether audio is present.
    pub availability: Availability,
    /// Enrichment state.
    pub metadata_status: MetadataStatus,
    /// Why enrichment failed.
    pub metadata_error: Option<String>,
    /// When an enrichment outcome was last recorded.
    pub enriched_at: Option<Timestamp>,
    /// MusicBrainz recording id.
    pub musicbrainz_recording_id: Option<String>,
    /// AcoustID track id.
    pub acoustid_id: Option<String>,
    /// Whether a cover can be served for this track (its album's cover).
    pub has_cover: bool,
    /// Its ReplayGain: read from its tags, or measured (`analyze_loudness`); none yet
    /// while neither.
    pub replay_gain: ReplayGain,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// A track's ReplayGain (ReplayGain 2.0): gains in dB towards a -18 LUFS reference, peaks as
/// linear sample values (1.0 is full scale). A player scales by `10^(gain / 20)`, at most
/// `1 / peak` so that the loudest sample does not clip.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplayGain {
    /// Track gain in dB.
    pub track_gain: Option<f64>,
    /// Track peak, linear.
    pub track_peak: Option<f64>,
    /// Album gain in dB (the whole album's loudness, so its tracks keep their levels).
    pub album_gain: Option<f64>,
    /// Album peak, linear (the loudest sample of the album).
    pub album_peak: Option<f64>,
}

impl ReplayGain {
    /// No ReplayGain.
    pub const NONE: ReplayGain = ReplayGain {
        track_gain: None,
        track_peak: None,
        album_gain: None,
        album_peak: None,
    };

    /// Whether there is a track gain (ReplayGain without one is not kept).
    pub fn is_present(&self) -> bool {
        self.track_gain.is_some()
    }
}

/// An album.
#[derive(Debug, Clone)]
pub struct Album {
    /// Id.
    pub id: AlbumId,
    /// Title.
    pub title: String,
    /// Album artist.
    pub artist_id: Option<ArtistId>,
    /// Album artist name.
    pub artist_name: Option<String>,
    /// Release year.
    pub year: Option<i64>,
    /// Genre.
    pub genre: Option<String>,
    /// A various-artists compilation.
    pub is_compilation: bool,
    /// MusicBrainz release id.
    pub musicbrainz_album_id: Option<String>,
    /// MusicBrainz release-group id.
    pub musicbrainz_releasegroup_id: Option<String>,
    /// Blob key of the cover (`covers/{album_id}.{ext}`).
    pub cover_uri: Option<String>,
    /// Remote identity (source).
    pub remote_source: Option<String>,
    /// Remote identity (id inside the source).
    pub remote_source_id: Option<String>,
    /// Number of tracks.
    pub track_count: i64,
    /// Total duration in milliseconds.
    pub duration_ms: i64,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl Album {
    /// Whether a cover is stored.
    pub fn has_cover(&self) -> bool {
        self.cover_uri.is_some()
    }
}

/// An artist.
#[derive(Debug, Clone)]
pub struct Artist {
    /// Id.
    pub id: ArtistId,
    /// Name.
    pub name: String,
    /// Sort name.
    pub sort_name: Option<String>,
    /// MusicBrainz artist id.
    pub musicbrainz_id: Option<String>,
    /// Remote identity (source).
    pub remote_source: Option<String>,
    /// Remote identity (id inside the source).
    pub remote_source_id: Option<String>,
    /// Albums whose album artist this is.
    pub album_count: i64,
    /// Tracks by this artist.
    pub track_count: i64,
    /// Creation time.
    pub created_at: Timestamp,
}

/// A validated page request: `limit` 1–200 (default 50), `offset` ≥ 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    limit: i64,
    offset: i64,
}

impl Page {
    /// Default page size.
    pub const DEFAULT_LIMIT: i64 = 50;
    /// Largest page size.
    pub const MAX_LIMIT: i64 = 200;

    /// Validates client paging input.
    pub fn new(limit: Option<i64>, offset: Option<i64>) -> Result<Page> {
        let limit = limit.unwrap_or(Self::DEFAULT_LIMIT);
        if !(1..=Self::MAX_LIMIT).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be between 1 and {}", Self::MAX_LIMIT),
            ));
        }
        let offset = offset.unwrap_or(0);
        if offset < 0 {
            return Err(Error::invalid("offset", "must not be negative"));
        }
        Ok(Page { limit, offset })
    }

    /// A page for interfaces whose clients expect out-of-range sizes to be clamped rather
    /// than refused (the legacy interface: `size=1000` means "as many as you give"): `limit`
    /// is clamped to 1–`max`, a negative offset to 0.
    pub fn clamped(limit: i64, offset: i64, max: i64) -> Page {
        Page {
            limit: limit.clamp(1, max.max(1)),
            offset: offset.max(0),
        }
    }

    /// Page size.
    pub fn limit(self) -> i64 {
        self.limit
    }

    /// Offset.
    pub fn offset(self) -> i64 {
        self.offset
    }
}

impl Default for Page {
    fn default() -> Self {
        Page {
            limit: Self::DEFAULT_LIMIT,
            offset: 0,
        }
    }
}

/// One page of a list and the total count.
#[derive(Debug, Clone)]
pub struct Paged<T> {
    /// The page.
    pub items: Vec<T>,
    /// Total matching count.
    pub total: i64,
    /// The page request that produced it.
    pub page: Page,
}

impl<T> Paged<T> {
    /// Maps the items, keeping the paging.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Paged<U> {
        Paged {
            items: self.items.into_iter().map(f).collect(),
            total: self.total,
            page: self.page,
        }
    }
}

/// A new random key for a track (`tracks.shuffle_key`): random samples of the library walk
/// the index from a random key.
pub(crate) fn shuffle_key() -> i64 {
    i64::from(rand::random::<u32>() >> 1)
}

/// A play, as pushed or posted to `/history`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPlay {
    /// The track.
    pub track_id: String,
    /// When it was played.
    pub played_at: Timestamp,
    /// How long it was listened to.
    pub seconds_played: Option<f64>,
    /// The client's id of this event, unique per user.
    pub client_event_id: String,
}
