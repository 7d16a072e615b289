//! Re-reading a track's file: what `POST /admin/reindex` and a rescan of a changed file do.
//!
//! The file's tags win where they have a value (a file re-tagged in another program shows its
//! new tags); where they are empty, what the track has is kept (a lookup's title, say). A
//! manual edit is never undone: a `manual` track gets its new tags stored (for later) and its
//! audio facts refreshed, nothing else. The search text is rebuilt either way.

use super::resolve::Resolver;
use super::tracks::lock_track;
use super::Catalog;
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
        let tags_json = serde_json::to_string(tags).unwrap_or_default();
        let manual = row.metadata_status == "manual";
        let (title, artist, album, album_artist, genre, year, track_number, disc_number) = if manual
        {
            (
                row.title.clone(),
                row.artist_name.clone(),
                row.album_title.clone(),
                row.album_artist_name.clone(),
                row.genre.clone(),
                row.year,
                row.track_number,
                row.disc_number,
            )
        } else {
            let artist = tags.artist.clone().or(row.artist_name.clone());
            let album = tags.album.clone().or(row.album_title.clone());
            let album_artist = tags
                .album_artist
                .clone()
                .or_else(|| tags.compilation.then(|| "Various Artists".to_string()))
                .or(row.album_artist_name.clone())
                .or_else(|| artist.clone());
            (
                tags.title.clone().unwrap_or(row.title.clone()),
                artist,
                album,
                album_artist,
                tags.genre.clone().or(row.genre.clone()),
                tags.year.or(row.year),
                tags.track_number.or(row.track_number),
                tags.disc_number.or(row.disc_number),
            )
        };
        let changed = !manual
            && (title != row.title
                || artist != row.artist_name
                || album != row.album_title
                || genre != row.genre
                || year != row.year
                || track_number != row.track_number
                || disc_number != row.disc_number);
        let (artist_id, album_id) = if changed {
            let mut resolver = Resolver::new(db.clone());
            let artist_id = match &artist {
                Some(name) => Some(resolver.artist(&mut tx, name).await?.to_string()),
                None => None,
            };
            let album_id = match &album {
                Some(album) => Some(
                    resolver
                        .album(
                            &mut tx,
                            album,
                            album_artist.as_deref(),
                            year,
                            genre.as_deref(),
                        )
                        .await?
                        .to_string(),
                ),
                None => None,
            };
            (artist_id, album_id)
        } else {
            (row.artist_id.clone(), row.album_id.clone())
        };
        let search_text = crate::text::search_key(&[
            &title,
            artist.as_deref().unwrap_or(""),
            album.as_deref().unwrap_or(""),
        ]);
        db.sql(
            "UPDATE tracks SET title = $2, artist_id = $3, album_id = $4, artist_name = $5,
                 album_title = $6, album_artist_name = $7, genre = $8, year = $9, track_number = $10,
                 disc_number = $11, duration_ms = $12, bitrate_kbps = $13, sample_rate = $14,
                 channels = $15, has_embedded_cover = $16, tags = $17, search_text = $18,
                 size_bytes = COALESCE($19, size_bytes), content_sha256 = COALESCE($20, content_sha256),
                 source_mtime = COALESCE($21, source_mtime), updated_at = {now}
             WHERE id = $1",
        )
        .bind(id)
        .bind(title.as_str())
        .bind(artist_id.as_deref())
        .bind(album_id.as_deref())
        .bind(artist.as_deref())
        .bind(album.as_deref())
        .bind(album_artist.as_deref().filter(|_| album.is_some()))
        .bind(genre.as_deref())
        .bind(year)
        .bind(track_number)
        .bind(disc_number)
        .bind(facts.duration_ms)
        .bind(facts.bitrate_kbps)
        .bind(facts.sample_rate)
        .bind(facts.channels)
        .bind(facts.has_embedded_cover)
        .bind(tags_json)
        .bind(search_text)
        .bind(file.map(|file| file.size_bytes))
        .bind(file.map(|file| file.sha256.as_str()))
        .bind(file.and_then(|file| file.mtime))
        .execute(&mut *tx)
        .await?;
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
                let text = crate::text::search_key(&[
                    &row.title,
                    row.artist_name.as_deref().unwrap_or(""),
                    row.album_title.as_deref().unwrap_or(""),
                ]);
                if text != row.search_text {
                    db.sql("UPDATE tracks SET search_text = $2 WHERE id = $1")
                        .bind(row.id.as_str())
                        .bind(text)
                        .execute(&mut *tx)
                        .await?;
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
