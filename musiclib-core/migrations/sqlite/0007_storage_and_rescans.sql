-- Library statistics (GET /storage) and rescans.
-- Sizes of covers (NULL for covers written before sizes were kept: cleanup_storage fills
-- them in when it walks the covers).
ALTER TABLE albums ADD COLUMN cover_size_bytes INTEGER;
ALTER TABLE playlists ADD COLUMN cover_size_bytes INTEGER;
-- The statistics group every track by these: the index covers that query, so it reads the
-- index rather than the rows.
CREATE INDEX tracks_stats ON tracks (format, source, metadata_status, size_bytes, duration_ms);
-- A rescan compares every imported file's size and modification time (and finds the missing
-- ones): this index covers those reads, so they never read the rows.
CREATE INDEX tracks_source_files ON tracks (source, source_id, size_bytes, source_mtime, availability);
-- Duplicates are grouped by MusicBrainz recording (and by content hash, already indexed).
CREATE INDEX tracks_recording ON tracks (musicbrainz_recording_id);
-- The last check of each track's stored file (job check_files): NULL problem means it was
-- whole; else missing, size_mismatch, hash_mismatch or decode_failed, and why.
CREATE TABLE file_checks (
    track_id   TEXT PRIMARY KEY REFERENCES tracks (id) ON DELETE CASCADE,
    checked_at INTEGER NOT NULL,
    problem    TEXT,
    reason     TEXT
);
CREATE INDEX file_checks_problem ON file_checks (problem);
