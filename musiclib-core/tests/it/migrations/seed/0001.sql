-- What a release at schema 1 wrote: two users, a small catalogue, and the listening data of
-- every table 0001 made (written before the migration that changes each of them).
--
-- Ids (UUIDs ending in): a… users, b… artists, c… albums, d… tracks, e… playlists.
-- Times are µs since the epoch, from 2023-11-14 on.
-- {argon2:PASSWORD} is a hash made by core's own `hash_password`; {U+0001} and {U+001F} are
-- the separators of album keys and search texts (control characters, written as the file is
-- read).

INSERT INTO users (id, username, username_key, password_hash, is_admin, legacy_password_enc, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000a001', 'Alice', 'alice', '{argon2:alice-password}', 1, NULL, 1700000000000000, 1700000000000000),
    ('018b0000-0000-7000-8000-00000000a002', 'bob', 'bob', '{argon2:bob-password}', 0, NULL, 1700000060000000, 1700000060000000);

INSERT INTO artists (id, name, name_key, sort_name, musicbrainz_id, remote_source, remote_source_id, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000b001', 'The Midnight Owls', 'the midnight owls', 'Midnight Owls, The', NULL, NULL, NULL, 1700000600000000, 1700000600000000),
    ('018b0000-0000-7000-8000-00000000b002', 'Los Señores', 'los senores', NULL, NULL, NULL, NULL, 1700000700000000, 1700000700000000);

INSERT INTO albums (id, title, title_key, album_key, artist_id, year, genre, is_compilation, musicbrainz_album_id, musicbrainz_releasegroup_id, cover_uri, cover_updated_at, remote_source, remote_source_id, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000c001', 'Night Drive', 'night drive', 'the midnight owls{U+0001}night drive', '018b0000-0000-7000-8000-00000000b001', 2019, 'Synthwave', 0, NULL, NULL, NULL, NULL, NULL, NULL, 1700000600000000, 1700000600000000),
    ('018b0000-0000-7000-8000-00000000c002', 'Canciones', 'canciones', 'los senores{U+0001}canciones', '018b0000-0000-7000-8000-00000000b002', 2021, 'Folk', 0, NULL, NULL, NULL, NULL, NULL, NULL, 1700000700000000, 1700000700000000);

-- Three uploads of Alice's and one file of the import folder.
INSERT INTO tracks (id, title, artist_id, album_id, artist_name, album_title, album_artist_name, genre, year, track_number, disc_number, duration_ms, format, mime_type, bitrate_kbps, sample_rate, channels, size_bytes, content_sha256, storage_uri, source, source_id, added_by, source_mtime, availability, metadata_status, metadata_error, enriched_at, musicbrainz_recording_id, acoustid_id, has_embedded_cover, tags, search_text, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000d001', 'Headlights', '018b0000-0000-7000-8000-00000000b001', '018b0000-0000-7000-8000-00000000c001', 'The Midnight Owls', 'Night Drive', 'The Midnight Owls', 'Synthwave', 2019, 1, 1, 214000, 'flac', 'audio/flac', 912, 44100, 2, 24412345,
     'd001d001d001d001d001d001d001d001d001d001d001d001d001d001d001d001', 'audio/018b0000-0000-7000-8000-00000000d001.flac', 'upload', 'd001d001d001d001d001d001d001d001d001d001d001d001d001d001d001d001', '018b0000-0000-7000-8000-00000000a001', NULL,
     'available', 'enriched', NULL, 1700000610000000, NULL, NULL, 1,
     '{"title":"Headlights","artist":"The Midnight Owls","album":"Night Drive","album_artist":"The Midnight Owls","genre":"Synthwave","year":2019,"track_number":1,"disc_number":1}',
     'headlights{U+001F}the midnight owls{U+001F}night drive', 1700000600000000, 1700000610000000),
    ('018b0000-0000-7000-8000-00000000d002', 'Tunnel Vision', '018b0000-0000-7000-8000-00000000b001', '018b0000-0000-7000-8000-00000000c001', 'The Midnight Owls', 'Night Drive', 'The Midnight Owls', 'Synthwave', 2019, 2, 1, 187000, 'flac', 'audio/flac', 905, 44100, 2, 21154321,
     'd002d002d002d002d002d002d002d002d002d002d002d002d002d002d002d002', 'audio/018b0000-0000-7000-8000-00000000d002.flac', 'upload', 'd002d002d002d002d002d002d002d002d002d002d002d002d002d002d002d002', '018b0000-0000-7000-8000-00000000a001', NULL,
     'available', 'enriched', NULL, 1700000620000000, NULL, NULL, 1,
     '{"title":"Tunnel Vision","artist":"The Midnight Owls","album":"Night Drive","album_artist":"The Midnight Owls","genre":"Synthwave","year":2019,"track_number":2,"disc_number":1}',
     'tunnel vision{U+001F}the midnight owls{U+001F}night drive', 1700000601000000, 1700000620000000),
    ('018b0000-0000-7000-8000-00000000d003', 'Amanecer', '018b0000-0000-7000-8000-00000000b002', '018b0000-0000-7000-8000-00000000c002', 'Los Señores', 'Canciones', 'Los Señores', 'Folk', 2021, 1, 1, 243500, 'mp3', 'audio/mpeg', 320, 44100, 2, 9740123,
     'd003d003d003d003d003d003d003d003d003d003d003d003d003d003d003d003', 'audio/018b0000-0000-7000-8000-00000000d003.mp3', 'upload', 'd003d003d003d003d003d003d003d003d003d003d003d003d003d003d003d003', '018b0000-0000-7000-8000-00000000a001', NULL,
     'available', 'failed', 'no AcoustID match', 1700000720000000, NULL, NULL, 0,
     '{"title":"Amanecer","artist":"Los Señores","album":"Canciones","album_artist":"Los Señores","genre":"Folk","year":2021,"track_number":1}',
     'amanecer{U+001F}los senores{U+001F}canciones', 1700000700000000, 1700000720000000),
    ('018b0000-0000-7000-8000-00000000d004', 'Lluvia', '018b0000-0000-7000-8000-00000000b002', '018b0000-0000-7000-8000-00000000c002', 'Los Señores', 'Canciones', 'Los Señores', 'Folk', 2021, 2, 1, 198250, 'flac', 'audio/flac', 870, 48000, 2, 21560000,
     'd004d004d004d004d004d004d004d004d004d004d004d004d004d004d004d004', 'audio/018b0000-0000-7000-8000-00000000d004.flac', 'local_folder', 'Los Señores/Canciones/02 Lluvia.flac', NULL, 1699990000000000,
     'available', 'pending', NULL, NULL, NULL, NULL, 0,
     '{"title":"Lluvia","artist":"Los Señores","album":"Canciones","album_artist":"Los Señores","genre":"Folk","year":2021,"track_number":2}',
     'lluvia{U+001F}los senores{U+001F}canciones', 1700000701000000, 1700000701000000);

-- A fifth track, deleted: clients that synced it must drop it.
INSERT INTO tombstones (entity_kind, entity_id, user_id, deleted_at) VALUES
    ('track', '018b0000-0000-7000-8000-00000000d005', NULL, 1700000900000000);

-- Alice's private road trip (Headlights twice) and Bob's public playlist.
INSERT INTO playlists (id, owner_id, name, description, is_public, version, cover_uri, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000e001', '018b0000-0000-7000-8000-00000000a001', 'Road trip', 'Windows down', 0, 2, NULL, 1700001000000000, 1700001060000000),
    ('018b0000-0000-7000-8000-00000000e002', '018b0000-0000-7000-8000-00000000a002', 'Quiet evenings', NULL, 1, 1, NULL, 1700001100000000, 1700001100000000);

INSERT INTO playlist_tracks (playlist_id, position, track_id) VALUES
    ('018b0000-0000-7000-8000-00000000e001', 0, '018b0000-0000-7000-8000-00000000d001'),
    ('018b0000-0000-7000-8000-00000000e001', 1, '018b0000-0000-7000-8000-00000000d003'),
    ('018b0000-0000-7000-8000-00000000e001', 2, '018b0000-0000-7000-8000-00000000d001'),
    ('018b0000-0000-7000-8000-00000000e002', 0, '018b0000-0000-7000-8000-00000000d004');

INSERT INTO playlist_changes (playlist_id, version, op, payload, created_at) VALUES
    ('018b0000-0000-7000-8000-00000000e001', 1, 'add', '{"position":0,"track_ids":["018b0000-0000-7000-8000-00000000d001","018b0000-0000-7000-8000-00000000d003"]}', 1700001000000000),
    ('018b0000-0000-7000-8000-00000000e001', 2, 'add', '{"position":2,"track_ids":["018b0000-0000-7000-8000-00000000d001"]}', 1700001060000000),
    ('018b0000-0000-7000-8000-00000000e002', 1, 'add', '{"position":0,"track_ids":["018b0000-0000-7000-8000-00000000d004"]}', 1700001100000000);

-- Alice liked Headlights and Tunnel Vision, took the second back, then liked Amanecer.
INSERT INTO like_events (user_id, track_id, liked, client_event_id, event_time, synced_at) VALUES
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000d001', 1, 'web-0001', 1700002000000000, 1700002000000000),
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000d002', 1, 'web-0002', 1700002100000000, 1700002100000000),
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000d002', 0, 'phone-0001', 1700002200000000, 1700002200000000),
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000d003', 1, 'phone-0002', 1700002300000000, 1700002300000000),
    ('018b0000-0000-7000-8000-00000000a002', '018b0000-0000-7000-8000-00000000d004', 1, 'bob-0001', 1700002400000000, 1700002400000000);

INSERT INTO play_events (user_id, track_id, played_at, seconds_played, client_event_id, synced_at) VALUES
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000d001', 1700003000000000, 214.0, 'play-0001', 1700003000000000),
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000d003', 1700003300000000, 95.5, 'play-0002', 1700003300000000),
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000d001', 1700003600000000, 180.25, 'play-0003', 1700003600000000),
    ('018b0000-0000-7000-8000-00000000a002', '018b0000-0000-7000-8000-00000000d004', 1700003700000000, 198.0, 'bob-play-0001', 1700003700000000);

-- A starred album and a rated track.
INSERT INTO annotations (user_id, item_kind, item_id, starred_at, rating) VALUES
    ('018b0000-0000-7000-8000-00000000a001', 'album', '018b0000-0000-7000-8000-00000000c001', 1700004000000000, NULL),
    ('018b0000-0000-7000-8000-00000000a001', 'track', '018b0000-0000-7000-8000-00000000d003', NULL, 4);

-- Alice's saved queue holds Headlights twice; the current one is its first place (1).
INSERT INTO play_queues (user_id, track_ids, current_id, position_ms, changed_by, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000a001', '["018b0000-0000-7000-8000-00000000d003","018b0000-0000-7000-8000-00000000d001","018b0000-0000-7000-8000-00000000d002","018b0000-0000-7000-8000-00000000d001"]', '018b0000-0000-7000-8000-00000000d001', 42000, 'Symfonium', 1700005000000000);

INSERT INTO now_playing (user_id, client, track_id, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000a002', 'Feishin', '018b0000-0000-7000-8000-00000000d004', 1700005100000000);

-- The lyrics cache: synced lyrics read from a file's tags (d001) and from a sidecar file
-- (d004), which 0028 deletes; plain lyrics from tags (d002) and LRCLIB's synced ones (d003),
-- which it keeps.
INSERT INTO lyrics (track_id, status, synced, plain, instrumental, provider, fetched_at) VALUES
    ('018b0000-0000-7000-8000-00000000d001', 'found', '[00:12.00]Headlights on the highway
[00:18.50]Nothing but the night', 'Headlights on the highway
Nothing but the night', 0, 'embedded', 1700006000000000),
    ('018b0000-0000-7000-8000-00000000d002', 'found', NULL, 'Into the tunnel
Out into the light', 0, 'embedded', 1700006100000000),
    ('018b0000-0000-7000-8000-00000000d003', 'found', '[00:05.00]Amanece en la ciudad
[00:11.20]Y tú no estás', 'Amanece en la ciudad
Y tú no estás', 0, 'lrclib', 1700006200000000),
    ('018b0000-0000-7000-8000-00000000d004', 'found', '[00:03.00]Cae la lluvia
[00:09.40]Sobre el mar', 'Cae la lluvia
Sobre el mar', 0, 'sidecar', 1700006300000000);

-- A settings document from before `replay_gain` was one of its fields.
INSERT INTO user_settings (user_id, settings, scrobble_session_key_enc, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000a001', '{"streaming_quality":"low","scrobbling":false}', NULL, 1700007000000000, 1700007000000000);
