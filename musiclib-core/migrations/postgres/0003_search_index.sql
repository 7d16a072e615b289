-- Library search (GET /search/library) by index instead of scanning every track: trigram GIN
-- indexes, which PostgreSQL uses for LIKE '%…%'. pg_trgm ships with PostgreSQL (contrib); a
-- role that may not create extensions keeps working, with sequential scans.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN insufficient_privilege OR undefined_file THEN
    RAISE NOTICE 'pg_trgm is not available: library search scans instead of using an index';
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX IF NOT EXISTS tracks_search_trgm ON tracks USING gin (search_text gin_trgm_ops);
        CREATE INDEX IF NOT EXISTS albums_title_trgm ON albums USING gin (title_key gin_trgm_ops);
        CREATE INDEX IF NOT EXISTS artists_name_trgm ON artists USING gin (name_key gin_trgm_ops);
    END IF;
END
$$;
