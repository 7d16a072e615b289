-- Each track's album and length beside its id, so that the joins from a track id (a user's
-- plays counted per album, a playlist's length) read this index and no track row.
CREATE INDEX tracks_id_album ON tracks (id, album_id, duration_ms);
