-- Plays waiting to be forwarded to a scrobbling service: one row per play and service, written
-- in the transaction that stores the play (only for a user who has the service configured and
-- scrobbling on, and only for a play that counts by the service's rule), deleted once the
-- service has taken it. The primary key makes a play forwarded once, however often its event
-- is pushed. A deleted track's plays go with it.
CREATE TABLE scrobble_queue (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    service    TEXT NOT NULL,
    play_id    TEXT NOT NULL,
    track_id   TEXT NOT NULL REFERENCES tracks (id) ON DELETE CASCADE,
    played_at  INTEGER NOT NULL,
    queued_at  INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    PRIMARY KEY (user_id, service, play_id)
);
CREATE INDEX scrobble_queue_order ON scrobble_queue (user_id, service, played_at);
