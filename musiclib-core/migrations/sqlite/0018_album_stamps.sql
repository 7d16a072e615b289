-- Every change to an album moves the sync clock, as a change to a track does: what is kept
-- in memory at a clock value (album rows, list places) is then read again. Most album
-- changes come with a track's, in the same transaction; a cover or a MusicBrainz id found
-- later does not, and is the reason for these triggers.
CREATE TRIGGER albums_stamp_insert AFTER INSERT ON albums BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
END;

CREATE TRIGGER albums_stamp_update AFTER UPDATE ON albums BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
END;

CREATE TRIGGER albums_stamp_delete AFTER DELETE ON albums BEGIN
    UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
END;
