-- Bookmarks (the legacy interface's createBookmark / getBookmarks / deleteBookmark): one
-- position per user and track.
CREATE TABLE bookmarks (
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    track_id    TEXT NOT NULL REFERENCES tracks (id) ON DELETE CASCADE,
    position_ms INTEGER NOT NULL,
    comment     TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, track_id)
);
