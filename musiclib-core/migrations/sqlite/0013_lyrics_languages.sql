-- A file can hold lyrics in several languages (two ID3v2 USLT frames, eng and spa): the
-- record keeps the first in its columns and the others here, as a JSON array of
-- {"language", "synced" (LRC text or null), "plain", "offset_ms"}; null when there are none.
ALTER TABLE lyrics ADD COLUMN alternates TEXT;
