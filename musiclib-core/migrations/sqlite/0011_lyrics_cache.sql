-- The lyrics cache (0001's table) gains what a record says beyond its text: the language
-- when known, the LRC offset, and the provider error a not_found stands for (such a record is
-- fetched again after an hour instead of seven days). synced holds the timed lines as LRC;
-- provider is the source: embedded, sidecar or lrclib.
ALTER TABLE lyrics ADD COLUMN language TEXT;
ALTER TABLE lyrics ADD COLUMN offset_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lyrics ADD COLUMN error TEXT;
