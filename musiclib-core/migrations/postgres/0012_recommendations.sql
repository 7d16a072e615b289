-- Recommendations.
-- shuffle_key: a random number per track, indexed, so a random sample of the library is a
-- range read (shuffle_key >= r ORDER BY shuffle_key LIMIT n) instead of ORDER BY RANDOM()
-- over the whole table; set when a track is inserted.
ALTER TABLE tracks ADD COLUMN shuffle_key BIGINT NOT NULL DEFAULT 0;
UPDATE tracks SET shuffle_key = floor(random() * 2147483647)::bigint;
CREATE INDEX tracks_shuffle ON tracks (shuffle_key);
CREATE INDEX tracks_genre_shuffle ON tracks (genre, shuffle_key);
CREATE INDEX tracks_artist_shuffle ON tracks (artist_id, shuffle_key);

-- The plays of one track, for "listened together" (play_events_track leads with the user).
CREATE INDEX play_events_by_track ON play_events (track_id, played_at);

-- Artist similarity, computed from the library by the compute_similarity job: the strongest
-- few per artist, with the score of each signal (reasons is a JSON object of them).
CREATE TABLE artist_similarity (
    artist_id  TEXT NOT NULL REFERENCES artists (id) ON DELETE CASCADE,
    similar_id TEXT NOT NULL REFERENCES artists (id) ON DELETE CASCADE,
    score      DOUBLE PRECISION NOT NULL,
    reasons    TEXT NOT NULL,
    PRIMARY KEY (artist_id, similar_id)
);
CREATE INDEX artist_similarity_rank ON artist_similarity (artist_id, score);

-- Each track's sound, analysed by the analyze_sound job (bliss-audio): the feature vector
-- as a JSON array, the analysis version it comes from, or why the audio could not be
-- analysed (features NULL; not tried again until the file changes).
CREATE TABLE track_features (
    track_id       TEXT PRIMARY KEY REFERENCES tracks (id) ON DELETE CASCADE,
    version        BIGINT NOT NULL,
    features       TEXT,
    content_sha256 TEXT,
    error          TEXT,
    analyzed_at    BIGINT NOT NULL
);
CREATE INDEX track_features_analyzed ON track_features (analyzed_at);
