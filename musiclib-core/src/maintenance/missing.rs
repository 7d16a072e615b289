//! Tracks lacking metadata: which of title, artist, album, year, genre and cover each lacks,
//! filterable by field, paged.

use super::Maintenance;
use crate::auth::Caller;
use crate::catalog::rows::{TrackRow, TRACK_SELECT};
use crate::domain::{Page, Paged, Track};
use crate::{Error, Result};

/// A piece of metadata a track can lack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetadataField {
    /// An empty title.
    Title,
    /// No track artist.
    Artist,
    /// No album.
    Album,
    /// No year.
    Year,
    /// No genre.
    Genre,
    /// No cover (the album has none, or there is no album).
    Cover,
}

impl MetadataField {
    /// Every field, in the order reports list them.
    pub const ALL: [MetadataField; 6] = [
        MetadataField::Title,
        MetadataField::Artist,
        MetadataField::Album,
        MetadataField::Year,
        MetadataField::Genre,
        MetadataField::Cover,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MetadataField::Title => "title",
            MetadataField::Artist => "artist",
            MetadataField::Album => "album",
            MetadataField::Year => "year",
            MetadataField::Genre => "genre",
            MetadataField::Cover => "cover",
        }
    }

    /// Parses a wire name; `parameter` names the request field in the error.
    pub fn parse(text: &str, parameter: &str) -> Result<MetadataField> {
        MetadataField::ALL
            .into_iter()
            .find(|field| field.as_str() == text)
            .ok_or_else(|| {
                Error::invalid(
                    parameter,
                    format!("unknown field {text:?}: must be title, artist, album, year, genre or cover"),
                )
            })
    }

    /// The SQL condition (on `t`, a track) that holds when the field is lacking.
    fn lacking(self) -> &'static str {
        match self {
            MetadataField::Title => "TRIM(t.title) = ''",
            MetadataField::Artist => "t.artist_id IS NULL",
            MetadataField::Album => "t.album_id IS NULL",
            MetadataField::Year => "t.year IS NULL",
            MetadataField::Genre => "(t.genre IS NULL OR TRIM(t.genre) = '')",
            MetadataField::Cover => {
                "NOT EXISTS (SELECT 1 FROM albums c WHERE c.id = t.album_id AND c.cover_uri IS NOT NULL)"
            }
        }
    }

    /// Whether `track` lacks the field.
    fn is_lacking(self, track: &Track) -> bool {
        let blank = |text: Option<&str>| text.is_none_or(|text| text.trim().is_empty());
        match self {
            MetadataField::Title => track.title.trim().is_empty(),
            MetadataField::Artist => track.artist_id.is_none(),
            MetadataField::Album => track.album_id.is_none(),
            MetadataField::Year => track.year.is_none(),
            MetadataField::Genre => blank(track.genre.as_deref()),
            MetadataField::Cover => !track.has_cover,
        }
    }
}

/// A track and the fields it lacks.
#[derive(Debug, Clone)]
pub struct MissingMetadata {
    /// The track.
    pub track: Track,
    /// What it lacks (of all six fields, not only the ones asked for).
    pub missing: Vec<MetadataField>,
}

impl Maintenance {
    /// Tracks lacking any of `fields` (every field when empty), oldest first, with what each
    /// lacks. For any signed-in user.
    pub async fn missing_metadata(
        &self,
        _caller: &Caller,
        fields: &[MetadataField],
        page: Page,
    ) -> Result<Paged<MissingMetadata>> {
        let fields = if fields.is_empty() {
            &MetadataField::ALL[..]
        } else {
            fields
        };
        let conditions: Vec<&str> = fields.iter().map(|field| field.lacking()).collect();
        let mut filter = self.db.sql("");
        filter
            .push_condition()
            .push(&format!("({})", conditions.join(" OR ")));
        let tracks: Paged<Track> = filter
            .fetch_page::<TrackRow, _>(
                self.db.pool(),
                "SELECT COUNT(*) FROM tracks t",
                TRACK_SELECT,
                "t.created_at, t.id",
                page,
            )
            .await?;
        Ok(tracks.map(|track| MissingMetadata {
            missing: MetadataField::ALL
                .into_iter()
                .filter(|field| field.is_lacking(&track))
                .collect(),
            track,
        }))
    }
}
