-- Listening state for OpenSubsonic's indexBasedQueue and playbackReport (issue 37).
--
-- The place of the current entry in a saved play queue: a queue may hold a track twice, and
-- `current_id` alone cannot say which of the two is playing. NULL in queues saved before:
-- the first place of `current_id` is meant.
ALTER TABLE play_queues ADD COLUMN current_index BIGINT;

-- A player's timeline, as its last `reportPlayback` said: `state` (starting, playing,
-- paused; NULL for an entry set without a timeline, by `scrobble` with submission=false),
-- the position at `updated_at` and the playback rate. `listened_ms` is the listening heard
-- in this playback (`playback_id`), which decides when it counts as a play; `scrobbled`,
-- whether it was counted.
ALTER TABLE now_playing ADD COLUMN state TEXT;
ALTER TABLE now_playing ADD COLUMN position_ms BIGINT;
ALTER TABLE now_playing ADD COLUMN playback_rate DOUBLE PRECISION;
ALTER TABLE now_playing ADD COLUMN listened_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE now_playing ADD COLUMN playback_id TEXT;
ALTER TABLE now_playing ADD COLUMN scrobbled BIGINT NOT NULL DEFAULT 0;
