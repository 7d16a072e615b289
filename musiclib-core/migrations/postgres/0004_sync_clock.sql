-- The sync clock (ARCHITECTURE.md, "Sync"): one row whose value every change a sync client
-- pulls is stamped from, by triggers inside the writing transaction. A stamp is the database
-- clock in µs, bumped past the previous stamp. Taking a stamp locks the row until the
-- transaction ends, so stamps are unique and increase in commit order, and a pull's cursor
-- (the row's committed value) never passes a change that has not committed: the classic hole
-- of timestamp cursors (stamped before a pull, committed after it) cannot open.
CREATE TABLE sync_clock (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    last_stamp BIGINT NOT NULL
);
INSERT INTO sync_clock (id, last_stamp) VALUES (1, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT));

ALTER TABLE tracks ADD COLUMN synced_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE playlists ADD COLUMN synced_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tombstones ADD COLUMN synced_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX tracks_synced ON tracks (synced_at);
CREATE INDEX playlists_synced ON playlists (owner_id, synced_at);
CREATE INDEX tombstones_synced ON tombstones (synced_at);

UPDATE tracks SET synced_at = updated_at;
UPDATE playlists SET synced_at = updated_at;
UPDATE tombstones SET synced_at = deleted_at;

CREATE FUNCTION sync_stamp() RETURNS BIGINT LANGUAGE sql AS $$
    UPDATE sync_clock
       SET last_stamp = GREATEST(last_stamp + 1, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT))
     WHERE id = 1
    RETURNING last_stamp
$$;

CREATE FUNCTION sync_stamp_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.synced_at := sync_stamp();
    RETURN NEW;
END
$$;

CREATE TRIGGER like_events_stamp BEFORE INSERT ON like_events FOR EACH ROW EXECUTE FUNCTION sync_stamp_row();
CREATE TRIGGER play_events_stamp BEFORE INSERT ON play_events FOR EACH ROW EXECUTE FUNCTION sync_stamp_row();
CREATE TRIGGER tombstones_stamp BEFORE INSERT ON tombstones FOR EACH ROW EXECUTE FUNCTION sync_stamp_row();
CREATE TRIGGER tracks_stamp BEFORE INSERT OR UPDATE ON tracks FOR EACH ROW EXECUTE FUNCTION sync_stamp_row();
CREATE TRIGGER playlists_stamp BEFORE INSERT OR UPDATE ON playlists FOR EACH ROW EXECUTE FUNCTION sync_stamp_row();
