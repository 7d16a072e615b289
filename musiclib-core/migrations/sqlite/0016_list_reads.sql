-- The legacy album lists read two things per album of a page without touching a track row:
-- the caller's plays of its tracks (the album's track ids, from this index, then each
-- track's plays from `play_events_track`), and whether it has audio at all. Albums of saved
-- remote hits alone (placeholders, not listed to legacy clients) are found from the
-- placeholders' own small index, so the list walks its sort's index without a lookup per
-- album.
DROP INDEX tracks_album;
CREATE INDEX tracks_album ON tracks (album_id, disc_number, track_number, duration_ms, availability, id);
CREATE INDEX tracks_placeholders ON tracks (album_id) WHERE availability = 'placeholder';

-- A user's current likes (the newest event of each track wins) from the indexes alone: the
-- "is there a newer event" test compares the event time and then the client id.
DROP INDEX like_events_track;
CREATE INDEX like_events_track ON like_events (user_id, track_id, event_time, client_event_id);
DROP INDEX like_events_time;
CREATE INDEX like_events_time ON like_events (user_id, event_time, track_id, liked, client_event_id);

-- Albums by album artist: artists in name order, then each one's albums by title, from
-- indexes alone (`Catalog::albums_by_artist`).
CREATE INDEX artists_name_sort ON artists (lower(name), id, name);
DROP INDEX albums_artist;
CREATE INDEX albums_artist ON albums (artist_id, title_key, id);
