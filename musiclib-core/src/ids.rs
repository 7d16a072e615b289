//! Newtype ids. Every id is a UUIDv7 string: sortable by creation time, opaque to clients.

use std::fmt;

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

            /// Parses an id from client input; anything but a UUID is rejected.
            pub fn parse(value: &str) -> crate::Result<Self> {
                uuid::Uuid::parse_str(value)
                    .map(|uuid| Self(uuid.hyphenated().to_string()))
                    .map_err(|_| crate::Error::not_found($what, value))
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
