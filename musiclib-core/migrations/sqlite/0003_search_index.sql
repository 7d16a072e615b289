-- Library search (GET /search/library) by index instead of scanning every track: an FTS5
-- trigram index of tracks.search_text, where a quoted phrase matches any substring.
-- FTS rows are keyed by a stable integer from track_search_ids (a table without an INTEGER
-- PRIMARY KEY may have its rowids renumbered by VACUUM).
CREATE TABLE track_search_ids (
    seq      INTEGER PRIMARY KEY,
    track_id TEXT NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE tracks_search USING fts5 (search_text, tokenize = 'trigram');

INSERT INTO track_search_ids (track_id) SELECT id FROM tracks;
INSERT INTO tracks_search (rowid, search_text)
    SELECT m.seq, t.search_text FROM tracks t JOIN track_search_ids m ON m.track_id = t.id;

CREATE TRIGGER tracks_search_insert AFTER INSERT ON tracks BEGIN
    INSERT INTO track_search_ids (track_id) VALUES (new.id);
    INSERT INTO tracks_search (rowid, search_text)
        SELECT seq, new.search_text FROM track_search_ids WHERE track_id = new.id;
END;

CREATE TRIGGER tracks_search_update AFTER UPDATE OF search_text ON tracks BEGIN
    DELETE FROM tracks_search WHERE rowid = (SELECT seq FROM track_search_ids WHERE track_id = old.id);
    INSERT INTO tracks_search (rowid, search_text)
        SELECT seq, new.search_text FROM track_search_ids WHERE track_id = new.id;
END;

CREATE TRIGGER tracks_search_delete AFTER DELETE ON tracks BEGIN
    DELETE FROM tracks_search WHERE rowid = (SELECT seq FROM track_search_ids WHERE track_id = old.id);
    DELETE FROM track_search_ids WHERE track_id = old.id;
END;
