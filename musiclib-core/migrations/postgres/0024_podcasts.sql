-- Podcasts (issue 37): feeds users subscribe to, server-wide like the library (one copy of
-- an episode however many listen), their episodes as the feed last said, what was
-- downloaded into storage, and where each user stopped listening.
CREATE TABLE podcast_channels (
    id            TEXT PRIMARY KEY,
    -- the feed's address as subscribed (unique: subscribing again finds this channel)
    feed_url      TEXT NOT NULL UNIQUE,
    title         TEXT NOT NULL,
    description   TEXT,
    author        TEXT,
    site_url      TEXT,
    -- the feed's image, and the stored copy of it (storage namespace podcasts/)
    image_url     TEXT,
    image_uri     TEXT,
    -- the image_url the stored copy was fetched from
    image_source  TEXT,
    -- NULL: episodes are downloaded on request; N: the newest N are downloaded as they
    -- appear and older downloads are deleted
    keep_newest   BIGINT,
    -- the feed's validators, for a conditional refresh
    etag          TEXT,
    last_modified TEXT,
    refreshed_at  BIGINT,
    refresh_error TEXT,
    created_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);

CREATE TABLE podcast_episodes (
    id               TEXT PRIMARY KEY,
    channel_id       TEXT NOT NULL REFERENCES podcast_channels (id) ON DELETE CASCADE,
    -- the item's guid (its enclosure URL when it has none): how a refresh recognises it
    guid             TEXT NOT NULL,
    title            TEXT NOT NULL,
    description      TEXT,
    published_at     BIGINT,
    duration_ms      BIGINT,
    episode_number   BIGINT,
    season           BIGINT,
    enclosure_url    TEXT NOT NULL,
    enclosure_type   TEXT,
    enclosure_length BIGINT,
    image_url        TEXT,
    transcript_url   TEXT,
    transcript_type  TEXT,
    chapters_url     TEXT,
    -- new | downloading | downloaded | failed | deleted
    status           TEXT NOT NULL DEFAULT 'new',
    error            TEXT,
    job_id           TEXT,
    downloaded_bytes BIGINT NOT NULL DEFAULT 0,
    storage_uri      TEXT,
    size_bytes       BIGINT,
    mime_type        TEXT,
    content_sha256   TEXT,
    bitrate_kbps     BIGINT,
    downloaded_at    BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    UNIQUE (channel_id, guid)
);
CREATE INDEX podcast_episodes_channel ON podcast_episodes (channel_id, published_at);
CREATE INDEX podcast_episodes_published ON podcast_episodes (published_at);

CREATE TABLE podcast_positions (
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    episode_id  TEXT NOT NULL REFERENCES podcast_episodes (id) ON DELETE CASCADE,
    position_ms BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, episode_id)
);
CREATE INDEX podcast_positions_episode ON podcast_positions (episode_id);
