-- Synced lyrics are now stored with their word timing (enhanced LRC word stamps, for
-- OpenSubsonic songLyrics v2); the cached copies read from files before dropped it. They
-- are read again from the file on the next request (LRCLIB's are kept: asking it again
-- costs a request, and its synced lyrics are line-timed).
DELETE FROM lyrics WHERE provider IN ('embedded', 'sidecar') AND synced IS NOT NULL;
