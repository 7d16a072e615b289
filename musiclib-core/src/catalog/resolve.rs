//! Artist and album resolution: find-or-create by normalised key, so case, accents and
//! Unicode forms never split one artist or album in two. An album belongs to its album artist.

use std::collections::HashMap;

use crate::db::{Db, Tx};
use crate::text::name_key;
use crate::{AlbumId, ArtistId, Result};

/// Resolves names to ids inside one transaction, caching what it has seen (an import
/// resolves the same artist for every track of an album).
pub(crate) struct Resolver {
    db: Db,
    artists: HashMap<String, ArtistId>,
    albums: HashMap<String, AlbumId>,
}

impl Resolver {
    /// A resolver with empty caches. Use one per transaction: a rolled-back transaction's
    /// ids must not outlive it.
    pub(crate) fn new(db: Db) -> Resolver {
        Resolver {
            db,
            artists: HashMap::new(),
            albums: HashMap::new(),
        }
    }

    /// The id of the artist named `name`, created when new.
    pub(crate) async fn artist(&mut self, tx: &mut Tx, name: &str) -> Result<ArtistId> {
        let key = name_key(name);
        if let Some(id) = self.artists.get(&key) {
            return Ok(id.clone());
        }
        self.db
            .sql(
                "INSERT INTO artists (id, name, name_key, created_at, updated_at)
                 VALUES ($1, $2, $3, {now}, {now}) ON CONFLICT (name_key) DO NOTHING",
            )
            .bind(&ArtistId::new())
            .bind(name.trim())
            .bind(key.as_str())
            .execute(&mut **tx)
            .await?;
        let id: String = self
            .db
            .sql("SELECT id FROM artists WHERE name_key = $1")
            .bind(key.as_str())
            .fetch_scalar(&mut **tx)
            .await?;
        let id = ArtistId::from_db(id);
        self.artists.insert(key, id.clone());
        Ok(id)
    }

    /// The id of the album `title` by `album_artist`, created when new. Year and genre fill
    /// gaps of an existing album and never overwrite.
    pub(crate) async fn album(
        &mut self,
        tx: &mut Tx,
        title: &str,
        album_artist: Option<&str>,
        year: Option<i64>,
        genre: Option<&str>,
    ) -> Result<AlbumId> {
        let artist_key = album_artist.map(name_key).unwrap_or_default();
        let title_key = name_key(title);
        let album_key = format!("{artist_key}\u{1}{title_key}");
        if let Some(id) = self.albums.get(&album_key) {
            return Ok(id.clone());
        }
        let artist_id = match album_artist {
            Some(name) if !name.trim().is_empty() => Some(self.artist(tx, name).await?),
            _ => None,
        };
        let is_compilation = artist_key == "various artists";
        self.db
            .sql(
                "INSERT INTO albums (id, title, title_key, album_key, artist_id, year, genre, is_compilation,
                                     created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, {now}, {now})
                 ON CONFLICT (album_key) DO UPDATE SET
                     year = COALESCE(albums.year, excluded.year),
                     genre = COALESCE(albums.genre, excluded.genre)",
            )
            .bind(&AlbumId::new())
            .bind(title.trim())
            .bind(title_key.as_str())
            .bind(album_key.as_str())
            .bind(artist_id.as_ref())
            .bind(year)
            .bind(genre)
            .bind(is_compilation)
            .execute(&mut **tx)
            .await?;
        let id: String = self
            .db
            .sql("SELECT id FROM albums WHERE album_key = $1")
            .bind(album_key.as_str())
            .fetch_scalar(&mut **tx)
            .await?;
        let id = AlbumId::from_db(id);
        self.albums.insert(album_key, id.clone());
        Ok(id)
    }
}
