-- musiclib schema, PostgreSQL dialect. Kept column-for-column equal to ../sqlite/0001_init.sql.
-- Times are BIGINT microseconds since the Unix epoch, taken from the database clock.
-- Ids are UUIDv7 strings. Flags are BIGINT 0/1 (portable through sqlx::Any).

CREATE TABLE users (
    id                  TEXT PRIMARY KEY,
    username            TEXT NOT NULL,
    username_key        TEXT NOT NULL UNIQUE,
    password_hash       TEXT NOT NULL,
    is_admin            BIGINT NOT NULL DEFAULT 0,
    legacy_password_enc TEXT,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);

CREATE TABLE artists (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL,
    name_key         TEXT NOT NULL UNIQUE,
    sort_name        TEXT,
    musicbrainz_id   TEXT,
    remote_source    TEXT,
    remote_source_id TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    UNIQUE (remote_source, remote_source_id)
);

CREATE TABLE albums (
    id                          TEXT PRIMARY KEY,
    title                       TEXT NOT NULL,
    title_key                   TEXT NOT NULL,
    album_key                   TEXT NOT NULL UNIQUE,
    artist_id                   TEXT REFERENCES artists (id) ON DELETE SET NULL,
    year                        BIGINT,
    genre                       TEXT,
    is_compilation              BIGINT NOT NULL DEFAULT 0,
    musicbrainz_album_id        TEXT,
    musicbrainz_releasegroup_id TEXT,
    cover_uri                   TEXT,
    cover_updated_at            BIGINT,
    remote_source               TEXT,
    remote_source_id            TEXT,
    created_at                  BIGINT NOT NULL,
    updated_at                  BIGINT NOT NULL,
    UNIQUE (remote_source, remote_source_id)
);
CREATE INDEX albums_artist ON albums (artist_id);

CREATE TABLE tracks (
    id                       TEXT PRIMARY KEY,
    title                    TEXT NOT NULL,
    artist_id                TEXT REFERENCES artists (id) ON DELETE SET NULL,
    album_id                 TEXT REFERENCES albums (id) ON DELETE SET NULL,
    artist_name              TEXT,
    album_title              TEXT,
    album_artist_name        TEXT,
    genre                    TEXT,
    year                     BIGINT,
    track_number             BIGINT,
    disc_number              BIGINT,
    duration_ms              BIGINT,
    format                   TEXT,
    mime_type                TEXT,
    bitrate_kbps             BIGINT,
    sample_rate              BIGINT,
    channels                 BIGINT,
    size_bytes               BIGINT,
    content_sha256           TEXT,
    storage_uri              TEXT NOT NULL DEFAULT '',
    source                   TEXT NOT NULL,
    source_id                TEXT NOT NULL,
    added_by                 TEXT REFERENCES users (id) ON DELETE SET NULL,
    source_mtime             BIGINT,
    availability             TEXT NOT NULL,
    metadata_status          TEXT NOT NULL,
    metadata_error           TEXT,
    enriched_at              BIGINT,
    musicbrainz_recording_id TEXT,
    acoustid_id              TEXT,
    has_embedded_cover       BIGINT NOT NULL DEFAULT 0,
    tags                     TEXT,
    search_text              TEXT NOT NULL DEFAULT '',
    created_at               BIGINT NOT NULL,
    updated_at               BIGINT NOT NULL,
    UNIQUE (source, source_id)
);
CREATE INDEX tracks_album ON tracks (album_id, disc_number, track_number);
CREATE INDEX tracks_artist ON tracks (artist_id);
CREATE INDEX tracks_created ON tracks (created_at);
CREATE INDEX tracks_updated ON tracks (updated_at);
CREATE INDEX tracks_sha ON tracks (content_sha256);
CREATE INDEX tracks_status ON tracks (metadata_status);

-- Tracks and playlists that clients must drop (GET /sync/changes "deleted").
CREATE TABLE tombstones (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entity_kind TEXT NOT NULL,
    entity_id   TEXT NOT NULL,
    user_id     TEXT,
    deleted_at  BIGINT NOT NULL
);
CREATE INDEX tombstones_deleted ON tombstones (deleted_at);

CREATE TABLE playlists (
    id          TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    description TEXT,
    is_public   BIGINT NOT NULL DEFAULT 0,
    version     BIGINT NOT NULL DEFAULT 0,
    cover_uri   TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX playlists_owner ON playlists (owner_id);
CREATE INDEX playlists_updated ON playlists (updated_at);

CREATE TABLE playlist_tracks (
    playlist_id TEXT NOT NULL REFERENCES playlists (id) ON DELETE CASCADE,
    position    BIGINT NOT NULL,
    track_id    TEXT NOT NULL REFERENCES tracks (id) ON DELETE CASCADE,
    PRIMARY KEY (playlist_id, position)
);
CREATE INDEX playlist_tracks_track ON playlist_tracks (track_id);

-- Append-only change record: one row per add or remove, numbered by the version it produced.
CREATE TABLE playlist_changes (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    playlist_id TEXT NOT NULL REFERENCES playlists (id) ON DELETE CASCADE,
    version     BIGINT NOT NULL,
    op          TEXT NOT NULL,
    payload     TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    UNIQUE (playlist_id, version)
);

CREATE TABLE like_events (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    track_id        TEXT NOT NULL,
    liked           BIGINT NOT NULL,
    client_event_id TEXT NOT NULL,
    event_time      BIGINT NOT NULL,
    synced_at       BIGINT NOT NULL,
    UNIQUE (user_id, client_event_id)
);
CREATE INDEX like_events_sync ON like_events (user_id, synced_at);
CREATE INDEX like_events_track ON like_events (user_id, track_id, event_time);

CREATE TABLE play_events (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    track_id        TEXT NOT NULL,
    played_at       BIGINT NOT NULL,
    seconds_played  DOUBLE PRECISION,
    client_event_id TEXT NOT NULL,
    synced_at       BIGINT NOT NULL,
    UNIQUE (user_id, client_event_id)
);
CREATE INDEX play_events_sync ON play_events (user_id, synced_at);
CREATE INDEX play_events_played ON play_events (user_id, played_at);

-- Subsonic annotations: stars on albums and artists, ratings on anything.
CREATE TABLE annotations (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    item_kind  TEXT NOT NULL,
    item_id    TEXT NOT NULL,
    starred_at BIGINT,
    rating     BIGINT,
    PRIMARY KEY (user_id, item_kind, item_id)
);

CREATE TABLE play_queues (
    user_id     TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    track_ids   TEXT NOT NULL,
    current_id  TEXT,
    position_ms BIGINT NOT NULL DEFAULT 0,
    changed_by  TEXT,
    updated_at  BIGINT NOT NULL
);

CREATE TABLE now_playing (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client     TEXT NOT NULL,
    track_id   TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, client)
);

CREATE TABLE lyrics (
    track_id     TEXT PRIMARY KEY REFERENCES tracks (id) ON DELETE CASCADE,
    status       TEXT NOT NULL,
    synced       TEXT,
    plain        TEXT,
    instrumental BIGINT NOT NULL DEFAULT 0,
    provider     TEXT,
    fetched_at   BIGINT NOT NULL
);

CREATE TABLE user_settings (
    user_id                  TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    settings                 TEXT NOT NULL,
    scrobble_session_key_enc TEXT,
    created_at               BIGINT NOT NULL,
    updated_at               BIGINT NOT NULL
);

-- Server-wide key/value state (not configuration: that comes from the environment).
CREATE TABLE server_state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE jobs (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    state        TEXT NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    max_attempts BIGINT NOT NULL,
    run_at       BIGINT NOT NULL,
    lease_until  BIGINT,
    worker_id    TEXT,
    progress     TEXT,
    result       TEXT,
    error        TEXT,
    dedup_key    TEXT,
    created_by   TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    finished_at  BIGINT
);
CREATE INDEX jobs_ready ON jobs (state, run_at);
-- One live job per dedup key (for example one transcode per track and quality).
CREATE UNIQUE INDEX jobs_live_dedup ON jobs (dedup_key) WHERE dedup_key IS NOT NULL AND state IN ('queued', 'running');

CREATE TABLE renditions (
    id             TEXT PRIMARY KEY,
    track_id       TEXT NOT NULL REFERENCES tracks (id) ON DELETE CASCADE,
    kind           TEXT NOT NULL,
    quality        TEXT NOT NULL,
    storage_uri    TEXT NOT NULL,
    size_bytes     BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    last_access_at BIGINT NOT NULL,
    UNIQUE (track_id, kind, quality)
);
CREATE INDEX renditions_lru ON renditions (last_access_at);

CREATE TABLE downloads (
    id         TEXT PRIMARY KEY,
    user_id    TEXT REFERENCES users (id) ON DELETE SET NULL,
    track_id   TEXT NOT NULL REFERENCES tracks (id) ON DELETE CASCADE,
    source     TEXT NOT NULL,
    source_id  TEXT NOT NULL,
    job_id     TEXT,
    state      TEXT NOT NULL,
    error      TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX downloads_track ON downloads (track_id);
