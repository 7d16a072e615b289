-- Smart playlists (issue 36): a playlist defined by rules (Navidrome's .nsp form, checked and
-- stored as canonical JSON) instead of a list. Its tracks are kept in playlist_tracks like any
-- playlist's, refreshed when the library or its owner's plays, likes and ratings have changed
-- since the last evaluation, so every reader of
-- playlists (both interfaces, /sync/changes, shares) reads it as an ordinary playlist.
-- evaluated_clock is the stamp of what the rules read (the tracks' latest sync stamp, and the
-- owner's plays' or likes' when the rules read them; the sync clock for ratings and lyrics).
ALTER TABLE playlists ADD COLUMN rules TEXT;

-- Not stamped by the sync clock: writing it must not count as a change to re-evaluate.
CREATE TABLE smart_playlist_state (
    playlist_id     TEXT PRIMARY KEY REFERENCES playlists (id) ON DELETE CASCADE,
    evaluated_clock BIGINT NOT NULL,
    evaluated_at    BIGINT NOT NULL
);
