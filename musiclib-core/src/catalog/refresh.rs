//! Re-reading a track's file: what `POST /admin/reindex` and a rescan of a changed file do.
//!
//! The file's tags win where they have a value (a file re-tagged in another program shows its
//! new tags); where they are empty, what the track has is kept (a lookup's title, say). A
//! manual edit is never undone: a `manual` track gets its new tags stored (for later) and its
//! audio facts refreshed, nothing else. The search text is rebuilt either way.

use super::resolve::Resolver;
use super::tracks::lock_track;
use super::writes::{self, Description, Names};
use super::Catalog;
use crate::domain::MetadataStatus;
use crate::probe::AudioFacts;
use crate::{Result, TrackId};

/// A track's stored original, as jobs that walk every file see it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct StoredFile {
    /// The track.
    pub(crate) id: String,
    /// The blob key of its original.
    pub(crate) storage_uri: String,
    /// Its path or name in its source (for messages).
    pub(crate) source_id: String,
    /// The recorded size.
    pub(crate) size_bytes: Option<i64>,
    /// The recorded SHA-256.
    pub(crate) content_sha256: Option<String>,
}

/// What changed on disk, for a rescan of a changed file (a reindex leaves these alone).
#[derive(Debug, Clone)]
pub(crate) struct FileFacts {
    pub(crate) size_bytes: i64,
    pub(crate) sha256: String,
    pub(crate) mtime: Option<i64>,
}

impl Catalog {
    /// Applies re-read `facts` (and, for a changed file, its new size, hash and time) to a
    /// track. Returns whether the track's catalogue fields changed.
    pub(crate) async fn refresh_from_file(
        &self,
        id: &TrackId,
        facts: &AudioFacts,
        file: Option<&FileFacts>,
    ) -> Result<bool> {
        let db = &self.db;
        let mut tx = db.begin().await?;
        let row = lock_track(db, &mut tx, id).await?;
        let tags = &facts.tags;
        let current = Description::of(&row);
        let manual = row.metadata_status == MetadataStatus::Manual.as_str();
        let names = if manual {
            current.names.clone()
        } else {
            let now = &current.names;
            let artist = tags.artist.clone().or(now.artist.clone());
            let album_artist = tags
                .album_artist
                .clone()
                .or_else(|| tags.compilation.then(|| "Various Artists".to_string()))
                .or(now.album_artist.clone())
                .or_else(|| artist.clone());
            Names {
                title: tags.title.clone().unwrap_or(now.title.clone()),
                artist,
                album: tags.album.clone().or(now.album.clone()),
                album_artist,
                genre: tags.genre.clone().or(now.genre.clone()),
                year: tags.year.or(now.year),
                track_number: tags.track_number.or(now.track_number),
                disc_number: tags.disc_number.or(now.disc_number),
            }
        };
        let now = &current.names;
        let changed = !manual
            && (names.title != now.title
                || names.artist != now.artist
                || names.album != now.album
                || names.genre != now.genre
                || names.year != now.year
                || names.track_number != now.track_number
                || names.disc_number != now.disc_number);
        let description = if changed {
            names
                .resolve(&mut tx, &mut Resolver::new(db.clone()))
                .await?
        } else {
            Description { names, ..current }
        };
        writes::describe(db, &mut tx, id, &description).await?;
        writes::reread(db, &mut tx, id, facts, file).await?;
        tx.commit().await?;
        Ok(changed)
    }

    /// Up to `limit` tracks with audio after `after` (by id), with what a job walking every
    /// stored file needs of each.
    pub(crate) async fn tracks_with_audio_after(
        &self,
        after: &str,
        limit: i64,
    ) -> Result<Vec<StoredFile>> {
        self.db
            .sql(&format!(
                "SELECT id, storage_uri, source_id, size_bytes, content_sha256 FROM tracks
                 WHERE storage_uri <> '' AND id > $1 ORDER BY id LIMIT {limit}"
            ))
            .bind(after)
            .fetch_all(self.db.pool())
            .await
    }

    /// Recomputes every track's search text from its title, artist and album, then rebuilds
    /// the search index from it. Returns how many texts changed.
    pub(crate) async fn rebuild_search_index(&self) -> Result<u64> {
        let db = &self.db;
        let mut after = String::new();
        let mut changed = 0;
        loop {
            let rows: Vec<SearchRow> = db
                .sql(
                    "SELECT id, title, artist_name, album_title, search_text FROM tracks
                     WHERE id > $1 ORDER BY id LIMIT 500",
                )
                .bind(after.as_str())
                .fetch_all(db.pool())
                .await?;
            let Some(last) = rows.last() else { break };
            after = last.id.clone();
            let mut tx = db.begin().await?;
            for row in rows {
                let text = writes::search_text(
                    &row.title,
                    row.artist_name.as_deref(),
                    row.album_title.as_deref(),
                );
                if text != row.search_text {
                    writes::set_search_text(db, &mut tx, &row.id, &text).await?;
                    changed += 1;
                }
            }
            tx.commit().await?;
        }
        let mut tx = db.begin().await?;
        for statement in db.kind().rebuild_track_search() {
            db.sql(statement).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(changed)
    }
}

#[derive(sqlx::FromRow)]
struct SearchRow {
    id: String,
    title: String,
    artist_name: Option<String>,
    album_title: Option<String>,
    search_text: String,
}
