-- Alice's smart playlist of the tracks she loves, as last evaluated.
INSERT INTO playlists (id, owner_id, name, description, is_public, version, cover_uri, created_at, updated_at, cover_size_bytes, rules) VALUES
    ('018b0000-0000-7000-8000-00000000e003', '018b0000-0000-7000-8000-00000000a001', 'Loved', NULL, 0, 1, NULL, 1700011000000000, 1700011000000000, NULL,
     '{"all":[{"is":{"loved":true}}],"sort":"title"}');

INSERT INTO playlist_tracks (playlist_id, position, track_id) VALUES
    ('018b0000-0000-7000-8000-00000000e003', 0, '018b0000-0000-7000-8000-00000000d003'),
    ('018b0000-0000-7000-8000-00000000e003', 1, '018b0000-0000-7000-8000-00000000d001');

INSERT INTO playlist_changes (playlist_id, version, op, payload, created_at) VALUES
    ('018b0000-0000-7000-8000-00000000e003', 1, 'refresh', '{"track_count":2}', 1700011000000000);

INSERT INTO smart_playlist_state (playlist_id, evaluated_clock, evaluated_at) VALUES
    ('018b0000-0000-7000-8000-00000000e003', 1700002300000000, 1700011000000000);
