-- ReplayGain (ReplayGain 2.0: gains in dB to a -18 LUFS reference, peaks as linear sample
-- values, 1.0 full scale), per track: read from the file's tags at import and rescan, or
-- measured (EBU R128) by the analyze_loudness job where the tags have none. rg_source says
-- which ('tags' or 'measured'; NULL: not known yet); a file the job cannot decode keeps the
-- reason in rg_error and is not tried again until its file changes. Gains read from tags
-- are never replaced by measured ones.
ALTER TABLE tracks ADD COLUMN rg_track_gain REAL;
ALTER TABLE tracks ADD COLUMN rg_track_peak REAL;
ALTER TABLE tracks ADD COLUMN rg_album_gain REAL;
ALTER TABLE tracks ADD COLUMN rg_album_peak REAL;
ALTER TABLE tracks ADD COLUMN rg_source TEXT;
ALTER TABLE tracks ADD COLUMN rg_error TEXT;
-- The tracks still waiting for a measurement, oldest first, without a scan of the table.
CREATE INDEX tracks_rg_pending ON tracks (created_at, id)
    WHERE rg_source IS NULL AND rg_error IS NULL AND availability = 'available';

-- What an album gain is computed from: each measured track's gating blocks (400 ms, 75 %
-- overlap, above the -70 LUFS absolute gate) as a histogram of their loudness, so that an
-- album's gain is gated over all its tracks' blocks together (album loudness is not the mean
-- of its tracks' loudness) without decoding them again when a track joins the album.
CREATE TABLE track_loudness (
    track_id       TEXT PRIMARY KEY REFERENCES tracks (id) ON DELETE CASCADE,
    content_sha256 TEXT,
    loudness       REAL NOT NULL,
    peak           REAL NOT NULL,
    blocks         TEXT NOT NULL,
    measured_at    INTEGER NOT NULL
);
