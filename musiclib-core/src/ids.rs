//! Newtype ids. Every id is a UUIDv7 string: sortable by creation time, opaque to clients.
//!
//! A malformed id names nothing, so where an id addresses a resource (a path), parsing it
//! fails as "not found" exactly like a well-formed id of nothing ([`TrackId::parse`]); where
//! it is a value inside a request (a filter, a body field), it is a validation error naming
//! the field ([`TrackId::parse_field`]).

use std::fmt;

/// An id as the number it spells, when it is a UUID written as ids are (hyphenated, lower
/// case), so that [`uuid_text`] writes it back the same: 16 bytes instead of a 36-byte
/// string, for the caches that hold many ids.
pub(crate) fn uuid_number(id: &str) -> Option<u128> {
    let uuid = uuid::Uuid::parse_str(id).ok()?;
    let mut buffer = uuid::Uuid::encode_buffer();
    (uuid.hyphenated().encode_lower(&mut buffer) == id).then(|| uuid.as_u128())
}

/// The id a [`uuid_number`] was read from.
pub(crate) fn uuid_text(number: u128) -> String {
    uuid::Uuid::from_u128(number).hyphenated().to_string()
}

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident, $what:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// A fresh, time-ordered id.
            pub fn new() -> Self {
                Self(uuid::Uuid::now_v7().to_string())
            }

            /// Parses an id that addresses a resource: anything but a UUID is not found.
            pub fn parse(value: &str) -> crate::Result<Self> {
                Self::parse_uuid(value).ok_or_else(|| crate::Error::not_found($what, value))
            }

            /// Parses an id given as the value of `field`: anything but a UUID is invalid
            /// input naming the field.
            pub fn parse_field(value: &str, field: &str) -> crate::Result<Self> {
                Self::parse_uuid(value).ok_or_else(|| {
                    crate::Error::invalid(field, concat!("must be a ", $what, " id"))
                })
            }

            fn parse_uuid(value: &str) -> Option<Self> {
                uuid::Uuid::parse_str(value)
                    .ok()
                    .map(|uuid| Self(uuid.hyphenated().to_string()))
            }

            /// Wraps an id read back from the database.
            #[allow(dead_code)]
            pub(crate) fn from_db(value: String) -> Self {
                Self(value)
            }

            /// The id as a string.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        /// Stored in job payloads as its text.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse_uuid(&text).ok_or_else(|| {
                    serde::de::Error::custom(concat!("not a ", $what, " id"))
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// Identifies a track.
    TrackId, "track"
);
id_type!(
    /// Identifies an album.
    AlbumId, "album"
);
id_type!(
    /// Identifies an artist.
    ArtistId, "artist"
);
id_type!(
    /// Identifies a user.
    UserId, "user"
);
id_type!(
    /// Identifies a background job.
    JobId, "job"
);
id_type!(
    /// Identifies a playlist.
    PlaylistId, "playlist"
);
id_type!(
    /// Identifies a download.
    DownloadId, "download"
);
id_type!(
    /// Identifies an internet radio station.
    StationId, "radio station"
);
id_type!(
    /// Identifies a podcast channel (a subscribed feed).
    PodcastId, "podcast"
);
id_type!(
    /// Identifies a podcast episode.
    EpisodeId, "podcast episode"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_written_back_the_same_are_kept_as_numbers() {
        let id = uuid::Uuid::now_v7().hyphenated().to_string();
        let number = uuid_number(&id).unwrap();
        assert_eq!(uuid_text(number), id);
        assert_eq!(uuid_number(&id.to_uppercase()), None);
        assert_eq!(uuid_number(&id.replace('-', "")), None);
        assert_eq!(uuid_number("not an id"), None);
    }
}
