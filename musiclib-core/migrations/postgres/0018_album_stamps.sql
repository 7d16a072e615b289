-- Every change to an album moves the sync clock, as a change to a track does: what is kept
-- in memory at a clock value (album rows, list places) is then read again. Most album
-- changes come with a track's, in the same transaction; a cover or a MusicBrainz id found
-- later does not, and is the reason for this trigger.
CREATE FUNCTION sync_stamp_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM sync_stamp();
    RETURN NULL;
END
$$;

CREATE TRIGGER albums_stamp AFTER INSERT OR UPDATE OR DELETE ON albums
    FOR EACH ROW EXECUTE FUNCTION sync_stamp_change();
