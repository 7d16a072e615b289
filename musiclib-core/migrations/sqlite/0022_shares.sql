-- Sharing links (issue 36): a user shares tracks, an album or a playlist with a link anyone
-- may open. The id is the link's secret (128 random bits). A revoked share stays, so its link
-- answers "gone" (410) rather than "not found" and its id is never reused.
CREATE TABLE shares (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- tracks | album | playlist
    kind            TEXT NOT NULL,
    -- the album or playlist shared (NULL for tracks: see share_tracks)
    target_id       TEXT,
    description     TEXT,
    downloadable    INTEGER NOT NULL DEFAULT 0,
    expires_at      INTEGER,
    revoked_at      INTEGER,
    visit_count     INTEGER NOT NULL DEFAULT 0,
    play_count      INTEGER NOT NULL DEFAULT 0,
    last_visited_at INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX shares_owner ON shares (owner_id, created_at);
CREATE INDEX shares_created ON shares (created_at);

CREATE TABLE share_tracks (
    share_id TEXT NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    track_id TEXT NOT NULL REFERENCES tracks (id) ON DELETE CASCADE,
    PRIMARY KEY (share_id, position)
);
CREATE INDEX share_tracks_track ON share_tracks (track_id);
