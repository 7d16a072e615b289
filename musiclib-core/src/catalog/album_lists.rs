//! The album lists of the legacy interface (`getAlbumList2`): newest, random, alphabetical,
//! by year or genre, and the caller's own views (most played, recently played, best rated,
//! starred), which read their plays and marks.

use super::albums::album_key;
use super::query::{AlbumSortKey, Sort};
use super::Catalog;
use crate::auth::Caller;
use crate::domain::{Album, Page};
use crate::Result;

/// Which album list (`getAlbumList2` `type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlbumList {
    /// In random order.
    Random,
    /// Recently added first.
    Newest,
    /// The caller's best rated first (rated albums only).
    Highest,
    /// The caller's most played first (played albums only).
    Frequent,
    /// The caller's most recently played first.
    Recent,
    /// By title.
    AlphabeticalByName,
    /// By album artist, then title.
    AlphabeticalByArtist,
    /// The caller's starred albums, most recently starred first.
    Starred,
    /// Released between two years, inclusive; descending when `from` > `to`.
    ByYear {
        /// First year.
        from: i64,
        /// Last year.
        to: i64,
    },
    /// Of a genre (the album's, or any of its tracks'), case-insensitive.
    ByGenre(String),
}

impl Catalog {
    /// An album list of `kind` (`getAlbumList2`).
    pub async fn album_list(
        &self,
        caller: &Caller,
        kind: &AlbumList,
        page: Page,
    ) -> Result<Vec<Album>> {
        // The page's ids first (walking the order's index where there is one), then their
        // rows: the counts and lengths every album row carries are computed for the page only.
        let mut select = self.db.sql(match kind {
            AlbumList::AlphabeticalByArtist => {
                "SELECT al.id FROM albums al LEFT JOIN artists ar ON ar.id = al.artist_id"
            }
            _ => "SELECT al.id FROM albums al",
        });
        let mut arg = |value: String| select.arg(value);
        let tracks = self.db.kind().tracks_by_id_covered();
        let plays = |user: &str| {
            format!(
                "JOIN (SELECT t.album_id AS album_id, COUNT(*) AS plays, MAX(p.played_at) AS last_played
                   FROM play_events p JOIN {tracks} ON t.id = p.track_id
                   WHERE p.user_id = {user} GROUP BY t.album_id) s ON s.album_id = al.id"
            )
        };
        let marks = |user: &str| {
            format!(
                "JOIN annotations a ON a.item_id = al.id AND a.item_kind = 'album' AND a.user_id = {user}"
            )
        };
        // Each list: its join, its condition (empty for none) and its order.
        let (join, filter, order) = match kind {
            AlbumList::Random => (String::new(), String::new(), "RANDOM()".to_string()),
            AlbumList::Newest => (
                String::new(),
                String::new(),
                "al.created_at DESC, al.id DESC".into(),
            ),
            AlbumList::Highest => (
                marks(&arg(caller.user.id.to_string())),
                "a.rating > 0".into(),
                "a.rating DESC, al.title_key, al.id".into(),
            ),
            AlbumList::Frequent => (
                plays(&arg(caller.user.id.to_string())),
                String::new(),
                "s.plays DESC, al.title_key, al.id".into(),
            ),
            AlbumList::Recent => (
                plays(&arg(caller.user.id.to_string())),
                String::new(),
                "s.last_played DESC, al.id".into(),
            ),
            AlbumList::AlphabeticalByName => {
                (String::new(), String::new(), "al.title_key, al.id".into())
            }
            AlbumList::AlphabeticalByArtist => (
                String::new(),
                String::new(),
                "ar.name_key, al.title_key, al.id".into(),
            ),
            AlbumList::Starred => (
                marks(&arg(caller.user.id.to_string())),
                "a.starred_at IS NOT NULL".into(),
                "a.starred_at DESC, al.id".into(),
            ),
            AlbumList::ByYear { from, to } => {
                let (low, high, dir) = if from <= to {
                    (*from, *to, "ASC")
                } else {
                    (*to, *from, "DESC")
                };
                (
                    String::new(),
                    format!("al.year >= {low} AND al.year <= {high}"),
                    format!("al.year {dir}, al.title_key, al.id"),
                )
            }
            AlbumList::ByGenre(genre) => {
                let genre = arg(genre.trim().to_lowercase());
                (
                    String::new(),
                    format!(
                        "LOWER(al.genre) = {genre} OR EXISTS
                           (SELECT 1 FROM tracks g WHERE g.album_id = al.id AND LOWER(g.genre) = {genre} LIMIT 1)"
                    ),
                    "al.title_key, al.id".into(),
                )
            }
        };
        // Only albums with something to play: an album of saved remote hits (placeholders)
        // alone is not listed to legacy clients, which cannot play it. Those albums are
        // found once from the placeholders' index (migration 0016), so the list walks its
        // sort's index with no lookup per album.
        // (`LIMIT 1` keeps the EXISTS a correlated subquery: SQLite 3.51 turns a plain one
        // into a join, and with the title index and an OFFSET it then skipped nothing, so
        // every page was the first.)
        let playable = "al.id NOT IN (SELECT x.album_id FROM tracks x
             WHERE x.availability = 'placeholder' AND x.album_id IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM tracks p WHERE p.album_id = x.album_id AND p.availability <> 'placeholder' LIMIT 1))";
        // By title or newest: a deep page from a known place (`keyset::Places`), as
        // `/albums` in those sorts, instead of skipping its offset.
        let keyed = match kind {
            AlbumList::AlphabeticalByName => album_key(Sort {
                key: AlbumSortKey::Title,
                descending: false,
            }),
            AlbumList::Newest => album_key(Sort {
                key: AlbumSortKey::CreatedAt,
                descending: true,
            }),
            _ => None,
        };
        if let Some(key) = keyed {
            let clock = self.db.sync_clock().await?;
            let mut playable_only = self.db.sql("");
            playable_only.push_condition().push(playable);
            let placed = self
                .places
                .page(&self.db, "FROM albums al", &playable_only, key, page, clock)
                .await?;
            if let Some(ids) = placed {
                return self.albums_in_order_at(&ids, clock).await;
            }
        }
        let filter = if filter.is_empty() {
            playable.to_string()
        } else {
            format!("({filter}) AND {playable}")
        };
        select.push(&format!(
            " {join} WHERE {filter} ORDER BY {order} LIMIT {} OFFSET {}",
            page.limit(),
            page.offset()
        ));
        let ids: Vec<String> = select.fetch_scalars(self.db.pool()).await?;
        self.albums_in_order(&ids).await
    }
}
