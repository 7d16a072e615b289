-- Thumbnails of album covers are a cache bounded by THUMBNAIL_CACHE_MAX_BYTES: each one has
-- a row (written after its blob), and the least recently served go first when it is full.
CREATE TABLE thumbnails (
    storage_uri    TEXT PRIMARY KEY,
    album_id       TEXT NOT NULL REFERENCES albums (id) ON DELETE CASCADE,
    size_bytes     BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    last_access_at BIGINT NOT NULL
);
CREATE INDEX thumbnails_lru ON thumbnails (last_access_at);
CREATE INDEX thumbnails_album ON thumbnails (album_id);
