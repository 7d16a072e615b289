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
