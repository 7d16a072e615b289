-- Every documented sort of the track list reads an index in order, with the id as the
-- tie-breaker, so a page at any offset walks an index instead of sorting the library. The
-- case-insensitive sorts are indexes on expressions that also hold the columns they are made
-- of: then both databases answer the page's ids from the index alone (SQLite calls it a
-- covering index, PostgreSQL an index-only scan), and skipping an offset never reads a row.
-- The library search's short queries walk tracks shortest title first and stop at the page.
CREATE INDEX tracks_title_sort ON tracks (lower(title), id, title);
CREATE INDEX tracks_artist_sort ON tracks (lower(artist_name), lower(album_title), disc_number, track_number, id, artist_name, album_title);
CREATE INDEX tracks_album_sort ON tracks (lower(album_title), disc_number, track_number, id, album_title);
CREATE INDEX tracks_year_sort ON tracks (year, id);
CREATE INDEX tracks_number_sort ON tracks (disc_number, track_number, id);
CREATE INDEX tracks_duration_sort ON tracks (duration_ms, id);
CREATE INDEX tracks_search_order ON tracks (length(title), title, id);
-- A genre's tracks (the filter is case-insensitive), by title from the index.
CREATE INDEX tracks_genre_title ON tracks (lower(genre), lower(title), id, title);
DROP INDEX tracks_created;
CREATE INDEX tracks_created ON tracks (created_at, id);
DROP INDEX tracks_updated;
CREATE INDEX tracks_updated ON tracks (updated_at, id);
-- An album's track count, length and whether it has audio (every album row and the legacy
-- album lists ask) from the index alone; a track's length likewise (playlists sum them).
DROP INDEX tracks_album;
CREATE INDEX tracks_album ON tracks (album_id, disc_number, track_number, duration_ms, availability);
CREATE INDEX tracks_length ON tracks (id, duration_ms);

-- The album list's sorts (title, year, recently added) likewise.
CREATE INDEX albums_title_sort ON albums (title_key, id);
CREATE INDEX albums_year_sort ON albums (year, title_key, id);
CREATE INDEX albums_created ON albums (created_at, id);

-- A user's history and likes, newest first, read in index order (the id breaks ties).
DROP INDEX play_events_played;
CREATE INDEX play_events_played ON play_events (user_id, played_at, id);
CREATE INDEX like_events_time ON like_events (user_id, event_time, track_id);

-- SQLite only: the library search's rare one- and two-letter queries read every track; this
-- narrow index holds what they read, so they never read the rows (PostgreSQL scans the table).
CREATE INDEX tracks_search_scan ON tracks (search_text, title, id);
