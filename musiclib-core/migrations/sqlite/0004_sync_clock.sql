-- The sync clock (ARCHITECTURE.md, "Sync"): one row whose value every change a sync client
-- pulls is stamped from, inside the writing transaction. A stamp is the database clock in µs,
-- bumped past the previous stamp, so stamps are unique, increase in commit order (SQLite has
-- one writer at a time; the row lock does the same on PostgreSQL), and a pull's cursor (the
-- clock's committed value) never passes a change that has not committed.
CREATE TABLE sync_clock (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    last_stamp INTEGER NOT NULL
);
INSERT INTO sync_clock (id, last_stamp) VALUES (1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));

ALTER TABLE tracks ADD COLUMN synced_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE playlists ADD COLUMN synced_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tombstones ADD COLUMN synced_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tracks_synced ON tracks (synced_at);
CREATE INDEX playlists_synced ON playlists (owner_id, synced_at);
CREATE INDEX tombstones_synced ON tombstones (synced_at);

-- Existing rows get stamps in their current order.
UPDATE tracks SET synced_at = updated_at;
UPDATE playlists SET synced_at = updated_at;
UPDATE tombstones SET synced_at = deleted_at;

CREATE TRIGGER like_events_stamp AFTER INSERT ON like_events BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
    UPDATE like_events SET synced_at = (SELECT last_stamp FROM sync_clock WHERE id = 1) WHERE id = new.id;
END;

CREATE TRIGGER play_events_stamp AFTER INSERT ON play_events BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
    UPDATE play_events SET synced_at = (SELECT last_stamp FROM sync_clock WHERE id = 1) WHERE id = new.id;
END;

CREATE TRIGGER tombstones_stamp AFTER INSERT ON tombstones BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
    UPDATE tombstones SET synced_at = (SELECT last_stamp FROM sync_clock WHERE id = 1) WHERE id = new.id;
END;

CREATE TRIGGER tracks_stamp_insert AFTER INSERT ON tracks BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
    UPDATE tracks SET synced_at = (SELECT last_stamp FROM sync_clock WHERE id = 1) WHERE id = new.id;
END;

-- Any other change to a track is a catalogue change (the stamp's own update is not).
CREATE TRIGGER tracks_stamp_update AFTER UPDATE ON tracks WHEN new.synced_at = old.synced_at BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
    UPDATE tracks SET synced_at = (SELECT last_stamp FROM sync_clock WHERE id = 1) WHERE id = new.id;
END;

CREATE TRIGGER playlists_stamp_insert AFTER INSERT ON playlists BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
    UPDATE playlists SET synced_at = (SELECT last_stamp FROM sync_clock WHERE id = 1) WHERE id = new.id;
END;

CREATE TRIGGER playlists_stamp_update AFTER UPDATE ON playlists WHEN new.synced_at = old.synced_at BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
    UPDATE playlists SET synced_at = (SELECT last_stamp FROM sync_clock WHERE id = 1) WHERE id = new.id;
END;
