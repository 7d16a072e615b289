-- Enrichment (issue 3): the track's Chromaprint fingerprint and the best lookup score, so the
-- candidates endpoint and a re-run do not decode the audio again.
ALTER TABLE tracks ADD COLUMN fingerprint TEXT;
ALTER TABLE tracks ADD COLUMN fingerprint_duration INTEGER;
ALTER TABLE tracks ADD COLUMN acoustid_score REAL;
