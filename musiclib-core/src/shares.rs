//! Sharing links: a user shares tracks, an album or a playlist with a link that anyone may
//! open, without an account, until it expires or its owner revokes it.
//!
//! The link's id is its only secret: 128 random bits, written as 22 base64url characters.
//! Everything a visitor reaches goes through this service with that id, never with a user's
//! token: the share's contents (an album's or a playlist's follow them as they change), each
//! item's audio, cover and lyrics, and its download when the owner allowed it. A track outside
//! the share is "not found"; an expired or revoked share is "gone" (410), and stays so (a
//! revoked row is kept, so its id is never reused and its link never means something else).
//!
//! Visits (the page opened) and plays (a stream read from its start) are counted for the
//! owner. Creating is throttled per user ([`SHARES_PER_HOUR`]) and the live shares of a user
//! are bounded ([`MAX_LIVE_SHARES`]).

use std::time::Duration;

use base64::Engine as _;

use crate::auth::Caller;
use crate::catalog::Catalog;
use crate::db::{known_ids, Db, Table};
use crate::domain::{Page, Paged, Track};
use crate::lyrics::{Lyrics, LyricsRecord};
use crate::media::{Cover, Media, TrackAudio};
use crate::playlists::Playlists;
use crate::{AlbumId, Error, PlaylistId, Result, Timestamp, TrackId, UserId};

/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Most tracks a share of tracks names.
pub const MAX_SHARED_TRACKS: usize = 500;
/// Most tracks a share's page lists (an album's or a playlist's first ones).
pub const MAX_LISTED_TRACKS: usize = 1000;
/// Shares one user may create in an hour.
pub const SHARES_PER_HOUR: i64 = 30;
/// Live (neither expired nor revoked) shares one user may have.
pub const MAX_LIVE_SHARES: i64 = 1000;
/// Furthest expiry: ten years ahead.
pub const MAX_EXPIRY: Duration = Duration::from_secs(10 * 366 * 24 * 3600);

/// The id of a share: 22 base64url characters (16 random bytes). Unlike the other ids it is
/// not a UUID: it is the link's secret, so nothing of it is predictable.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShareId(String);

impl ShareId {
    /// A fresh id from the operating system's random source.
    fn generate() -> ShareId {
        // The thread's generator: ChaCha, seeded from the operating system.
        let bytes: [u8; 16] = rand::random();
        ShareId(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
    }

    /// Parses an id that addresses a share: anything else is not found.
    pub fn parse(value: &str) -> Result<ShareId> {
        let valid = value.len() == 22
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if valid {
            Ok(ShareId(value.to_string()))
        } else {
            Err(Error::not_found("share", value))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ShareId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The link of a share as its page is reached: `public_url` (the `PUBLIC_URL` setting) when
/// set, else made from the request's `Host` (`https` when a proxy said so); a host with
/// characters no host name has gives the bare path.
pub fn link(public_url: Option<&str>, host: Option<&str>, https: bool, id: &ShareId) -> String {
    let path = format!("/s/{id}");
    if let Some(base) = public_url {
        return format!("{}{path}", base.trim_end_matches('/'));
    }
    let host = host.filter(|host| {
        !host.is_empty()
            && host.len() <= 255
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
    });
    match host {
        Some(host) => format!("{}://{host}{path}", if https { "https" } else { "http" }),
        None => path,
    }
}

/// What a share holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareTarget {
    /// These tracks, in this order (1 to [`MAX_SHARED_TRACKS`]).
    Tracks(Vec<TrackId>),
    /// An album: its tracks as they are when the link is opened.
    Album(AlbumId),
    /// A playlist: its tracks as they are when the link is opened.
    Playlist(PlaylistId),
}

impl ShareTarget {
    /// `tracks`, `album` or `playlist`.
    pub fn kind(&self) -> &'static str {
        match self {
            ShareTarget::Tracks(_) => "tracks",
            ShareTarget::Album(_) => "album",
            ShareTarget::Playlist(_) => "playlist",
        }
    }
}

/// A share to create.
#[derive(Debug, Clone)]
pub struct NewShare {
    /// What is shared.
    pub target: ShareTarget,
    /// Shown on the share's page.
    pub description: Option<String>,
    /// When the link stops working (`None`: never); in the future, at most [`MAX_EXPIRY`] ahead.
    pub expires_at: Option<Timestamp>,
    /// Whether visitors may download the files.
    pub downloadable: bool,
}

/// Changes to a share: fields left `None` stay.
#[derive(Debug, Clone, Default)]
pub struct ShareChanges {
    /// New description (`Some(None)` clears it).
    pub description: Option<Option<String>>,
    /// New expiry (`Some(None)`: never). Setting it in the past ends the share.
    pub expires_at: Option<Option<Timestamp>>,
    /// Whether visitors may download.
    pub downloadable: Option<bool>,
}

/// A share as its owner (or an admin) sees it.
#[derive(Debug, Clone)]
pub struct Share {
    /// The link's id.
    pub id: ShareId,
    /// Owner.
    pub owner_id: UserId,
    /// Owner's user name.
    pub owner_name: String,
    /// What is shared (for an album or a playlist, its id).
    pub target: ShareTarget,
    /// A title for the page: the album's, the playlist's name, or the first track's.
    pub title: String,
    /// The owner's description.
    pub description: Option<String>,
    /// Whether visitors may download.
    pub downloadable: bool,
    /// When the link stops working.
    pub expires_at: Option<Timestamp>,
    /// Whether it has expired.
    pub expired: bool,
    /// Times its page was opened.
    pub visit_count: i64,
    /// Times one of its tracks was played from the start.
    pub play_count: i64,
    /// Last visit.
    pub last_visited_at: Option<Timestamp>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// The tracks it holds now (at most [`MAX_LISTED_TRACKS`]).
    pub tracks: Vec<Track>,
}

#[derive(sqlx::FromRow)]
struct ShareRow {
    id: String,
    owner_id: String,
    owner_name: String,
    kind: String,
    target_id: Option<String>,
    description: Option<String>,
    downloadable: i64,
    expires_at: Option<i64>,
    revoked_at: Option<i64>,
    visit_count: i64,
    play_count: i64,
    last_visited_at: Option<i64>,
    created_at: i64,
    updated_at: i64,
    now: i64,
}

impl ShareRow {
    fn expired(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= self.now)
    }

    /// Refuses a share a visitor may no longer use.
    fn require_live(&self) -> Result<()> {
        if self.revoked_at.is_some() {
            return Err(Error::Gone("this share was revoked by its owner".into()));
        }
        if self.expired() {
            return Err(Error::Gone(format!(
                "this share expired at {}",
                Timestamp::from_micros(self.expires_at.unwrap_or_default()).to_rfc3339()
            )));
        }
        Ok(())
    }
}

fn select(now: &str) -> String {
    format!(
        "SELECT s.id, s.owner_id, u.username AS owner_name, s.kind, s.target_id, s.description,
         s.downloadable, s.expires_at, s.revoked_at, s.visit_count, s.play_count,
         s.last_visited_at, s.created_at, s.updated_at, {now} AS now
         FROM shares s JOIN users u ON u.id = s.owner_id"
    )
}

fn validate_description(description: Option<&str>) -> Result<Option<String>> {
    let Some(description) = description.map(str::trim).filter(|d| !d.is_empty()) else {
        return Ok(None);
    };
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(Error::invalid(
            "description",
            format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    if crate::text::has_control_but_lines(description) {
        return Err(Error::invalid(
            "description",
            "must not contain control characters but tabs and line breaks",
        ));
    }
    Ok(Some(description.to_string()))
}

fn validate_expiry(expires_at: Option<Timestamp>, now: Timestamp) -> Result<()> {
    let Some(at) = expires_at else {
        return Ok(());
    };
    if at.as_micros() <= now.as_micros() {
        return Err(Error::invalid("expires_at", "must be in the future"));
    }
    if at.as_micros() - now.as_micros() > MAX_EXPIRY.as_micros() as i64 {
        return Err(Error::invalid(
            "expires_at",
            "must be at most ten years ahead",
        ));
    }
    Ok(())
}

/// The sharing service.
#[derive(Clone, Debug)]
pub struct Shares {
    db: Db,
    catalog: Catalog,
    playlists: Playlists,
    media: Media,
    lyrics: Lyrics,
}

impl Shares {
    pub(crate) fn new(
        db: Db,
        catalog: Catalog,
        playlists: Playlists,
        media: Media,
        lyrics: Lyrics,
    ) -> Shares {
        Shares {
            db,
            catalog,
            playlists,
            media,
            lyrics,
        }
    }

    /// Shares what `new` names as the caller. The caller must be able to read it (a
    /// playlist: their own or a public one); its tracks must exist.
    pub async fn create(&self, caller: &Caller, new: NewShare) -> Result<Share> {
        let description = validate_description(new.description.as_deref())?;
        validate_expiry(new.expires_at, Timestamp::now())?;
        match &new.target {
            ShareTarget::Tracks(ids) => {
                if ids.is_empty() {
                    return Err(Error::invalid("track_ids", "must name at least one track"));
                }
                if ids.len() > MAX_SHARED_TRACKS {
                    return Err(Error::invalid(
                        "track_ids",
                        format!("must name at most {MAX_SHARED_TRACKS} tracks"),
                    ));
                }
                let names: Vec<&str> = ids.iter().map(TrackId::as_str).collect();
                let mut conn = self.db.pool().acquire().await?;
                let known = known_ids(&mut conn, self.db.kind(), Table::Tracks, &names).await?;
                if let Some(missing) = names.iter().find(|id| !known.contains(**id)) {
                    return Err(Error::invalid("track_ids", format!("no track {missing}")));
                }
            }
            ShareTarget::Album(id) => {
                self.catalog
                    .get_album(id)
                    .await
                    .map_err(|error| match error {
                        Error::NotFound { .. } => {
                            Error::invalid("album_id", format!("no album {id}"))
                        }
                        other => other,
                    })?;
            }
            ShareTarget::Playlist(id) => {
                self.playlists
                    .get(caller, id)
                    .await
                    .map_err(|error| match error {
                        Error::NotFound { .. } => {
                            Error::invalid("playlist_id", format!("no playlist {id}"))
                        }
                        other => other,
                    })?;
            }
        }
        let id = ShareId::generate();
        let mut tx = self.db.begin().await?;
        // The owner's row, locked: two creates of one user count one after the other.
        self.db
            .sql(&format!(
                "SELECT id FROM users WHERE id = $1 {}",
                self.db.lock("users")
            ))
            .bind(&caller.user.id)
            .fetch_optional::<(String,), _>(&mut *tx)
            .await?;
        let hour = Duration::from_secs(3600).as_micros() as i64;
        let (recent, oldest): (i64, Option<i64>) = self
            .db
            .sql(&format!(
                "SELECT COUNT(*), MIN(created_at) FROM shares
                 WHERE owner_id = $1 AND created_at > {{now}} - {hour}"
            ))
            .bind(&caller.user.id)
            .fetch_optional(&mut *tx)
            .await?
            .unwrap_or((0, None));
        if recent >= SHARES_PER_HOUR {
            let now = Timestamp::now().as_micros();
            let wait = (oldest.unwrap_or(now) + hour - now).max(1_000_000);
            return Err(Error::TooMany {
                what: "shares created in an hour",
                retry_after: Duration::from_micros(wait as u64),
            });
        }
        let live: i64 = self
            .db
            .sql(
                "SELECT COUNT(*) FROM shares WHERE owner_id = $1 AND revoked_at IS NULL
                 AND (expires_at IS NULL OR expires_at > {now})",
            )
            .bind(&caller.user.id)
            .fetch_scalar(&mut *tx)
            .await?;
        if live >= MAX_LIVE_SHARES {
            return Err(Error::Conflict(format!(
                "you have {MAX_LIVE_SHARES} live shares, the most one user may have: revoke some first"
            )));
        }
        let target_id = match &new.target {
            ShareTarget::Tracks(_) => None,
            ShareTarget::Album(id) => Some(id.to_string()),
            ShareTarget::Playlist(id) => Some(id.to_string()),
        };
        self.db
            .sql(
                "INSERT INTO shares (id, owner_id, kind, target_id, description, downloadable,
                 expires_at, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, {now}, {now})",
            )
            .bind(id.as_str())
            .bind(&caller.user.id)
            .bind(new.target.kind())
            .bind(target_id)
            .bind(description)
            .bind(i64::from(new.downloadable))
            .bind(new.expires_at.map(Timestamp::as_micros))
            .execute(&mut *tx)
            .await?;
        if let ShareTarget::Tracks(ids) = &new.target {
            let mut insert = self
                .db
                .sql("INSERT INTO share_tracks (share_id, position, track_id) VALUES ");
            insert.push_values(ids.iter().enumerate(), |row, (position, track)| {
                row.bind(id.as_str())
                    .bind(position as i64)
                    .bind(track.as_str());
            });
            insert.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        self.get(caller, &id).await
    }

    /// The caller's shares, newest first; with `everyone` (admins only), every user's.
    /// Revoked shares are not listed.
    pub async fn list(&self, caller: &Caller, everyone: bool, page: Page) -> Result<Paged<Share>> {
        if everyone {
            caller.require_admin()?;
        }
        let mut filter = self.db.sql(" WHERE s.revoked_at IS NULL");
        if !everyone {
            filter.push(" AND s.owner_id = ").push_bind(&caller.user.id);
        }
        let rows: Paged<ShareRow> = filter
            .fetch_page::<ShareRow, ShareRow>(
                self.db.pool(),
                "SELECT COUNT(*) FROM shares s",
                &select(self.db.kind().now()),
                "s.created_at DESC, s.id",
                page,
            )
            .await?;
        let mut items = Vec::with_capacity(rows.items.len());
        for row in rows.items {
            items.push(self.share_from_row(row).await?);
        }
        Ok(Paged {
            items,
            total: rows.total,
            page: rows.page,
        })
    }

    /// One share of the caller's (any, for an admin); another user's is not found.
    pub async fn get(&self, caller: &Caller, id: &ShareId) -> Result<Share> {
        let row = self.owned_row(caller, id).await?;
        self.share_from_row(row).await
    }

    /// Changes a share's description, expiry or download permission (its owner or an admin).
    pub async fn update(
        &self,
        caller: &Caller,
        id: &ShareId,
        changes: ShareChanges,
    ) -> Result<Share> {
        let description = match &changes.description {
            Some(description) => Some(validate_description(description.as_deref())?),
            None => None,
        };
        if let Some(Some(at)) = changes.expires_at {
            // A past expiry is allowed: it ends the share now.
            if at.as_micros() - Timestamp::now().as_micros() > MAX_EXPIRY.as_micros() as i64 {
                return Err(Error::invalid(
                    "expires_at",
                    "must be at most ten years ahead",
                ));
            }
        }
        let mut tx = self.db.begin().await?;
        let row = self.owned_row_in(&mut tx, caller, id).await?;
        self.db
            .sql(
                "UPDATE shares SET description = $2, expires_at = $3, downloadable = $4,
                 updated_at = {now} WHERE id = $1",
            )
            .bind(id.as_str())
            .bind(description.unwrap_or(row.description))
            .bind(match changes.expires_at {
                Some(at) => at.map(Timestamp::as_micros),
                None => row.expires_at,
            })
            .bind(
                changes
                    .downloadable
                    .map(i64::from)
                    .unwrap_or(row.downloadable),
            )
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.get(caller, id).await
    }

    /// Revokes a share (its owner or an admin): its link answers 410 from now on.
    pub async fn revoke(&self, caller: &Caller, id: &ShareId) -> Result<()> {
        let mut tx = self.db.begin().await?;
        self.owned_row_in(&mut tx, caller, id).await?;
        self.db
            .sql("UPDATE shares SET revoked_at = {now}, updated_at = {now} WHERE id = $1")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    // ---------------------------------------------------------------- what visitors reach

    /// The share as its page shows it, counting a visit. Expired or revoked: gone.
    pub async fn visit(&self, id: &ShareId) -> Result<Share> {
        let row = self.live_row(id).await?;
        self.db
            .sql(
                "UPDATE shares SET visit_count = visit_count + 1, last_visited_at = {now}
                 WHERE id = $1",
            )
            .bind(id.as_str())
            .execute(self.db.pool())
            .await?;
        let mut share = self.share_from_row(row).await?;
        share.visit_count += 1;
        Ok(share)
    }

    /// The share as a link preview shows it (title, description, cover), without counting a
    /// visit (chat apps fetch a link to show its card).
    pub async fn preview(&self, id: &ShareId) -> Result<Share> {
        let row = self.live_row(id).await?;
        self.share_from_row(row).await
    }

    /// The audio of one of the share's tracks. `from_start`: the read begins at the first
    /// byte, counted as a play.
    pub async fn audio(
        &self,
        id: &ShareId,
        track: &TrackId,
        from_start: bool,
    ) -> Result<TrackAudio> {
        self.member(id, track).await?;
        let audio = self.media.track_audio(track).await?;
        if from_start {
            self.db
                .sql("UPDATE shares SET play_count = play_count + 1 WHERE id = $1")
                .bind(id.as_str())
                .execute(self.db.pool())
                .await?;
        }
        Ok(audio)
    }

    /// The audio of one of the share's tracks to download: forbidden unless the owner allowed
    /// downloads.
    pub async fn download(&self, id: &ShareId, track: &TrackId) -> Result<(Track, TrackAudio)> {
        let row = self.member(id, track).await?;
        if row.downloadable == 0 {
            return Err(Error::Forbidden(
                "the owner of this share did not allow downloads".into(),
            ));
        }
        let audio = self.media.track_audio(track).await?;
        Ok((self.catalog.get_track(track).await?, audio))
    }

    /// The cover of one of the share's tracks.
    pub async fn track_cover(
        &self,
        id: &ShareId,
        track: &TrackId,
        size: Option<u32>,
    ) -> Result<Cover> {
        self.member(id, track).await?;
        self.media.track_cover(track, size).await
    }

    /// The share's own picture (for its page and link previews): the album's cover, the
    /// playlist's, or its first track's that has one.
    pub async fn cover(&self, id: &ShareId, size: Option<u32>) -> Result<Cover> {
        let row = self.live_row(id).await?;
        match row.kind.as_str() {
            "album" => {
                let album = AlbumId::parse(row.target_id.as_deref().unwrap_or_default())?;
                return self.media.album_cover(&album, size).await;
            }
            "playlist" => {
                let playlist = PlaylistId::parse(row.target_id.as_deref().unwrap_or_default())?;
                if let Ok(cover) = self.playlists.shared_cover(&playlist).await {
                    return Ok(cover);
                }
            }
            _ => {}
        }
        let tracks = self.contents(&row).await?;
        match tracks.iter().find(|track| track.has_cover) {
            Some(track) => self.media.track_cover(&track.id, size).await,
            None => Err(Error::not_found("cover", id)),
        }
    }

    /// The lyrics of one of the share's tracks.
    pub async fn lyrics(&self, id: &ShareId, track: &TrackId) -> Result<LyricsRecord> {
        self.member(id, track).await?;
        self.lyrics.for_track(track).await
    }

    // ---------------------------------------------------------------- rows and contents

    async fn row(&self, id: &ShareId) -> Result<ShareRow> {
        self.db
            .sql(&format!("{} WHERE s.id = $1", select(self.db.kind().now())))
            .bind(id.as_str())
            .fetch_optional(self.db.pool())
            .await?
            .ok_or_else(|| Error::not_found("share", id))
    }

    /// The share's row when visitors may use it: neither expired nor revoked, and its album
    /// or playlist still there.
    async fn live_row(&self, id: &ShareId) -> Result<ShareRow> {
        let row = self.row(id).await?;
        row.require_live()?;
        let target = row.target_id.as_deref().unwrap_or_default();
        match row.kind.as_str() {
            "album" => match self.catalog.get_album(&AlbumId::parse(target)?).await {
                Err(Error::NotFound { .. }) => {
                    return Err(Error::Gone(
                        "the shared album is no longer in the library".into(),
                    ))
                }
                other => {
                    other?;
                }
            },
            "playlist"
                if self
                    .playlists
                    .shared_name(&PlaylistId::parse(target)?)
                    .await?
                    .is_none() =>
            {
                return Err(Error::Gone("the shared playlist was deleted".into()));
            }
            _ => {}
        }
        Ok(row)
    }

    /// The live share, when `track` is one of its tracks (else not found).
    async fn member(&self, id: &ShareId, track: &TrackId) -> Result<ShareRow> {
        let row = self.live_row(id).await?;
        let holds = match row.kind.as_str() {
            "tracks" => {
                self.db
                    .sql("SELECT COUNT(*) FROM share_tracks WHERE share_id = $1 AND track_id = $2")
                    .bind(id.as_str())
                    .bind(track)
                    .fetch_scalar::<i64, _>(self.db.pool())
                    .await?
                    > 0
            }
            "album" => {
                let found = self.catalog.get_track(track).await?;
                found.album_id.as_ref().map(AlbumId::as_str) == row.target_id.as_deref()
            }
            _ => {
                let playlist = PlaylistId::parse(row.target_id.as_deref().unwrap_or_default())?;
                self.playlists.holds(&playlist, track).await?
            }
        };
        if holds {
            Ok(row)
        } else {
            Err(Error::not_found("track", track))
        }
    }

    async fn owned_row(&self, caller: &Caller, id: &ShareId) -> Result<ShareRow> {
        let row = self.row(id).await?;
        if row.revoked_at.is_some()
            || !(caller.is_admin() || row.owner_id == caller.user.id.as_str())
        {
            return Err(Error::not_found("share", id));
        }
        Ok(row)
    }

    async fn owned_row_in(
        &self,
        tx: &mut crate::db::Tx,
        caller: &Caller,
        id: &ShareId,
    ) -> Result<ShareRow> {
        let row: ShareRow = self
            .db
            .sql(&format!(
                "{} WHERE s.id = $1 {}",
                select(self.db.kind().now()),
                self.db.lock("s")
            ))
            .bind(id.as_str())
            .fetch_optional(&mut **tx)
            .await?
            .ok_or_else(|| Error::not_found("share", id))?;
        if row.revoked_at.is_some()
            || !(caller.is_admin() || row.owner_id == caller.user.id.as_str())
        {
            return Err(Error::not_found("share", id));
        }
        Ok(row)
    }

    /// The tracks a share holds now, in order (at most [`MAX_LISTED_TRACKS`]).
    async fn contents(&self, row: &ShareRow) -> Result<Vec<Track>> {
        let ids: Vec<TrackId> = match row.kind.as_str() {
            "tracks" => self
                .db
                .sql("SELECT track_id FROM share_tracks WHERE share_id = $1 ORDER BY position")
                .bind(row.id.as_str())
                .fetch_scalars::<String, _>(self.db.pool())
                .await?
                .into_iter()
                .map(TrackId::from_db)
                .collect(),
            "album" => {
                let album = AlbumId::parse(row.target_id.as_deref().unwrap_or_default())?;
                let mut tracks = Vec::new();
                let mut offset = 0;
                while tracks.len() < MAX_LISTED_TRACKS {
                    let page = Page::new(Some(Page::MAX_LIMIT), Some(offset))?;
                    let found = match self.catalog.album_tracks(&album, page).await {
                        Ok(found) => found,
                        Err(Error::NotFound { .. }) => {
                            return Err(Error::Gone(
                                "the shared album is no longer in the library".into(),
                            ))
                        }
                        Err(other) => return Err(other),
                    };
                    let done = found.items.len() < Page::MAX_LIMIT as usize;
                    tracks.extend(found.items);
                    offset += Page::MAX_LIMIT;
                    if done {
                        break;
                    }
                }
                tracks.truncate(MAX_LISTED_TRACKS);
                return Ok(tracks);
            }
            _ => {
                let playlist = PlaylistId::parse(row.target_id.as_deref().unwrap_or_default())?;
                match self.playlists.shared_tracks(&playlist).await? {
                    Some(ids) => ids,
                    None => return Err(Error::Gone("the shared playlist was deleted".into())),
                }
            }
        };
        let ids = &ids[..ids.len().min(MAX_LISTED_TRACKS)];
        self.catalog.tracks_by_ids(ids).await
    }

    async fn share_from_row(&self, row: ShareRow) -> Result<Share> {
        let tracks = match self.contents(&row).await {
            Ok(tracks) => tracks,
            // The album or playlist is gone: the owner still sees the share, empty.
            Err(Error::Gone(_)) => Vec::new(),
            Err(other) => return Err(other),
        };
        let target = match row.kind.as_str() {
            "album" => {
                ShareTarget::Album(AlbumId::from_db(row.target_id.clone().unwrap_or_default()))
            }
            "playlist" => ShareTarget::Playlist(PlaylistId::from_db(
                row.target_id.clone().unwrap_or_default(),
            )),
            _ => ShareTarget::Tracks(tracks.iter().map(|track| track.id.clone()).collect()),
        };
        let title = match &target {
            ShareTarget::Album(id) => match self.catalog.get_album(id).await {
                Ok(album) => album.title,
                Err(_) => "An album".to_string(),
            },
            ShareTarget::Playlist(id) => self
                .playlists
                .shared_name(id)
                .await?
                .unwrap_or_else(|| "A playlist".to_string()),
            ShareTarget::Tracks(_) => match tracks.as_slice() {
                [] => "Shared tracks".to_string(),
                [one] => one.title.clone(),
                [first, rest @ ..] => format!("{} and {} more", first.title, rest.len()),
            },
        };
        Ok(Share {
            expired: row.expired(),
            id: ShareId(row.id),
            owner_id: UserId::from_db(row.owner_id),
            owner_name: row.owner_name,
            target,
            title,
            description: row.description,
            downloadable: row.downloadable != 0,
            expires_at: row.expires_at.map(Timestamp::from_micros),
            visit_count: row.visit_count,
            play_count: row.play_count,
            last_visited_at: row.last_visited_at.map(Timestamp::from_micros),
            created_at: Timestamp::from_micros(row.created_at),
            updated_at: Timestamp::from_micros(row.updated_at),
            tracks,
        })
    }
}
