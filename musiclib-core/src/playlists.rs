//! Playlists (spec: Playlist resource, Playlists endpoints): ordered track lists with an
//! integer `version` that counts their adds and removes, an append-only change record, and an
//! optional cover.
//!
//! Offline devices edit playlists and push later: a write may carry the version its client
//! last saw, and a stale one is a conflict (409) instead of a silent overwrite. A user sees
//! their own playlists and the public ones of others, and changes only their own.
//!
//! Every write locks the playlist row first and updates it (taking the sync stamp) last, so
//! the order of locks is always "rows, then the sync clock" (ARCHITECTURE.md, "Sync").

mod rules;

pub use rules::{fields as rule_fields, FieldInfo, Rules};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;

use crate::auth::policy::PlaylistAccess;
use crate::auth::Caller;
use crate::cache::VersionedCache;
use crate::db::{known_ids, Db, Table, Tx};
use crate::domain::{Page, Paged};
use crate::ids::{uuid_number, uuid_text};
use crate::media::Cover;
use crate::storage::{layout, Storage};
use crate::{Error, PlaylistId, Result, Timestamp, TrackId, UserId};

/// Longest playlist name.
pub const MAX_NAME_CHARS: usize = 200;
/// Longest playlist description.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// Most tracks in one playlist.
pub const MAX_TRACKS: usize = 10_000;
/// Largest playlist cover image.
pub const MAX_COVER_BYTES: usize = 10 * 1024 * 1024;

/// A playlist as clients see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Playlist {
    /// Id.
    pub id: PlaylistId,
    /// Owner.
    pub owner_id: UserId,
    /// Owner's user name.
    pub owner_name: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Whether other users may read it.
    pub public: bool,
    /// Tracks in order.
    pub track_ids: Vec<TrackId>,
    /// Summed duration of the tracks, in ms.
    pub duration_ms: i64,
    /// Number of adds and removes so far.
    pub version: i64,
    /// Whether a cover image is stored.
    pub has_cover: bool,
    /// A smart playlist's rules (canonical JSON): its tracks follow them and cannot be
    /// edited; `None` for a list.
    pub rules: Option<serde_json::Value>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// Sync stamp of the last change.
    pub synced_at: i64,
}

/// A playlist to create.
#[derive(Debug, Clone, Default)]
pub struct NewPlaylist {
    /// Name (required, 1–200 characters).
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Readable by other users.
    pub public: bool,
    /// Initial tracks (one add when not empty).
    pub track_ids: Vec<TrackId>,
    /// Rules instead of tracks: a smart playlist.
    pub rules: Option<Rules>,
}

/// Changes to a playlist's name, description and visibility: fields left `None` stay.
#[derive(Debug, Clone, Default)]
pub struct PlaylistChanges {
    /// New name.
    pub name: Option<String>,
    /// New description (`Some(None)` clears it).
    pub description: Option<Option<String>>,
    /// New public flag.
    pub public: Option<bool>,
    /// The version the client last saw; another current version is a conflict.
    pub expected_version: Option<i64>,
    /// New rules: the playlist becomes (or stays) smart, its tracks following them.
    pub rules: Option<Rules>,
}

/// Several changes to one playlist made as one write (the legacy interface's
/// `createPlaylist` with `playlistId` and `updatePlaylist`): all of them, or none.
#[derive(Debug, Clone, Default)]
pub struct PlaylistEdit {
    /// Name, description and visibility (fields left `None` stay).
    pub changes: PlaylistChanges,
    /// Which tracks to remove first.
    pub remove: Removal,
    /// Tracks appended after the removal.
    pub add: Vec<TrackId>,
}

/// Which tracks a [`PlaylistEdit`] removes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Removal {
    /// None.
    #[default]
    Nothing,
    /// Those at these 0-based positions (before the edit).
    Positions(Vec<usize>),
    /// All of them (the list is replaced).
    All,
}

#[derive(sqlx::FromRow)]
struct PlaylistRow {
    id: String,
    owner_id: String,
    owner_name: String,
    name: String,
    description: Option<String>,
    is_public: i64,
    version: i64,
    cover_uri: Option<String>,
    rules: Option<String>,
    created_at: i64,
    updated_at: i64,
    synced_at: i64,
}

const PLAYLIST_SELECT: &str =
    "SELECT p.id, p.owner_id, u.username AS owner_name, p.name, p.description,
    p.is_public, p.version, p.cover_uri, p.rules, p.created_at, p.updated_at, p.synced_at
    FROM playlists p JOIN users u ON u.id = p.owner_id";

fn validate_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::invalid("name", "must not be empty"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(Error::invalid(
            "name",
            format!("must be at most {MAX_NAME_CHARS} characters"),
        ));
    }
    if crate::text::has_control(name) {
        return Err(Error::invalid(
            "name",
            "must not contain control characters",
        ));
    }
    Ok(name.to_string())
}

fn validate_description(description: Option<&str>) -> Result<()> {
    let Some(description) = description else {
        return Ok(());
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
    Ok(())
}

/// The refusal of a track edit on a smart playlist.
fn smart_refusal() -> Error {
    Error::Conflict("a smart playlist's tracks follow its rules: change the rules instead".into())
}

/// How long the tracks of rules that depend on the time (`inTheLast`) are kept when nothing
/// else changed.
const RELATIVE_RULES_TTL: Duration = Duration::from_secs(60);

fn check_version(expected: Option<i64>, current: i64) -> Result<()> {
    match expected {
        Some(expected) if expected != current => Err(Error::Conflict(format!(
            "the playlist is at version {current}, not {expected}: fetch it again and reapply the change"
        ))),
        _ => Ok(()),
    }
}

/// A playlist's tracks (as [`uuid_number`]s) and their lengths, in order.
type Contents = Arc<Vec<(u128, Option<i64>)>>;

/// Playlists longer than this are read afresh each time instead of kept.
const MAX_KEPT_TRACKS: usize = 1_000;

/// The playlists service.
#[derive(Clone, Debug)]
pub struct Playlists {
    db: Db,
    storage: Storage,
    /// Each playlist's tracks, versioned by its `version` and `updated_at` (every add and
    /// remove moves them) and the sync clock (every track change and deletion moves it), so a
    /// page of playlists reads their tracks again only after a change.
    contents: Arc<VersionedCache<String, (i64, i64, i64), Contents>>,
}

impl Playlists {
    pub(crate) fn new(db: Db, storage: Storage) -> Playlists {
        Playlists {
            db,
            storage,
            contents: Arc::new(VersionedCache::new(
                "playlist_tracks",
                Duration::from_secs(600),
                1_024,
            )),
        }
    }

    /// The caller's playlists and the public ones of others, by name, one page.
    pub async fn list(&self, caller: &Caller, page: Page) -> Result<Paged<Playlist>> {
        let total: i64 = self
            .db
            .sql("SELECT COUNT(*) FROM playlists WHERE owner_id = $1 OR is_public = 1")
            .bind(caller.user.id.as_str())
            .fetch_scalar(self.db.pool())
            .await?;
        let query = format!(
            "{PLAYLIST_SELECT} WHERE p.owner_id = $1 OR p.is_public = 1
             ORDER BY LOWER(p.name), p.id LIMIT $2 OFFSET $3"
        );
        let rows: Vec<PlaylistRow> = self
            .db
            .sql(&query)
            .bind(caller.user.id.as_str())
            .bind(page.limit())
            .bind(page.offset())
            .fetch_all(self.db.pool())
            .await?;
        let items = self.playlists_from_rows(rows).await?;
        Ok(Paged { items, total, page })
    }

    /// Creates a playlist of the caller's (its initial tracks are its first add).
    pub async fn create(&self, caller: &Caller, new: NewPlaylist) -> Result<Playlist> {
        let name = validate_name(&new.name)?;
        validate_description(new.description.as_deref())?;
        if new.rules.is_some() && !new.track_ids.is_empty() {
            return Err(Error::invalid(
                "track_ids",
                "a smart playlist's tracks follow its rules: give rules or track_ids, not both",
            ));
        }
        let id = PlaylistId::new();
        let mut tx = self.db.begin().await?;
        self.db.sql(
            "INSERT INTO playlists (id, owner_id, name, description, is_public, version, rules, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, 0, $6, {now}, {now})",
        )
            .bind(id.as_str())
            .bind(caller.user.id.as_str())
            .bind(&name)
            .bind(new.description.as_deref())
            .bind(i64::from(new.public))
            .bind(new.rules.as_ref().map(|rules| rules.to_json().to_string()))
            .execute(&mut *tx)
            .await?;
        if !new.track_ids.is_empty() {
            self.apply_change(
                &mut tx,
                &id,
                0,
                Vec::new(),
                Change::Add {
                    track_ids: new.track_ids,
                    position: None,
                },
            )
            .await?;
        }
        tx.commit().await?;
        self.get(caller, &id).await
    }

    /// A playlist: the caller's own or a public one; anything else is not found.
    pub async fn get(&self, caller: &Caller, id: &PlaylistId) -> Result<Playlist> {
        let row = self.visible_row(caller, id).await?;
        let mut playlists = self.playlists_from_rows(vec![row]).await?;
        Ok(playlists.remove(0))
    }

    /// Changes name, description or visibility (owner only). Not an add or remove, so the
    /// version stays.
    pub async fn update(
        &self,
        caller: &Caller,
        id: &PlaylistId,
        changes: PlaylistChanges,
    ) -> Result<Playlist> {
        let name = changes.name.as_deref().map(validate_name).transpose()?;
        validate_description(changes.description.clone().flatten().as_deref())?;
        let mut tx = self.db.begin().await?;
        let row = self.lock_owned(&mut tx, caller, id).await?;
        check_version(changes.expected_version, row.version)?;
        if let Some(rules) = &changes.rules {
            self.write_rules(&mut tx, id, rules).await?;
        }
        self.db.sql(
            "UPDATE playlists SET name = $2, description = $3, is_public = $4, updated_at = {now} WHERE id = $1",
        )
            .bind(id.as_str())
            .bind(name.unwrap_or(row.name))
            .bind(match changes.description {
                Some(description) => description,
                None => row.description,
            })
            .bind(changes.public.map(i64::from).unwrap_or(row.is_public))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.get(caller, id).await
    }

    /// Applies `edit` to a playlist (owner only) in one transaction: the name, description
    /// and visibility, then the removal (one version), then the appended tracks (one more).
    /// Every id and position is checked before anything is written, so an unknown track or a
    /// position past the end changes nothing.
    pub async fn edit(
        &self,
        caller: &Caller,
        id: &PlaylistId,
        edit: PlaylistEdit,
    ) -> Result<Playlist> {
        let name = edit
            .changes
            .name
            .as_deref()
            .map(validate_name)
            .transpose()?;
        validate_description(edit.changes.description.clone().flatten().as_deref())?;
        let mut tx = self.db.begin().await?;
        let row = self.lock_owned(&mut tx, caller, id).await?;
        check_version(edit.changes.expected_version, row.version)?;
        if row.rules.is_some() && (edit.remove != Removal::Nothing || !edit.add.is_empty()) {
            return Err(smart_refusal());
        }
        if let Some(rules) = &edit.changes.rules {
            self.write_rules(&mut tx, id, rules).await?;
        }
        let current = self.track_ids(&mut tx, id).await?;
        let mut version = row.version;
        let public = edit.changes.public;
        if name.is_some() || edit.changes.description.is_some() || public.is_some() {
            self.db.sql(
                "UPDATE playlists SET name = $2, description = $3, is_public = $4, updated_at = {now} WHERE id = $1",
            )
                .bind(id.as_str())
                .bind(name.unwrap_or(row.name))
                .bind(match edit.changes.description {
                    Some(description) => description,
                    None => row.description,
                })
                .bind(public.map(i64::from).unwrap_or(row.is_public))
                .execute(&mut *tx)
                .await?;
        }
        let positions = match edit.remove {
            Removal::Nothing => Vec::new(),
            Removal::Positions(positions) => positions,
            Removal::All => (0..current.len()).collect(),
        };
        let mut tracks = current;
        if !positions.is_empty() {
            let before = tracks.clone();
            self.apply_change(
                &mut tx,
                id,
                version,
                before,
                Change::Remove {
                    positions: positions.clone(),
                },
            )
            .await?;
            version += 1;
            tracks = self.track_ids(&mut tx, id).await?;
        }
        if !edit.add.is_empty() {
            self.apply_change(
                &mut tx,
                id,
                version,
                tracks,
                Change::Add {
                    track_ids: edit.add,
                    position: None,
                },
            )
            .await?;
        }
        tx.commit().await?;
        self.get(caller, id).await
    }

    /// Deletes a playlist (owner only): the row, then its cover; a tombstone tells the owner's other
    /// devices.
    pub async fn delete(&self, caller: &Caller, id: &PlaylistId) -> Result<()> {
        let mut tx = self.db.begin().await?;
        let row = self.lock_owned(&mut tx, caller, id).await?;
        self.db
            .sql("DELETE FROM playlists WHERE id = $1")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        self.db.sql(
            "INSERT INTO tombstones (entity_kind, entity_id, user_id, deleted_at) VALUES ('playlist', $1, $2, {now})",
        )
            .bind(id.as_str())
            .bind(&row.owner_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.storage.delete_unreferenced(row.cover_uri).await;
        Ok(())
    }

    /// Inserts `track_ids` at `position` (default: the end), owner only.
    /// One add: the version goes up by one.
    pub async fn add_tracks(
        &self,
        caller: &Caller,
        id: &PlaylistId,
        track_ids: Vec<TrackId>,
        position: Option<usize>,
        expected_version: Option<i64>,
    ) -> Result<Playlist> {
        if track_ids.is_empty() {
            return Err(Error::invalid("track_ids", "must name at least one track"));
        }
        self.change_tracks(
            caller,
            id,
            expected_version,
            Change::Add {
                track_ids,
                position,
            },
        )
        .await
    }

    /// Removes the tracks at `positions` (0-based, as in
    /// `track_ids`). One remove: the version goes up by one.
    pub async fn remove_tracks(
        &self,
        caller: &Caller,
        id: &PlaylistId,
        positions: Vec<usize>,
        expected_version: Option<i64>,
    ) -> Result<Playlist> {
        if positions.is_empty() {
            return Err(Error::invalid(
                "positions",
                "must name at least one position",
            ));
        }
        self.change_tracks(caller, id, expected_version, Change::Remove { positions })
            .await
    }

    /// Whether `caller` may change playlist `id` (owner only): not found when they cannot see
    /// it, forbidden when it is someone else's public one. Adapters ask before they read a
    /// request's body (a cover image), so a refused caller costs no upload.
    pub async fn may_change(&self, caller: &Caller, id: &PlaylistId) -> Result<()> {
        let row = self.visible_row(caller, id).await?;
        match row.access(caller) {
            PlaylistAccess::Owner => Ok(()),
            _ => Err(Error::Forbidden(
                "only its owner may change a playlist".into(),
            )),
        }
    }

    /// Stores a cover image (JPEG, PNG, WebP or GIF, sniffed from the bytes, at most
    /// [`MAX_COVER_BYTES`] and of a cover's dimensions) and replaces the previous one.
    pub async fn set_cover(&self, caller: &Caller, id: &PlaylistId, bytes: Bytes) -> Result<()> {
        if bytes.len() > MAX_COVER_BYTES {
            return Err(Error::TooLarge {
                limit: MAX_COVER_BYTES as u64,
            });
        }
        // Owner first (404 or 403 before the image is even looked at), then the blob, then
        // the row.
        self.may_change(caller, id).await?;
        let image =
            crate::picture::Image::checked(bytes).map_err(|why| Error::invalid("image", why))?;
        let extension = image.kind.extension();
        let bytes = image.bytes;
        let key = layout::playlist_cover(id, extension);
        let size = bytes.len() as i64;
        self.storage.blobs().put_bytes(&key, bytes).await?;
        let stored = async {
            let mut tx = self.db.begin().await?;
            let row = self.lock_owned(&mut tx, caller, id).await?;
            self.db
                .sql(
                    "UPDATE playlists SET cover_uri = $2, cover_size_bytes = $3, updated_at = {now}
                     WHERE id = $1",
                )
                .bind(id.as_str())
                .bind(&key)
                .bind(size)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok::<_, Error>(row.cover_uri)
        }
        .await;
        match stored {
            Ok(previous) => {
                self.storage.delete_unreferenced(previous).await;
                Ok(())
            }
            Err(error) => {
                self.storage.delete_unreferenced([key]).await;
                Err(error)
            }
        }
    }

    /// The playlist's cover; not found when none is stored. Each stored
    /// image has its own key, which is its validator.
    pub async fn cover(&self, caller: &Caller, id: &PlaylistId) -> Result<Cover> {
        let row = self.visible_row(caller, id).await?;
        self.cover_of(row).await
    }

    async fn cover_of(&self, row: PlaylistRow) -> Result<Cover> {
        let id = &row.id;
        let key = row
            .cover_uri
            .ok_or_else(|| Error::not_found("cover of playlist", id))?;
        let mime_type = match key.rsplit('.').next() {
            Some("jpg") => "image/jpeg",
            Some("png") => "image/png",
            Some("webp") => "image/webp",
            _ => "image/gif",
        };
        let name = key.rsplit('/').next().unwrap_or(&key);
        Ok(Cover {
            bytes: self.storage.blobs().get_bytes(&key).await?,
            mime_type,
            etag: format!("\"{}\"", name.split('.').next().unwrap_or(name)),
            last_modified: Timestamp::from_micros(row.updated_at),
        })
    }

    // What a share of a playlist reaches (`shares.rs`): whoever owns it and whether it is
    // public, the share's owner having chosen to show it.

    /// The cover of a shared playlist.
    pub(crate) async fn shared_cover(&self, id: &PlaylistId) -> Result<Cover> {
        let row: PlaylistRow = self
            .db
            .sql(&format!("{PLAYLIST_SELECT} WHERE p.id = $1"))
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?
            .ok_or_else(|| Error::not_found("playlist", id))?;
        self.cover_of(row).await
    }

    /// The name of a shared playlist; `None` once it is deleted.
    pub(crate) async fn shared_name(&self, id: &PlaylistId) -> Result<Option<String>> {
        self.db
            .sql("SELECT name FROM playlists WHERE id = $1")
            .bind(id)
            .fetch_scalar_optional(self.db.pool())
            .await
    }

    /// The tracks of a shared playlist in order; `None` once it is deleted.
    pub(crate) async fn shared_tracks(&self, id: &PlaylistId) -> Result<Option<Vec<TrackId>>> {
        if self.shared_name(id).await?.is_none() {
            return Ok(None);
        }
        let ids: Vec<String> = self
            .db
            .sql("SELECT track_id FROM playlist_tracks WHERE playlist_id = $1 ORDER BY position")
            .bind(id)
            .fetch_scalars(self.db.pool())
            .await?;
        Ok(Some(ids.into_iter().map(TrackId::from_db).collect()))
    }

    /// Whether a shared playlist holds `track`.
    pub(crate) async fn holds(&self, id: &PlaylistId, track: &TrackId) -> Result<bool> {
        let count: i64 = self
            .db
            .sql("SELECT COUNT(*) FROM playlist_tracks WHERE playlist_id = $1 AND track_id = $2")
            .bind(id)
            .bind(track)
            .fetch_scalar(self.db.pool())
            .await?;
        Ok(count > 0)
    }

    /// The playlists a sync client must refresh: the caller's own, changed in `(since, until]`.
    pub(crate) async fn changed(
        &self,
        owner: &UserId,
        since: i64,
        until: i64,
        limit: i64,
    ) -> Result<Vec<Playlist>> {
        let query = format!(
            "{PLAYLIST_SELECT} WHERE p.owner_id = $1 AND p.synced_at > $2 AND p.synced_at <= $3
             ORDER BY p.synced_at LIMIT $4"
        );
        let rows: Vec<PlaylistRow> = self
            .db
            .sql(&query)
            .bind(owner.as_str())
            .bind(since)
            .bind(until)
            .bind(limit)
            .fetch_all(self.db.pool())
            .await?;
        self.playlists_from_rows(rows).await
    }

    /// The playlist row when the caller may read it (their own, or public); else not found.
    async fn visible_row(&self, caller: &Caller, id: &PlaylistId) -> Result<PlaylistRow> {
        self.db
            .sql(&format!("{PLAYLIST_SELECT} WHERE p.id = $1"))
            .bind(id)
            .fetch_optional::<PlaylistRow, _>(self.db.pool())
            .await?
            .filter(|row| row.access(caller) != PlaylistAccess::None)
            .ok_or_else(|| Error::not_found("playlist", id))
    }

    /// Playlists from their rows, with every track list read in one query (smart ones
    /// refreshed first when the library changed since their last evaluation).
    async fn playlists_from_rows(&self, rows: Vec<PlaylistRow>) -> Result<Vec<Playlist>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.refresh_stale(rows).await?;
        let clock = self.db.sync_clock().await?;
        let version = |row: &PlaylistRow| (row.version, row.updated_at, clock);
        let mut tracks: HashMap<String, Vec<(String, Option<i64>)>> = HashMap::new();
        let mut unknown = Vec::new();
        for row in &rows {
            match self.contents.get(&row.id, &version(row)) {
                Some(kept) => {
                    let listed = kept.iter().map(|(id, ms)| (uuid_text(*id), *ms)).collect();
                    tracks.insert(row.id.clone(), listed);
                }
                None => unknown.push(row),
            }
        }
        if !unknown.is_empty() {
            let mut select = self.db.sql(&format!(
                "SELECT pt.playlist_id, pt.track_id, t.duration_ms FROM playlist_tracks pt
                 JOIN {} ON t.id = pt.track_id WHERE pt.playlist_id IN (",
                self.db.kind().tracks_by_id_covered()
            ));
            select
                .push_list(unknown.iter().map(|row| row.id.as_str()))
                .push(") ORDER BY pt.playlist_id, pt.position");
            let listed: Vec<(String, String, Option<i64>)> =
                select.fetch_all(self.db.pool()).await?;
            for (playlist, track, duration) in listed {
                tracks.entry(playlist).or_default().push((track, duration));
            }
            for row in unknown {
                let listed = tracks.get(&row.id).map(Vec::as_slice).unwrap_or_default();
                if listed.len() > MAX_KEPT_TRACKS {
                    continue;
                }
                let kept: Option<Vec<(u128, Option<i64>)>> = listed
                    .iter()
                    .map(|(id, ms)| Some((uuid_number(id)?, *ms)))
                    .collect();
                if let Some(kept) = kept {
                    self.contents
                        .insert(row.id.clone(), version(row), Arc::new(kept));
                }
            }
        }
        Ok(rows
            .into_iter()
            .map(|row| {
                let tracks = tracks.remove(&row.id).unwrap_or_default();
                Playlist {
                    id: PlaylistId::from_db(row.id),
                    owner_id: UserId::from_db(row.owner_id),
                    owner_name: row.owner_name,
                    name: row.name,
                    description: row.description,
                    public: row.is_public != 0,
                    duration_ms: tracks.iter().filter_map(|(_, ms)| *ms).sum(),
                    track_ids: tracks
                        .into_iter()
                        .map(|(id, _)| TrackId::from_db(id))
                        .collect(),
                    version: row.version,
                    has_cover: row.cover_uri.is_some(),
                    rules: row
                        .rules
                        .as_deref()
                        .and_then(|text| serde_json::from_str(text).ok()),
                    created_at: Timestamp::from_micros(row.created_at),
                    updated_at: Timestamp::from_micros(row.updated_at),
                    synced_at: row.synced_at,
                }
            })
            .collect())
    }

    /// One add or remove by the owner, checked against the version the client last saw.
    async fn change_tracks(
        &self,
        caller: &Caller,
        id: &PlaylistId,
        expected_version: Option<i64>,
        change: Change,
    ) -> Result<Playlist> {
        let mut tx = self.db.begin().await?;
        let row = self.lock_owned(&mut tx, caller, id).await?;
        if row.rules.is_some() {
            return Err(smart_refusal());
        }
        check_version(expected_version, row.version)?;
        let current = self.track_ids(&mut tx, id).await?;
        self.apply_change(&mut tx, id, row.version, current, change)
            .await?;
        tx.commit().await?;
        self.get(caller, id).await
    }

    /// Writes one add or remove: the new track list, a change record numbered by the new
    /// version, then the playlist row (its version, and the sync stamp, last).
    async fn apply_change(
        &self,
        tx: &mut Tx,
        id: &PlaylistId,
        version: i64,
        mut tracks: Vec<TrackId>,
        change: Change,
    ) -> Result<()> {
        let (op, payload) = match change {
            Change::Add {
                track_ids,
                position,
            } => {
                let at = position.unwrap_or(tracks.len());
                if at > tracks.len() {
                    return Err(Error::invalid(
                        "position",
                        format!("must be at most {} (the playlist's length)", tracks.len()),
                    ));
                }
                if tracks.len() + track_ids.len() > MAX_TRACKS {
                    return Err(Error::invalid(
                        "track_ids",
                        format!("a playlist holds at most {MAX_TRACKS} tracks"),
                    ));
                }
                let wanted: Vec<&str> = track_ids.iter().map(TrackId::as_str).collect();
                let known = known_ids(tx, self.db.kind(), Table::Tracks, &wanted).await?;
                let mut missing: Vec<&str> = Vec::new();
                for id in &wanted {
                    if !known.contains(*id) && !missing.contains(id) {
                        missing.push(id);
                    }
                }
                if !missing.is_empty() {
                    return Err(Error::invalid(
                        "track_ids",
                        format!("no such tracks: {}", missing.join(", ")),
                    ));
                }
                let payload = json!({ "position": at, "track_ids": track_ids.iter().map(TrackId::as_str).collect::<Vec<_>>() });
                tracks.splice(at..at, track_ids);
                ("add", payload)
            }
            Change::Remove { mut positions } => {
                positions.sort_unstable();
                positions.dedup();
                if let Some(&last) = positions.last() {
                    if last >= tracks.len() {
                        return Err(Error::invalid(
                            "positions",
                            format!(
                                "position {last} is past the end of the {} tracks",
                                tracks.len()
                            ),
                        ));
                    }
                }
                let removed: Vec<String> =
                    positions.iter().map(|&at| tracks[at].to_string()).collect();
                for &at in positions.iter().rev() {
                    tracks.remove(at);
                }
                (
                    "remove",
                    json!({ "positions": positions, "track_ids": removed }),
                )
            }
        };
        self.write_tracks(tx, id, &tracks).await?;
        self.db.sql(
            "INSERT INTO playlist_changes (playlist_id, version, op, payload, created_at) VALUES ($1, $2, $3, $4, {now})",
        )
            .bind(id.as_str())
            .bind(version + 1)
            .bind(op)
            .bind(payload.to_string())
            .execute(&mut **tx)
            .await?;
        self.db
            .sql("UPDATE playlists SET version = version + 1, updated_at = {now} WHERE id = $1")
            .bind(id.as_str())
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// The cover keys of `owner`'s playlists, which go with the owner's account (their rows
    /// cascade with it). Runs inside the account's deletion.
    pub(crate) async fn cover_keys_of_owner(
        &self,
        tx: &mut Tx,
        owner: &UserId,
    ) -> Result<Vec<String>> {
        self.db
            .sql("SELECT cover_uri FROM playlists WHERE owner_id = $1 AND cover_uri IS NOT NULL")
            .bind(owner)
            .fetch_scalars(&mut **tx)
            .await
    }

    /// Removes a deleted track from every playlist, each removal recorded as a remove (the
    /// version keeps counting adds and removes). Runs inside the track's deletion.
    pub(crate) async fn remove_track_everywhere(&self, tx: &mut Tx, track: &TrackId) -> Result<()> {
        let playlists: Vec<(String, i64)> = self.db.sql("SELECT DISTINCT p.id, p.version FROM playlists p JOIN playlist_tracks pt ON pt.playlist_id = p.id
             WHERE pt.track_id = $1 ORDER BY p.id")
        .bind(track.as_str())
        .fetch_all(&mut **tx)
        .await?;
        for (playlist, version) in playlists {
            let playlist = PlaylistId::from_db(playlist);
            let tracks = self.track_ids(tx, &playlist).await?;
            let positions = tracks
                .iter()
                .enumerate()
                .filter(|(_, id)| *id == track)
                .map(|(at, _)| at)
                .collect();
            self.apply_change(tx, &playlist, version, tracks, Change::Remove { positions })
                .await?;
        }
        Ok(())
    }
}

enum Change {
    Add {
        track_ids: Vec<TrackId>,
        position: Option<usize>,
    },
    Remove {
        positions: Vec<usize>,
    },
}

impl PlaylistRow {
    fn access(&self, caller: &Caller) -> PlaylistAccess {
        caller.playlist_access(&self.owner_id, self.is_public != 0)
    }
}

// ---------------------------------------------------------------- smart playlists

impl Playlists {
    /// The tracks rules would hold for `owner` now (the editor's live count): their number
    /// and the first `sample` of them.
    pub async fn preview_rules(
        &self,
        caller: &Caller,
        rules: &Rules,
        sample: usize,
    ) -> Result<(usize, Vec<TrackId>)> {
        let ids = self.evaluate(rules, &caller.user.id).await?;
        let count = ids.len();
        Ok((count, ids.into_iter().take(sample).collect()))
    }

    /// Refreshes the caller's smart playlists that are stale, so that a sync pull that
    /// follows sees their new tracks as a change (`/sync/changes`).
    pub(crate) async fn refresh_smart_of(&self, owner: &UserId) -> Result<()> {
        let rows: Vec<PlaylistRow> = self
            .db
            .sql(&format!(
                "{PLAYLIST_SELECT} WHERE p.owner_id = $1 AND p.rules IS NOT NULL"
            ))
            .bind(owner)
            .fetch_all(self.db.pool())
            .await?;
        if !rows.is_empty() {
            self.refresh_stale(rows).await?;
        }
        Ok(())
    }

    async fn write_rules(&self, tx: &mut Tx, id: &PlaylistId, rules: &Rules) -> Result<()> {
        self.db
            .sql("UPDATE playlists SET rules = $2 WHERE id = $1")
            .bind(id)
            .bind(rules.to_json().to_string())
            .execute(&mut **tx)
            .await?;
        // Evaluated again at the next read.
        self.db
            .sql("DELETE FROM smart_playlist_state WHERE playlist_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// The ids of the tracks `rules` select for `owner`, in order.
    async fn evaluate(&self, rules: &Rules, owner: &UserId) -> Result<Vec<TrackId>> {
        let ids: Vec<String> = rules
            .select(self.db.kind(), owner.as_str(), Timestamp::now())
            .fetch_scalars(self.db.pool())
            .await?;
        Ok(ids.into_iter().map(TrackId::from_db).collect())
    }

    /// The stamp of what `rules` read for `owner`: the latest sync stamp of the tracks' rows,
    /// and of the owner's plays or likes when the rules read them (the sync clock itself when
    /// they read something without a stamp: ratings, the lyrics cache). A result evaluated at
    /// a stamp stays right while the stamp stays; another user's play, or a write to a
    /// playlist, moves none of them.
    async fn input_stamp(&self, rules: &Rules, owner: &str) -> Result<i64> {
        let inputs = rules.inputs();
        if inputs.anything {
            return self.db.sync_clock().await;
        }
        let mut stamp: i64 = self
            .db
            .sql("SELECT COALESCE(MAX(synced_at), 0) FROM tracks")
            .fetch_scalar(self.db.pool())
            .await?;
        // Deleted tracks leave the playlist through `remove_track_everywhere`.
        for (wanted, table) in [(inputs.plays, "play_events"), (inputs.likes, "like_events")] {
            if wanted {
                let latest: i64 = self
                    .db
                    .sql(&format!(
                        "SELECT COALESCE(MAX(synced_at), 0) FROM {table} WHERE user_id = $1"
                    ))
                    .bind(owner)
                    .fetch_scalar(self.db.pool())
                    .await?;
                stamp = stamp.max(latest);
            }
        }
        Ok(stamp)
    }

    /// `rows` with their smart playlists evaluated again where what their rules read changed
    /// since their last evaluation ([`Playlists::input_stamp`]), or, for rules relative to now,
    /// a minute has passed.
    async fn refresh_stale(&self, rows: Vec<PlaylistRow>) -> Result<Vec<PlaylistRow>> {
        let smart: Vec<&str> = rows
            .iter()
            .filter(|row| row.rules.is_some())
            .map(|row| row.id.as_str())
            .collect();
        if smart.is_empty() {
            return Ok(rows);
        }
        let mut select = self.db.sql(
            "SELECT playlist_id, evaluated_clock, evaluated_at FROM smart_playlist_state
             WHERE playlist_id IN (",
        );
        select.push_list(smart.iter().copied()).push(")");
        let states: HashMap<String, (i64, i64)> = select
            .fetch_all::<(String, i64, i64), _>(self.db.pool())
            .await?
            .into_iter()
            .map(|(id, clock, at)| (id, (clock, at)))
            .collect();
        let now = Timestamp::now().as_micros();
        let mut refreshed = Vec::new();
        for row in rows.iter().filter(|row| row.rules.is_some()) {
            let rules = self.rules_of(row)?;
            let stamp = self.input_stamp(&rules, &row.owner_id).await?;
            let stale = match states.get(&row.id) {
                None => true,
                Some(&(evaluated, at)) => {
                    evaluated != stamp
                        || (now - at > RELATIVE_RULES_TTL.as_micros() as i64
                            && rules.relative_to_now())
                }
            };
            if stale {
                self.refresh(row, &rules, stamp).await?;
                refreshed.push(row.id.clone());
            }
        }
        if refreshed.is_empty() {
            return Ok(rows);
        }
        let mut select = self.db.sql(&format!("{PLAYLIST_SELECT} WHERE p.id IN ("));
        select
            .push_list(refreshed.iter().map(String::as_str))
            .push(")");
        let mut fresh: HashMap<String, PlaylistRow> = select
            .fetch_all::<PlaylistRow, _>(self.db.pool())
            .await?
            .into_iter()
            .map(|row| (row.id.clone(), row))
            .collect();
        Ok(rows
            .into_iter()
            .filter_map(|row| match fresh.remove(&row.id) {
                Some(fresh) => Some(fresh),
                // Refreshed, then deleted meanwhile: gone from the page.
                None if refreshed.contains(&row.id) => None,
                None => Some(row),
            })
            .collect())
    }

    fn rules_of(&self, row: &PlaylistRow) -> Result<Rules> {
        let text = row.rules.as_deref().unwrap_or("{}");
        let value: serde_json::Value = serde_json::from_str(text).map_err(|error| {
            Error::internal(format!("stored rules of playlist {}: {error}", row.id))
        })?;
        Rules::parse(&value).map_err(|error| {
            Error::internal(format!("stored rules of playlist {}: {error}", row.id))
        })
    }

    /// Evaluates a smart playlist's rules (outside any transaction; `stamp` was read before,
    /// so a change made meanwhile moves the stamp and is seen at the next read), then writes
    /// its tracks when they changed: one change, as a list's edit is, so offline clients
    /// pull them.
    async fn refresh(&self, row: &PlaylistRow, rules: &Rules, stamp: i64) -> Result<()> {
        let owner = UserId::from_db(row.owner_id.clone());
        let ids = self.evaluate(rules, &owner).await?;
        let id = PlaylistId::from_db(row.id.clone());
        let mut tx = self.db.begin().await?;
        let current: Option<(Option<String>, i64)> = self
            .db
            .sql(&format!(
                "SELECT rules, version FROM playlists p WHERE p.id = $1{}",
                self.db.lock("p")
            ))
            .bind(&id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some((rules_now, version)) = current else {
            return Ok(()); // Deleted meanwhile.
        };
        if rules_now != row.rules {
            return Ok(()); // New rules meanwhile: the next read evaluates those.
        }
        let before = self.track_ids(&mut tx, &id).await?;
        if before != ids {
            self.write_tracks(&mut tx, &id, &ids).await?;
            self.db.sql(
                "INSERT INTO playlist_changes (playlist_id, version, op, payload, created_at) VALUES ($1, $2, 'refresh', $3, {now})",
            )
                .bind(id.as_str())
                .bind(version + 1)
                .bind(json!({ "track_count": ids.len() }).to_string())
                .execute(&mut *tx)
                .await?;
            self.db
                .sql("UPDATE playlists SET version = version + 1, updated_at = {now} WHERE id = $1")
                .bind(id.as_str())
                .execute(&mut *tx)
                .await?;
        }
        self.db
            .sql(&format!(
                "INSERT INTO smart_playlist_state (playlist_id, evaluated_clock, evaluated_at)
                 VALUES ($1, $2, {{now}}) {}",
                self.db
                    .kind()
                    .upsert("playlist_id", &["evaluated_clock", "evaluated_at"])
            ))
            .bind(id.as_str())
            .bind(stamp)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

impl Playlists {
    /// The playlist's row, locked for the rest of the transaction, when the caller owns it. A
    /// playlist the caller cannot see is not found; a public one of someone else is forbidden.
    async fn lock_owned(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        id: &PlaylistId,
    ) -> Result<PlaylistRow> {
        let row: PlaylistRow = self
            .db
            .sql(&format!(
                "{PLAYLIST_SELECT} WHERE p.id = $1{}",
                self.db.lock("p")
            ))
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?
            .ok_or_else(|| Error::not_found("playlist", id))?;
        match row.access(caller) {
            PlaylistAccess::Owner => Ok(row),
            PlaylistAccess::Reader => Err(Error::Forbidden(
                "only its owner may change a playlist".into(),
            )),
            PlaylistAccess::None => Err(Error::not_found("playlist", id)),
        }
    }

    async fn track_ids(&self, tx: &mut Tx, id: &PlaylistId) -> Result<Vec<TrackId>> {
        let ids: Vec<String> = self
            .db
            .sql("SELECT track_id FROM playlist_tracks WHERE playlist_id = $1 ORDER BY position")
            .bind(id)
            .fetch_scalars(&mut **tx)
            .await?;
        Ok(ids.into_iter().map(TrackId::from_db).collect())
    }

    /// Rewrites the playlist's rows in order (positions 0..n, contiguous).
    async fn write_tracks(&self, tx: &mut Tx, id: &PlaylistId, tracks: &[TrackId]) -> Result<()> {
        self.db
            .sql("DELETE FROM playlist_tracks WHERE playlist_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        for (index, chunk) in tracks.chunks(300).enumerate() {
            let mut insert = self
                .db
                .sql("INSERT INTO playlist_tracks (playlist_id, position, track_id) VALUES ");
            insert.push_values(chunk.iter().enumerate(), |row, (offset, track)| {
                row.bind(id).bind((index * 300 + offset) as i64).bind(track);
            });
            insert.execute(&mut **tx).await?;
        }
        Ok(())
    }
}
