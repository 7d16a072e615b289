-- The legacy (Subsonic) interface.
-- legacy_key_digest: sha256 of the user's app password, so an OpenSubsonic apiKey (which is the
-- app password) finds its user with one indexed lookup. The password itself is only stored
-- encrypted (legacy_password_enc); a digest of a random 120-bit secret reveals nothing.
ALTER TABLE users ADD COLUMN legacy_key_digest TEXT;
CREATE UNIQUE INDEX users_legacy_key ON users (legacy_key_digest);
-- Starred lists (getStarred2, getAlbumList2 type=starred), newest first.
CREATE INDEX annotations_starred ON annotations (user_id, item_kind, starred_at);
-- Now playing entries are read newest first and pruned by age.
CREATE INDEX now_playing_updated ON now_playing (updated_at);
-- Play counts and last plays per track (getAlbumList2 frequent/recent, getTopSongs).
CREATE INDEX play_events_track ON play_events (user_id, track_id, played_at);
-- Genres (getGenres, byGenre lists) group tracks by genre.
CREATE INDEX tracks_genre ON tracks (genre);
